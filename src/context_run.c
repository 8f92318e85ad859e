/*
 * context_run.c — the runs of a context (see context_int.h): the queue (one run at a time,
 * in arrival order), the run's timeout (SIGINT, then after --kill-grace-ms a kill and a
 * fresh incarnation, context.c), interrupts, and ending a run through its sink.
 *
 * Every run ends exactly once, through ctx_run_answer, whatever ends it: its end message,
 * its incarnation's death, a restart, the context's deletion, a cancel. The sink's end is
 * the last call the sink gets for the run; the engine drops the run right after it.
 *
 * Usage of a run: the CPU time of the context's process (utime + stime of it and of the
 * children it waited for, /proc/<pid>/stat) at the end minus at the start, and its peak
 * resident memory (VmHWM of /proc/<pid>/status, reset at the start by writing 5 to
 * /proc/<pid>/clear_refs). The pid is the daemon's own child (a Python context) or found
 * among the sandbox init's children (a Node context, jail_proc_host_pid); these are reads
 * of a known pid that never wait for the sandbox. A process that died is gone: then the
 * usage is unknown (-1).
 */
#include "context_int.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "lifecycle.h"
#include "stamp.h"

/* ---- usage ---- */

/* utime + stime + cutime + cstime of pid, in clock ticks: 0, or -1. */
static int read_cpu_ticks(pid_t pid, uint64_t *ticks)
{
    char path[64], data[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(data, 1, sizeof data - 1, f);
    fclose(f);
    data[n] = '\0';
    const char *p = strrchr(data, ')'); /* the command name may hold anything */
    unsigned long long v[4];
    /* after ")": state (3), then fields 4..13, then utime stime cutime cstime (14..17) */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
                     &v[0], &v[1], &v[2], &v[3]) != 4)
        return -1;
    *ticks = v[0] + v[1] + v[2] + v[3];
    return 0;
}

/* VmHWM of pid in bytes, or -1. */
static int64_t read_peak_rss(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int64_t kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            long long v;
            if (sscanf(line + 6, "%lld", &v) == 1)
                kb = v;
            break;
        }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* The run starts on c's process: remember its CPU time, reset its peak memory. */
static void usage_begin(struct ctx_run *r, struct ctx_proc *p)
{
    r->usage_pid = 0;
    pid_t hp = p ? child_host_pid(p->ch) : 0;
    if (hp <= 0 || read_cpu_ticks(hp, &r->usage_ticks0))
        return;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)hp);
    FILE *f = fopen(path, "we");
    if (!f)
        return;
    bool ok = fputs("5", f) >= 0;
    if (fclose(f) || !ok)
        return;
    r->usage_pid = hp;
}

/* The run's usage, when the process it began on is still the context's. */
static void usage_end(const struct ctx_run *r, const struct context *c, struct ctx_run_end *e)
{
    uint64_t t1;
    e->cpu_ms = -1;
    e->peak_memory_bytes = -1;
    if (!r->usage_pid || !c->proc || c->proc->exited ||
        child_host_pid(c->proc->ch) != r->usage_pid || read_cpu_ticks(r->usage_pid, &t1))
        return;
    long hz = sysconf(_SC_CLK_TCK);
    e->cpu_ms = t1 >= r->usage_ticks0 && hz > 0 ? (double)(t1 - r->usage_ticks0) * 1000.0 / hz : 0;
    e->peak_memory_bytes = read_peak_rss(r->usage_pid);
}

/* ---- runs ---- */

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
    if (c->proc && c->sb)
        c->proc->oom_base = jail_oom_kills(c->sb->jail); /* idle from now on */
    if (r->fail_name[0]) {
        ctx_run_set_error(r, r->fail_name, "%s", r->fail_why);
        e.error = r->error;
    }
    usage_end(r, c, &e);
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
    ctx_lines_flush(c->proc); /* written between runs: no run's (dropped) */
    c->cur = r;
    c->state = CTX_BUSY;
    r->start_ns = uv_hrtime();
    r->oom_base = c->sb ? jail_oom_kills(c->sb->jail) : 0;
    if (r->sink->start)
        r->sink->start(r->arg);
    if (c->died_how[0]) {
        /* it died while idle: this run reports it (from the loop, not from inside
         * ctx_run_queue, whose caller is not ready for its end yet) */
        r->report_death = true;
        uv_timer_start(&c->timer, ctx_timer_cb, 0, 0);
        return;
    }
    usage_begin(r, c->proc);
    ctx_send_execute(c, r);
    if (r->timeout_ms)
        life_timer_start(c->sb, &c->frozen_mark, &c->timer, ctx_timer_cb, r->timeout_ms);
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

const char *ctx_run_id(const struct ctx_run *r)
{
    return r->id;
}

bool ctx_run_paused(const struct ctx_run *r)
{
    return r->paused;
}

int ctx_run_cancel(struct ctx_run *r, const char *why)
{
    struct context *c = r->ctx;
    if (c->cur == r) {
        if (!r->interrupted)
            ctx_interrupt_run(c);
        return 2;
    }
    struct ctx_run **pp = &c->q_head, *prev = NULL;
    while (*pp && *pp != r) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return 0;
    *pp = r->next;
    if (c->q_tail == r)
        c->q_tail = prev;
    ctx_run_set_error(r, "Cancelled", "%s", why);
    ctx_run_answer(r);
    return 1;
}

void ctx_run_fail(struct ctx_run *r, const char *name, const char *why)
{
    struct context *c = r->ctx;
    snprintf(r->fail_name, sizeof r->fail_name, "%s", name);
    snprintf(r->fail_why, sizeof r->fail_why, "%s", why);
    if (c->cur != r) {
        if (ctx_run_cancel(r, why) == 1)
            return;
    }
    if (c->cur == r && c->proc) {
        r->killed = true;
        ctx_proc_died(c, c->proc); /* answers r (with fail_name) */
    }
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
    child_signal(c->proc->ch, SIGINT);
    life_timer_start(c->sb, &c->frozen_mark, &c->timer, ctx_timer_cb, ctx_cfg->kill_grace_ms);
}

void ctx_timer_cb(uv_timer_t *t)
{
    struct context *c = t->data;
    struct ctx_proc *p = c->proc;
    if (c->rt_wait) {
        ctx_runtime_retry(c);
        return;
    }
    if (c->cur && c->cur->report_death) {
        ctx_report_death(c, c->cur);
        return;
    }
    if (life_timer_defer(c->sb, &c->frozen_mark, t, ctx_timer_cb))
        return; /* the sandbox was suspended: its time is not the run's */
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
