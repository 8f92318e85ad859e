/*
 * exec.c — running one command (see exec.h). An exec_run owns a child (child.h: the
 * stdout and stderr pipes, when stdin is given a pipe to write it, a timer for the
 * timeout and the drain grace); it lets go of the child once its sink (the receiver of
 * the output, command.h) has had its final call, and the child frees the run (freed)
 * once every handle is closed and the process has been reaped. Nothing is read until
 * the sandbox's init has started the command (exec_started); a start that fails, or that
 * the receiver gives up on (exec_abort), goes to the sink's failed (the jail ends a late
 * process). No HTTP here: the API layer (api_exec.c) reads the request and implements
 * the sink.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    bool cut;   /* plain: nothing more is kept (a cap was reached) */
    size_t raw; /* plain: bytes of output kept, before escaping */
    esc_carry carry;
    buf kept;         /* plain: the output so far, JSON-escaped */
    const char *name; /* "stdout" / "stderr" */
};

struct exec_run {
    cmd_sink *sink; /* NULL once it had its final call */
    sandbox *sb;    /* NULL once the process exited (the sandbox may go away) */
    const struct config *cfg;
    bool streaming;
    child *ch; /* the process, its pipes and the timer */
    bool exited, paused, timed_out, truncated, oom, finished;
    bool starved;             /* SSE: waiting for room in the budget (bw) or an empty queue */
    const char *truncated_by; /* the setting that cut the output */
    budget *bg;               /* the sandbox's budget; one reference */
    budget_waiter bw;         /* SSE: queued while reading waits for room in bg */
    int status;
    struct exec_pipe out, err;
    uv_write_t inw;
    char *stdin_data;
    size_t stdin_held; /* the copy of stdin, charged to bg until written */
    uint64_t start_ns, oom_before;
    uint64_t timeout;
    char cwd[sizeof((struct cmd_request *)0)->cwd];
};

int exec_exit_code(int status, const char **signame)
{
    return child_exit_code(status, signame);
}

/* The child is gone: so is the run. */
static void run_freed(void *owner)
{
    struct exec_run *r = owner;
    buf_free(&r->out.kept);
    buf_free(&r->err.kept);
    budget_cancel(r->bg, &r->bw);
    budget_release(r->bg, r->stdin_held);
    budget_unref(r->bg);
    free(r->stdin_data);
    free(r);
}

static struct exec_pipe *pipe_of(struct exec_run *r, int i)
{
    return i == CHILD_ERR ? &r->err : &r->out;
}

/* Everything is in: send the response (or end the stream). */
static void run_finish(struct exec_run *r)
{
    if (r->finished || !r->exited || child_output_open(r->ch))
        return;
    r->finished = true;
    child_timer_stop(r->ch);
    child_close(r->ch, CHILD_IN);
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
    child_release(r->ch); /* the run is freed once the child is quiet */
}

/* A streamed read is sized so that its escaped event fits in the budget; 0 bytes (libuv
 * then reports UV_ENOBUFS) when not even READ_MIN fits. */
static void run_alloc(void *owner, int i, uv_buf_t *b)
{
    static char chunk[READ_MAX];
    struct exec_run *r = owner;
    size_t n = sizeof chunk;
    (void)i;
    if (r->streaming) {
        uint64_t room = budget_room(r->bg);
        uint64_t fit = room > EVENT_SLACK ? (room - EVENT_SLACK) / 6 : 0;
        n = fit < READ_MIN ? 0 : fit < n ? (size_t)fit : n;
        const cmd_sink *s = r->sink;
        if (s && s->ops->gone(s))
            n = sizeof chunk; /* nothing is kept for a client that is gone */
        else if (n == 0 && s && s->ops->queued(s) == 0)
            n = READ_FLOOR;
    }
    *b = uv_buf_init(chunk, (unsigned)n);
}

static void set_reading(struct exec_run *r, bool on)
{
    child_reading(r->ch, on);
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

static void run_read(void *owner, int i, ssize_t n, const char *data)
{
    struct exec_run *r = owner;
    struct exec_pipe *p = pipe_of(r, i);
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
        run_finish(r); /* EOF: the child has closed the pipe */
        return;
    }
    if (r->streaming) {
        int rc = r->sink->ops->text(r->sink, p->name, &p->carry, data, (size_t)n, false);
        if (rc == 1) {
            r->paused = true;
            set_reading(r, false);
        }
        return;
    }
    keep_output(r, p, data, (size_t)n);
}

void exec_resume(exec_run *r)
{
    r->paused = false;
    r->starved = false;
    set_reading(r, true); /* alloc_cb decides what the budget allows */
}

static void kill_group(struct exec_run *r)
{
    if (!r->exited)
        child_kill(r->ch);
}

static void start_failed(struct exec_run *r, int rc, const char *msg);

void exec_abort(exec_run *r)
{
    if (child_starting(r->ch)) {
        /* not started yet: the jail ends the process if init starts it anyway */
        child_release(r->ch);
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

static void run_timer(void *owner)
{
    struct exec_run *r = owner;
    if (!r->exited) {
        r->timed_out = true;
        kill_group(r);
        return;
    }
    /* drain grace over: orphans still hold the pipes (a paused stream is owed its output) */
    if (r->paused || r->starved) {
        child_timer_start(r->ch, NULL, r->cfg->drain_grace_ms);
        return;
    }
    child_close_output(r->ch);
    run_finish(r);
}

static void run_exited(void *owner, int status)
{
    struct exec_run *r = owner;
    r->exited = true;
    r->status = status;
    if (r->sb) {
        r->oom = jail_oom_kills(r->sb->jail) > r->oom_before;
        r->sb->nexec--;
        r->sb = NULL;
    }
    if (child_output_open(r->ch))
        child_timer_start(r->ch, NULL, r->cfg->drain_grace_ms);
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
    child_close(r->ch, CHILD_IN); /* EOF for the command */
}

static void init_pipe(struct exec_run *r, struct exec_pipe *p, const char *name)
{
    p->name = name;
    /* escaped: 6 bytes per byte at worst; stdout's buffer becomes the whole response */
    size_t esc = (size_t)r->cfg->max_output_bytes * 6;
    buf_init(&p->kept, p == &r->out ? 2 * esc + 4096 : esc);
    buf_set_budget(&p->kept, r->bg);
}

/* The command could not start (or nobody waits for it any more): answer; the run is
 * freed once the child is quiet. */
static void start_failed(struct exec_run *r, int rc, const char *msg)
{
    r->sink->ops->failed(r->sink, rc, r->cwd, msg ? msg : strerror(-rc));
    r->sink = NULL;
    free(r->stdin_data); /* never written: given back now */
    r->stdin_data = NULL;
    budget_release(r->bg, r->stdin_held);
    r->stdin_held = 0;
    r->finished = true;
    child_release(r->ch);
}

/* The sandbox's init started the command (or could not): from here on the run reads
 * its pipes, runs its timer and feeds the sink. */
static void exec_started(void *owner, int rc, const char *msg)
{
    struct exec_run *r = owner;
    if (rc) {
        start_failed(r, rc, msg);
        return;
    }
    r->sb->nexec++;
    init_pipe(r, &r->out, "stdout");
    init_pipe(r, &r->err, "stderr");
    uv_stream_t *in = child_stream(r->ch, CHILD_IN);
    if (r->stdin_data && in) {
        uv_buf_t ub = uv_buf_init(r->stdin_data, (unsigned)r->stdin_held);
        r->inw.data = r;
        if (uv_write(&r->inw, in, &ub, 1, stdin_written))
            stdin_written(&r->inw, -1);
    }
    r->sink->ops->begin(r->sink, r->bg);
    if (r->timeout)
        child_timer_start(r->ch, r->sb, r->timeout);
    set_reading(r, true);
}

static const struct child_ops RUN_OPS = {
    .alloc = run_alloc,
    .read = run_read,
    .started = exec_started,
    .exited = run_exited,
    .timer = run_timer,
    .freed = run_freed,
};

int exec_start(sandbox *sb, const struct config *cfg, const struct exec_opts *o, cmd_sink *sink,
               exec_run **out, char *err, size_t errlen)
{
    size_t stdin_len = o->stdin_data ? strlen(o->stdin_data) : 0;
    if (budget_charge(sb->budget, stdin_len))
        return EXEC_NO_ROOM;
    struct exec_run *r = calloc(1, sizeof *r);
    if (!r || (o->stdin_data && !(r->stdin_data = strdup(o->stdin_data)))) {
        int e = errno;
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
    snprintf(r->cwd, sizeof r->cwd, "%s", o->cmd->cwd);
    int rc = cmd_spawn(sb, o->cmd, o->stdin_data != NULL, &RUN_OPS, r, &r->ch, err, errlen);
    if (rc) {
        free(r->stdin_data);
        budget_release(r->bg, r->stdin_held);
        budget_unref(r->bg);
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}
