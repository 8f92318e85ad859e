/*
 * api_files.c — the files routes of API.md: GET/DELETE /v1/sandboxes/{sid}/files/{path},
 * POST …/files:move and POST …/files:mkdir, and the helpers the files routes share
 * (api_files_int.h). PUT, the streamed upload, is api_files_upload.c. Paths are
 * confined by files.c.
 *
 * Memory: neither direction holds a file in memory. An upload arrives through http.c's
 * streamed-body mode and is written by a process in the sandbox, about 2 MiB in flight
 * (api_files_upload.c). A download reads DOWNLOAD_CHUNK bytes at a time with uv_fs_read
 * and writes them to the client; when the client is slow the stream asks to pause and
 * the next read waits for on_drain. Either way a transfer holds about 2 MiB (plus a
 * pipe's buffer), whatever the file's size.
 *
 * Metadata calls run on the loop (see files.c for why that is bounded); downloads and
 * recursive removes run on the threadpool.
 *
 *
 * A transfer keeps no pointer to its sandbox after it starts, only fds and, for an
 * upload, its writer (a jail_proc whose exit the jail always reports, also when the
 * sandbox is deleted meanwhile: the writer is killed and the upload fails with 409):
 * deleting the sandbox cannot make a transfer touch freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stamp.h"
#include "api.h"
#include "files.h"
#include "api_fields.h"
#include "api_json.h"
#include "jsonx.h"
#include "log.h"
#include "sandbox.h"
#include "api_files_int.h"

#define DOWNLOAD_CHUNK (256u << 10) /* one read of a download */

/* ---- shared helpers ---- */

/* Answer an errno from resolving or acting on path with the fitting status. */
void api_files_respond_errno(http_req *req, int rc, const char *path, const char *what)
{
    switch (-rc) {
    case ENOENT:
    case ENOTDIR:
        http_respond_error(req, 404, "FILE_NOT_FOUND", "%s: no such file or directory: %s", what,
                           path);
        return;
    case ELOOP:
    case EXDEV:
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "%s: '%s' goes through a symbolic link or leaves the workspace; "
                           "links are never followed",
                           what, path);
        return;
    case ENXIO:
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "%s: '%s' is a socket or FIFO, not a regular file", what, path);
        return;
    case EEXIST:
    case ENOTEMPTY:
    case EISDIR:
    case EBUSY:
        http_respond_error(req, 409, "CONFLICT", "%s: '%s' is in the way: %s", what, path,
                           strerror(-rc));
        return;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        http_respond_error(req, 507, "DISK_FULL", "%s: the workspace is full (%s)", what, path);
        return;
    case ENAMETOOLONG:
    case EINVAL:
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s: invalid path '%s': %s", what, path,
                           strerror(-rc));
        return;
    case EACCES:
    case EPERM:
        http_respond_error(req, 409, "CONFLICT", "%s: '%s': %s", what, path, strerror(-rc));
        return;
    default:
        http_respond_error(req, 500, "INTERNAL_ERROR", "%s '%s': %s", what, path, strerror(-rc));
    }
}

/* Normalise the route's {path...}; on failure the request has been answered. */
bool api_files_take_path(http_req *req, const char *in, char *rel, size_t rellen)
{
    char err[JX_ERR + 64];
    if (files_normalize(in, rel, rellen, err, sizeof err)) {
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return false;
    }
    return true;
}

/* ---- GET: download or listing ---- */

struct download {
    http_req *req;
    uv_loop_t *loop;
    int fd;
    uint64_t off, size;
    bool reading, waiting, done;
    uv_fs_t r;
    char buf[DOWNLOAD_CHUNK];
};

static void dl_read(struct download *d);

static void dl_finish(struct download *d)
{
    d->done = true;
    if (d->reading)
        return; /* read_cb comes back here */
    if (d->req)
        http_stream_end(d->req); /* closes the connection if the file shrank */
    close(d->fd);
    free(d);
}

static void dl_read_cb(uv_fs_t *r)
{
    struct download *d = r->data;
    ssize_t n = r->result;
    uv_fs_req_cleanup(r);
    d->reading = false;
    if (d->done || n <= 0 || !d->req || d->req->aborted) {
        dl_finish(d);
        return;
    }
    d->off += (uint64_t)n;
    int rc = http_stream_write(d->req, d->buf, (size_t)n);
    if (rc < 0 || d->off >= d->size) {
        dl_finish(d);
        return;
    }
    if (rc == 1) {
        d->waiting = true; /* on_drain reads on */
        return;
    }
    dl_read(d);
}

static void dl_read(struct download *d)
{
    uint64_t left = d->size - d->off;
    size_t want = left < DOWNLOAD_CHUNK ? (size_t)left : DOWNLOAD_CHUNK;
    uv_buf_t b = uv_buf_init(d->buf, (unsigned)want);
    d->r.data = d;
    if (uv_fs_read(d->loop, &d->r, d->fd, &b, 1, (int64_t)d->off, dl_read_cb)) {
        dl_finish(d);
        return;
    }
    d->reading = true;
}

static void dl_drain(http_req *req, void *arg)
{
    struct download *d = arg;
    (void)req;
    if (d->waiting && !d->done) {
        d->waiting = false;
        dl_read(d);
    }
}

static void dl_abort(http_req *req, void *arg)
{
    struct download *d = arg;
    (void)req;
    if (d->waiting)
        dl_finish(d);
    /* a read in flight ends it from dl_read_cb */
}

static void send_listing(http_req *req, int fd, const char *shown, size_t max)
{
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        api_files_respond_errno(req, -e, shown, "cannot list");
        return;
    }
    json_t *entries = json_array();
    bool truncated = false;
    struct dirent *de;
    while ((de = readdir(dir))) {
        const char *n = de->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        if (json_array_size(entries) >= max) {
            truncated = true;
            break;
        }
        struct stat st;
        if (fstatat(dirfd(dir), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* removed meanwhile */
        const char *type = S_ISDIR(st.st_mode)   ? "dir"
                           : S_ISLNK(st.st_mode) ? "symlink"
                           : S_ISREG(st.st_mode) ? "file"
                                                 : "other";
        /* json_pack refuses a name that is not UTF-8 (it cannot be a JSON string): such
         * entries are left out rather than mangled */
        json_t *e = json_pack("{s:s, s:s, s:I, s:I}", "name", n, "type", type, "size",
                              (json_int_t)st.st_size, "mtime",
                              (json_int_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000);
        if (e)
            json_array_append_new(entries, e);
    }
    closedir(dir);
    json_t *j =
        json_pack("{s:s, s:o, s:b}", "path", shown, "entries", entries, "truncated", truncated);
    api_respond_json(req, 200, j);
}

void api_files_get(struct app *app, http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    if (!api_files_take_path(req, route_param(p, "path"), rel, sizeof rel))
        return;
    files_display(rel, shown, sizeof shown);
    int root = files_open_root(jail_workspace(sb->jail));
    if (root < 0) {
        api_files_respond_errno(req, root, shown, "cannot read");
        return;
    }
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW on top of
     * RESOLVE_NO_SYMLINKS for the last component */
    int fd = files_openat2(root, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    close(root);
    if (fd < 0) {
        api_files_respond_errno(req, fd, shown, "cannot read");
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        api_files_respond_errno(req, -e, shown, "cannot read");
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        send_listing(req, fd, shown, app->cfg->max_list_entries);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "'%s' is not a regular file or directory (FIFOs, sockets and "
                           "devices are not read)",
                           shown);
        return;
    }
    struct download *d = malloc(sizeof *d);
    if (!d) {
        close(fd);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    memset(d, 0, offsetof(struct download, buf));
    d->req = req;
    d->loop = app->loop;
    d->fd = fd;
    d->size = (uint64_t)st.st_size;
    req->cb_arg = d;
    req->on_drain = dl_drain;
    req->on_abort = dl_abort;
    if (http_stream_begin_sized(req, 200, files_content_type(rel), d->size, NULL) < 0 ||
        d->size == 0 || strcmp(req->method_name, "HEAD") == 0) {
        dl_finish(d);
        return;
    }
    dl_read(d);
}

/* ---- DELETE ---- */

/* The request a removal answers, and the path it shows. */
struct deletion {
    http_req *req;
    char shown[FILES_PATH_MAX + 16];
};

static void deleted(int rc, void *arg)
{
    struct deletion *d = arg;
    if (d->req->aborted)
        http_respond(d->req, 499, NULL, "", 0, NULL);
    else if (rc)
        api_files_respond_errno(d->req, rc, d->shown, "cannot delete");
    else
        api_respond_json(d->req, 200, json_pack("{s:b, s:s}", "deleted", 1, "path", d->shown));
    free(d);
}

void api_files_delete(struct app *app, http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    if (!api_files_take_path(req, route_param(p, "path"), rel, sizeof rel))
        return;
    files_display(rel, shown, sizeof shown);
    if (!rel[0]) {
        http_respond_error(req, 400, "VALIDATION_FAILED", "the workspace itself cannot be deleted");
        return;
    }
    int root = files_open_root(jail_workspace(sb->jail));
    int dir = -1;
    const char *name = NULL;
    int rc = root < 0 ? root : files_open_parent(root, rel, false, 0, 0, &dir, &name);
    if (root >= 0)
        close(root);
    struct deletion *d = rc ? NULL : calloc(1, sizeof *d);
    if (!rc && !d)
        rc = -ENOMEM;
    if (rc) {
        if (dir >= 0)
            close(dir);
        api_files_respond_errno(req, rc, shown, "cannot delete");
        return;
    }
    d->req = req;
    memcpy(d->shown, shown, sizeof shown);
    files_remove(app->loop, dir, name, deleted, d);
}

/* ---- POST files:move, files:mkdir ---- */

void api_files_move(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char err[JX_ERR];
    const char *from = NULL, *to = NULL;
    json_t *body = api_body_known(req, false, API_FIELDS_MOVE);
    if (!body)
        return;
    if (jx_string(body, "from", true, FILES_PATH_MAX, &from, err, sizeof err) ||
        jx_string(body, "to", true, FILES_PATH_MAX, &to, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    char rf[FILES_PATH_MAX + 1], rt[FILES_PATH_MAX + 1];
    char sf[FILES_PATH_MAX + 16], st[FILES_PATH_MAX + 16];
    bool ok = api_files_take_path(req, from, rf, sizeof rf) &&
              api_files_take_path(req, to, rt, sizeof rt);
    json_decref(body);
    if (!ok)
        return;
    files_display(rf, sf, sizeof sf);
    files_display(rt, st, sizeof st);
    if (!rf[0] || !rt[0]) {
        http_respond_error(req, 400, "VALIDATION_FAILED", "the workspace itself cannot be moved");
        return;
    }
    int root = files_open_root(jail_workspace(sb->jail));
    int df = -1, dt = -1;
    const char *nf = NULL, *nt = NULL;
    int rc = root < 0 ? root : files_open_parent(root, rf, false, 0, 0, &df, &nf);
    const char *which = sf;
    if (!rc) {
        which = st;
        rc = files_open_parent(root, rt, true, jail_host_uid(sb->jail), jail_host_gid(sb->jail),
                               &dt, &nt);
    }
    if (!rc) {
        which = sf;
        rc = renameat(df, nf, dt, nt) < 0 ? -errno : 0;
    }
    if (root >= 0)
        close(root);
    if (df >= 0)
        close(df);
    if (dt >= 0)
        close(dt);
    if (rc) {
        if (rc == -EINVAL)
            http_respond_error(req, 400, "VALIDATION_FAILED", "cannot move '%s' into itself ('%s')",
                               sf, st);
        else
            api_files_respond_errno(req, rc, which, "cannot move");
        return;
    }
    api_respond_json(req, 200, json_pack("{s:s, s:s}", "from", sf, "to", st));
}

void api_files_mkdir(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char err[JX_ERR];
    const char *path = NULL;
    json_t *body = api_body_known(req, false, API_FIELDS_MKDIR);
    if (!body)
        return;
    if (jx_string(body, "path", true, FILES_PATH_MAX, &path, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    bool ok = api_files_take_path(req, path, rel, sizeof rel);
    json_decref(body);
    if (!ok)
        return;
    files_display(rel, shown, sizeof shown);
    bool created = false;
    int root = files_open_root(jail_workspace(sb->jail));
    int rc = root;
    if (root >= 0) {
        rc = rel[0] ? files_mkdirs(root, rel, jail_host_uid(sb->jail), jail_host_gid(sb->jail),
                                   &created)
                    : 0;
        close(root);
    }
    if (rc) {
        if (rc == -EEXIST)
            http_respond_error(req, 409, "CONFLICT",
                               "'%s' (or a parent) exists and is not a "
                               "directory",
                               shown);
        else
            api_files_respond_errno(req, rc, shown, "cannot create the directory");
        return;
    }
    api_respond_json(req, created ? 201 : 200,
                     json_pack("{s:s, s:b}", "path", shown, "created", created));
}
