/*
 * files.c — confined path resolution and the blocking-but-bounded file operations of the
 * files API (see files.h for the guarantees and the reasoning about links).
 *
 * Everything here is synchronous. The daemon calls the metadata helpers (normalise, open a
 * parent, mkdir, rename, unlink, stat) on its loop: each is a handful of syscalls on
 * the workspace, a tmpfs when the daemon is root, so they are bounded by the path's
 * component count (≤ FILES_PATH_MAX / 2) and never wait on a disk. File contents and the
 * recursive remove, whose cost grows with the data, run on libuv's threadpool.
 */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WS "/workspace"
#define REMOVE_DEPTH_MAX 256

static int set_err(char *err, size_t errlen, const char *msg, const char *in)
{
    snprintf(err, errlen, "path '%.200s' %s", in, msg);
    return -EINVAL;
}

int files_normalize(const char *in, char *rel, size_t rellen, char *err, size_t errlen)
{
    if (!in)
        in = "";
    size_t inlen = strnlen(in, FILES_PATH_MAX + 1);
    if (inlen > FILES_PATH_MAX)
        return set_err(err, errlen, "is longer than 4096 bytes", "…");
    const char *s = in;
    if (s[0] == '/') {
        size_t wl = sizeof WS - 1;
        if (strncmp(s, WS, wl) != 0 || (s[wl] != '\0' && s[wl] != '/'))
            return set_err(err, errlen, "is outside /workspace (only /workspace is reachable)", in);
        s += wl;
    }
    size_t o = 0;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s)
            break;
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 1 && s[0] == '.') {
            s += n;
            continue;
        }
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return set_err(err, errlen, "contains '..' (paths may not climb)", in);
        if (n > FILES_NAME_MAX)
            return set_err(err, errlen, "has a name longer than 255 bytes", in);
        if (o + (o ? 1 : 0) + n + 1 > rellen)
            return set_err(err, errlen, "is too long", in);
        if (o)
            rel[o++] = '/';
        memcpy(rel + o, s, n);
        o += n;
        s += n;
    }
    if (rellen == 0)
        return set_err(err, errlen, "is too long", in);
    rel[o] = '\0';
    return 0;
}

void files_display(const char *rel, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s%s%s", WS, rel[0] ? "/" : "", rel);
}

int files_open_root(const char *workspace)
{
    int fd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int files_openat2(int dirfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    const char *p = rel[0] ? rel : ".";
    for (int tries = 0; tries < 8; tries++) {
        long fd = syscall(SYS_openat2, dirfd, p, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        if (errno != EAGAIN && errno != EINTR)
            return -errno;
    }
    return -EAGAIN;
}

int files_open_parent(int root, const char *rel, bool mkparents, uid_t uid, gid_t gid, int *pfd,
                      const char **name)
{
    const char *slash = strrchr(rel, '/');
    *name = slash ? slash + 1 : rel;
    if (!slash) {
        int fd = files_openat2(root, "", O_PATH | O_DIRECTORY, 0);
        if (fd < 0)
            return fd;
        *pfd = fd;
        return 0;
    }
    char dir[FILES_PATH_MAX + 1];
    size_t dl = (size_t)(slash - rel);
    if (dl >= sizeof dir)
        return -ENAMETOOLONG;
    memcpy(dir, rel, dl);
    dir[dl] = '\0';
    if (!mkparents) {
        int fd = files_openat2(root, dir, O_PATH | O_DIRECTORY, 0);
        if (fd < 0)
            return fd;
        *pfd = fd;
        return 0;
    }
    bool created;
    int rc = files_mkdirs(root, dir, uid, gid, &created);
    if (rc)
        return rc;
    int fd = files_openat2(root, dir, O_PATH | O_DIRECTORY, 0);
    if (fd < 0)
        return fd;
    *pfd = fd;
    return 0;
}

int files_mkdirs(int root, const char *rel, uid_t uid, gid_t gid, bool *created)
{
    *created = false;
    int cur = files_openat2(root, "", O_PATH | O_DIRECTORY, 0);
    if (cur < 0)
        return cur;
    const char *s = rel;
    char name[FILES_NAME_MAX + 1];
    int rc = 0;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || n > FILES_NAME_MAX) {
            rc = -EINVAL;
            break;
        }
        memcpy(name, s, n);
        name[n] = '\0';
        s += n + (e ? 1 : 0);
        *created = false;
        if (mkdirat(cur, name, 0755) == 0) {
            *created = true;
            /* the new directory belongs to the sandbox's user (never follows: a name we
             * just created as a directory) */
            if (fchownat(cur, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
                rc = -errno;
                break;
            }
        } else if (errno != EEXIST) {
            rc = -errno;
            break;
        }
        int next = files_openat2(cur, name, O_PATH | O_DIRECTORY, 0);
        if (next < 0) {
            rc = next == -ENOTDIR ? -EEXIST : next; /* a file is in the way */
            break;
        }
        close(cur);
        cur = next;
    }
    close(cur);
    return rc;
}

/* Remove everything inside the directory fd (consumed), depth levels deep at most. */
static int remove_contents(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = -errno;
        close(fd);
        return e;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), n, 0) == 0)
            continue;
        if (errno != EISDIR) {
            if (errno != ENOENT)
                rc = -errno;
            continue;
        }
        if (depth >= REMOVE_DEPTH_MAX) {
            rc = -ELOOP;
            continue;
        }
        int sub = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            rc = -errno;
            continue;
        }
        int r2 = remove_contents(sub, depth + 1);
        if (r2)
            rc = r2;
        if (unlinkat(dirfd(d), n, AT_REMOVEDIR) < 0 && errno != ENOENT)
            rc = -errno;
    }
    closedir(d);
    return rc;
}

int files_remove_tree(int dfd, const char *name)
{
    if (unlinkat(dfd, name, 0) == 0)
        return 0;
    if (errno != EISDIR)
        return -errno;
    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
        return -errno;
    int rc = remove_contents(sub, 1);
    if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
        return rc ? rc : -errno;
    return rc;
}

struct removal {
    uv_work_t w;
    int dir, rc;
    char name[FILES_NAME_MAX + 1];
    files_removed_cb cb;
    void *arg;
};

static void removal_work(uv_work_t *w)
{
    struct removal *r = w->data;
    r->rc = files_remove_tree(r->dir, r->name);
}

static void removal_done(uv_work_t *w, int status)
{
    struct removal *r = w->data;
    (void)status;
    close(r->dir);
    r->cb(r->rc, r->arg);
    free(r);
}

void files_remove(uv_loop_t *loop, int dirfd, const char *name, files_removed_cb cb, void *arg)
{
    struct stat st;
    int rc = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
    if (!rc && !S_ISDIR(st.st_mode))
        rc = unlinkat(dirfd, name, 0) < 0 ? -errno : 1; /* never follows a link */
    struct removal *r = rc == 0 ? calloc(1, sizeof *r) : NULL;
    if (r) {
        *r = (struct removal){ .dir = dirfd, .cb = cb, .arg = arg };
        r->w.data = r;
        snprintf(r->name, sizeof r->name, "%s", name);
        if (uv_queue_work(loop, &r->w, removal_work, removal_done) == 0)
            return;
        free(r);
    }
    close(dirfd);
    cb(rc == 1 ? 0 : rc ? rc : -ENOMEM, arg);
}

/* Extension → Content-Type, for the files people move in and out of sandboxes. */
static const struct {
    const char *ext;
    const char *type;
} TYPES[] = {
    { "txt", "text/plain; charset=utf-8" },
    { "log", "text/plain; charset=utf-8" },
    { "md", "text/markdown; charset=utf-8" },
    { "csv", "text/csv; charset=utf-8" },
    { "tsv", "text/tab-separated-values; charset=utf-8" },
    { "json", "application/json" },
    { "html", "text/html; charset=utf-8" },
    { "htm", "text/html; charset=utf-8" },
    { "css", "text/css; charset=utf-8" },
    { "js", "text/javascript; charset=utf-8" },
    { "mjs", "text/javascript; charset=utf-8" },
    { "ts", "text/plain; charset=utf-8" },
    { "py", "text/x-python; charset=utf-8" },
    { "sh", "text/x-shellscript; charset=utf-8" },
    { "xml", "application/xml" },
    { "yaml", "application/yaml" },
    { "yml", "application/yaml" },
    { "svg", "image/svg+xml" },
    { "png", "image/png" },
    { "jpg", "image/jpeg" },
    { "jpeg", "image/jpeg" },
    { "gif", "image/gif" },
    { "webp", "image/webp" },
    { "pdf", "application/pdf" },
    { "zip", "application/zip" },
    { "gz", "application/gzip" },
    { "tar", "application/x-tar" },
    { "parquet", "application/vnd.apache.parquet" },
    { "wasm", "application/wasm" },
};

const char *files_content_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *slash = strrchr(name, '/');
    if (dot && (!slash || dot > slash) && dot[1]) {
        for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
            if (strcasecmp(dot + 1, TYPES[i].ext) == 0)
                return TYPES[i].type;
    }
    return "application/octet-stream";
}
