/*
 * process.c — background processes (see process.h for the contract and the follower
 * policy).
 *
 * Data structures: each sandbox's sb->processes is a struct proc_set, a list of struct
 * proc in start order. A proc owns two pipes (stdout, stderr) read into two rings, a
 * timer (the drain grace after exit), the list of its SSE followers and the DELETE
 * requests waiting for it to end. A ring keeps absolute byte offsets: [start, end) is
 * what it holds, start is also the count of bytes it dropped; followers keep their own
 * offset per stream. A ring's memory grows with what is written, up to its cap.
 *
 * Life: starting (the POST waits for the sandbox's init to start it: not listed yet, but
 * counted against --max-processes) → running → exited (exit callback) → finished (both
 * pipes at EOF, or closed after DRAIN_GRACE_MS when orphans hold them): followers get
 * `exit`, DELETE waiters their answer. A proc is freed when it is finished, removed from its sandbox (DELETE, eviction
 * past --max-processes, or the sandbox's destruction), has no follower left and all its
 * handles are closed. The sandbox-destroy hook only detaches the procs: the jail kills
 * every process and reports each exit before the sandbox is gone.
 *
 * Memory: a ring's allocation is charged to the sandbox's budget (budget.h) before it
 * grows. When the budget refuses, the ring stops growing and becomes a ring of the size it
 * has: the oldest bytes are dropped sooner, counted as always (outputDropped, `dropped`
 * events), and the process is never blocked. JSON logs and follower events are charged
 * while queued to the client (http_req_set_budget).
 */
#include "stamp.h"
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"
#include "budget.h"
#include "command.h"
#include "jsonx.h"
#include "log.h"
#include "sandbox.h"
#include "sse.h"

#define EVENT_MAX (64 << 10)     /* output bytes per SSE event */

static const char *const STREAM[2] = { "stdout", "stderr" };

struct ring {
    char *data;
    size_t alloc, cap;           /* cap shrinks to alloc when the budget refuses growth */
    uint64_t start, end;         /* absolute offsets of what is held */
    budget *bg;                  /* charged with alloc; borrowed from the proc */
};

struct proc;

struct follower {
    http_req *req;
    struct proc *p;
    sse sse;
    uint64_t pos[2];
    uint64_t dropped[2];
    esc_carry carry[2];
    bool paused;
    budget_waiter bw;            /* queued while the budget has no room for an event */
    struct follower *next;
};

struct waiter {
    http_req *req;
    struct waiter *next;
};

struct ppipe {
    uv_pipe_t h;
    bool open;
    struct ring ring;
    struct proc *p;
};

struct proc {
    char id[32];
    pid_t pid;
    char *command;
    char cwd[1100];
    uint64_t started_ms, ended_ms;
    jail_proc *jp;               /* NULL once exited */
    bool exited, finished, removed;
    int status;
    budget *bg;                  /* the sandbox's budget; one reference */
    struct ppipe io[2];
    uv_timer_t timer;
    int handles;
    struct follower *followers;
    struct waiter *waiters;
    struct proc *next;           /* the sandbox's list */
    /* until the sandbox's init has started it (proc_started) */
    jail_req *start;
    http_req *start_req;
    sandbox *sb;
    int out_fd[2];
};

struct proc_set {
    struct proc *head;
    unsigned n;
    unsigned starting;           /* waiting for the sandbox's init; count against the cap */
};

static bool hook_registered;
static uint64_t log_cap;
static uint64_t drain_grace_ms;   /* --drain-grace-ms, set with log_cap */

/* ---- helpers ---- */

/* ---- rings ---- */

/* Append, dropping the oldest bytes past the cap. Memory grows (doubling) until the cap;
 * while it is below the cap nothing has wrapped, so offsets are positions. */
static void ring_append(struct ring *r, const char *d, size_t n)
{
    if (n >= r->cap) {
        r->end += n - r->cap;
        d += n - r->cap;
        n = r->cap;
    }
    if (r->alloc < r->cap && r->end + n > r->alloc) {
        size_t want = r->alloc ? r->alloc : 4096;
        while (want < r->end + n)
            want *= 2;
        if (want > r->cap)
            want = r->cap;
        bool granted = budget_charge(r->bg, want - r->alloc) == 0;
        char *nd = granted ? realloc(r->data, want) : NULL;
        if (!nd) {
            if (granted)
                budget_release(r->bg, want - r->alloc);
            if (r->alloc) {
                /* no growth (budget or memory): nothing has wrapped yet, so offsets are
                 * still positions, and the ring becomes one of the size it has */
                r->cap = r->alloc;
                ring_append(r, d, n);
                return;
            }
            r->end += n;   /* nothing held, nothing granted: the bytes count as dropped */
            r->start = r->end;
            return;
        }
        r->data = nd;
        r->alloc = want;
    }
    size_t pos = (size_t)(r->end % r->cap);
    size_t first = n < r->cap - pos ? n : r->cap - pos;
    memcpy(r->data + pos, d, first);
    memcpy(r->data, d + first, n - first);
    r->end += n;
    if (r->end - r->start > r->cap)
        r->start = r->end - r->cap;
}

/* The contiguous bytes held from offset from on, at most max of them. */
static size_t ring_span(const struct ring *r, uint64_t from, size_t max, const char **out)
{
    if (from < r->start || from >= r->end)
        return 0;
    size_t pos = (size_t)(from % r->cap);
    uint64_t left = r->end - from;
    size_t n = r->cap - pos;
    if (n > left)
        n = (size_t)left;
    if (n > max)
        n = max;
    *out = r->data + pos;
    return n;
}

/* ---- JSON ---- */

static json_t *proc_json(const struct proc *p)
{
    char started[40], ended[40];
    stamp_iso8601(p->started_ms, started, sizeof started);
    json_t *j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s}", "id", p->id, "pid", (int)p->pid,
                          "command", p->command, "cwd", p->cwd, "status",
                          p->exited ? "exited" : "running", "startedAt", started);
    if (j && p->exited) {
        const char *sig;
        int code = exec_exit_code(p->status, &sig);
        stamp_iso8601(p->ended_ms, ended, sizeof ended);
        json_object_set_new(j, "exitCode", json_integer(code));
        json_object_set_new(j, "endedAt", json_string(ended));
        if (sig) {
            char name[32];
            snprintf(name, sizeof name, "SIG%s", sig);
            json_object_set_new(j, "signal", json_string(name));
        }
    }
    if (j)
        json_object_set_new(j, "outputDropped",
                            json_pack("{s:I, s:I}", "stdout", (json_int_t)p->io[0].ring.start,
                                      "stderr", (json_int_t)p->io[1].ring.start));
    return j;
}

/* ---- lifetime ---- */

static void proc_maybe_free(struct proc *p)
{
    if (!p->removed || !p->finished || p->followers || p->waiters || p->handles)
        return;
    for (int i = 0; i < 2; i++) {
        budget_release(p->bg, p->io[i].ring.alloc);
        free(p->io[i].ring.data);
    }
    budget_unref(p->bg);
    free(p->command);
    free(p);
}

static void handle_closed(uv_handle_t *h)
{
    struct proc *p = h->data;
    p->handles--;
    proc_maybe_free(p);
}

static void pipe_closed(uv_handle_t *h)
{
    struct ppipe *pp = h->data;
    pp->p->handles--;
    proc_maybe_free(pp->p);
}

/* Take p out of its sandbox's list (it stays alive while anything refers to it). */
static void proc_remove(struct proc_set *set, struct proc *p)
{
    if (p->removed)
        return;
    for (struct proc **pp = &set->head; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            set->n--;
            break;
        }
    p->removed = true;
}

/* ---- followers ---- */

static void follower_detach(struct follower *f)
{
    struct proc *p = f->p;
    for (struct follower **pp = &p->followers; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    budget_cancel(p->bg, &f->bw);
    sse_end(&f->sse);   /* completes the request (discarded when the client is gone) */
    free(f);
    proc_maybe_free(p);
}

/* Send a follower everything it has not had yet, until the client asks to pause; once
 * the process is finished and all is sent, the exit event ends the stream.
 * Returns false when the follower was detached (freed). */
static void follower_woken(budget_waiter *w);

/* Queued events are charged to the sandbox's budget: true (and f waits for room, or for
 * its client to take what is queued) when it cannot take another event (EVENT_MAX bytes
 * escape to at most 6 times as many). A follower whose client has taken everything may
 * always send one: one that is read never starves because of others that are not. */
static bool follower_starved(struct follower *f)
{
    const size_t need = EVENT_MAX * 6 + 512;
    if (budget_room(f->p->bg) >= need || http_queued(f->req) == 0)
        return false;
    f->req->paused = true;       /* follower_drain once the client has taken it */
    f->bw.need = need;
    f->bw.cb = follower_woken;
    f->bw.arg = f;
    budget_wait(f->p->bg, &f->bw);
    return true;
}

static bool follower_pump(struct follower *f)
{
    struct proc *p = f->p;
    if (f->paused)
        return true;
    for (int i = 0; i < 2; i++) {
        const struct ring *r = &p->io[i].ring;
        if (f->pos[i] < r->start) {
            uint64_t gap = r->start - f->pos[i];
            f->dropped[i] += gap;
            f->pos[i] = r->start;
            memset(&f->carry[i], 0, sizeof f->carry[i]);
            char ev[96];
            int n = snprintf(ev, sizeof ev, "{\"stream\":\"%s\",\"bytes\":%llu}", STREAM[i],
                             (unsigned long long)gap);
            int rc = sse_event(&f->sse, "dropped", ev, (size_t)n);
            if (rc < 0) {
                follower_detach(f);
                return false;
            }
            if (rc == 1) {
                f->paused = true;
                return true;
            }
        }
        while (f->pos[i] < r->end) {
            if (follower_starved(f))
                return true;
            const char *d = "";
            size_t n = ring_span(r, f->pos[i], EVENT_MAX, &d);
            f->pos[i] += n;
            int rc = sse_event_text(&f->sse, STREAM[i], &f->carry[i], d, n, false);
            if (rc < 0) {
                follower_detach(f);
                return false;
            }
            if (rc == 1) {
                f->paused = true;
                return true;
            }
        }
    }
    if (!p->finished)
        return true;
    for (int i = 0; i < 2; i++)
        sse_event_text(&f->sse, STREAM[i], &f->carry[i], "", 0, true);
    const char *sig;
    int code = exec_exit_code(p->status, &sig);
    char ev[256];
    int n = snprintf(ev, sizeof ev, "{\"exitCode\":%d%s%s%s,\"dropped\":{\"stdout\":%llu,"
                     "\"stderr\":%llu}}", code, sig ? ",\"signal\":\"SIG" : "",
                     sig ? sig : "", sig ? "\"" : "", (unsigned long long)f->dropped[0],
                     (unsigned long long)f->dropped[1]);
    sse_event(&f->sse, "exit", ev, (size_t)n);
    follower_detach(f);
    return false;
}

static void follower_woken(budget_waiter *w)
{
    follower_pump(w->arg);
}

static void pump_all(struct proc *p)
{
    struct follower *f = p->followers;
    while (f) {
        struct follower *next = f->next;
        follower_pump(f);
        f = next;
    }
}

static void follower_drain(http_req *req, void *arg)
{
    struct follower *f = arg;
    (void)req;
    f->paused = false;
    follower_pump(f);
}

static void follower_abort(http_req *req, void *arg)
{
    (void)req;
    follower_detach(arg);
}

/* ---- the process ---- */

static void proc_finish(struct proc *p)
{
    if (p->finished || !p->exited || p->io[0].open || p->io[1].open)
        return;
    p->finished = true;
    uv_timer_stop(&p->timer);
    uv_close((uv_handle_t *)&p->timer, handle_closed);
    p->handles++;   /* held across the calls below, which may free followers */
    while (p->waiters) {
        struct waiter *w = p->waiters;
        p->waiters = w->next;
        json_t *j = proc_json(p);
        if (j)
            json_object_set_new(j, "deleted", json_true());
        jx_respond(w->req, 200, j);
        free(w);
    }
    pump_all(p);
    p->handles--;
    proc_maybe_free(p);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char chunk[65536];
    (void)h;
    (void)hint;
    *b = uv_buf_init(chunk, sizeof chunk);
}

static void close_pipe(struct ppipe *pp)
{
    if (!pp->open)
        return;
    pp->open = false;
    uv_close((uv_handle_t *)&pp->h, pipe_closed);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct ppipe *pp = s->data;
    struct proc *p = pp->p;
    if (n < 0) {
        close_pipe(pp);
        proc_finish(p);
        return;
    }
    if (n == 0)
        return;
    ring_append(&pp->ring, b->base, (size_t)n);
    pump_all(p);
}

static void timer_cb(uv_timer_t *t)
{
    struct proc *p = t->data;
    /* the drain grace is over: orphans still hold the pipes */
    close_pipe(&p->io[0]);
    close_pipe(&p->io[1]);
    proc_finish(p);
}

static void exit_cb(jail_proc *jp, int status, void *arg)
{
    struct proc *p = arg;
    (void)jp;
    p->exited = true;
    p->status = status;
    p->jp = NULL;
    p->ended_ms = stamp_now_ms();
    if (p->io[0].open || p->io[1].open)
        uv_timer_start(&p->timer, timer_cb, drain_grace_ms, 0);
    proc_finish(p);
}

/* The sandbox is going: let go of its processes (the jail kills them and reports each
 * exit; followers and DELETE waiters are answered then). */
static void on_sandbox_destroy(sandbox *sb)
{
    struct proc_set *set = sb->processes;
    if (!set)
        return;
    while (set->head) {
        struct proc *p = set->head;
        if (p->jp)
            jail_proc_kill(p->jp, SIGKILL);
        proc_remove(set, p);
        proc_maybe_free(p);
    }
    free(set);
    sb->processes = NULL;
}

void proc_init(void)
{
    sbx_on_destroy(on_sandbox_destroy);
    hook_registered = true;
}

static struct proc_set *proc_set_of(sandbox *sb)
{
    if (!sb->processes)
        sb->processes = calloc(1, sizeof(struct proc_set));
    return sb->processes;
}

static struct proc *proc_find(sandbox *sb, const char *id)
{
    struct proc_set *set = sb->processes;
    for (struct proc *p = set ? set->head : NULL; p; p = p->next)
        if (id && strcmp(p->id, id) == 0)
            return p;
    return NULL;
}

/* The process named by {pid} in the route; when none, the request was answered. */
static struct proc *lookup(http_req *req, const route_params *rp, sandbox **sbo)
{
    sandbox *sb = api_sandbox_lookup(req, rp);
    if (!sb)
        return NULL;
    const char *id = route_param(rp, "pid");
    struct proc *p = proc_find(sb, id);
    if (!p)
        http_respond_error(req, 404, "PROCESS_NOT_FOUND", "no process '%.64s' in sandbox '%s'",
                           id ? id : "", sb->id);
    if (sbo)
        *sbo = sb;
    return p;
}

/* ---- routes ---- */

/* The start failed or nobody waits for it: answer and forget the process. */
static void start_failed(struct proc *p, int rc, const char *msg)
{
    struct proc_set *set = p->sb->processes;   /* NULL once the sandbox let go */
    if (set && set->starting)
        set->starting--;
    for (int i = 0; i < 2; i++)
        close(p->out_fd[i]);
    cmd_respond_error(p->start_req, rc, p->cwd, msg ? msg : strerror(-rc), "process");
    free(p->command);
    free(p);
}

static void start_abort(http_req *req, void *arg)
{
    struct proc *p = arg;
    (void)req;
    /* the jail ends the process if the sandbox's init starts it anyway */
    jail_cancel(p->start);
    p->start = NULL;
    start_failed(p, -ECONNABORTED, "the client went away before it started");
}

/* The sandbox's init started the process (or could not): it joins the sandbox's list
 * and the request gets its answer. */
static void proc_started(jail_proc *jp, int rc, const char *msg, void *arg)
{
    struct proc *p = arg;
    http_req *req = p->start_req;
    sandbox *sb = p->sb;
    p->start = NULL;
    req->on_abort = NULL;
    req->cb_arg = NULL;
    if (rc) {
        start_failed(p, rc, msg);
        return;
    }
    struct proc_set *set = proc_set_of(sb);
    if (set && set->starting)
        set->starting--;
    p->jp = jp;
    p->pid = jail_proc_pid(p->jp);
    p->bg = budget_ref(sb->budget);
    p->started_ms = stamp_now_ms();
    uv_timer_init(uv_default_loop(), &p->timer);
    p->timer.data = p;
    p->handles++;
    for (int i = 0; i < 2; i++) {
        struct ppipe *pp = &p->io[i];
        pp->p = p;
        pp->ring.cap = (size_t)log_cap;
        pp->ring.bg = p->bg;
        uv_pipe_init(uv_default_loop(), &pp->h, 0);
        pp->h.data = pp;
        p->handles++;
        pp->open = true;
        if (uv_pipe_open(&pp->h, p->out_fd[i]) ||
            uv_read_start((uv_stream_t *)&pp->h, alloc_cb, read_cb)) {
            close_pipe(pp);   /* no output from this stream; the process still runs */
        }
    }
    if (!set) {
        /* out of memory for the list: the process cannot be managed, so it ends */
        jail_proc_kill(p->jp, SIGKILL);
        p->removed = true;
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot set up the process: out of memory");
        return;
    }
    /* append: the list stays in start order */
    struct proc **tail = &set->head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    set->n++;
    log_info("sandbox %s: process %s started (pid %d)", sb->id, p->id, (int)p->pid);
    json_t *j = json_pack("{s:s, s:i, s:s, s:s}", "id", p->id, "pid", (int)p->pid, "command",
                          p->command, "status", "running");
    jx_respond(req, 201, j);
}

void api_process_start(struct app *app, http_req *req, const route_params *rp)
{
    char err[JX_ERR];
    sandbox *sb = api_sandbox_lookup(req, rp);
    if (!sb)
        return;
    if (!hook_registered) {
        /* registered on first use: until then no sandbox has a process to let go of */
        sbx_on_destroy(on_sandbox_destroy);
        hook_registered = true;
    }
    log_cap = app->cfg->process_log_bytes;
    drain_grace_ms = app->cfg->drain_grace_ms;
    json_t *body = jx_body(req, false);
    if (!body)
        return;
    struct cmd_request cmd;
    if (cmd_parse(body, app->cfg, &cmd, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    struct proc_set *set = proc_set_of(sb);
    if (set && set->n + set->starting >= app->cfg->max_processes) {
        /* forget the oldest exited process nobody follows; else refuse */
        for (struct proc *q = set->head; q; q = q->next)
            if (q->finished && !q->followers && !q->waiters) {
                proc_remove(set, q);
                proc_maybe_free(q);
                break;
            }
    }
    if (!set || set->n + set->starting >= app->cfg->max_processes) {
        json_decref(body);
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "the sandbox has %llu background processes, its limit "
                           "(--max-processes); DELETE one first",
                           (unsigned long long)app->cfg->max_processes);
        return;
    }

    struct proc *p = calloc(1, sizeof *p);
    if (!p || !(p->command = strdup(cmd.command)) || stamp_id(p->id, sizeof p->id, "proc-")) {
        if (p)
            free(p->command);
        free(p);
        json_decref(body);
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot set up the process: out of memory");
        return;
    }
    snprintf(p->cwd, sizeof p->cwd, "%s", cmd.cwd);
    int out[2];
    int rc = cmd_spawn(sb, &cmd, -1, proc_started, exit_cb, p, &p->start, out, err, sizeof err);
    json_decref(body);
    if (rc) {
        free(p->command);
        free(p);
        cmd_respond_error(req, rc, cmd.cwd, err, "process");
        return;
    }
    p->sb = sb;
    p->start_req = req;
    p->out_fd[0] = out[0];
    p->out_fd[1] = out[1];
    set->starting++;
    req->on_abort = start_abort;
    req->cb_arg = p;
}

void api_process_list(struct app *app, http_req *req, const route_params *rp)
{
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, rp);
    if (!sb)
        return;
    json_t *arr = json_array();
    struct proc_set *set = sb->processes;
    for (struct proc *p = set ? set->head : NULL; p; p = p->next)
        json_array_append_new(arr, proc_json(p));
    jx_respond(req, 200, json_pack("{s:o}", "processes", arr));
}

void api_process_get(struct app *app, http_req *req, const route_params *rp)
{
    (void)app;
    struct proc *p = lookup(req, rp, NULL);
    if (p)
        jx_respond(req, 200, proc_json(p));
}

static void waiter_abort(http_req *req, void *arg)
{
    /* the client went away: the answer is discarded when the process ends, which the
     * SIGKILL already sent makes prompt */
    (void)req;
    (void)arg;
}

void api_process_delete(struct app *app, http_req *req, const route_params *rp)
{
    (void)app;
    sandbox *sb = NULL;
    struct proc *p = lookup(req, rp, &sb);
    if (!p)
        return;
    proc_remove(sb->processes, p);
    if (p->finished) {
        json_t *j = proc_json(p);
        if (j)
            json_object_set_new(j, "deleted", json_true());
        jx_respond(req, 200, j);
        proc_maybe_free(p);
        return;
    }
    struct waiter *w = malloc(sizeof *w);
    if (!w) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    w->req = req;
    w->next = p->waiters;
    p->waiters = w;
    req->on_abort = waiter_abort;
    req->cb_arg = w;
    if (p->jp)
        jail_proc_kill(p->jp, SIGKILL);   /* the whole process group, SIGCONT first */
    log_info("sandbox %s: process %s killed", sb->id, p->id);
}

/* JSON: both rings as strings, plus what was dropped. */
static void logs_json(http_req *req, const struct proc *p)
{
    buf b;
    size_t cap = 256;
    for (int i = 0; i < 2; i++)
        cap += (size_t)(p->io[i].ring.end - p->io[i].ring.start) * 6 + 64;
    buf_init(&b, cap);
    int rc = buf_puts(&b, "{");
    for (int i = 0; i < 2 && !rc; i++) {
        const struct ring *r = &p->io[i].ring;
        esc_carry carry;
        memset(&carry, 0, sizeof carry);
        rc = buf_printf(&b, "%s\"%s\":\"", i ? "," : "", STREAM[i]);
        uint64_t off = r->start;
        while (!rc && off < r->end) {
            const char *d = "";
            size_t n = ring_span(r, off, SIZE_MAX, &d);
            off += n;
            rc = esc_json(&b, &carry, d, n, off >= r->end);
        }
        if (!rc)
            rc = buf_puts(&b, "\"");
    }
    if (!rc)
        rc = buf_printf(&b, ",\"dropped\":{\"stdout\":%llu,\"stderr\":%llu},\"truncated\":%s,"
                        "\"status\":\"%s\"}", (unsigned long long)p->io[0].ring.start,
                        (unsigned long long)p->io[1].ring.start,
                        p->io[0].ring.start || p->io[1].ring.start ? "true" : "false",
                        p->exited ? "exited" : "running");
    if (rc) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "the logs do not fit in memory");
    } else if (budget_room(p->bg) < b.len) {
        http_respond_error(req, 429, "LIMIT_REACHED", "the logs (%zu bytes as JSON) do not "
                           "fit in what is left of the sandbox's buffer budget "
                           "(--sandbox-buffer-bytes %llu, %llu bytes held); try again once "
                           "queued responses are read, or follow the logs (SSE)", b.len,
                           (unsigned long long)budget_cap(p->bg),
                           (unsigned long long)budget_used(p->bg));
    } else {
        size_t len = b.len;
        http_respond_take(req, 200, "application/json", buf_steal(&b), len, NULL);
    }
    buf_free(&b);
}

void api_process_logs(struct app *app, http_req *req, const route_params *rp)
{
    (void)app;
    struct proc *p = lookup(req, rp, NULL);
    if (!p)
        return;
    http_req_set_budget(req, p->bg);
    if (!req->want_sse) {
        logs_json(req, p);
        return;
    }
    unsigned n = 0;
    for (struct follower *f = p->followers; f; f = f->next)
        n++;
    if (n >= app->cfg->max_followers) {
        http_respond_error(req, 429, "LIMIT_REACHED", "process %s has %u followers, the limit",
                           p->id, n);
        return;
    }
    struct follower *f = calloc(1, sizeof *f);
    if (!f) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    f->req = req;
    f->p = p;
    f->pos[0] = p->io[0].ring.start;   /* replay what the rings still hold */
    f->pos[1] = p->io[1].ring.start;
    f->next = p->followers;
    p->followers = f;
    req->cb_arg = f;
    req->on_drain = follower_drain;
    req->on_abort = follower_abort;
    if (sse_begin(&f->sse, req) < 0) {
        follower_detach(f);
        return;
    }
    follower_pump(f);
}
