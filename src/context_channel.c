/*
 * context_channel.c — the channel protocol of docs/protocol.md on the daemon's side, and
 * the reading of a context's stdout/stderr pipes (see context_int.h).
 *
 * Reading: the channel is split into lines, each one JSON message; a line is charged to
 * the sandbox's budget as it grows and capped at --max-result-bytes (past either, the
 * process is killed and the run fails with OutputLimitError). Before each batch of
 * messages both pipes are drained, so output printed before a result reaches the run's
 * sink before the result. How much one read may take is the run's sink's to say
 * (allowance); when it says nothing, the context is not read until ctx_run_resume.
 *
 * Trust: every message is hostile input. A line that is not a JSON object with a "type"
 * kills the incarnation; a message about another run than the one in flight is ignored;
 * "failed" counts only before the context is ready (no user code has run then).
 */
#include "context_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "stamp.h"

/* ---- reading the pipes ---- */

/* Stop reading until the sink has room (libuv said UV_ENOBUFS: alloc_cb gave nothing). */
static void wait_for_room(struct ctx_proc *p)
{
    struct context *c = p->ctx;
    struct ctx_run *r = c ? c->cur : NULL;
    if (!r)
        return;
    ctx_set_paused(c, true);
    if (r->sink->wait_room)
        r->sink->wait_room(r->arg);
}

void ctx_chan_alloc(void *owner, int i, uv_buf_t *b)
{
    static char chunk[65536];
    struct ctx_proc *p = owner;
    const struct ctx_run *r = p->ctx ? p->ctx->cur : NULL;
    size_t n = sizeof chunk;
    (void)i;
    if (r && r->sink->allowance)
        n = r->sink->allowance(r->arg, n);
    *b = uv_buf_init(chunk, (unsigned)n);
}

/* Read what the context printed so far, without waiting. */
static void drain_output(struct ctx_proc *p)
{
    static char chunk[65536];
    for (int i = 0; i < 2; i++) {
        int fd = child_fd(p->ch, i == 0 ? CHILD_OUT : CHILD_ERR);
        if (fd < 0)
            continue;
        for (int rounds = 0; rounds < 64; rounds++) {
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n <= 0)
                break;
            if (p->ctx)
                ctx_lines_add(p, i == 1, chunk, (size_t)n);
        }
    }
}

/* stdout or stderr (at EOF the child has closed the pipe already) */
static void out_read(struct ctx_proc *p, bool is_err, ssize_t n, const char *data)
{
    if (n == UV_ENOBUFS) {
        wait_for_room(p);
        return;
    }
    if (n > 0 && p->ctx)
        ctx_lines_add(p, is_err, data, (size_t)n);
}

void ctx_set_paused(struct context *c, bool paused)
{
    struct ctx_proc *p = c->proc;
    if (c->cur)
        c->cur->paused = paused;
    if (p)
        child_reading(p->ch, !paused);
}

/* ---- messages ---- */

static void on_ready(struct context *c, struct ctx_proc *p)
{
    p->ready = true;
    c->ever_ready = true;
    uv_timer_stop(&c->timer);
    c->state = CTX_IDLE;
    ctx_answer_waiters(c, CTX_W_READY, true, NULL);
    ctx_run_next(c);
}

/* {"type":"error"}: the run's error; a timeout's KeyboardInterrupt says it timed out. */
static void on_error(struct ctx_run *r, const json_t *msg)
{
    json_t *e = json_object_get(msg, "error");
    if (!json_is_object(e))
        return;
    json_decref(r->error);
    r->error = json_deep_copy(e);
    const char *name = json_string_value(json_object_get(e, "name"));
    if (r->timed_out && name && strcmp(name, "KeyboardInterrupt") == 0) {
        char m[160];
        snprintf(m, sizeof m, "the run did not finish within %llu ms and was interrupted",
                 (unsigned long long)r->timeout_ms);
        json_object_set_new(r->error, "name", json_string("TimeoutError"));
        json_object_set_new(r->error, "message", json_string(m));
    }
}

/* {"type":"end"}: the run is over; the next one starts. */
static void on_end(struct context *c, struct ctx_run *r, const json_t *msg)
{
    json_t *ec = json_object_get(msg, "executionCount");
    if (json_is_integer(ec))
        c->exec_count = (int)json_integer_value(ec);
    uv_timer_stop(&c->timer);
    c->cur = NULL;
    c->state = CTX_IDLE;
    c->last_used_ms = stamp_now_ms();
    ctx_run_answer(r);
    ctx_answer_waiters(c, CTX_W_INTERRUPT, true, NULL);
    ctx_run_next(c);
}

/* The messages about the run in flight: result, error, end. */
static void on_run_message(struct context *c, struct ctx_run *r, const char *type,
                           const json_t *msg, size_t n)
{
    if (strcmp(type, "result") == 0) {
        json_t *res = json_object_get(msg, "result");
        if (json_is_object(res) && r->sink->result(r->arg, res, n) == 1)
            ctx_set_paused(c, true);
    } else if (strcmp(type, "error") == 0) {
        on_error(r, msg);
    } else if (strcmp(type, "end") == 0) {
        on_end(c, r, msg);
    }
}

static void on_message(struct context *c, struct ctx_proc *p, const char *line, size_t n)
{
    json_error_t je;
    json_t *msg = json_loadb(line, n, JSON_ALLOW_NUL, &je); /* output may hold NULs */
    const char *type = msg ? json_string_value(json_object_get(msg, "type")) : NULL;
    if (!type) {
        log_warn("context %s: malformed channel message: %s", c->id, msg ? "no type" : je.text);
        json_decref(msg);
        p->dying = true;
        ctx_proc_kill(p);
        return;
    }
    if (strcmp(type, "stream") != 0)
        ctx_lines_flush(p); /* what the pipes hold was written before this message */
    struct ctx_run *r = c->cur;
    const char *mid = json_string_value(json_object_get(msg, "id"));
    if (r && mid && strcmp(mid, r->id) != 0 && strcmp(type, "stream") != 0) {
        /* not about the run in flight (a stale or forged message): ignored */
        json_decref(msg);
        return;
    }
    if (strcmp(type, "ready") == 0) {
        on_ready(c, p);
    } else if (strcmp(type, "stream") == 0) {
        /* Python-level output, ordered with the results on the channel */
        const char *name = json_string_value(json_object_get(msg, "name"));
        json_t *text = json_object_get(msg, "text");
        if (name && json_is_string(text))
            ctx_run_output(c, strcmp(name, "stderr") == 0, json_string_value(text),
                           json_string_length(text));
    } else if (strcmp(type, "failed") == 0 && !p->ready) {
        /* The zygote's child could not enter the sandbox (it exits 127 next; the exit
         * reports it, with this reason). Only before ready: no user code has run yet. */
        const char *why = json_string_value(json_object_get(msg, "message"));
        snprintf(p->why, sizeof p->why, "%s", why ? why : "it could not enter the sandbox");
    } else if (r) {
        on_run_message(c, r, type, msg, n);
    }
    /* else nothing is running: a stray message is ignored */
    json_decref(msg);
}

/* ---- the channel ---- */

/* The context closed its channel: it is exiting or broken; make sure it ends. */
static void chan_eof(struct ctx_proc *p)
{
    struct context *c = p->ctx;
    drain_output(p); /* the child has closed the channel already */
    ctx_lines_flush(p);
    if (p->zyg_pending || child_starting(p->ch))
        return; /* the zygote's or init's answer will say what happened */
    if (!child_watched(p->ch) && c && !p->exited)
        ctx_proc_died(c, p); /* nothing watches its exit: treat EOF as the end */
    else
        ctx_proc_kill(p);
}

/* A line grew past the budget (rc -ENOBUFS) or --max-result-bytes: the process is
 * killed, and the run will fail with OutputLimitError saying why. */
static void line_refused(struct ctx_proc *p, int rc, size_t len)
{
    if (rc == -ENOBUFS)
        snprintf(p->limit_why, sizeof p->limit_why,
                 "a message of the context (a "
                 "result) reached %zu bytes, more than its sandbox's buffer budget "
                 "has left (--sandbox-buffer-bytes %llu, %llu bytes held for the "
                 "sandbox)",
                 len, (unsigned long long)budget_cap(p->bg),
                 (unsigned long long)budget_used(p->bg));
    else
        snprintf(p->limit_why, sizeof p->limit_why,
                 "a message of the context (a "
                 "result) exceeds --max-result-bytes (%llu bytes)",
                 (unsigned long long)ctx_cfg->max_result_bytes);
    log_warn("context %s: %s", p->ctx->id, p->limit_why);
    buf_free(&p->line); /* given back now, not when the process is reaped */
    p->dying = true;
    ctx_proc_kill(p);
}

static void chan_read(struct ctx_proc *p, ssize_t n, const char *data)
{
    if (n == UV_ENOBUFS) {
        wait_for_room(p);
        return;
    }
    if (n < 0) {
        chan_eof(p);
        return;
    }
    /* Everything the context wrote to its pipes before it sent these messages is in the
     * pipes now: forward it first (the ordering rule). Once per read, not per message:
     * output that arrives while the batch is handled was written after all of it. */
    drain_output(p);
    const char *d = data;
    size_t len = (size_t)n;
    while (len && p->ctx && !p->dying) {
        const char *nl = memchr(d, '\n', len);
        size_t take = nl ? (size_t)(nl - d) : len;
        int rc = buf_append(&p->line, d, take);
        if (rc) {
            line_refused(p, rc, p->line.len + take);
            return;
        }
        if (!nl)
            return;
        d += take + 1;
        len -= take + 1;
        char *line = buf_steal(&p->line);
        buf_init(&p->line, ctx_cfg->max_result_bytes);
        buf_set_budget(&p->line, p->bg);
        on_message(p->ctx, p, line ? line : "", line ? strlen(line) : 0);
        free(line);
        if (!p->ctx)
            return;
    }
}

void ctx_chan_read(void *owner, int i, ssize_t n, const char *data)
{
    if (i == CHILD_CHAN)
        chan_read(owner, n, data);
    else
        out_read(owner, i == CHILD_ERR, n, data);
}

/* ---- writing ---- */

static void chan_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

/* Queue one line on the channel (copied); a broken channel shows up as EOF on reading. */
static void chan_write(struct ctx_proc *p, const char *data, size_t n)
{
    uv_stream_t *chan = child_stream(p->ch, CHILD_CHAN);
    uv_write_t *w = chan ? malloc(sizeof *w + n) : NULL;
    if (!w)
        return;
    char *copy = (char *)(w + 1);
    memcpy(copy, data, n);
    uv_buf_t ub = uv_buf_init(copy, (unsigned)n);
    if (uv_write(w, chan, &ub, 1, chan_written))
        free(w);
}

void ctx_send_execute(struct context *c, const struct ctx_run *r)
{
    json_t *m = json_pack("{s:s, s:s, s:O}", "type", "execute", "id", r->id, "code", r->code);
    json_object_set_new(m, "envVars", r->env ? json_incref(r->env) : json_object());
    buf b;
    buf_init(&b, ctx_cfg->max_code_bytes * 7 + (1 << 20));
    char *s = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    if (s && buf_puts(&b, s) == 0 && buf_append(&b, "\n", 1) == 0)
        chan_write(c->proc, b.data, b.len);
    free(s);
    buf_free(&b);
}
