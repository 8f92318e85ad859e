/*
 * context.c — code contexts (see context.h): the registry per sandbox, creating, deleting
 * and restarting a context, the callers waiting on one, and what a context does when its
 * process dies (the run in flight says why; a fresh incarnation starts, unless the
 * context never got ready: then it is dead). Incarnations are context_proc.c's, the
 * channel context_channel.c's, runs context_run.c's; the structures are in context_int.h.
 */
#include "context_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "exec.h"
#include "log.h"
#include "stamp.h"

/* How often a context waiting for the Python zygote to be back tries again. The wait
 * itself is bounded by --context-start-timeout-ms. */
static const uint64_t RUNTIME_RETRY_MS = 100;

uv_loop_t *ctx_loop;
const struct config *ctx_cfg;

static const char *const LANG_NAMES[] = { "python", "javascript", "typescript" };

/* ---- the registry ---- */

int ctx_parse_lang(const char *s)
{
    static const struct {
        const char *name;
        int lang;
    } ALIASES[] = {
        { "python", LANG_PYTHON }, { "python3", LANG_PYTHON },  { "javascript", LANG_JAVASCRIPT },
        { "js", LANG_JAVASCRIPT }, { "node", LANG_JAVASCRIPT }, { "typescript", LANG_TYPESCRIPT },
        { "ts", LANG_TYPESCRIPT },
    };
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (strcmp(s, ALIASES[i].name) == 0)
            return ALIASES[i].lang;
    return -1;
}

const char *ctx_lang_name(enum ctx_lang lang)
{
    return LANG_NAMES[lang];
}

void ctx_get_info(const struct context *c, struct ctx_info *out)
{
    out->id = c->id;
    out->lang = c->lang;
    out->cwd = c->cwd;
    out->created_ms = c->created_ms;
    out->last_used_ms = c->last_used_ms;
    out->exec_count = c->exec_count;
    out->state = c->state;
}

static struct context **ctx_list(sandbox *sb)
{
    return (struct context **)&sb->contexts;
}

struct context *ctx_first(sandbox *sb)
{
    return *ctx_list(sb);
}

struct context *ctx_next(const struct context *c)
{
    return c->next;
}

struct context *ctx_find(sandbox *sb, const char *id)
{
    for (struct context *c = *ctx_list(sb); c; c = c->next)
        if (strcmp(c->id, id) == 0 && !c->deleting)
            return c;
    return NULL;
}

struct context *ctx_find_default(sandbox *sb, enum ctx_lang lang)
{
    struct context *found = NULL;
    for (struct context *x = *ctx_list(sb); x; x = x->next)
        if (x->is_default && x->lang == lang)
            found = x;
    return found;
}

/* ---- waiters ---- */

static int add_waiter(struct context *c, enum ctx_wait_kind kind, ctx_wait_cb cb, void *arg)
{
    struct ctx_waiter *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->kind = kind;
    w->cb = cb;
    w->arg = arg;
    w->next = c->waiters;
    c->waiters = w;
    return 0;
}

void ctx_answer_waiters(struct context *c, enum ctx_wait_kind kind, bool ok, const char *why)
{
    struct ctx_waiter **pp = &c->waiters;
    while (*pp) {
        struct ctx_waiter *w = *pp;
        if (w->kind != kind) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        w->cb(c, ok, why, w->arg);
        free(w);
    }
}

int ctx_wait_ready(struct context *c, ctx_wait_cb cb, void *arg)
{
    return add_waiter(c, CTX_W_READY, cb, arg);
}

int ctx_interrupt(struct context *c, ctx_wait_cb cb, void *arg)
{
    if (c->state != CTX_BUSY || !c->cur)
        return 1;
    int rc = add_waiter(c, CTX_W_INTERRUPT, cb, arg);
    if (!c->cur->interrupted)
        ctx_interrupt_run(c);
    return rc;
}

/* ---- deaths ---- */

/* How the incarnation ended, for messages: "exited with status 1", … */
static void describe_end(const struct ctx_proc *p, char *how, size_t howlen)
{
    const char *sig = NULL;
    int code = p->exited ? exec_exit_code(p->status, &sig) : -1;
    if (p->why[0])
        snprintf(how, howlen, "could not be created: %s", p->why);
    else if (sig)
        snprintf(how, howlen, "was killed by SIG%s", sig);
    else if (code >= 0)
        snprintf(how, howlen, "exited with status %d", code);
    else
        snprintf(how, howlen, "closed its channel");
}

/* The error of the run in flight when its incarnation ended, and its answer. */
static void fail_current(struct context *c, struct ctx_run *r, const struct ctx_proc *p, bool oom,
                         const char *how)
{
    r->state_lost = true;
    if (p->limit_why[0])
        ctx_run_set_error(r, "OutputLimitError",
                          "%s; the context was restarted with empty "
                          "state",
                          p->limit_why);
    else if (r->timed_out)
        ctx_run_set_error(r, "TimeoutError",
                          "the run did not finish within %llu ms and did not stop when "
                          "interrupted; the context was restarted with empty state",
                          (unsigned long long)r->timeout_ms);
    else if (r->interrupted)
        ctx_run_set_error(r, "KeyboardInterrupt",
                          "the run did not stop when interrupted; "
                          "the context was restarted with empty state");
    else if (oom)
        ctx_run_set_error(r, "OutOfMemoryError",
                          "the context ran out of memory (sandbox "
                          "limit %llu MiB) and was restarted with empty state",
                          (unsigned long long)c->sb->limits.memory_mb);
    else
        ctx_run_set_error(r, "ContextDied",
                          "the context's process %s; it was restarted "
                          "with empty state",
                          how);
    ctx_run_answer(r);
}

/* The run in flight gets the incarnation's end; with none, a death of a ready (idle)
 * incarnation is kept for the next run to report (the first one, if several). */
static void note_death(struct context *c, struct ctx_run *r, const struct ctx_proc *p, bool oom,
                       const char *how)
{
    if (r) {
        fail_current(c, r, p, oom, how);
        return;
    }
    if (!p->ready || c->deleting || c->died_how[0])
        return;
    if (oom)
        snprintf(c->died_how, sizeof c->died_how,
                 "ran out of memory (sandbox limit %llu MiB) and was killed",
                 (unsigned long long)c->sb->limits.memory_mb);
    else
        snprintf(c->died_how, sizeof c->died_how, "%s", how);
    c->died_ms = stamp_now_ms();
}

void ctx_report_death(struct context *c, struct ctx_run *r)
{
    char when[40];
    uint64_t now = stamp_now_ms();
    stamp_iso8601(c->died_ms, when, sizeof when);
    r->state_lost = true;
    ctx_run_set_error(r, "ContextDied",
                      "the context's process %s at %s (%.1f s before this run), while idle; "
                      "its state was lost and this code did not run: the context has "
                      "restarted with empty state, run it again",
                      c->died_how, when, (double)(now - c->died_ms) / 1000.0);
    c->died_how[0] = '\0';
    c->cur = NULL;
    c->state = CTX_IDLE;
    ctx_run_answer(r);
    ctx_run_next(c);
}

/* No process, and the zygote is not there to fork one: retry until it is back, within
 * --context-start-timeout-ms of the first failure. */
static void wait_for_runtime(struct context *c)
{
    if (!c->rt_deadline)
        c->rt_deadline = uv_now(ctx_loop) + ctx_cfg->context_start_timeout_ms;
    c->rt_wait = true;
    c->state = CTX_STARTING;
    uv_timer_start(&c->timer, ctx_timer_cb, RUNTIME_RETRY_MS, 0);
}

static void start_failed(struct context *c, const char *what)
{
    c->state = CTX_DEAD;
    char why[400];
    snprintf(why, sizeof why, "the context could not start: %s", what);
    ctx_answer_waiters(c, CTX_W_READY, false, why);
    ctx_answer_waiters(c, CTX_W_INTERRUPT, false, why);
    ctx_fail_queue(c, "ContextDied", why);
}

void ctx_runtime_retry(struct context *c)
{
    char err[256];
    c->rt_wait = false;
    int rc = ctx_proc_start(c, err, sizeof err);
    if (rc == 0)
        return;
    if (rc == -EAGAIN && c->lang == LANG_PYTHON && uv_now(ctx_loop) < c->rt_deadline) {
        wait_for_runtime(c);
        return;
    }
    c->rt_lost = rc == -EAGAIN;
    log_warn("context %s: %s", c->id, err);
    char what[400];
    if (c->rt_lost)
        snprintf(what, sizeof what,
                 "the Python runtime (the zygote) restarted and was not back "
                 "within %llu ms (--context-start-timeout-ms); try again",
                 (unsigned long long)ctx_cfg->context_start_timeout_ms);
    else
        snprintf(what, sizeof what, "%s", err);
    start_failed(c, what);
}

void ctx_proc_died(struct context *c, struct ctx_proc *p)
{
    char how[200];
    describe_end(p, how, sizeof how);
    struct ctx_run *r = c->cur;
    /* OOM: killed by SIGKILL while the sandbox's own counter moved since the run began
     * (or, with no run, since the context was last seen idle): per run, so an OOM kill
     * earlier in the sandbox never names a later kill. */
    bool oom = c->sb && p->exited && WIFSIGNALED(p->status) && WTERMSIG(p->status) == SIGKILL &&
               jail_oom_kills(c->sb->jail) > (r ? r->oom_base : p->oom_base);
    bool lost_runtime = p->zyg_lost;
    if (p->ready)
        c->rt_deadline = 0; /* it got ready: a later zygote loss waits afresh */
    ctx_lines_flush(p);
    ctx_proc_detach(p);
    uv_timer_stop(&c->timer);
    c->cur = NULL;
    note_death(c, r, p, oom, how);
    if (c->deleting)
        return;
    log_info("context %s (%s) %s%s", c->id, LANG_NAMES[c->lang], how,
             c->ever_ready || lost_runtime ? ": restarting" : "");
    c->exec_count = 0;
    char err[256];
    int rc = -EIO;
    if (lost_runtime)
        rc = -EAGAIN; /* the zygote died while forking it: wait for the next one */
    else if (c->ever_ready)
        rc = ctx_proc_start(c, err, sizeof err);
    if (rc == -EAGAIN && c->lang == LANG_PYTHON) {
        wait_for_runtime(c);
        ctx_answer_waiters(c, CTX_W_INTERRUPT, false, NULL);
        return;
    }
    if (rc) {
        char what[300];
        snprintf(what, sizeof what, "its process %s", how);
        start_failed(c, what);
        return;
    }
    ctx_answer_waiters(c, CTX_W_INTERRUPT, false, NULL); /* killed: its state is lost */
}

/* ---- contexts ---- */

static void ctx_closed(uv_handle_t *h)
{
    struct context *c = h->data;
    if (--c->open_timers)
        return;
    json_decref(c->env);
    free(c);
}

static void close_timers(struct context *c)
{
    uv_timer_stop(&c->timer);
    uv_timer_stop(&c->line_timer);
    uv_close((uv_handle_t *)&c->timer, ctx_closed);
    uv_close((uv_handle_t *)&c->line_timer, ctx_closed);
}

void ctx_delete(struct context *c, const char *why)
{
    c->deleting = true;
    struct context **pp = ctx_list(c->sb);
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    if (c->sb->ncontexts)
        c->sb->ncontexts--;
    if (c->proc)
        ctx_lines_flush(c->proc);
    struct ctx_run *r = c->cur;
    c->cur = NULL;
    if (r) {
        r->state_lost = true;
        ctx_run_set_error(r, "ContextDied", "%s", why);
        ctx_run_answer(r);
    }
    ctx_fail_queue(c, "ContextDied", why);
    ctx_answer_waiters(c, CTX_W_READY, false, why);
    ctx_answer_waiters(c, CTX_W_INTERRUPT, false, why);
    struct ctx_proc *p = c->proc;
    if (p) {
        ctx_proc_detach(p);
        ctx_proc_maybe_free(p);
    }
    close_timers(c);
}

static void on_sandbox_destroy(sandbox *sb)
{
    while (*ctx_list(sb))
        ctx_delete(*ctx_list(sb), sbx_end_why());
}

void ctx_init(uv_loop_t *loop, const struct config *cfg)
{
    ctx_loop = loop;
    ctx_cfg = cfg;
    sbx_on_destroy(on_sandbox_destroy);
}

int ctx_create(sandbox *sb, enum ctx_lang lang, const char *cwd, const json_t *env, bool is_default,
               struct context **out, char *err, size_t errlen)
{
    if (sb->ncontexts >= ctx_cfg->max_contexts) {
        snprintf(err, errlen, "sandbox '%s' has %u contexts, the limit (--max-contexts)", sb->id,
                 sb->ncontexts);
        return -EMFILE;
    }
    struct context *c = calloc(1, sizeof *c);
    if (!c || stamp_id(c->id, sizeof c->id, "ctx-")) {
        free(c);
        return -ENOMEM;
    }
    c->sb = sb;
    c->lang = lang;
    c->is_default = is_default;
    snprintf(c->cwd, sizeof c->cwd, "%s", cwd);
    c->env = env ? json_deep_copy(env) : json_object();
    c->created_ms = c->last_used_ms = stamp_now_ms();
    uv_timer_init(ctx_loop, &c->timer);
    uv_timer_init(ctx_loop, &c->line_timer);
    c->timer.data = c->line_timer.data = c;
    c->open_timers = 2;
    int rc = ctx_proc_start(c, err, errlen);
    if (rc == -EAGAIN && lang == LANG_PYTHON) {
        wait_for_runtime(c); /* the zygote is restarting: ready once it is back */
        rc = 0;
    }
    if (rc) {
        close_timers(c);
        return rc;
    }
    c->next = *ctx_list(sb);
    *ctx_list(sb) = c;
    sb->ncontexts++;
    *out = c;
    return 0;
}

int ctx_restart(struct context *c, char *err, size_t errlen)
{
    if (c->proc)
        ctx_lines_flush(c->proc); /* printed before the restart: still the run's */
    struct ctx_run *r = c->cur;
    c->cur = NULL;
    if (r) {
        r->state_lost = true;
        ctx_run_set_error(r, "ContextDied", "the context was restarted");
        ctx_run_answer(r);
    }
    struct ctx_proc *old = c->proc;
    if (old) {
        ctx_proc_detach(old);
        ctx_proc_maybe_free(old);
    }
    uv_timer_stop(&c->timer);
    c->exec_count = 0;
    c->died_how[0] = '\0'; /* asked for: nothing to report */
    c->rt_wait = c->rt_lost = false;
    c->rt_deadline = 0;
    ctx_answer_waiters(c, CTX_W_INTERRUPT, false, NULL);
    int rc = ctx_proc_start(c, err, errlen);
    if (rc == -EAGAIN && c->lang == LANG_PYTHON) {
        wait_for_runtime(c);
        return 0;
    }
    if (rc)
        c->state = CTX_DEAD;
    return rc;
}

bool ctx_runtime_lost(const struct context *c)
{
    return c->state == CTX_DEAD && c->rt_lost;
}

int ctx_revive(struct context *c)
{
    if (!ctx_runtime_lost(c))
        return -EINVAL;
    char err[256];
    return ctx_restart(c, err, sizeof err);
}
