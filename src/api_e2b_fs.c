/*
 * api_e2b_fs.c — envd's Connect service filesystem.Filesystem as the E2B SDK's files.*
 * use it (docs/compat.md "E2B"): Stat, ListDir (depth ≥ 1), MakeDir, Move and Remove,
 * unary calls with the JSON codec. Every path goes through files.c exactly as the /v1
 * files routes do: normalised under /workspace, resolved from a dirfd of the workspace
 * with openat2's confinement (no symlink followed, no way out), acted on through *at()
 * calls on the parent's fd; a directory removal runs on the threadpool (files_remove).
 *
 * Answers are the service's messages: EntryInfo {"name","type":"FILE_TYPE_…","path",
 * "size","mode","permissions","owner","group","modifiedTime","symlinkTarget"?}; errors
 * are Connect codes (not_found, already_exists, invalid_argument, …) so the SDK's
 * exists() and makeDir() see what they test for. A listing stops at --max-list-entries.
 * WatchDir and the watcher calls are not served (unimplemented).
 */
#include "api_e2b.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_json.h"
#include "files.h"
#include "jail.h"
#include "jsonx.h"
#include "stamp.h"

#define MAX_DEPTH 32 /* ListDir depth */

/* An errno from files.c as a Connect error answer. */
static void fs_errno(http_req *req, int rc, const char *shown, const char *what)
{
    enum e2b_code code = rc == -ENOENT                                     ? E2B_NOT_FOUND
                         : rc == -EEXIST || rc == -ENOTEMPTY               ? E2B_ALREADY_EXISTS
                         : rc == -ENOSPC || rc == -EDQUOT || rc == -EMFILE ? E2B_RESOURCE_EXHAUSTED
                         : rc == -EXDEV || rc == -ELOOP || rc == -ENOTDIR || rc == -EINVAL ||
                                 rc == -EACCES || rc == -EPERM || rc == -EISDIR
                             ? E2B_INVALID_ARGUMENT
                             : E2B_INTERNAL;
    e2b_unary_error(req, code, "%s '%s': %s", what, shown, strerror(-rc));
}

/* The message's string field as a normalised workspace path; false once answered. */
static bool take_path(http_req *req, const json_t *msg, const char *field, char *rel, size_t rellen,
                      char *shown, size_t shownlen)
{
    char err[JX_ERR];
    const char *in = NULL;
    if (jx_string(msg, field, true, FILES_PATH_MAX, &in, err, sizeof err) ||
        files_normalize(in, rel, rellen, err, sizeof err)) {
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "%s", err);
        return false;
    }
    files_display(rel, shown, shownlen);
    return true;
}

static const char *type_name(mode_t m)
{
    return S_ISDIR(m)   ? "FILE_TYPE_DIRECTORY"
           : S_ISREG(m) ? "FILE_TYPE_FILE"
           : S_ISLNK(m) ? "FILE_TYPE_SYMLINK"
                        : "FILE_TYPE_UNSPECIFIED";
}

/* EntryInfo of name in dir (lstat: a symlink is described, not followed); NULL when it
 * is gone or its name is not UTF-8. */
static json_t *entry_info(int dir, const char *name, const char *shown)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return NULL;
    char perm[11] = "----------", when[40], size[24];
    static const char RWX[] = "rwxrwxrwx";
    perm[0] = S_ISDIR(st.st_mode) ? 'd' : S_ISLNK(st.st_mode) ? 'l' : '-';
    for (int i = 0; i < 9; i++)
        if (st.st_mode & (0400 >> i))
            perm[i + 1] = RWX[i];
    stamp_iso8601((uint64_t)st.st_mtim.tv_sec * 1000 + (uint64_t)st.st_mtim.tv_nsec / 1000000, when,
                  sizeof when);
    snprintf(size, sizeof size, "%lld", (long long)st.st_size);
    const char *base = strrchr(shown, '/');
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "name",
                          base ? base + 1 : shown, "type", type_name(st.st_mode), "path", shown,
                          "size", size, "mode", (int)(st.st_mode & 07777), "permissions", perm,
                          "owner", st.st_uid == 0 ? "root" : "user", "group",
                          st.st_gid == 0 ? "root" : "user", "modifiedTime", when);
    if (j && S_ISLNK(st.st_mode)) {
        char target[FILES_PATH_MAX + 1];
        ssize_t n = readlinkat(dir, name, target, sizeof target - 1);
        if (n >= 0) {
            target[n] = '\0';
            json_object_set_new(j, "symlinkTarget", json_string(target));
        }
    }
    return j;
}

/* The workspace's fd and rel's parent in it; 0, or -errno (root and *dir closed). */
static int open_parent(sandbox *sb, const char *rel, bool mkparents, int *dir, const char **name)
{
    int root = files_open_root(jail_workspace(sb->jail));
    if (root < 0)
        return root;
    int rc = files_open_parent(root, rel, mkparents, jail_host_uid(sb->jail),
                               jail_host_gid(sb->jail), dir, name);
    close(root);
    return rc;
}

/* The parsed message of a unary call, or NULL once answered. */
static json_t *message(http_req *req)
{
    char err[JX_ERR];
    json_t *m = e2b_connect_request(req, false, err, sizeof err);
    if (!m)
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "%s", err);
    return m;
}

/* ---- Stat ---- */

/* EntryInfo of rel (the workspace itself when ""); -errno on failure. */
static int stat_rel(sandbox *sb, const char *rel, const char *shown, json_t **out)
{
    int dir = -1;
    const char *name = NULL;
    int rc;
    if (!rel[0]) {
        dir = files_open_root(jail_workspace(sb->jail));
        name = ".";
        rc = dir < 0 ? dir : 0;
    } else {
        rc = open_parent(sb, rel, false, &dir, &name);
    }
    if (rc)
        return rc;
    *out = entry_info(dir, name, shown);
    rc = *out ? 0 : errno == ENOENT || !errno ? -ENOENT : -errno;
    close(dir);
    return rc;
}

static void stat_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)app;
    (void)arg;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    json_t *m = sb ? message(req) : NULL, *e = NULL;
    if (m && take_path(req, m, "path", rel, sizeof rel, shown, sizeof shown)) {
        int rc = stat_rel(sb, rel, shown, &e);
        if (rc)
            fs_errno(req, rc, shown, "cannot stat");
        else
            api_respond_json(req, 200, json_pack("{s:o}", "entry", e));
    }
    json_decref(m);
}

void api_e2b_fs_stat(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, stat_in, NULL);
}

/* ---- ListDir ---- */

/* Append the entries of the directory fd (shown as shown) to out, down to depth levels;
 * fd is consumed. */
static void list_into(int fd, const char *shown, int depth, size_t max, json_t *out)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) && json_array_size(out) < max) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, ".."))
            continue;
        char path[FILES_PATH_MAX + 16];
        if (snprintf(path, sizeof path, "%s/%s", shown, n) >= (int)sizeof path)
            continue;
        json_t *e = entry_info(dirfd(d), n, path);
        if (!e)
            continue;
        bool is_dir = !strcmp(json_string_value(json_object_get(e, "type")), "FILE_TYPE_DIRECTORY");
        json_array_append_new(out, e);
        if (is_dir && depth > 1) {
            int sub = files_openat2(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
            if (sub >= 0)
                list_into(sub, path, depth - 1, max, out);
        }
    }
    closedir(d);
}

static void listdir_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    json_t *m = sb ? message(req) : NULL;
    if (m && take_path(req, m, "path", rel, sizeof rel, shown, sizeof shown)) {
        json_int_t depth = json_integer_value(json_object_get(m, "depth"));
        int root = files_open_root(jail_workspace(sb->jail));
        int fd = root < 0 ? root : files_openat2(root, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (root >= 0)
            close(root);
        if (depth < 0 || depth > MAX_DEPTH) {
            if (fd >= 0)
                close(fd);
            e2b_unary_error(req, E2B_INVALID_ARGUMENT, "depth must be 1 to %d", MAX_DEPTH);
        } else if (fd < 0) {
            fs_errno(req, fd, shown, "cannot list");
        } else {
            json_t *out = json_array();
            list_into(fd, shown, depth ? (int)depth : 1, app->cfg->max_list_entries, out);
            api_respond_json(req, 200, json_pack("{s:o}", "entries", out));
        }
    }
    json_decref(m);
}

void api_e2b_fs_listdir(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, listdir_in, NULL);
}

/* ---- MakeDir ---- */

static void mkdir_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)app;
    (void)arg;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    json_t *m = sb ? message(req) : NULL, *e = NULL;
    if (m && take_path(req, m, "path", rel, sizeof rel, shown, sizeof shown)) {
        bool created = false;
        int root = files_open_root(jail_workspace(sb->jail));
        int rc = root < 0 ? root
                 : rel[0] ? files_mkdirs(root, rel, jail_host_uid(sb->jail),
                                         jail_host_gid(sb->jail), &created)
                          : 0;
        if (root >= 0)
            close(root);
        if (!rc && !created)
            rc = -EEXIST;
        if (!rc)
            rc = stat_rel(sb, rel, shown, &e);
        if (rc == -EEXIST)
            e2b_unary_error(req, E2B_ALREADY_EXISTS, "'%s' already exists", shown);
        else if (rc)
            fs_errno(req, rc, shown, "cannot create the directory");
        else
            api_respond_json(req, 200, json_pack("{s:o}", "entry", e));
    }
    json_decref(m);
}

void api_e2b_fs_mkdir(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, mkdir_in, NULL);
}

/* ---- Move ---- */

static int move_rel(sandbox *sb, const char *rf, const char *rt)
{
    int df = -1, dt = -1;
    const char *nf = NULL, *nt = NULL;
    int rc = open_parent(sb, rf, false, &df, &nf);
    if (!rc)
        rc = open_parent(sb, rt, true, &dt, &nt);
    if (!rc)
        rc = renameat(df, nf, dt, nt) < 0 ? -errno : 0;
    if (df >= 0)
        close(df);
    if (dt >= 0)
        close(dt);
    return rc;
}

static void move_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)app;
    (void)arg;
    char rf[FILES_PATH_MAX + 1], sf[FILES_PATH_MAX + 16];
    char rt[FILES_PATH_MAX + 1], st[FILES_PATH_MAX + 16];
    json_t *m = sb ? message(req) : NULL, *e = NULL;
    if (m && take_path(req, m, "source", rf, sizeof rf, sf, sizeof sf) &&
        take_path(req, m, "destination", rt, sizeof rt, st, sizeof st)) {
        int rc = !rf[0] || !rt[0] ? -EINVAL : move_rel(sb, rf, rt);
        if (!rc)
            rc = stat_rel(sb, rt, st, &e);
        if (rc)
            fs_errno(req, rc, sf, "cannot move");
        else
            api_respond_json(req, 200, json_pack("{s:o}", "entry", e));
    }
    json_decref(m);
}

void api_e2b_fs_move(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, move_in, NULL);
}

/* ---- Remove ---- */

/* The request a removal answers, and the path it shows. */
struct removal {
    http_req *req;
    char shown[FILES_PATH_MAX + 16];
};

static void removed(int rc, void *arg)
{
    struct removal *r = arg;
    if (r->req->aborted)
        http_respond(r->req, 499, NULL, "", 0, NULL);
    else if (rc)
        fs_errno(r->req, rc, r->shown, "cannot remove");
    else
        http_respond(r->req, 200, "application/json", "{}", 2, NULL);
    free(r);
}

/* Remove name in dir (consumed): files_remove, answered by removed. */
static void remove_at(struct app *app, http_req *req, int dir, const char *name, const char *shown)
{
    struct removal *r = calloc(1, sizeof *r);
    if (!r) {
        close(dir);
        fs_errno(req, -ENOMEM, shown, "cannot remove");
        return;
    }
    r->req = req;
    snprintf(r->shown, sizeof r->shown, "%s", shown);
    files_remove(app->loop, dir, name, removed, r);
}

static void remove_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    json_t *m = sb ? message(req) : NULL;
    if (m && take_path(req, m, "path", rel, sizeof rel, shown, sizeof shown)) {
        int dir = -1;
        const char *name = NULL;
        int rc = !rel[0] ? -EINVAL : open_parent(sb, rel, false, &dir, &name);
        if (rc)
            fs_errno(req, rc, shown, "cannot remove");
        else
            remove_at(app, req, dir, name, shown);
    }
    json_decref(m);
}

void api_e2b_fs_remove(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, remove_in, NULL);
}
