/*
 * context_lines.c — a context's stdout/stderr pipes passed on as whole lines (see
 * context_int.h).
 *
 * What a context writes to its fd 1 or 2 below its language's own streams (os.write, C
 * extensions, child processes, the Node kernel's console) reaches the daemon in pipe
 * reads cut wherever a read ended, and the Python-level output arrives as channel
 * messages in between. Passing pipe bytes on as read would let a channel line land
 * inside a pipe line. Here the bytes of each pipe up to its last newline go to the run at
 * once, as one chunk; the rest is held until its newline comes, until it has waited
 * --output-line-wait-ms, until it would pass CTX_LINE_CAP, or until ctx_lines_flush
 * (before a result, an error or the end of a run, and when the incarnation ends). So a
 * line of one pipe is never split by other output unless it is longer than the cap or
 * its writer paused longer than the wait mid-line, and nothing is ever reordered with the
 * run's results or held past its end.
 *
 * Memory: the held bytes are bufs charged to the sandbox's budget (budget.h); when the
 * budget refuses, the bytes are passed on at once instead: never lost.
 */
#include "context_int.h"

#include <string.h>

/* Pass n bytes of pipe i (0 stdout, 1 stderr) to the run in flight. */
static void emit(struct ctx_proc *p, int i, const char *d, size_t n)
{
    if (p->ctx && n)
        ctx_run_output(p->ctx, i == 1, d, n);
}

static void flush_one(struct ctx_proc *p, int i)
{
    if (!p->part[i].len)
        return;
    emit(p, i, p->part[i].data, p->part[i].len);
    buf_reset(&p->part[i]);
}

void ctx_lines_flush(struct ctx_proc *p)
{
    flush_one(p, 0);
    flush_one(p, 1);
}

void ctx_lines_free(struct ctx_proc *p)
{
    buf_free(&p->part[0]);
    buf_free(&p->part[1]);
}

/* Hold the start of a line (d, n: no newline in it) after what pipe i already holds. */
static void hold(struct ctx_proc *p, int i, const char *d, size_t n)
{
    if (!n)
        return;
    if (!p->part[i].len)
        p->part_ms[i] = uv_now(ctx_loop);
    if (buf_append(&p->part[i], d, n)) {
        flush_one(p, i); /* past the cap or the budget: passed on as it is */
        emit(p, i, d, n);
        return;
    }
    struct context *c = p->ctx;
    if (ctx_cfg->output_line_wait_ms == 0)
        flush_one(p, i);
    else if (c && !uv_is_active((uv_handle_t *)&c->line_timer))
        uv_timer_start(&c->line_timer, ctx_lines_timer_cb, ctx_cfg->output_line_wait_ms, 0);
}

void ctx_lines_add(struct ctx_proc *p, bool is_err, const char *data, size_t n)
{
    int i = is_err ? 1 : 0;
    size_t whole = n, first = 0;
    while (whole && data[whole - 1] != '\n')
        whole--;
    if (whole && p->part[i].len) {
        /* the end of the held line, passed on with its start as one chunk (unless the
         * line is longer than the cap: then in two) */
        const char *nl = memchr(data, '\n', whole);
        first = (size_t)(nl - data) + 1;
        if (buf_append(&p->part[i], data, first) == 0) {
            flush_one(p, i);
        } else {
            flush_one(p, i);
            emit(p, i, data, first);
        }
    }
    emit(p, i, data + first, whole - first);
    hold(p, i, data + whole, n - whole);
}

void ctx_lines_timer_cb(uv_timer_t *t)
{
    struct context *c = t->data;
    struct ctx_proc *p = c->proc;
    if (!p)
        return;
    uint64_t now = uv_now(ctx_loop), wait = ctx_cfg->output_line_wait_ms, next = 0;
    for (int i = 0; i < 2; i++) {
        if (!p->part[i].len)
            continue;
        uint64_t age = now - p->part_ms[i];
        if (age >= wait)
            flush_one(p, i);
        else if (!next || wait - age < next)
            next = wait - age;
    }
    if (next && c->proc == p)
        uv_timer_start(&c->line_timer, ctx_lines_timer_cb, next, 0);
}
