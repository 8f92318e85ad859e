/*
 * api_files.c — the files routes of API.md: PUT/GET/DELETE /v1/sandboxes/{sid}/files/{path},
 * POST …/files:move and POST …/files:mkdir. Paths are confined by files.c.
 *
 * Memory: neither direction holds a file in memory. An upload arrives through http.c's
 * streamed-body mode: each piece is copied into one of two UPLOAD_BUF buffers while the
 * other is being written by uv_fs_write on libuv's threadpool; when both are busy the
 * body is paused, so the connection stops reading and the client is held back by TCP.
 * A download reads DOWNLOAD_CHUNK bytes at a time with uv_fs_read and writes them to the
 * client; when the client is slow the stream asks to pause and the next read waits for
 * on_drain. Either way a transfer holds about 2 MiB, whatever the file's size.
 *
 * Uploads are atomic: the body goes to a hidden temporary file next to the target,
 * created O_EXCL|O_NOFOLLOW and chowned to the sandbox's user, and is renamed over the
 * target once complete. Readers in the sandbox never see half a file, a failed upload
 * leaves nothing behind, and a name that is a planted hard link or symlink is replaced,
 * never written through. Metadata calls run on the loop (see files.c for why that is
 * bounded); data moves and recursive removes run on the threadpool.
 *
 * A transfer keeps no pointer to its sandbox after it starts, only fds: deleting the
 * sandbox meanwhile (its workspace is detached, not unmounted under us) cannot make a
 * transfer touch freed memory; it just finishes on a workspace no one sees any more.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stamp.h"
#include "api.h"
#include "files.h"
#include "jsonx.h"
#include "log.h"
#include "sandbox.h"

#define UPLOAD_BUF (1u << 20)       /* each of the two upload buffers */
#define DOWNLOAD_CHUNK (256u << 10) /* one read of a download */

/* ---- shared helpers ---- */

/* Answer an errno from resolving or acting on path with the fitting status. */
static void respond_errno(http_req *req, int rc, const char *path, const char *what)
{
    switch (-rc) {
    case ENOENT:
    case ENOTDIR:
        http_respond_error(req, 404, "FILE_NOT_FOUND", "%s: no such file or directory: %s",
                           what, path);
        return;
    case ELOOP:
    case EXDEV:
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "%s: '%s' goes through a symbolic link or leaves the workspace; "
                           "links are never followed", what, path);
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
        http_respond_error(req, 413, "PAYLOAD_TOO_LARGE", "%s: the workspace is full (%s)",
                           what, path);
        return;
    case ENAMETOOLONG:
    case EINVAL:
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s: invalid path '%s': %s", what,
                           path, strerror(-rc));
        return;
    case EACCES:
    case EPERM:
        http_respond_error(req, 409, "CONFLICT", "%s: '%s': %s", what, path, strerror(-rc));
        return;
    default:
        http_respond_error(req, 500, "INTERNAL_ERROR", "%s '%s': %s", what, path,
                           strerror(-rc));
    }
}

/* Normalise the route's {path...}; on failure the request has been answered. */
static bool take_path(http_req *req, const char *in, char *rel, size_t rellen)
{
    char err[JX_ERR + 64];
    if (files_normalize(in, rel, rellen, err, sizeof err)) {
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return false;
    }
    return true;
}

/* ---- PUT: streamed upload ---- */

struct upload {
    http_req *req;
    uv_loop_t *loop;
    int root, dir, fd;
    char tmp[48];
    char name[FILES_NAME_MAX + 1];
    char shown[FILES_PATH_MAX + 16];
    char *buf[2];           /* buf[fill_i] fills while the other may be in flight */
    size_t fill;            /* bytes in buf[fill_i] */
    int fill_i;
    bool writing, body_done, failed, finished;
    int error;              /* first -errno of a write */
    uint64_t written, received, max;
    uv_fs_t w;
};

static void upload_free(struct upload *u)
{
    if (u->fd >= 0)
        close(u->fd);
    if (u->dir >= 0) {
        if (!u->finished || u->failed)
            (void)unlinkat(u->dir, u->tmp, 0);
        close(u->dir);
    }
    if (u->root >= 0)
        close(u->root);
    free(u->buf[0]);
    free(u->buf[1]);
    free(u);
}

/* Done (or failed, or the client went away): answer and release, once no write is in
 * flight. */
static void upload_end(struct upload *u)
{
    if (u->writing)
        return;   /* write_cb comes back here */
    http_req *req = u->req;
    u->req = NULL;
    if (!u->failed) {
        /* the whole file is on disk: put it in place (a rename within one directory) */
        if (renameat(u->dir, u->tmp, u->dir, u->name) < 0) {
            u->failed = true;
            u->error = -errno;
        } else {
            u->finished = true;
        }
    }
    if (req) {
        if (req->aborted)
            http_respond(req, 499, NULL, "", 0, NULL);   /* completes; nothing is sent */
        else if (u->failed && u->error == -EFBIG)
            http_respond_error(req, 413, "PAYLOAD_TOO_LARGE",
                               "the file exceeds the limit of %llu bytes (--max-file-bytes)",
                               (unsigned long long)u->max);
        else if (u->failed)
            respond_errno(req, u->error ? u->error : -EIO, u->shown, "cannot write the file");
        else {
            json_t *j = json_pack("{s:s, s:I}", "path", u->shown, "size",
                                  (json_int_t)u->written);
            jx_respond(req, 201, j);
        }
    }
    upload_free(u);
}

static void upload_fail(struct upload *u, int err)
{
    if (!u->failed) {
        u->failed = true;
        u->error = err;
    }
    upload_end(u);
}

static void upload_kick(struct upload *u);

static void write_cb(uv_fs_t *w)
{
    struct upload *u = w->data;
    ssize_t n = w->result;
    uv_fs_req_cleanup(w);
    u->writing = false;
    if (n < 0 && !u->failed) {
        u->failed = true;
        u->error = (int)n;   /* libuv errors are -errno on Unix */
    } else if (n >= 0) {
        u->written += (uint64_t)n;
    }
    if (u->failed || !u->req || u->req->aborted) {
        upload_end(u);
        return;
    }
    upload_kick(u);
}

/* Start writing the filled buffer when the disk is free; resume or finish as fit. */
static void upload_kick(struct upload *u)
{
    if (u->writing)
        return;
    if (u->fill > 0) {
        char *data = u->buf[u->fill_i];
        uv_buf_t b = uv_buf_init(data, (unsigned)u->fill);
        u->w.data = u;
        int rc = uv_fs_write(u->loop, &u->w, u->fd, &b, 1, (int64_t)u->written, write_cb);
        if (rc) {
            upload_fail(u, rc);
            return;
        }
        u->writing = true;
        u->fill_i ^= 1;
        u->fill = 0;
        /* a full short write cannot happen on a regular file except at ENOSPC, which
         * the next write then reports */
    }
    if (u->req && u->req->body_paused)
        http_body_resume(u->req);
    if (!u->writing && u->body_done)
        upload_end(u);
}

static void on_up_body(http_req *req, const char *data, size_t len, void *arg)
{
    struct upload *u = arg;
    (void)req;
    if (u->failed)
        return;
    u->received += len;
    if (u->received > u->max) {
        upload_fail(u, -EFBIG);
        return;
    }
    /* A span is at most http.c's pending buffer plus one read (~320 KiB). The filling
     * buffer is handed to the disk whenever the disk is free, and the body is paused once
     * it holds half of UPLOAD_BUF while a write is in flight, so it never overflows. */
    if (u->fill + len > UPLOAD_BUF) {
        upload_fail(u, -ENOBUFS);
        return;
    }
    memcpy(u->buf[u->fill_i] + u->fill, data, len);
    u->fill += len;
    if (!u->writing)
        upload_kick(u);
    else if (u->fill >= UPLOAD_BUF / 2)
        http_body_pause(u->req);
}

static void on_up_body_end(http_req *req, void *arg)
{
    struct upload *u = arg;
    (void)req;
    u->body_done = true;
    if (u->failed)
        return;
    upload_kick(u);
}

static void on_up_abort(http_req *req, void *arg)
{
    struct upload *u = arg;
    (void)req;
    upload_fail(u, -EPIPE);
}

void api_files_put(struct app *app, http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char rel[FILES_PATH_MAX + 1];
    if (!take_path(req, route_param(p, "path"), rel, sizeof rel))
        return;
    char shown[FILES_PATH_MAX + 16];
    files_display(rel, shown, sizeof shown);
    if (!rel[0]) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "PUT needs a file path, not the workspace itself");
        return;
    }
    uint64_t max = app->cfg->max_file_bytes;
    uint64_t announced = req->body_streaming ? req->content_length : req->body.len;
    if (announced > max) {
        http_respond_error(req, 413, "PAYLOAD_TOO_LARGE",
                           "the file of %llu bytes exceeds the limit of %llu bytes "
                           "(--max-file-bytes)", (unsigned long long)announced,
                           (unsigned long long)max);
        return;
    }
    struct upload *u = calloc(1, sizeof *u);
    if (!u || !(u->buf[0] = malloc(UPLOAD_BUF)) || !(u->buf[1] = malloc(UPLOAD_BUF))) {
        if (u) {
            free(u->buf[0]);
            free(u);
        }
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    u->root = u->dir = u->fd = -1;
    u->loop = app->loop;
    u->max = max;
    memcpy(u->shown, shown, sizeof shown);
    int rc = files_open_root(jail_workspace(sb->jail));
    const char *name = NULL;
    if (rc >= 0) {
        u->root = rc;
        rc = files_open_parent(u->root, rel, true, jail_host_uid(sb->jail),
                               jail_host_gid(sb->jail), &u->dir, &name);
    }
    if (rc >= 0) {
        snprintf(u->name, sizeof u->name, "%s", name);
        if (stamp_id(u->tmp, sizeof u->tmp, ".sbx-upload-"))
            snprintf(u->tmp, sizeof u->tmp, ".sbx-upload-%d", u->fd);
        u->fd = openat(u->dir, u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0644);
        rc = u->fd < 0 ? -errno : 0;
        if (!rc && fchown(u->fd, jail_host_uid(sb->jail), jail_host_gid(sb->jail)) < 0)
            rc = -errno;
    }
    if (rc < 0) {
        if (rc == -EEXIST || rc == -ENOTDIR)
            http_respond_error(req, 409, "CONFLICT",
                               "cannot write '%s': a parent is not a directory", shown);
        else
            respond_errno(req, rc, shown, "cannot write the file");
        if (u->fd < 0 && u->dir >= 0) {
            close(u->dir);   /* no temporary file was made: nothing to unlink */
            u->dir = -1;
        }
        upload_free(u);
        return;
    }
    u->req = req;
    req->cb_arg = u;
    req->on_abort = on_up_abort;
    if (!req->body_streaming) {
        /* The server buffered the body (it has no body hook: embedders, tests). The body
         * is already in memory and capped by --max-body-bytes, so write it here, once. */
        const char *d = req->body.data ? req->body.data : "";
        size_t left = req->body.len;
        while (left > 0) {
            ssize_t n = write(u->fd, d, left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                upload_fail(u, n < 0 ? -errno : -ENOSPC);
                return;
            }
            d += n;
            left -= (size_t)n;
            u->written += (uint64_t)n;
        }
        u->body_done = true;
        upload_end(u);
        return;
    }
    req->on_body = on_up_body;
    req->on_body_end = on_up_body_end;
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
        return;   /* read_cb comes back here */
    if (d->req)
        http_stream_end(d->req);   /* closes the connection if the file shrank */
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
        d->waiting = true;   /* on_drain reads on */
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
        respond_errno(req, -e, shown, "cannot list");
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
            continue;   /* removed meanwhile */
        const char *type = S_ISDIR(st.st_mode) ? "dir" : S_ISLNK(st.st_mode) ? "symlink"
                           : S_ISREG(st.st_mode) ? "file" : "other";
        /* json_pack refuses a name that is not UTF-8 (it cannot be a JSON string): such
         * entries are left out rather than mangled */
        json_t *e = json_pack("{s:s, s:s, s:I, s:I}", "name", n, "type", type, "size",
                              (json_int_t)st.st_size, "mtime",
                              (json_int_t)st.st_mtim.tv_sec * 1000 +
                                  st.st_mtim.tv_nsec / 1000000);
        if (e)
            json_array_append_new(entries, e);
    }
    closedir(dir);
    json_t *j = json_pack("{s:s, s:o, s:b}", "path", shown, "entries", entries, "truncated",
                          truncated);
    jx_respond(req, 200, j);
}

void api_files_get(struct app *app, http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    if (!take_path(req, route_param(p, "path"), rel, sizeof rel))
        return;
    files_display(rel, shown, sizeof shown);
    int root = files_open_root(jail_workspace(sb->jail));
    if (root < 0) {
        respond_errno(req, root, shown, "cannot read");
        return;
    }
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW on top of
     * RESOLVE_NO_SYMLINKS for the last component */
    int fd = files_openat2(root, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    close(root);
    if (fd < 0) {
        respond_errno(req, fd, shown, "cannot read");
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        respond_errno(req, -e, shown, "cannot read");
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
                           "devices are not read)", shown);
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

struct removal {
    uv_work_t w;
    http_req *req;
    int dir;
    int rc;
    char name[FILES_NAME_MAX + 1];
    char shown[FILES_PATH_MAX + 16];
};

static void rm_work(uv_work_t *w)
{
    struct removal *r = w->data;
    r->rc = files_remove_tree(r->dir, r->name);
}

static void rm_done(uv_work_t *w, int status)
{
    struct removal *r = w->data;
    (void)status;
    close(r->dir);
    if (r->req->aborted)
        http_respond(r->req, 499, NULL, "", 0, NULL);
    else if (r->rc)
        respond_errno(r->req, r->rc, r->shown, "cannot delete");
    else
        jx_respond(r->req, 200, json_pack("{s:b, s:s}", "deleted", 1, "path", r->shown));
    free(r);
}

void api_files_delete(struct app *app, http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    if (!take_path(req, route_param(p, "path"), rel, sizeof rel))
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
    struct stat st;
    if (!rc && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        rc = -errno;
    if (rc) {
        if (dir >= 0)
            close(dir);
        respond_errno(req, rc, shown, "cannot delete");
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        /* one unlink of one name: removes a symlink itself, never its target */
        rc = unlinkat(dir, name, 0) < 0 ? -errno : 0;
        close(dir);
        if (rc)
            respond_errno(req, rc, shown, "cannot delete");
        else
            jx_respond(req, 200, json_pack("{s:b, s:s}", "deleted", 1, "path", shown));
        return;
    }
    struct removal *r = calloc(1, sizeof *r);
    if (!r) {
        close(dir);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    r->req = req;
    r->dir = dir;
    r->w.data = r;
    snprintf(r->name, sizeof r->name, "%s", name);
    memcpy(r->shown, shown, sizeof shown);
    if ((rc = uv_queue_work(app->loop, &r->w, rm_work, rm_done))) {
        close(dir);
        free(r);
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot delete: %s", uv_strerror(rc));
    }
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
    json_t *body = jx_body(req, false);
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
    bool ok = take_path(req, from, rf, sizeof rf) && take_path(req, to, rt, sizeof rt);
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
            http_respond_error(req, 400, "VALIDATION_FAILED",
                               "cannot move '%s' into itself ('%s')", sf, st);
        else
            respond_errno(req, rc, which, "cannot move");
        return;
    }
    jx_respond(req, 200, json_pack("{s:s, s:s}", "from", sf, "to", st));
}

void api_files_mkdir(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    char err[JX_ERR];
    const char *path = NULL;
    json_t *body = jx_body(req, false);
    if (!body)
        return;
    if (jx_string(body, "path", true, FILES_PATH_MAX, &path, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    bool ok = take_path(req, path, rel, sizeof rel);
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
            http_respond_error(req, 409, "CONFLICT", "'%s' (or a parent) exists and is not a "
                               "directory", shown);
        else
            respond_errno(req, rc, shown, "cannot create the directory");
        return;
    }
    jx_respond(req, created ? 201 : 200,
               json_pack("{s:s, s:b}", "path", shown, "created", created));
}
