/*
 * execution.c — executions (see execution.h for the contract and the policy): their
 * lifetime, the run's sink, the log and its followers; the JSON a client reads is
 * execution_json.c's, the structures are in execution_int.h.
 *
 * Data structures: each sandbox's sb->executions is a struct exe_set, a list of executions
 * in arrival order (so a context's queue is the list filtered by context). An execution
 * owns its log, a deque of events whose ids are contiguous: evs[head .. head+n) hold ids
 * first_id .. next_id-1; everything below first_id was dropped (counted). Each follower
 * keeps the id of the next event it is to be sent. One timer serves the re-attach grace
 * (while the run is not over) and then the retention.
 *
 * Memory: each event is charged to the sandbox's budget (its JSON plus EV_OVERHEAD) before
 * it is kept, and released when it is dropped or the execution is freed; the request's
 * bytes handed over by exe_start are held until the run ends, then only the code's. When
 * the budget or --execution-log-bytes has no room, make_room drops, oldest first, events
 * every streamed follower was sent, then the events of finished executions of the same
 * sandbox that nobody follows; what still does not fit is forced (a follower needs it)
 * and the context is not read until there is room again, or dropped (nobody needs it).
 */
#include "execution_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "escape.h"
#include "log.h"
#include "stamp.h"

/* What one kept event costs besides its JSON (its slot, the allocator's header). */
#define EV_OVERHEAD 64
/* Room a read of the context needs: a 64 KiB read escapes to at most 6 times as much. */
#define READ_RESERVE (65536 * 6 + 512)
/* A read taken even without room, when every streamed follower has been sent everything
 * (a stream that is read never starves because of the sandbox's other holdings). */
#define READ_FLOOR 4096

static uv_loop_t *exe_loop;
static const struct config *exe_cfg;

static void push(exe_follower *f);
static void maybe_resume(execution *e);

/* ---- lifetime ---- */

static void exe_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Drop the oldest count events. The log is consistent before each release: releasing
 * may wake this execution's own budget waiter, which may drop more (maybe_resume). */
static void drop_events(execution *e, size_t count)
{
    for (size_t i = 0; i < count && e->n; i++) {
        struct ev v = e->evs[e->head];
        e->head++;
        e->n--;
        if (e->n == 0)
            e->head = 0;
        e->first_id++;
        e->dropped_events++;
        e->log_bytes -= v.len + EV_OVERHEAD;
        free(v.data);
        budget_release(e->bg, v.len + EV_OVERHEAD);
    }
}

static void exe_unref(execution *e)
{
    if (--e->refs)
        return;
    drop_events(e, e->n);
    free(e->evs);
    budget_cancel(e->bg, &e->bw);
    budget_release(e->bg, e->held);
    budget_unref(e->bg);
    json_decref(e->code);
    json_decref(e->error);
    uv_timer_stop(&e->timer);
    uv_close((uv_handle_t *)&e->timer, exe_closed);
}

struct exe_set *exe__set_of(sandbox *sb, bool make)
{
    if (!sb->executions && make)
        sb->executions = calloc(1, sizeof(struct exe_set));
    return sb->executions;
}

/* Take e out of its sandbox's list (it is then not found any more). */
static void forget(execution *e)
{
    struct exe_set *s = e->sb ? exe__set_of(e->sb, false) : NULL;
    if (!s)
        return;
    execution **pp = &s->head, *prev = NULL;
    while (*pp && *pp != e) {
        prev = *pp;
        pp = &(*pp)->lnext;
    }
    if (*pp) {
        *pp = e->lnext;
        if (s->tail == e)
            s->tail = prev;
        s->n--;
    }
    e->sb = NULL;
    uv_timer_stop(&e->timer);
    exe_unref(e);
}

static void timer_cb(uv_timer_t *t)
{
    execution *e = t->data;
    if (e->state != EXE_DONE) {
        log_info("execution %s: nobody re-attached within %llu ms: ending it", e->id,
                 (unsigned long long)exe_cfg->reattach_grace_ms);
        exe_cancel(e, "nobody was attached to the run for --reattach-grace-ms; it was cancelled");
    } else if (e->nfollow == 0) {
        forget(e);
    }
}

/* The grace runs while nobody follows a run that is not over. */
static void update_grace(execution *e)
{
    if (e->state == EXE_DONE)
        return;
    if (e->nfollow == e->nloose) {
        if (!uv_is_active((uv_handle_t *)&e->timer))
            uv_timer_start(&e->timer, timer_cb, exe_cfg->reattach_grace_ms, 0);
    } else {
        uv_timer_stop(&e->timer);
    }
}

static void on_sandbox_destroy(sandbox *sb)
{
    struct exe_set *s = exe__set_of(sb, false);
    if (!s)
        return;
    while (s->head)
        forget(s->head); /* the contexts were deleted first: every run is over */
    free(s);
    sb->executions = NULL;
}

void exe_init(uv_loop_t *loop, const struct config *cfg)
{
    exe_loop = loop;
    exe_cfg = cfg;
    sbx_on_destroy(on_sandbox_destroy);
}

/* ---- the log ---- */

/* The id under which no streamed follower still needs an event (every event below it has
 * been sent to all of them). */
static uint64_t sent_to_all(const execution *e)
{
    uint64_t min = e->next_id;
    for (const exe_follower *f = e->followers; f; f = f->fnext)
        if (f->events && f->next < min)
            min = f->next;
    return min;
}

static bool has_room(const execution *e, size_t need)
{
    return e->log_bytes + need <= exe_cfg->execution_log_bytes && budget_room(e->bg) >= need;
}

/* Drop the events of finished executions of e's sandbox that nobody follows, oldest first,
 * until need bytes of the budget are free. */
static void reclaim(execution *e, size_t need)
{
    struct exe_set *s = e->sb ? exe__set_of(e->sb, false) : NULL;
    for (execution *x = s ? s->head : NULL; x && budget_room(e->bg) < need; x = x->lnext)
        if (x != e && x->state == EXE_DONE && x->nfollow == 0)
            drop_events(x, x->n);
}

/* Make room for need bytes by dropping what nobody needs; true when it fits now. */
static bool make_room(execution *e, size_t need)
{
    uint64_t sent = sent_to_all(e);
    while (e->n && e->first_id < sent && !has_room(e, need))
        drop_events(e, 1);
    if (budget_room(e->bg) < need)
        reclaim(e, need);
    return has_room(e, need);
}

/* Keep an event (data is taken over). must_keep: never dropped (error, end). */
static void append(execution *e, const char *type, char *data, size_t len, size_t raw,
                   bool must_keep)
{
    size_t cost = len + EV_OVERHEAD;
    bool fits = make_room(e, cost) && budget_charge(e->bg, cost) == 0;
    if (!fits && !must_keep && e->nstream == 0 && e->n == 0) {
        free(data); /* nobody is sent it and nothing older is kept: dropped, counted */
        e->first_id = ++e->next_id;
        e->dropped_events++;
        return;
    }
    if (!fits)
        budget_force(e->bg, cost); /* a follower needs it: held, and reading pauses */
    if (e->head + e->n == e->alloc) {
        if (e->head > e->n) {
            memmove(e->evs, e->evs + e->head, e->n * sizeof *e->evs);
            e->head = 0;
        } else {
            size_t na = e->alloc ? e->alloc * 2 : 16;
            struct ev *nv = realloc(e->evs, na * sizeof *nv);
            if (!nv) { /* out of memory: everything kept so far goes, counted */
                budget_release(e->bg, cost);
                free(data);
                drop_events(e, e->n);
                e->first_id = ++e->next_id;
                e->dropped_events++;
                return;
            }
            e->evs = nv;
            e->alloc = na;
        }
    }
    e->evs[e->head + e->n++] = (struct ev){ type, data, len, raw };
    e->log_bytes += cost;
    e->next_id++;
    for (exe_follower *f = e->followers, *nf; f; f = nf) {
        nf = f->fnext;
        if (f->events)
            push(f);
    }
}

/* The room a read needs, after dropping what may be dropped. */
static bool read_room(execution *e)
{
    return e->nstream == 0 || make_room(e, READ_RESERVE);
}

static void budget_woken(budget_waiter *w)
{
    maybe_resume(w->arg);
}

/* Stop reading the context until there is room: 1 for the sink's answer. */
static int pause_reading(execution *e)
{
    e->reading_paused = true;
    e->bw.need = READ_RESERVE;
    e->bw.cb = budget_woken;
    e->bw.arg = e;
    budget_wait(e->bg, &e->bw);
    return 1;
}

static void maybe_resume(execution *e)
{
    if (!e->reading_paused || !e->run)
        return;
    if (!read_room(e) && sent_to_all(e) < e->next_id)
        return; /* a follower still has to take what is kept */
    if (!e->reading_paused)
        return; /* resumed meanwhile: read_room's drops woke our budget waiter */
    e->reading_paused = false;
    budget_cancel(e->bg, &e->bw);
    ctx_run_resume(e->run);
}

/* After an event of the run: pause when a streamed follower holds back the room. */
static int after_event(execution *e)
{
    if (read_room(e) || sent_to_all(e) == e->next_id)
        return 0;
    return pause_reading(e);
}

/* ---- the sink ---- */

static char *text_event(esc_carry *carry, const char *data, size_t n, bool final, size_t *len)
{
    buf b;
    buf_init(&b, n * 6 + 64);
    int rc = buf_puts(&b, "{\"text\":\"");
    size_t start = b.len;
    if (!rc)
        rc = esc_json(&b, carry, data, n, final);
    if (rc || b.len == start || buf_puts(&b, "\"}")) {
        buf_free(&b);
        return NULL; /* nothing to send yet (in the carry), or out of memory */
    }
    *len = b.len;
    return buf_steal(&b);
}

static int sink_output(void *arg, bool is_err, const char *data, size_t n)
{
    execution *e = arg;
    size_t len;
    char *s = text_event(is_err ? &e->c_err : &e->c_out, data, n, false, &len);
    if (s)
        append(e, is_err ? "stderr" : "stdout", s, len, n, false);
    return after_event(e);
}

static int sink_result(void *arg, json_t *result, size_t msg_bytes)
{
    execution *e = arg;
    (void)msg_bytes;
    char *s = json_dumps(result, JSON_COMPACT);
    if (s)
        append(e, "result", s, strlen(s), 0, false);
    return after_event(e);
}

static size_t sink_allowance(void *arg, size_t chunk)
{
    execution *e = arg;
    if (read_room(e))
        return chunk;
    return sent_to_all(e) == e->next_id ? READ_FLOOR : 0;
}

static void sink_wait_room(void *arg)
{
    pause_reading(arg);
}

static void sink_start(void *arg)
{
    execution *e = arg;
    e->state = EXE_RUNNING;
    e->started_ms = stamp_now_ms();
}

static void sink_end(void *arg, const struct ctx_run_end *x)
{
    execution *e = arg;
    size_t len;
    esc_carry *cs[2] = { &e->c_out, &e->c_err };
    for (int i = 0; i < 2; i++) {
        char *s = text_event(cs[i], "", 0, true, &len);
        if (s)
            append(e, i ? "stderr" : "stdout", s, len, 0, true);
    }
    e->run = NULL;
    e->error = x->error ? json_deep_copy(x->error) : NULL;
    e->exec_count = x->exec_count;
    e->duration_ms = x->duration_ms;
    e->state_preserved = x->state_preserved;
    e->cpu_ms = x->cpu_ms;
    e->peak_memory = x->peak_memory_bytes;
    if (e->error) {
        char *s = json_dumps(e->error, JSON_COMPACT);
        if (s)
            append(e, "error", s, strlen(s), 0, true);
    }
    buf b;
    buf_init(&b, 4096);
    buf_printf(&b, "{\"executionCount\":%d,\"durationMs\":%.3f,\"statePreserved\":%s,\"usage\":",
               e->exec_count, e->duration_ms, e->state_preserved ? "true" : "false");
    exe__put_usage(&b, e);
    buf_puts(&b, "}");
    len = b.len;
    char *s = buf_steal(&b);
    if (s)
        append(e, "end", s, len, 0, true);
    e->state = EXE_DONE; /* only now: followers end after the end event */
    /* the request is no longer held, only the code (for the document) */
    size_t keep = json_string_length(e->code) + 256;
    if (e->held > keep) {
        budget_release(e->bg, e->held - keep);
        e->held = keep;
    }
    e->reading_paused = false;
    budget_cancel(e->bg, &e->bw);
    uv_timer_stop(&e->timer);
    if (e->sb)
        uv_timer_start(&e->timer, timer_cb, exe_cfg->execution_retention_ms, 0);
    for (exe_follower *f = e->followers, *nf; f; f = nf) {
        nf = f->fnext;
        push(f);
    }
}

static const struct ctx_sink EXE_SINK = {
    .start = sink_start,
    .output = sink_output,
    .result = sink_result,
    .allowance = sink_allowance,
    .wait_room = sink_wait_room,
    .end = sink_end,
};

/* ---- executions ---- */

/* Make room in s for one more: forget the oldest finished execution nobody follows. */
static int make_slot(struct exe_set *s)
{
    if (s->n < exe_cfg->max_executions)
        return 0;
    for (execution *x = s->head; x; x = x->lnext)
        if (x->state == EXE_DONE && x->nfollow == 0) {
            forget(x);
            return 0;
        }
    return EXE_FULL;
}

int exe_start(sandbox *sb, struct context *c, json_t *code, json_t *env, uint64_t timeout_ms,
              size_t held, execution **out, char *err, size_t errlen)
{
    struct exe_set *s = exe__set_of(sb, true);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (make_slot(s)) {
        snprintf(err, errlen,
                 "sandbox '%s' has %u executions queued, running or being read, the limit "
                 "(--max-executions)",
                 sb->id, s->n);
        return EXE_FULL;
    }
    execution *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    struct ctx_info ci;
    ctx_get_info(c, &ci);
    snprintf(e->cid, sizeof e->cid, "%s", ci.id);
    e->sb = sb;
    e->bg = budget_ref(sb->budget);
    e->code = json_incref(code);
    e->queued_ms = stamp_now_ms();
    e->first_id = e->next_id = 1;
    e->cpu_ms = -1;
    e->peak_memory = -1;
    e->refs = 1;
    uv_timer_init(exe_loop, &e->timer);
    e->timer.data = e;
    e->run = ctx_run_queue(c, code, env, timeout_ms, &EXE_SINK, e);
    if (!e->run) {
        exe_unref(e);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    snprintf(e->id, sizeof e->id, "%s", ctx_run_id(e->run));
    e->held = held;
    if (s->tail)
        s->tail->lnext = e;
    else
        s->head = e;
    s->tail = e;
    s->n++;
    update_grace(e); /* until the caller attaches */
    *out = e;
    return 0;
}

execution *exe_find(sandbox *sb, const char *eid)
{
    struct exe_set *s = exe__set_of(sb, false);
    for (execution *e = s ? s->head : NULL; e; e = e->lnext)
        if (strcmp(e->id, eid) == 0)
            return e;
    return NULL;
}

const char *exe_id(const execution *e)
{
    return e->id;
}

const char *exe_context_id(const execution *e)
{
    return e->cid;
}

enum exe_state exe_state(const execution *e)
{
    return e->state;
}

uint64_t exe_last_event(const execution *e)
{
    return e->next_id - 1;
}

budget *exe_budget(const execution *e)
{
    return e->bg;
}

unsigned exe_followers(const execution *e)
{
    return e->nfollow;
}

/* ---- followers ---- */

static void follower_free(exe_follower *f)
{
    execution *e = f->e;
    exe_follower **pp = &e->followers;
    while (*pp && *pp != f)
        pp = &(*pp)->fnext;
    if (*pp)
        *pp = f->fnext;
    e->nfollow--;
    if (f->events)
        e->nstream--;
    if (f->loose)
        e->nloose--;
    free(f);
    update_grace(e);
    /* a finished execution is retained from when its last reader left */
    if (e->state == EXE_DONE && e->nfollow == 0 && e->sb)
        uv_timer_start(&e->timer, timer_cb, exe_cfg->execution_retention_ms, 0);
    maybe_resume(e);
    exe_unref(e);
}

/* A notice for the events below the log's first id that f was to be sent. */
static int send_gap(exe_follower *f)
{
    const execution *e = f->e;
    char msg[320];
    int n = snprintf(msg, sizeof msg,
                     "{\"firstId\":%llu,\"lastId\":%llu,\"events\":%llu,\"message\":\"these "
                     "events are no longer kept (--execution-log-bytes %llu, or the sandbox's "
                     "buffer budget)\"}",
                     (unsigned long long)f->next, (unsigned long long)e->first_id - 1,
                     (unsigned long long)(e->first_id - f->next),
                     (unsigned long long)exe_cfg->execution_log_bytes);
    f->next = e->first_id;
    return f->ops->event(f->arg, 0, "dropped", msg, (size_t)n);
}

static void push(exe_follower *f)
{
    execution *e = f->e;
    if (f->paused)
        return;
    while (f->events && f->next < e->next_id) {
        int rc;
        if (f->next < e->first_id) {
            rc = send_gap(f);
        } else {
            const struct ev *v = &e->evs[e->head + (f->next - e->first_id)];
            rc = f->ops->event(f->arg, f->next++, v->type, v->data, v->len);
        }
        if (rc == 1) {
            f->paused = true;
            maybe_resume(e);
            return;
        }
    }
    if (e->state == EXE_DONE) {
        f->ops->done(f->arg);
        follower_free(f);
        return;
    }
    maybe_resume(e);
}

exe_follower *exe_follow(execution *e, bool events, uint64_t after,
                         const struct exe_follower_ops *ops, void *arg)
{
    exe_follower *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->e = e;
    f->events = events;
    f->next = after < UINT64_MAX ? after + 1 : UINT64_MAX;
    f->ops = ops;
    f->arg = arg;
    f->paused = true; /* until exe_follower_start */
    f->fnext = e->followers;
    e->followers = f;
    e->nfollow++;
    if (events)
        e->nstream++;
    e->refs++;
    update_grace(e);
    if (e->state == EXE_DONE)
        uv_timer_stop(&e->timer); /* retained while read */
    return f;
}

void exe_follower_start(exe_follower *f)
{
    f->paused = false;
    push(f);
}

void exe_follower_resume(exe_follower *f)
{
    f->paused = false;
    push(f);
}

void exe_follower_loose(exe_follower *f)
{
    if (f->loose)
        return;
    f->loose = true;
    f->e->nloose++;
    update_grace(f->e);
}

void exe_follower_detach(exe_follower *f)
{
    follower_free(f);
}

int exe_cancel(execution *e, const char *why)
{
    if (e->state == EXE_DONE || !e->run)
        return 0;
    return ctx_run_cancel(e->run, why);
}

void exe_fail_all(const char *name, const char *why)
{
    for (sandbox *sb = sbx_first(); sb; sb = sb->lnext) {
        struct exe_set *s = exe__set_of(sb, false);
        for (execution *e = s ? s->head : NULL, *ne; e; e = ne) {
            ne = e->lnext;
            if (e->state != EXE_DONE && e->run && !e->failing) {
                e->failing = true;
                ctx_run_fail(e->run, name, why);
            }
        }
    }
}
