/*
 * context_run.c — the runs of a context (see context_int.h): the queue (one run at a time,
 * in arrival order), the run's timeout (SIGINT, then after --kill-grace-ms a kill and a
 * fresh incarnation, context.c), interrupts, and ending a run through its sink.
 *
 * Every run ends exactly once, through ctx_run_answer, whatever ends it: its end message,
 * its incarnation's death, a restart, the context's deletion. The sink's end is the last
 * call the sink gets for the run; the engine drops the run right after it.
 */
#include "context_int.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "stamp.h"

static void run_free(struct ctx_run *r)
{
    json_decref(r->code);
    json_decref(r->env);
    json_decref(r->error);
    free(r);
}

void ctx_run_answer(struct ctx_run *r)
{
    struct context *c = r->ctx;
    struct ctx_run_end e = {
        .run_id = r->id,
        .context_id = c->id,
        .exec_count = c->exec_count,
        .duration_ms = (double)(uv_hrtime() - r->start_ns) / 1e6,
        .state_preserved = !r->state_lost,
        .error = r->error,
    };
    r->sink->end(r->arg, &e);
    run_free(r);
}

void ctx_run_set_error(struct ctx_run *r, const char *name, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_decref(r->error);
    r->error = json_pack("{s:s, s:s, s:[]}", "name", name, "message", msg, "traceback");
}

void ctx_run_output(struct context *c, bool is_err, const char *data, size_t n)
{
    struct ctx_run *r = c->cur;
    if (!r)
        return;
    if (r->sink->output(r->arg, is_err, data, n) == 1)
        ctx_set_paused(c, true);
}

void ctx_fail_queue(struct context *c, const char *name, const char *why)
{
    while (c->q_head) {
        struct ctx_run *r = c->q_head;
        c->q_head = r->next;
        r->state_lost = true;
        ctx_run_set_error(r, name, "%s", why);
        ctx_run_answer(r);
    }
    c->q_tail = NULL;
}

void ctx_run_next(struct context *c)
{
    struct ctx_run *r;
    for (;;) {
        if (c->state != CTX_IDLE || c->cur || !c->q_head || !c->proc)
            return;
        r = c->q_head;
        c->q_head = r->next;
        if (!c->q_head)
            c->q_tail = NULL;
        r->next = NULL;
        if (!r->interrupted)
            break;
        /* interrupted while queued (ctx_run_interrupt): it never runs */
        ctx_run_set_error(r, "KeyboardInterrupt", "the run was interrupted before it started");
        ctx_run_answer(r);
    }
    c->cur = r;
    c->state = CTX_BUSY;
    r->start_ns = uv_hrtime();
    ctx_send_execute(c, r);
    if (r->timeout_ms)
        uv_timer_start(&c->timer, ctx_timer_cb, r->timeout_ms, 0);
}

struct ctx_run *ctx_run_queue(struct context *c, json_t *code, json_t *env, uint64_t timeout_ms,
                              const struct ctx_sink *sink, void *arg)
{
    struct ctx_run *r = calloc(1, sizeof *r);
    if (!r || stamp_id(r->id, sizeof r->id, "exe-")) {
        free(r);
        return NULL;
    }
    r->ctx = c;
    r->sink = sink;
    r->arg = arg;
    r->code = json_incref(code);
    r->env = json_incref(env);
    r->timeout_ms = timeout_ms;
    r->start_ns = uv_hrtime();
    if (c->q_tail)
        c->q_tail->next = r;
    else
        c->q_head = r;
    c->q_tail = r;
    ctx_run_next(c);
    return r;
}

void ctx_run_resume(struct ctx_run *r)
{
    if (r->ctx && r->ctx->cur == r)
        ctx_set_paused(r->ctx, false);
}

bool ctx_run_paused(const struct ctx_run *r)
{
    return r->paused;
}

int ctx_run_interrupt(struct ctx_run *r)
{
    struct context *c = r->ctx;
    if (!c)
        return 1;
    if (c->cur != r) {
        r->interrupted = true; /* queued: ctx_run_next ends it without running it */
        return 0;
    }
    if (!r->interrupted && c->state == CTX_BUSY)
        ctx_interrupt_run(c);
    return 0;
}

void ctx_interrupt_run(struct context *c)
{
    struct ctx_run *r = c->cur;
    if (!r || !c->proc)
        return;
    r->interrupted = true;
    if (c->proc->jp)
        jail_proc_kill(c->proc->jp, SIGINT);
    uv_timer_start(&c->timer, ctx_timer_cb, ctx_cfg->kill_grace_ms, 0);
}

void ctx_timer_cb(uv_timer_t *t)
{
    struct context *c = t->data;
    struct ctx_proc *p = c->proc;
    if (c->state == CTX_STARTING) {
        log_warn("context %s did not get ready within %llu ms", c->id,
                 (unsigned long long)ctx_cfg->context_start_timeout_ms);
        if (p && !p->why[0])
            snprintf(p->why, sizeof p->why,
                     "it did not get ready within %llu ms "
                     "(--context-start-timeout-ms)",
                     (unsigned long long)ctx_cfg->context_start_timeout_ms);
        if (p)
            ctx_proc_died(c, p);
        return;
    }
    struct ctx_run *r = c->cur;
    if (!r || !p)
        return;
    if (!r->interrupted) {
        r->timed_out = true;
        ctx_interrupt_run(c);
        return;
    }
    /* the grace is over: kill; ctx_proc_died answers the run */
    r->killed = true;
    ctx_proc_died(c, p);
}
