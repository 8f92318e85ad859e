/*
 * exec.c — running one command (see exec.h). An exec_run owns three libuv handles (the
 * stdout and stderr pipes and a timer) plus, when stdin is given, a pipe to write it; it
 * is freed when every handle is closed, the process has been reaped, and the HTTP request
 * has been completed — whichever comes last. Until the sandbox's init has started the
 * command (exec_started) it holds only the raw fds; a start that fails, or that the
 * client gives up on, answers and frees it at once (the jail ends a late process).
 */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "jsonx.h"
#include "log.h"
#include "sandbox.h"
#include "sse.h"


struct exec_pipe {
    uv_pipe_t h;
    bool open;
    esc_carry carry;
    buf kept;
    const char *name;       /* "stdout" / "stderr" */
    struct exec_run *run;
};

struct exec_run {
    http_req *req;
    sandbox *sb;            /* NULL once the process exited (the sandbox may go away) */
    const struct config *cfg;
    sse sse;
    bool streaming;
    jail_proc *proc;
    bool exited, paused, timed_out, truncated, oom, finished;
    int status;
    struct exec_pipe out, err;
    uv_pipe_t in;
    bool in_open;
    uv_write_t inw;
    char *stdin_data;
    uv_timer_t timer;
    int handles;            /* libuv handles not yet closed */
    uint64_t start_ns, oom_before;
    /* until the sandbox's init has started the command (exec_started) */
    jail_req *start;
    int out_fd[2], in_fd;
    uint64_t timeout;
    char cwd[sizeof ((struct cmd_request *)0)->cwd];
};

int exec_exit_code(int status, const char **signame)
{
    *signame = NULL;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        *signame = sigabbrev_np(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return -1;
}

static void run_maybe_free(struct exec_run *r)
{
    if (r->handles == 0 && r->exited && r->finished) {
        buf_free(&r->out.kept);
        buf_free(&r->err.kept);
        free(r->stdin_data);
        free(r);
    }
}

static void handle_closed(uv_handle_t *h)
{
    struct exec_run *r = h->data;
    r->handles--;
    run_maybe_free(r);
}

static void pipe_closed(uv_handle_t *h)
{
    struct exec_pipe *p = h->data;
    p->run->handles--;
    run_maybe_free(p->run);
}

static void close_pipe(struct exec_pipe *p)
{
    if (!p->open)
        return;
    p->open = false;
    uv_close((uv_handle_t *)&p->h, pipe_closed);
}

/* Everything is in: send the response (or end the stream). */
static void run_finish(struct exec_run *r)
{
    if (r->finished || !r->exited || r->out.open || r->err.open)
        return;
    r->finished = true;
    uv_timer_stop(&r->timer);
    uv_close((uv_handle_t *)&r->timer, handle_closed);
    if (r->in_open) {
        r->in_open = false;
        uv_close((uv_handle_t *)&r->in, handle_closed);
    }
    const char *sig;
    int code = exec_exit_code(r->status, &sig);
    double ms = (double)(uv_hrtime() - r->start_ns) / 1e6;
    buf b;
    buf_init(&b, r->cfg->max_output_bytes * 12 + 4096);
    int rc = 0;
    if (r->streaming) {
        sse_event_text(&r->sse, "stdout", &r->out.carry, "", 0, true);
        sse_event_text(&r->sse, "stderr", &r->err.carry, "", 0, true);
        rc = buf_printf(&b, "{\"exitCode\":%d,\"durationMs\":%.3f,\"timedOut\":%s", code, ms,
                        r->timed_out ? "true" : "false");
    } else {
        rc = buf_puts(&b, "{\"stdout\":\"");
        rc = rc ? rc : esc_json(&b, NULL, r->out.kept.data, r->out.kept.len, true);
        rc = rc ? rc : buf_puts(&b, "\",\"stderr\":\"");
        rc = rc ? rc : esc_json(&b, NULL, r->err.kept.data, r->err.kept.len, true);
        rc = rc ? rc : buf_printf(&b, "\",\"exitCode\":%d,\"success\":%s,\"durationMs\":%.3f,"
                                  "\"timedOut\":%s,\"truncated\":%s", code,
                                  code == 0 && !r->timed_out ? "true" : "false", ms,
                                  r->timed_out ? "true" : "false", r->truncated ? "true" : "false");
    }
    if (!rc && sig)
        rc = buf_printf(&b, ",\"signal\":\"SIG%s\"", sig);
    if (!rc && r->oom)
        rc = buf_puts(&b, ",\"oomKilled\":true");
    if (!rc)
        rc = buf_puts(&b, "}");
    if (r->streaming) {
        if (!rc)
            sse_event(&r->sse, "exit", b.data, b.len);
        sse_end(&r->sse);
    } else if (rc) {
        http_respond_error(r->req, 500, "INTERNAL_ERROR", "the command's result does not fit");
    } else {
        http_respond(r->req, 200, "application/json", b.data, b.len, NULL);
    }
    buf_free(&b);
    r->req = NULL;
    run_maybe_free(r);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char chunk[65536];
    (void)h;
    (void)hint;
    *b = uv_buf_init(chunk, sizeof chunk);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void set_reading(struct exec_run *r, bool on)
{
    struct exec_pipe *ps[2] = { &r->out, &r->err };
    for (int i = 0; i < 2; i++) {
        if (!ps[i]->open)
            continue;
        if (on)
            uv_read_start((uv_stream_t *)&ps[i]->h, alloc_cb, read_cb);
        else
            uv_read_stop((uv_stream_t *)&ps[i]->h);
    }
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct exec_pipe *p = s->data;
    struct exec_run *r = p->run;
    if (n < 0) {
        close_pipe(p);
        run_finish(r);
        return;
    }
    if (n == 0)
        return;
    if (r->streaming) {
        int rc = sse_event_text(&r->sse, p->name, &p->carry, b->base, (size_t)n, false);
        if (rc == 1) {
            r->paused = true;
            set_reading(r, false);
        }
        return;
    }
    size_t room = r->cfg->max_output_bytes - p->kept.len;
    size_t take = (size_t)n < room ? (size_t)n : room;
    if (take < (size_t)n)
        r->truncated = true;
    buf_append(&p->kept, b->base, take);
}

static void on_drain(http_req *req, void *arg)
{
    struct exec_run *r = arg;
    (void)req;
    r->paused = false;
    set_reading(r, true);
}

static void kill_group(struct exec_run *r)
{
    if (r->proc && !r->exited)
        jail_proc_kill(r->proc, SIGKILL);
}

static void start_failed(struct exec_run *r, int rc, const char *msg);

static void on_abort(http_req *req, void *arg)
{
    struct exec_run *r = arg;
    (void)req;
    if (r->start) {
        /* not started yet: the jail ends the process if init starts it anyway */
        jail_cancel(r->start);
        r->start = NULL;
        start_failed(r, -ECONNABORTED, "the client went away before it started");
        return;
    }
    kill_group(r);
    if (r->paused) {
        r->paused = false;
        set_reading(r, true);   /* nobody reads the stream now: drain and discard */
    }
}

static void timer_cb(uv_timer_t *t)
{
    struct exec_run *r = t->data;
    if (!r->exited) {
        r->timed_out = true;
        kill_group(r);
        return;
    }
    /* drain grace over: orphans still hold the pipes */
    if (r->paused) {
        uv_timer_start(&r->timer, timer_cb, r->cfg->drain_grace_ms, 0);
        return;
    }
    close_pipe(&r->out);
    close_pipe(&r->err);
    run_finish(r);
}

static void exit_cb(jail_proc *p, int status, void *arg)
{
    struct exec_run *r = arg;
    (void)p;
    r->exited = true;
    r->status = status;
    r->proc = NULL;
    if (r->sb) {
        r->oom = jail_oom_kills(r->sb->jail) > r->oom_before;
        r->sb->nexec--;
        r->sb = NULL;
    }
    if (r->out.open || r->err.open)
        uv_timer_start(&r->timer, timer_cb, r->cfg->drain_grace_ms, 0);
    run_finish(r);
}

static void stdin_written(uv_write_t *w, int status)
{
    struct exec_run *r = w->data;
    (void)status;
    if (r->in_open) {
        r->in_open = false;
        uv_close((uv_handle_t *)&r->in, handle_closed);   /* EOF for the command */
    }
}

static int open_pipe(struct exec_run *r, struct exec_pipe *p, int fd, const char *name)
{
    p->run = r;
    p->name = name;
    buf_init(&p->kept, r->cfg->max_output_bytes);
    uv_pipe_init(uv_default_loop(), &p->h, 0);
    p->h.data = p;
    r->handles++;
    p->open = true;
    return uv_pipe_open(&p->h, fd);
}

/* The command could not start (or nobody waits for it any more): answer, free. */
static void start_failed(struct exec_run *r, int rc, const char *msg)
{
    for (int i = 0; i < 2; i++)
        if (r->out_fd[i] >= 0)
            close(r->out_fd[i]);
    if (r->in_fd >= 0)
        close(r->in_fd);
    cmd_respond_error(r->req, rc, r->cwd, msg ? msg : strerror(-rc), "command");
    free(r->stdin_data);
    free(r);
}

/* The sandbox's init started the command (or could not): from here on the run owns its
 * pipes, its timer and the request. */
static void exec_started(jail_proc *jp, int rc, const char *msg, void *arg)
{
    struct exec_run *r = arg;
    http_req *req = r->req;
    r->start = NULL;
    if (rc) {
        start_failed(r, rc, msg);
        return;
    }
    r->proc = jp;
    r->sb->nexec++;
    uv_timer_init(uv_default_loop(), &r->timer);
    r->timer.data = r;
    r->handles++;
    open_pipe(r, &r->out, r->out_fd[0], "stdout");
    open_pipe(r, &r->err, r->out_fd[1], "stderr");
    if (r->stdin_data) {
        uv_pipe_init(uv_default_loop(), &r->in, 0);
        r->in.data = r;
        r->handles++;
        r->in_open = true;
        uv_pipe_open(&r->in, r->in_fd);
        uv_buf_t ub = uv_buf_init(r->stdin_data, (unsigned)strlen(r->stdin_data));
        r->inw.data = r;
        if (uv_write(&r->inw, (uv_stream_t *)&r->in, &ub, 1, stdin_written))
            stdin_written(&r->inw, -1);
    }
    req->on_drain = on_drain;
    if (req->want_sse) {
        r->streaming = true;
        sse_begin(&r->sse, req);
    }
    if (r->timeout)
        uv_timer_start(&r->timer, timer_cb, r->timeout, 0);
    set_reading(r, true);
}

void api_exec(struct app *app, http_req *req, const route_params *p)
{
    char err[JX_ERR];
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    json_t *body = jx_body(req, false);
    if (!body)
        return;
    struct cmd_request cmd;
    const char *stdin_s = NULL;
    uint64_t timeout = sb->limits.timeout_ms;
    if (cmd_parse(body, app->cfg, &cmd, err, sizeof err) ||
        jx_string(body, "stdin", false, app->cfg->max_body_bytes, &stdin_s, err, sizeof err) ||
        sbx_parse_timeout(body, &timeout, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }

    struct exec_run *r = calloc(1, sizeof *r);
    int pi[2] = { -1, -1 }, out[2];
    if (!r || (stdin_s && (pipe2(pi, O_CLOEXEC) || !(r->stdin_data = strdup(stdin_s))))) {
        int e = errno;
        if (pi[0] >= 0) {
            close(pi[0]);
            close(pi[1]);
        }
        free(r);
        json_decref(body);
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot set up the command: %s",
                           strerror(e));
        return;
    }
    r->req = req;
    r->sb = sb;
    r->cfg = app->cfg;
    r->start_ns = uv_hrtime();
    r->oom_before = jail_oom_kills(sb->jail);
    r->timeout = timeout;
    r->in_fd = pi[1];
    snprintf(r->cwd, sizeof r->cwd, "%s", cmd.cwd);
    int rc = cmd_spawn(sb, &cmd, pi[0], exec_started, exit_cb, r, &r->start, out, err,
                       sizeof err);
    if (pi[0] >= 0)
        close(pi[0]);
    json_decref(body);
    if (rc) {
        if (pi[1] >= 0)
            close(pi[1]);
        free(r->stdin_data);
        free(r);
        cmd_respond_error(req, rc, cmd.cwd, err, "command");
        return;
    }
    r->out_fd[0] = out[0];
    r->out_fd[1] = out[1];
    req->on_abort = on_abort;   /* also while the start is pending */
    req->cb_arg = r;
}
