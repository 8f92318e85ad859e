/*
 * exec.c — running one command (see exec.h). An exec_run owns three libuv handles (the
 * stdout and stderr pipes and a timer) plus, when stdin is given, a pipe to write it; it
 * is freed when every handle is closed, the process has been reaped, and its sink (the
 * receiver of the output, command.h) has had its final call — whichever comes last. Until
 * the sandbox's init has started the command (exec_started) it holds only the raw fds; a
 * start that fails, or that the receiver gives up on (exec_abort), goes to the sink's
 * failed and is freed at once (the jail ends a late process). No HTTP here: the API layer
 * (api_exec.c) reads the request and implements the sink.
 *
 * Memory: everything a command makes the daemon hold is charged to its sandbox's budget
 * (budget.h), which the run keeps a reference to (the sandbox may go first):
 *   - plain: each stream is kept already JSON-escaped (what the response will hold, up to
 *     6 bytes per NUL), in a buf charged to the budget. The response is then built in the
 *     stdout buffer itself (stderr appended, the JSON around it) and handed to the sink
 *     without a copy (its answer); over HTTP it stays charged until the socket takes it. A stream the budget refuses
 *     is cut there, the rest read and dropped: "truncated": true, "truncatedBy":
 *     "sandbox-buffer-bytes" (or "max-output-bytes" for the per-stream cap).
 *   - SSE: events are charged while queued to the client (the sink's begin). Each read
 *     is sized so that its escaped event fits in what is left of the budget; when nothing
 *     fits, reading stops (the command blocks on its own writes) until bytes are released.
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

#include "budget.h"
#include "command.h"
#include "log.h"
#include "lifecycle.h"
#include "sandbox.h"

/* An SSE read is at most READ_MAX bytes and at least READ_MIN: fewer left in the budget
 * than the escaped size of READ_MIN (6 bytes each) plus an event's framing pauses reading,
 * except that a stream whose client has taken everything queued may always read READ_FLOOR
 * bytes: a stream that is read never starves because of the sandbox's streams that are not
 * (a budget shared by streams would otherwise deadlock a client that reads them in turn). */
#define READ_MAX 65536
#define READ_MIN 16384
#define READ_FLOOR 4096
#define EVENT_SLACK 512
#define ESCAPED(n) ((size_t)(n)*6 + EVENT_SLACK)

/* The JSON that opens a plain response; the stdout buffer leaves room for it. */
static const char RESP_HEAD[] = "{\"stdout\":\"";

struct exec_pipe {
    uv_pipe_t h;
    bool open;
    bool cut;   /* plain: nothing more is kept (a cap was reached) */
    size_t raw; /* plain: bytes of output kept, before escaping */
    esc_carry carry;
    buf kept;         /* plain: the output so far, JSON-escaped */
    const char *name; /* "stdout" / "stderr" */
    struct exec_run *run;
};

struct exec_run {
    cmd_sink *sink; /* NULL once it had its final call */
    sandbox *sb;    /* NULL once the process exited (the sandbox may go away) */
    const struct config *cfg;
    bool streaming;
    jail_proc *proc;
    bool exited, paused, timed_out, truncated, oom, finished;
    bool starved;             /* SSE: waiting for room in the budget (bw) or an empty queue */
    const char *truncated_by; /* the setting that cut the output */
    budget *bg;               /* the sandbox's budget; one reference */
    budget_waiter bw;         /* SSE: queued while reading waits for room in bg */
    int status;
    struct exec_pipe out, err;
    uv_pipe_t in;
    bool in_open;
    uv_write_t inw;
    char *stdin_data;
    size_t stdin_held; /* the copy of stdin, charged to bg until written */
    uv_timer_t timer;
    int handles; /* libuv handles not yet closed */
    uint64_t start_ns, oom_before;
    uint64_t frozen_mark; /* lifecycle.h: the timeout counts only unsuspended time */
    /* until the sandbox's init has started the command (exec_started) */
    jail_req *start;
    int out_fd[2], in_fd;
    uint64_t timeout;
    char cwd[sizeof((struct cmd_request *)0)->cwd];
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
        budget_cancel(r->bg, &r->bw);
        budget_release(r->bg, r->stdin_held);
        budget_unref(r->bg);
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
    budget_cancel(r->bg, &r->bw);
    if (r->streaming) {
        cmd_sink *s = r->sink;
        buf b;
        buf_init(&b, 4096);
        s->ops->text(s, "stdout", &r->out.carry, "", 0, true);
        s->ops->text(s, "stderr", &r->err.carry, "", 0, true);
        int rc = buf_printf(&b, "{\"exitCode\":%d,\"durationMs\":%.3f,\"timedOut\":%s", code, ms,
                            r->timed_out ? "true" : "false");
        if (!rc && sig)
            rc = buf_printf(&b, ",\"signal\":\"SIG%s\"", sig);
        if (!rc && r->oom)
            rc = buf_puts(&b, ",\"oomKilled\":true");
        if (!rc)
            rc = buf_puts(&b, "}");
        if (!rc)
            s->ops->event(s, "exit", b.data, b.len);
        s->ops->end(s);
        buf_free(&b);
    } else {
        /* Built in place in the stdout buffer: no second copy of the output is ever alive.
         * It leaves the budget here and is charged again, whole, once queued to the client. */
        buf *b = &r->out.kept;
        buf_set_budget(b, NULL);
        size_t hl = sizeof RESP_HEAD - 1;
        int rc = esc_json(b, &r->out.carry, "", 0, true);
        rc = rc ? rc : buf_append(b, RESP_HEAD, hl); /* room, then moved to the front */
        if (!rc) {
            memmove(b->data + hl, b->data, b->len - hl);
            memcpy(b->data, RESP_HEAD, hl);
        }
        rc = rc ? rc : buf_puts(b, "\",\"stderr\":\"");
        rc = rc ? rc : buf_append(b, r->err.kept.data, r->err.kept.len);
        rc = rc ? rc : esc_json(b, &r->err.carry, "", 0, true);
        buf_free(&r->err.kept);
        rc = rc ? rc
                : buf_printf(b,
                             "\",\"exitCode\":%d,\"success\":%s,\"durationMs\":%.3f,"
                             "\"timedOut\":%s,\"truncated\":%s",
                             code, code == 0 && !r->timed_out ? "true" : "false", ms,
                             r->timed_out ? "true" : "false", r->truncated ? "true" : "false");
        if (!rc && r->truncated_by)
            rc = buf_printf(b, ",\"truncatedBy\":\"%s\"", r->truncated_by);
        if (!rc && sig)
            rc = buf_printf(b, ",\"signal\":\"SIG%s\"", sig);
        if (!rc && r->oom)
            rc = buf_puts(b, ",\"oomKilled\":true");
        if (!rc)
            rc = buf_puts(b, "}");
        if (rc) {
            buf_free(b);
            r->sink->ops->answer(r->sink, NULL, 0);
        } else {
            size_t len = b->len;
            r->sink->ops->answer(r->sink, buf_steal(b), len);
        }
    }
    r->sink = NULL;
    run_maybe_free(r);
}

/* A streamed read is sized so that its escaped event fits in the budget; 0 bytes (libuv
 * then reports UV_ENOBUFS) when not even READ_MIN fits. */
static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char chunk[READ_MAX];
    struct exec_pipe *p = h->data;
    size_t n = sizeof chunk;
    (void)hint;
    if (p->run->streaming) {
        uint64_t room = budget_room(p->run->bg);
        uint64_t fit = room > EVENT_SLACK ? (room - EVENT_SLACK) / 6 : 0;
        n = fit < READ_MIN ? 0 : fit < n ? (size_t)fit : n;
        const cmd_sink *s = p->run->sink;
        if (s && s->ops->gone(s))
            n = sizeof chunk; /* nothing is kept for a client that is gone */
        else if (n == 0 && s && s->ops->queued(s) == 0)
            n = READ_FLOOR;
    }
    *b = uv_buf_init(chunk, (unsigned)n);
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

/* Room again in the budget: read on, unless the client asked to pause. */
static void budget_woken(budget_waiter *w)
{
    struct exec_run *r = w->arg;
    r->starved = false;
    if (!r->finished && !r->paused)
        set_reading(r, true);
}

/* Keep what fits of a plain stream, escaped; cut it (and say which cap) when it does not. */
static void keep_output(struct exec_run *r, struct exec_pipe *p, const char *d, size_t n)
{
    size_t room = r->cfg->max_output_bytes - p->raw;
    size_t take = n < room ? n : room;
    const char *why = take < n ? "max-output-bytes" : NULL;
    if (take && !p->cut) {
        size_t before = p->kept.len;
        esc_carry saved = p->carry;
        int rc = esc_json(&p->kept, &p->carry, d, take, false);
        if (rc) {
            /* back to the last whole chunk: the response holds a prefix of the output */
            p->kept.len = before;
            if (p->kept.data)
                p->kept.data[before] = '\0';
            p->carry = saved;
            why = rc == -ENOBUFS ? "sandbox-buffer-bytes" : "max-output-bytes";
        } else {
            p->raw += take;
        }
    } else if (take) {
        why = "max-output-bytes"; /* already cut: the reason was recorded then */
    }
    if (why) {
        p->cut = true;
        r->truncated = true;
        if (!r->truncated_by || strcmp(why, "sandbox-buffer-bytes") == 0)
            r->truncated_by = why;
    }
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct exec_pipe *p = s->data;
    struct exec_run *r = p->run;
    if (n == UV_ENOBUFS) {
        /* the budget has no room for another event: wait (the command blocks meanwhile)
         * for room, or for this client to take what is queued (on_drain then) */
        set_reading(r, false);
        r->bw.need = ESCAPED(READ_MIN);
        r->bw.cb = budget_woken;
        r->bw.arg = r;
        budget_wait(r->bg, &r->bw);
        r->starved = true;
        if (r->sink) /* so that exec_resume comes when the queue has gone */
            r->sink->ops->wait_drain(r->sink);
        return;
    }
    if (n < 0) {
        close_pipe(p);
        run_finish(r);
        return;
    }
    if (n == 0)
        return;
    if (r->streaming) {
        int rc = r->sink->ops->text(r->sink, p->name, &p->carry, b->base, (size_t)n, false);
        if (rc == 1) {
            r->paused = true;
            set_reading(r, false);
        }
        return;
    }
    keep_output(r, p, b->base, (size_t)n);
}

void exec_resume(exec_run *r)
{
    r->paused = false;
    r->starved = false;
    set_reading(r, true); /* alloc_cb decides what the budget allows */
}

static void kill_group(struct exec_run *r)
{
    if (r->proc && !r->exited)
        jail_proc_kill(r->proc, SIGKILL);
}

static void start_failed(struct exec_run *r, int rc, const char *msg);

void exec_abort(exec_run *r)
{
    if (r->start) {
        /* not started yet: the jail ends the process if init starts it anyway */
        jail_cancel(r->start);
        r->start = NULL;
        start_failed(r, -ECONNABORTED, "the client went away before it started");
        return;
    }
    kill_group(r);
    budget_cancel(r->bg, &r->bw);
    if (r->paused || r->starved) {
        r->paused = r->starved = false;
        set_reading(r, true); /* nobody reads the stream now: drain and discard */
    }
}

static void timer_cb(uv_timer_t *t)
{
    struct exec_run *r = t->data;
    if (!r->exited && life_timer_defer(r->sb, &r->frozen_mark, t, timer_cb))
        return; /* the sandbox was suspended: its time is not the command's */
    if (!r->exited) {
        r->timed_out = true;
        kill_group(r);
        return;
    }
    /* drain grace over: orphans still hold the pipes (a paused stream is owed its output) */
    if (r->paused || r->starved) {
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
    free(r->stdin_data); /* written (or refused): given back now */
    r->stdin_data = NULL;
    budget_release(r->bg, r->stdin_held);
    r->stdin_held = 0;
    if (r->in_open) {
        r->in_open = false;
        uv_close((uv_handle_t *)&r->in, handle_closed); /* EOF for the command */
    }
}

static int open_pipe(struct exec_run *r, struct exec_pipe *p, int fd, const char *name)
{
    p->run = r;
    p->name = name;
    /* escaped: 6 bytes per byte at worst; stdout's buffer becomes the whole response */
    size_t esc = (size_t)r->cfg->max_output_bytes * 6;
    buf_init(&p->kept, p == &r->out ? 2 * esc + 4096 : esc);
    buf_set_budget(&p->kept, r->bg);
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
    r->sink->ops->failed(r->sink, rc, r->cwd, msg ? msg : strerror(-rc));
    free(r->stdin_data);
    budget_release(r->bg, r->stdin_held);
    budget_unref(r->bg);
    free(r);
}

/* The sandbox's init started the command (or could not): from here on the run owns its
 * pipes, its timer and the sink. */
static void exec_started(jail_proc *jp, int rc, const char *msg, void *arg)
{
    struct exec_run *r = arg;
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
        uv_buf_t ub = uv_buf_init(r->stdin_data, (unsigned)r->stdin_held);
        r->inw.data = r;
        if (uv_write(&r->inw, (uv_stream_t *)&r->in, &ub, 1, stdin_written))
            stdin_written(&r->inw, -1);
    }
    r->sink->ops->begin(r->sink, r->bg);
    if (r->timeout)
        life_timer_start(r->sb, &r->frozen_mark, &r->timer, timer_cb, r->timeout);
    set_reading(r, true);
}

int exec_start(sandbox *sb, const struct config *cfg, const struct exec_opts *o, cmd_sink *sink,
               exec_run **out, char *err, size_t errlen)
{
    size_t stdin_len = o->stdin_data ? strlen(o->stdin_data) : 0;
    if (budget_charge(sb->budget, stdin_len))
        return EXEC_NO_ROOM;
    struct exec_run *r = calloc(1, sizeof *r);
    int pi[2] = { -1, -1 }, fds[2];
    if (!r ||
        (o->stdin_data && (pipe2(pi, O_CLOEXEC) || !(r->stdin_data = strdup(o->stdin_data))))) {
        int e = errno;
        if (pi[0] >= 0) {
            close(pi[0]);
            close(pi[1]);
        }
        budget_release(sb->budget, stdin_len);
        free(r);
        snprintf(err, errlen, "%s", strerror(e));
        return EXEC_NO_SETUP;
    }
    r->sink = sink;
    r->sb = sb;
    r->bg = budget_ref(sb->budget);
    r->stdin_held = stdin_len;
    r->cfg = cfg;
    r->streaming = o->streaming;
    r->start_ns = uv_hrtime();
    r->oom_before = jail_oom_kills(sb->jail);
    r->timeout = o->timeout_ms;
    r->in_fd = pi[1];
    snprintf(r->cwd, sizeof r->cwd, "%s", o->cmd->cwd);
    int rc = cmd_spawn(sb, o->cmd, pi[0], exec_started, exit_cb, r, &r->start, fds, err, errlen);
    if (pi[0] >= 0)
        close(pi[0]);
    if (rc) {
        if (pi[1] >= 0)
            close(pi[1]);
        free(r->stdin_data);
        budget_release(r->bg, r->stdin_held);
        budget_unref(r->bg);
        free(r);
        return rc;
    }
    r->out_fd[0] = fds[0];
    r->out_fd[1] = fds[1];
    *out = r;
    return 0;
}
