/*
 * api_files_upload.c — PUT /v1/sandboxes/{sid}/files/{path}: a streamed upload, written
 * by a process in the sandbox. Paths are confined by files.c. api_files_write (api.h) is
 * the same write for a body already in memory, answered by its caller (E2B's POST /files).
 *
 * Memory: the file is never held. The body arrives through http.c's streamed-body mode:
 * each piece is copied into one of two UPLOAD_BUF buffers while the other is being
 * written to the writer's pipe; when both are busy the body is paused, so the connection
 * stops reading and the client is held back by TCP: about 2 MiB per upload, plus the
 * pipe's buffer, whatever the file's size.
 *
 * Uploads are charged to the sandbox: the daemon resolves and creates the file (files.c,
 * every openat2 rule applies), but the bytes are written by a writer process inside the
 * sandbox (/bin/cat, started through the sandbox's init: the sandbox's user, seccomp
 * filter and cgroup) with stdin a pipe from the daemon and stdout the file. Pages of the
 * workspace tmpfs are charged to the cgroup of the process that writes them, so the
 * sandbox pays for them in memory and diskMb, as for bytes its own code writes. The
 * daemon writes the pipe without blocking (libuv queues, the body pauses); a writer that
 * stops reading stalls only its own upload. The writer's end tells the outcome: ENOSPC is
 * 507 DISK_FULL, ENOMEM or the OOM killer is 507 MEMORY_LIMIT, and a file is put in place
 * only when the writer exited 0 after EOF and the file holds every byte received. A
 * Content-Length that cannot fit (free space, memory headroom) is refused before anything
 * is written. Without root there are no cgroups: the same writer runs in the sandbox and
 * fills its workspace tmpfs (capped by diskMb), charged to no memory cgroup.
 *
 * Uploads are atomic: the body goes to a hidden temporary file next to the target,
 * created O_EXCL|O_NOFOLLOW and chowned to the sandbox's user, and is renamed over the
 * target once complete. Readers in the sandbox never see half a file, a failed upload
 * leaves nothing behind, and a name that is a planted hard link or symlink is replaced,
 * never written through. Metadata calls (resolving, creating, renaming) run on the loop
 * (see files.c for why that is bounded).
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
#include "api_json.h"
#include "jsonx.h"
#include "lifecycle.h"
#include "log.h"
#include "sandbox.h"
#include "api_files_int.h"

#define UPLOAD_BUF (1u << 20) /* each of the two upload buffers */

/* ---- PUT: streamed upload, written by a process in the sandbox ---- */

#define WRITER_ERR_MAX 512          /* the writer's stderr we keep, to name its error */
#define WRITER_PIPE_BYTES (1 << 20) /* capacity asked for the pipe to the writer */

struct upload {
    http_req *req; /* NULL once answered */
    uv_loop_t *loop;
    int root, dir, fd; /* workspace, parent directory, the temporary file */
    char tmp[48];
    char name[FILES_NAME_MAX + 1];
    char shown[FILES_PATH_MAX + 16];
    char *buf[2]; /* buf[fill_i] fills while the other may be in flight */
    size_t fill;  /* bytes in buf[fill_i] */
    int fill_i;
    size_t inflight; /* bytes of the write in flight */
    bool writing, body_done, failed, finished;
    bool kill_writer; /* the failure is ours: the writer must be ended */
    int error;        /* -errno of our own failure; 0 when the writer's exit says why */
    uint64_t written, received, max;
    uint64_t memory_mb, disk_mb; /* the sandbox's limits, for messages */
    char sid[SBX_ID_MAX + 1];    /* its sandbox, found by id: arriving bytes are activity */
    /* The writer: /bin/cat in the sandbox, stdin = our pipe, stdout = the temporary file */
    jail *jail;        /* valid until the writer's exit was reported (always is) */
    jail_proc *writer; /* NULL until init started it, and once it exited */
    /* writer_started: asked for (its start or its exit is still to be heard of);
     * writer_exited: that is over (it exited, or it could not be started) */
    bool writer_started, writer_exited, kill_sent, eof_sent;
    int writer_status; /* wait(2) status */
    bool oom_killed;   /* the sandbox's OOM-kill counter moved while it ran */
    uint64_t oom_before;
    int errfd; /* read end of the writer's stderr, O_NONBLOCK */
    char errtext[WRITER_ERR_MAX];
    uv_pipe_t pipe; /* write end of the writer's stdin */
    bool pipe_init, pipe_closed;
    uv_write_t w;
    api_files_written_cb done; /* api_files_write's: answers a success instead of PUT */
    void *done_arg;
};

static void upload_free(struct upload *u)
{
    if (u->fd >= 0)
        close(u->fd);
    if (u->errfd >= 0)
        close(u->errfd);
    if (u->dir >= 0) {
        if (!u->finished)
            (void)unlinkat(u->dir, u->tmp, 0);
        close(u->dir);
    }
    if (u->root >= 0)
        close(u->root);
    free(u->buf[0]);
    free(u->buf[1]);
    if (u->done)
        u->done(NULL, NULL, 0, u->done_arg); /* failed; answered already */
    free(u);
}

/* Freed once answered, the writer's exit reported and the pipe's handle closed. */
static void upload_maybe_free(struct upload *u)
{
    if (!u->req && !u->writing && (!u->pipe_init || u->pipe_closed) &&
        (!u->writer_started || u->writer_exited))
        upload_free(u);
}

static void pipe_closed(uv_handle_t *h)
{
    struct upload *u = h->data;
    u->pipe_closed = true;
    upload_maybe_free(u);
}

/* EOF for the writer (or, after a failure, a broken pipe); cancels a write in flight. */
static void upload_close_pipe(struct upload *u)
{
    if (u->pipe_init && !uv_is_closing((uv_handle_t *)&u->pipe))
        uv_close((uv_handle_t *)&u->pipe, pipe_closed);
}

/* The writer's failure as -errno, from what it printed (coreutils prints strerror in the
 * C locale) or from how it ended. */
static int writer_errno(const struct upload *u)
{
    static const struct {
        const char *text;
        int err;
    } TEXTS[] = {
        { "No space left on device", ENOSPC },
        { "Disk quota exceeded", EDQUOT },
        { "Cannot allocate memory", ENOMEM },
        { "File too large", EFBIG },
    };
    if (u->oom_killed)
        return -ENOMEM;
    for (size_t i = 0; i < sizeof TEXTS / sizeof TEXTS[0]; i++)
        if (strstr(u->errtext, TEXTS[i].text))
            return -TEXTS[i].err;
    if (WIFSIGNALED(u->writer_status))
        return -EINTR; /* killed, not by the OOM killer: the sandbox went away or its code */
    return -EIO;
}

static void upload_respond_failure(struct upload *u, http_req *req)
{
    int rc = u->error ? u->error : writer_errno(u);
    switch (-rc) {
    case EFBIG:
        if (u->error) {
            http_respond_error(req, 413, "PAYLOAD_TOO_LARGE",
                               "the file exceeds the limit of %llu bytes (--max-file-bytes)",
                               (unsigned long long)u->max);
            return;
        }
        __attribute__((fallthrough)); /* the workspace refused the size */
    case ENOSPC:
    case EDQUOT:
        http_respond_error(req, 507, "DISK_FULL",
                           "cannot write '%s': the workspace is full after %llu bytes "
                           "(the sandbox's diskMb is %llu); nothing was written",
                           u->shown, (unsigned long long)u->received,
                           (unsigned long long)u->disk_mb);
        return;
    case ENOMEM:
        http_respond_error(req, 507, "MEMORY_LIMIT",
                           "cannot write '%s': the sandbox's memory limit (memoryMb %llu) was "
                           "reached after %llu bytes; workspace files are held in the "
                           "sandbox's memory; nothing was written",
                           u->shown, (unsigned long long)u->memory_mb,
                           (unsigned long long)u->received);
        return;
    case EINTR:
        http_respond_error(req, 409, "CONFLICT",
                           "cannot write '%s': the writer in the sandbox was killed by signal "
                           "%d before the file was complete; nothing was written",
                           u->shown, WTERMSIG(u->writer_status));
        return;
    case EAGAIN:
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "cannot write '%s': the sandbox is at its process limit and cannot "
                           "start the writer",
                           u->shown);
        return;
    case EBUSY:
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "cannot write '%s': too many starts wait for the sandbox's init "
                           "(--max-pending-spawns)",
                           u->shown);
        return;
    case ETIMEDOUT:
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "cannot write '%s': the sandbox's init did not start the writer in "
                           "time (--init-reply-timeout-ms; the sandbox is starved of CPU)",
                           u->shown);
        return;
    case ECANCELED:
        http_respond_error(req, 404, "NOT_FOUND", "cannot write '%s': the sandbox was deleted",
                           u->shown);
        return;
    case EIO:
        if (u->errtext[0]) {
            http_respond_error(req, 500, "INTERNAL_ERROR", "cannot write '%s': %s", u->shown,
                               u->errtext);
            return;
        }
        __attribute__((fallthrough));
    default: api_files_respond_errno(req, rc, u->shown, "cannot write the file");
    }
}

/* Answer once the outcome is known: the writer ended (or never started). */
static void upload_answer(struct upload *u)
{
    http_req *req = u->req;
    if (!req)
        return;
    u->req = NULL;
    if (!u->failed) {
        /* the writer read everything to EOF and exited 0: check, then put it in place */
        struct stat st;
        if (fstat(u->fd, &st) < 0 || (uint64_t)st.st_size != u->received) {
            u->failed = true;
            u->error = -EIO;
            snprintf(u->errtext, sizeof u->errtext, "the file holds %lld of %llu bytes",
                     (long long)st.st_size, (unsigned long long)u->received);
        } else if (renameat(u->dir, u->tmp, u->dir, u->name) < 0) {
            u->failed = true;
            u->error = -errno;
        } else {
            u->finished = true;
        }
    }
    if (req->aborted)
        http_respond(req, 499, NULL, "", 0, NULL); /* completes; nothing is sent */
    else if (u->failed)
        upload_respond_failure(u, req);
    else if (u->done) {
        api_files_written_cb done = u->done;
        u->done = NULL; /* called once */
        done(req, u->shown, u->received, u->done_arg);
    } else
        api_respond_json(
            req, 201, json_pack("{s:s, s:I}", "path", u->shown, "size", (json_int_t)u->received));
}

static void write_cb(uv_write_t *w, int status);

/* Hand bytes to the writer; the pipe is non-blocking, libuv queues what does not fit. */
static int upload_write(struct upload *u, char *data, size_t len)
{
    uv_buf_t b = uv_buf_init(data, (unsigned)len);
    u->w.data = u;
    int rc = uv_write(&u->w, (uv_stream_t *)&u->pipe, &b, 1, write_cb);
    if (rc)
        return rc;
    u->writing = true;
    u->inflight = len;
    return 0;
}

/* The one state machine: feed the writer, resume the body, send EOF, or wind down after
 * a failure, and answer once the writer's exit says how it went. */
static void upload_step(struct upload *u)
{
    if (!u->failed) {
        if (!u->writing && u->fill > 0) {
            int rc = upload_write(u, u->buf[u->fill_i], u->fill);
            if (rc) {
                u->failed = u->kill_writer = true;
                u->error = rc;
            } else {
                u->fill_i ^= 1;
                u->fill = 0;
            }
        }
    }
    if (!u->failed) {
        if (!u->body_done || u->writing) {
            if (u->req && u->req->body_paused && u->fill < UPLOAD_BUF / 2)
                http_body_resume(u->req);
            return;
        }
        /* every byte is with the writer: EOF tells it to finish; its exit answers */
        u->eof_sent = true;
        upload_close_pipe(u);
        if (!u->writer_exited)
            return;
        upload_answer(u);
        upload_maybe_free(u);
        return;
    }
    /* failed: stop feeding; end the writer when it is our failure, not its own */
    upload_close_pipe(u);
    if (u->kill_writer && u->writer && !u->kill_sent) {
        u->kill_sent = true;
        (void)jail_proc_kill(u->writer, SIGKILL);
    }
    if (u->writer_started && !u->writer_exited)
        return; /* writer_exited comes back */
    upload_answer(u);
    upload_maybe_free(u);
}

/* A failure of ours (client, limits, the daemon): the writer is ended. */
static void upload_fail(struct upload *u, int err)
{
    if (!u->failed) {
        u->failed = u->kill_writer = true;
        u->error = err;
    }
    upload_step(u);
}

static void write_cb(uv_write_t *w, int status)
{
    struct upload *u = w->data;
    u->writing = false;
    if (status == 0) {
        u->written += u->inflight;
    } else if (!u->failed) {
        /* EPIPE: the writer stopped reading; its exit status says why */
        u->failed = true;
        u->error = status == UV_EPIPE ? 0 : status;
        u->kill_writer = status != UV_EPIPE;
    }
    u->inflight = 0;
    upload_step(u);
}

static void writer_exited(jail_proc *p, int status, void *arg)
{
    struct upload *u = arg;
    (void)p;
    u->writer = NULL;
    u->writer_exited = true;
    u->writer_status = status;
    u->oom_killed = jail_oom_kills(u->jail) > u->oom_before;
    u->jail = NULL;
    ssize_t n = read(u->errfd, u->errtext, sizeof u->errtext - 1);
    u->errtext[n > 0 ? n : 0] = '\0';
    for (char *c = u->errtext; *c; c++)
        if (*c == '\n')
            *c = ' ';
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!u->failed && (!clean || !u->eof_sent)) {
        u->failed = true; /* ended before it had everything, or said it failed */
        u->error = 0;
    }
    upload_step(u);
}

/* init's answer to the writer's start: the writer runs (its exit comes later), or it
 * could not be started and no exit will come. */
static void writer_started(jail_proc *p, int rc, const char *msg, void *arg)
{
    struct upload *u = arg;
    if (rc) {
        log_warn("upload of %s: cannot start the writer: %s", u->shown, msg ? msg : strerror(-rc));
        u->writer_exited = true;
        u->jail = NULL;
        /* The pipe may have broken first (init closed its copy of the read end), which
         * failed the upload without a reason: the reason is this one. */
        if (u->failed && !u->error)
            u->error = rc;
        upload_fail(u, rc);
        return;
    }
    u->writer = p;
    if (u->kill_writer && !u->kill_sent) { /* we failed while it was being started */
        u->kill_sent = true;
        (void)jail_proc_kill(p, SIGKILL);
    }
}

/* Start the writer: /bin/cat inside the sandbox, reading our pipe and writing the
 * temporary file. It runs as the sandbox's user under its seccomp filter and in its
 * cgroup, so the pages it writes into the workspace tmpfs are charged to the sandbox's
 * memory and fill its diskMb, exactly as if the sandbox's own code had written them.
 * The only call into the jail's spawn API (kept alone so it can follow that API). */
static int writer_spawn(struct upload *u, sandbox *sb, int in_fd, int err_fd, char *err,
                        size_t errlen)
{
    /* The OOM killer's first choice: when the upload meets the memory limit, the writer
     * dies (its pages go with the temporary file), not the sandbox's init or code. */
    static const char *const argv[] = {
        "/bin/sh",
        "-c",
        "echo 1000 2>/dev/null >/proc/self/oom_score_adj; exec /bin/cat",
        NULL,
    };
    static const char *const envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };
    struct jail_spawn_opts so = {
        .argv = argv,
        .envp = envp,
        .cwd = "/",
        .stdin_fd = in_fd,
        .stdout_fd = u->fd,
        .stderr_fd = err_fd,
        .extra_fd = -1,
    };
    u->jail = sb->jail;
    u->oom_before = jail_oom_kills(sb->jail);
    int rc = jail_spawn(sb->jail, &so, writer_started, writer_exited, u, NULL, err, errlen);
    if (!rc)
        u->writer_started = true; /* writer_started() or writer_exited() comes back */
    return rc;
}

static void on_up_body(http_req *req, const char *data, size_t len, void *arg)
{
    struct upload *u = arg;
    (void)req;
    if (u->failed)
        return;
    u->received += len;
    life_touch(sbx_find(u->sid)); /* an upload in progress keeps its sandbox awake */
    if (u->received > u->max) {
        upload_fail(u, -EFBIG);
        return;
    }
    /* A span is at most http.c's pending buffer plus one read (~320 KiB). The filling
     * buffer is handed to the writer whenever no write is in flight, and the body is
     * paused once it holds half of UPLOAD_BUF while a write is in flight, so it never
     * overflows. */
    if (u->fill + len > UPLOAD_BUF) {
        upload_fail(u, -ENOBUFS);
        return;
    }
    memcpy(u->buf[u->fill_i] + u->fill, data, len);
    u->fill += len;
    if (!u->writing)
        upload_step(u);
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
    upload_step(u);
}

static void on_up_abort(http_req *req, void *arg)
{
    struct upload *u = arg;
    (void)req;
    u->kill_writer = true; /* whatever failed before: nobody waits for this file now */
    upload_fail(u, -EPIPE);
}

/* Fail fast when the announced size cannot fit: the workspace's free space and, for a
 * tmpfs workspace (rootless: its files are held in the sandbox's memory), the sandbox's
 * memory headroom. 0, or the request is answered. */
static int upload_precheck(http_req *req, sandbox *sb, int root, uint64_t announced,
                           const char *shown)
{
    struct statvfs vs;
    if (fstatvfs(root, &vs) == 0) {
        uint64_t avail = (uint64_t)vs.f_bavail * vs.f_frsize;
        if (announced > avail) {
            http_respond_error(req, 507, "DISK_FULL",
                               "cannot write '%s': the file of %llu bytes does not fit in the "
                               "workspace, %llu bytes are free (the sandbox's diskMb is %llu)",
                               shown, (unsigned long long)announced, (unsigned long long)avail,
                               (unsigned long long)sb->limits.disk_mb);
            return -1;
        }
    }
    uint64_t room;
    if (jail_workspace_in_memory(sb->jail) && jail_memory_headroom(sb->jail, &room) == 0 &&
        announced > room) {
        http_respond_error(req, 507, "MEMORY_LIMIT",
                           "cannot write '%s': the file of %llu bytes does not fit in the "
                           "sandbox's memory, %llu bytes are left of its limit (memoryMb %llu); "
                           "workspace files are held in the sandbox's memory",
                           shown, (unsigned long long)announced, (unsigned long long)room,
                           (unsigned long long)sb->limits.memory_mb);
        return -1;
    }
    return 0;
}

/* What PUT writes: the normalised path, its display form, the size the client announced. */
struct put_target {
    char rel[FILES_PATH_MAX + 1];
    char shown[FILES_PATH_MAX + 16];
    uint64_t announced;
};

/* Step 1, before anything is allocated: the sandbox, a file path (not the workspace) and
 * an announced size within --max-file-bytes. NULL once the request has been answered. */
static sandbox *put_check(struct app *app, http_req *req, const route_params *p,
                          struct put_target *t)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return NULL;
    if (!api_files_take_path(req, route_param(p, "path"), t->rel, sizeof t->rel))
        return NULL;
    files_display(t->rel, t->shown, sizeof t->shown);
    if (!t->rel[0]) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "PUT needs a file path, not the workspace itself");
        return NULL;
    }
    uint64_t max = app->cfg->max_file_bytes;
    t->announced = req->body_streaming ? req->content_length : req->body.len;
    if (t->announced > max) {
        http_respond_error(req, 413, "PAYLOAD_TOO_LARGE",
                           "the file of %llu bytes exceeds the limit of %llu bytes "
                           "(--max-file-bytes)",
                           (unsigned long long)t->announced, (unsigned long long)max);
        return NULL;
    }
    return sb;
}

/* Step 2: the upload and its two buffers, no fd open yet. NULL when out of memory. */
static struct upload *upload_new(struct app *app, const sandbox *sb, const struct put_target *t)
{
    struct upload *u = calloc(1, sizeof *u);
    if (!u || !(u->buf[0] = malloc(UPLOAD_BUF)) || !(u->buf[1] = malloc(UPLOAD_BUF))) {
        if (u) {
            free(u->buf[0]);
            free(u);
        }
        return NULL;
    }
    u->root = u->dir = u->fd = u->errfd = -1;
    u->loop = app->loop;
    u->max = app->cfg->max_file_bytes;
    u->memory_mb = sb->limits.memory_mb;
    u->disk_mb = sb->limits.disk_mb;
    memcpy(u->shown, t->shown, sizeof t->shown);
    return u;
}

/* Step 3: the workspace, then the room check (before any directory is made), the parent
 * directories (created as needed, owned by the sandbox's user) and the hidden temporary
 * file. 0; or -1 once the request has been answered and u freed. */
static int upload_open_target(struct upload *u, http_req *req, sandbox *sb,
                              const struct put_target *t)
{
    int rc = files_open_root(jail_workspace(sb->jail));
    if (rc >= 0) {
        u->root = rc;
        if (upload_precheck(req, sb, u->root, t->announced, t->shown)) {
            upload_free(u);
            return -1;
        }
    }
    const char *name = NULL;
    if (rc >= 0)
        rc = files_open_parent(u->root, t->rel, true, jail_host_uid(sb->jail),
                               jail_host_gid(sb->jail), &u->dir, &name);
    if (rc >= 0) {
        snprintf(u->name, sizeof u->name, "%s", name);
        if (stamp_id(u->tmp, sizeof u->tmp, ".sbx-upload-"))
            snprintf(u->tmp, sizeof u->tmp, ".sbx-upload-%d", u->fd);
        u->fd = openat(u->dir, u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        rc = u->fd < 0 ? -errno : 0;
        if (!rc && fchown(u->fd, jail_host_uid(sb->jail), jail_host_gid(sb->jail)) < 0)
            rc = -errno;
    }
    if (rc < 0) {
        if (rc == -EEXIST || rc == -ENOTDIR)
            http_respond_error(req, 409, "CONFLICT",
                               "cannot write '%s': a parent is not a directory", t->shown);
        else
            api_files_respond_errno(req, rc, t->shown, "cannot write the file");
        if (u->fd < 0 && u->dir >= 0) {
            close(u->dir); /* no temporary file was made: nothing to unlink */
            u->dir = -1;
        }
        upload_free(u);
        return -1;
    }
    return 0;
}

/* Step 4, once the temporary file exists: the writer in the sandbox, its stdin a pipe
 * from us (handed to a uv_pipe), its stderr a pipe we read to name its error, its stdout
 * the temporary file. 0 or -errno (err may say why). */
static int upload_start_writer(struct upload *u, sandbox *sb, char *err, size_t errlen)
{
    int in[2] = { -1, -1 }, er[2] = { -1, -1 };
    int rc;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0) {
        rc = -errno;
    } else {
        (void)fcntl(in[1], F_SETPIPE_SZ, WRITER_PIPE_BYTES); /* fewer wake-ups; a hint */
        (void)fcntl(er[0], F_SETFL, O_NONBLOCK);
        rc = writer_spawn(u, sb, in[0], er[1], err, errlen);
    }
    if (in[0] >= 0)
        close(in[0]); /* the writer has its own copies now */
    if (er[1] >= 0)
        close(er[1]);
    u->errfd = er[0];
    if (!rc) {
        uv_pipe_init(u->loop, &u->pipe, 0);
        u->pipe.data = u;
        u->pipe_init = true;
        rc = uv_pipe_open(&u->pipe, in[1]); /* made non-blocking */
        if (!rc)
            in[1] = -1; /* handed over: closed with the handle */
    }
    if (in[1] >= 0)
        close(in[1]);
    return rc;
}

/* Steps 2 to 4 and the body: buffered (data, len: in memory until req is answered) or,
 * with data NULL, streamed to on_body. */
static void upload_begin(struct app *app, http_req *req, sandbox *sb, const struct put_target *t,
                         const char *data, size_t len, api_files_written_cb done, void *arg)
{
    struct upload *u = upload_new(app, sb, t);
    if (!u) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        if (done)
            done(NULL, NULL, 0, arg);
        return;
    }
    u->done = done;
    u->done_arg = arg;
    if (upload_open_target(u, req, sb, t))
        return;
    char err[256] = "";
    snprintf(u->sid, sizeof u->sid, "%s", sb->id);
    int rc = upload_start_writer(u, sb, err, sizeof err);
    u->req = req;
    req->cb_arg = u;
    req->on_abort = on_up_abort;
    if (rc) {
        if (!u->writer_started)
            log_warn("upload into %s: cannot start the writer: %s", sb->id,
                     err[0] ? err : strerror(-rc));
        upload_fail(u, rc);
        return;
    }
    if (data) {
        u->received = len;
        u->body_done = true;
        if (len > 0 && (rc = upload_write(u, (char *)data, len))) {
            upload_fail(u, rc);
            return;
        }
        upload_step(u);
        return;
    }
    req->on_body = on_up_body;
    req->on_body_end = on_up_body_end;
}

void api_files_write(struct app *app, http_req *req, sandbox *sb, const char *rel, const char *data,
                     size_t len, api_files_written_cb done, void *arg)
{
    struct put_target t;
    snprintf(t.rel, sizeof t.rel, "%s", rel);
    files_display(t.rel, t.shown, sizeof t.shown);
    t.announced = len;
    if (!t.rel[0]) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "a write needs a file path, not the "
                           "workspace itself");
        done(NULL, NULL, 0, arg);
        return;
    }
    if (len > app->cfg->max_file_bytes) {
        http_respond_error(req, 413, "PAYLOAD_TOO_LARGE",
                           "the file of %zu bytes exceeds the limit of %llu bytes "
                           "(--max-file-bytes)",
                           len, (unsigned long long)app->cfg->max_file_bytes);
        done(NULL, NULL, 0, arg);
        return;
    }
    upload_begin(app, req, sb, &t, data ? data : "", len, done, arg);
}

void api_files_put(struct app *app, http_req *req, const route_params *p)
{
    struct put_target t;
    sandbox *sb = put_check(app, req, p, &t);
    if (!sb)
        return;
    /* A buffered body (the server has no body hook: embedders, tests) is in memory,
     * capped by --max-body-bytes, and stays alive until we answer. */
    upload_begin(app, req, sb, &t,
                 req->body_streaming ? NULL : (req->body.data ? req->body.data : ""), req->body.len,
                 NULL, NULL);
}
