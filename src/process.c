/*
 * process.c — background processes (see process.h for the contract and the follower
 * policy).
 *
 * Data structures: each sandbox's sb->processes is a struct proc_set, a list of struct
 * proc in start order. A proc owns a child (child.h: the stdout and stderr pipes, read
 * into two rings, and a timer for the drain grace after exit), the list of its followers
 * (each with its cmd_sink, command.h) and the deletions waiting for it to end. A ring
 * keeps absolute byte offsets: [start, end) is what it holds, start is also the count of
 * bytes it dropped; followers keep their own offset per stream. A ring's memory grows
 * with what is written, up to its cap. No HTTP here: api_process.c reads the requests,
 * answers them and implements the sinks.
 *
 * Life: starting (the start waits for the sandbox's init to start it: not listed yet, but
 * counted against --max-processes) → running → exited (exit callback) → finished (both
 * pipes at EOF, or closed after DRAIN_GRACE_MS when orphans hold them): followers get
 * `exit`, deletion waiters their callback. Once it is finished, removed from its sandbox
 * (proc_delete, eviction past --max-processes, or the sandbox's destruction) and has no
 * follower left, it lets go of its child, which frees it when all its handles are
 * closed (proc_freed). The sandbox-destroy hook (registered by proc_init) only detaches
 * the procs: the jail kills every process and reports each exit before the sandbox is
 * gone.
 *
 * Memory: a ring's allocation is charged to the sandbox's budget (budget.h) before it
 * grows. When the budget refuses, the ring stops growing and becomes a ring of the size it
 * has: the oldest bytes are dropped sooner, counted as always (outputDropped, `dropped`
 * events), and the process is never blocked. JSON logs and follower events are charged
 * while queued to the client (the API layer charges them to proc_budget). Stdin is a
 * struct pstdin (process_stdin.h) over the child's CHILD_IN pipe: what it holds is charged
 * to the same budget and capped at --process-stdin-bytes.
 */
#include "stamp.h"
#include "process.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "budget.h"
#include "child.h"
#include "command.h"
#include "log.h"
#include "process_stdin.h"
#include "sandbox.h"

_Static_assert((int)PROC_STDIN_CLOSED == (int)PSTDIN_CLOSED &&
                   (int)PROC_STDIN_FULL == (int)PSTDIN_FULL &&
                   (int)PROC_STDIN_TOO_BIG == (int)PSTDIN_TOO_BIG,
               "process.h's stdin refusals are process_stdin.h's");

#define EVENT_MAX (64 << 10) /* output bytes per SSE event */

static const char *const STREAM[2] = { "stdout", "stderr" };

struct ring {
    char *data;
    size_t alloc, cap;   /* cap shrinks to alloc when the budget refuses growth */
    uint64_t start, end; /* absolute offsets of what is held */
    budget *bg;          /* charged with alloc; borrowed from the proc */
};

struct proc;

struct proc_follower {
    cmd_sink *sink;
    struct proc *p;
    uint64_t pos[2];
    uint64_t dropped[2];
    esc_carry carry[2];
    bool paused;
    budget_waiter bw; /* queued while the budget has no room for an event */
    struct proc_follower *next;
};

struct waiter {
    proc_ended_cb cb;
    void *arg;
    struct waiter *next;
};

struct proc {
    char id[32];
    pid_t pid;
    char *command;
    char cwd[1100];
    uint64_t started_ms, ended_ms;
    child *ch; /* the process, its pipes, the drain timer */
    bool exited, finished, removed;
    int status;
    budget *bg;          /* the sandbox's budget; one reference */
    struct ring ring[2]; /* stdout, stderr */
    struct proc_follower *followers;
    struct waiter *waiters;
    bool has_stdin;      /* cmd_request.stdin_open */
    struct pstdin stdin; /* once started, when has_stdin */
    struct proc *next;   /* the sandbox's list */
    /* until the sandbox's init has started it (proc_started) */
    proc_started_cb start_cb;
    void *start_arg;
    sandbox *sb;
};

struct proc_set {
    struct proc *head;
    unsigned n;
    unsigned starting; /* waiting for the sandbox's init; count against the cap */
};

static uint64_t log_cap;        /* --process-log-bytes, set by proc_init */
static uint64_t drain_grace_ms; /* --drain-grace-ms, set by proc_init */
static uint64_t stdin_cap;      /* --process-stdin-bytes, set by proc_init */

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
            r->end += n; /* nothing held, nothing granted: the bytes count as dropped */
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

json_t *proc_json(const struct proc *p)
{
    char started[40], ended[40];
    stamp_iso8601(p->started_ms, started, sizeof started);
    json_t *j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s}", "id", p->id, "pid", (int)p->pid,
                          "command", p->command, "cwd", p->cwd, "status",
                          p->exited ? "exited" : "running", "startedAt", started);
    if (j && p->exited) {
        const char *sig;
        int code = child_exit_code(p->status, &sig);
        stamp_iso8601(p->ended_ms, ended, sizeof ended);
        json_object_set_new(j, "exitCode", json_integer(code));
        json_object_set_new(j, "endedAt", json_string(ended));
        if (sig) {
            char name[32];
            snprintf(name, sizeof name, "SIG%s", sig);
            json_object_set_new(j, "signal", json_string(name));
        }
    }
    if (j && p->has_stdin)
        json_object_set_new(j, "stdin",
                            json_pack("{s:b, s:I}", "open", pstdin_open(&p->stdin), "held",
                                      (json_int_t)pstdin_held(&p->stdin)));
    if (j)
        json_object_set_new(j, "outputDropped",
                            json_pack("{s:I, s:I}", "stdout", (json_int_t)p->ring[0].start,
                                      "stderr", (json_int_t)p->ring[1].start));
    return j;
}

/* ---- lifetime ---- */

/* The child is gone: so is the proc. */
static void proc_freed(void *owner)
{
    struct proc *p = owner;
    pstdin_free(&p->stdin);
    for (int i = 0; i < 2; i++) {
        budget_release(p->bg, p->ring[i].alloc);
        free(p->ring[i].data);
    }
    budget_unref(p->bg);
    free(p->command);
    free(p);
}

/* Nothing refers to p any more: let go of its child, which frees p once quiet (never
 * inside this call, so p stays usable by the caller). */
static void proc_maybe_free(struct proc *p)
{
    if (p->removed && p->finished && !p->followers && !p->waiters)
        child_release(p->ch);
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

static void follower_detach(struct proc_follower *f)
{
    struct proc *p = f->p;
    for (struct proc_follower **pp = &p->followers; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    budget_cancel(p->bg, &f->bw);
    f->sink->ops->end(f->sink); /* final (discarded when the client is gone) */
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
static bool follower_starved(struct proc_follower *f)
{
    const size_t need = EVENT_MAX * 6 + 512;
    if (budget_room(f->p->bg) >= need || f->sink->ops->queued(f->sink) == 0)
        return false;
    f->sink->ops->wait_drain(f->sink); /* proc_follower_resume once it has been taken */
    f->bw.need = need;
    f->bw.cb = follower_woken;
    f->bw.arg = f;
    budget_wait(f->p->bg, &f->bw);
    return true;
}

/* A write's answer: 0 go on; 1 the follower pauses; negative, it is detached (freed). */
static int follower_took(struct proc_follower *f, int rc)
{
    if (rc < 0)
        follower_detach(f);
    else if (rc == 1)
        f->paused = true;
    return rc;
}

static bool follower_pump(struct proc_follower *f)
{
    struct proc *p = f->p;
    if (f->paused)
        return true;
    for (int i = 0; i < 2; i++) {
        const struct ring *r = &p->ring[i];
        if (f->pos[i] < r->start) {
            uint64_t gap = r->start - f->pos[i];
            f->dropped[i] += gap;
            f->pos[i] = r->start;
            memset(&f->carry[i], 0, sizeof f->carry[i]);
            char ev[96];
            int n = snprintf(ev, sizeof ev, "{\"stream\":\"%s\",\"bytes\":%llu}", STREAM[i],
                             (unsigned long long)gap);
            int rc = follower_took(f, f->sink->ops->event(f->sink, "dropped", ev, (size_t)n));
            if (rc)
                return rc > 0;
        }
        while (f->pos[i] < r->end) {
            if (follower_starved(f))
                return true;
            const char *d = "";
            size_t n = ring_span(r, f->pos[i], EVENT_MAX, &d);
            f->pos[i] += n;
            int rc =
                follower_took(f, f->sink->ops->text(f->sink, STREAM[i], &f->carry[i], d, n, false));
            if (rc)
                return rc > 0;
        }
    }
    if (!p->finished)
        return true;
    for (int i = 0; i < 2; i++)
        f->sink->ops->text(f->sink, STREAM[i], &f->carry[i], "", 0, true);
    const char *sig;
    int code = child_exit_code(p->status, &sig);
    char ev[256];
    int n = snprintf(ev, sizeof ev,
                     "{\"exitCode\":%d%s%s%s,\"dropped\":{\"stdout\":%llu,"
                     "\"stderr\":%llu}}",
                     code, sig ? ",\"signal\":\"SIG" : "", sig ? sig : "", sig ? "\"" : "",
                     (unsigned long long)f->dropped[0], (unsigned long long)f->dropped[1]);
    f->sink->ops->event(f->sink, "exit", ev, (size_t)n);
    follower_detach(f);
    return false;
}

static void follower_woken(budget_waiter *w)
{
    follower_pump(w->arg);
}

static void pump_all(struct proc *p)
{
    struct proc_follower *f = p->followers;
    while (f) {
        struct proc_follower *next = f->next;
        follower_pump(f);
        f = next;
    }
}

void proc_follower_resume(proc_follower *f)
{
    f->paused = false;
    follower_pump(f);
}

void proc_follower_abort(proc_follower *f)
{
    follower_detach(f);
}

/* ---- the process ---- */

static void proc_finish(struct proc *p)
{
    if (p->finished || !p->exited || child_output_open(p->ch))
        return;
    p->finished = true;
    child_timer_stop(p->ch);
    /* p outlives the calls below (which may free followers): it is freed only by its
     * child, once released and quiet */
    while (p->waiters) {
        struct waiter *w = p->waiters;
        p->waiters = w->next;
        w->cb(w->arg, p);
        free(w);
    }
    pump_all(p);
    proc_maybe_free(p);
}

static void proc_read(void *owner, int i, ssize_t n, const char *data)
{
    struct proc *p = owner;
    if (n < 0) {
        proc_finish(p); /* EOF: the child has closed the pipe */
        return;
    }
    ring_append(&p->ring[i == CHILD_ERR], data, (size_t)n);
    if (!p->removed)
        life_touch(p->sb); /* output is activity (lifecycle.h) */
    pump_all(p);
}

static void proc_timer(void *owner)
{
    struct proc *p = owner;
    /* the drain grace is over: orphans still hold the pipes */
    child_close_output(p->ch);
    proc_finish(p);
}

static void proc_exited(void *owner, int status)
{
    struct proc *p = owner;
    pstdin_close(&p->stdin); /* what it did not read is dropped */
    p->exited = true;
    p->status = status;
    p->ended_ms = stamp_now_ms();
    if (child_output_open(p->ch))
        child_timer_start(p->ch, NULL, drain_grace_ms);
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
        child_kill(p->ch);
        proc_remove(set, p);
        proc_maybe_free(p);
    }
    free(set);
    sb->processes = NULL;
}

void proc_init(const struct config *cfg)
{
    log_cap = cfg->process_log_bytes;
    drain_grace_ms = cfg->drain_grace_ms;
    stdin_cap = cfg->process_stdin_bytes;
    sbx_on_destroy(on_sandbox_destroy);
}

static struct proc_set *proc_set_of(sandbox *sb)
{
    if (!sb->processes)
        sb->processes = calloc(1, sizeof(struct proc_set));
    return sb->processes;
}

proc *proc_find(sandbox *sb, const char *id)
{
    struct proc_set *set = sb->processes;
    for (struct proc *p = set ? set->head : NULL; p; p = p->next)
        if (id && strcmp(p->id, id) == 0)
            return p;
    return NULL;
}

json_t *proc_list_json(sandbox *sb)
{
    json_t *arr = json_array();
    struct proc_set *set = sb->processes;
    for (struct proc *p = set ? set->head : NULL; p; p = p->next)
        json_array_append_new(arr, proc_json(p));
    return arr;
}

const char *proc_id(const proc *p)
{
    return p->id;
}

budget *proc_budget(const proc *p)
{
    return p->bg;
}

/* ---- starting ---- */

/* The start failed or nobody waits for it: tell the starter and forget the process
 * (freed once its child is quiet). */
static void start_failed(struct proc *p, int rc, const char *msg)
{
    struct proc_set *set = p->sb->processes; /* NULL once the sandbox let go */
    if (set && set->starting)
        set->starting--;
    p->start_cb(p->start_arg, NULL, rc, p->cwd, msg ? msg : strerror(-rc));
    child_release(p->ch);
}

void proc_start_cancel(proc *p)
{
    /* the jail ends the process if the sandbox's init starts it anyway */
    child_release(p->ch);
    start_failed(p, -ECONNABORTED, "the client went away before it started");
}

/* The stdin's pipe is closed (process_stdin.h). */
static void stdin_closer(void *arg)
{
    struct proc *p = arg;
    child_close(p->ch, CHILD_IN);
}

/* The sandbox's init started the process (or could not): it joins the sandbox's list
 * and the starter is told. */
static void proc_started(void *owner, int rc, const char *msg)
{
    struct proc *p = owner;
    sandbox *sb = p->sb;
    if (rc) {
        start_failed(p, rc, msg);
        return;
    }
    struct proc_set *set = proc_set_of(sb);
    if (set && set->starting)
        set->starting--;
    p->pid = child_pid(p->ch);
    p->bg = budget_ref(sb->budget);
    p->started_ms = stamp_now_ms();
    for (int i = 0; i < 2; i++) {
        p->ring[i].cap = (size_t)log_cap;
        p->ring[i].bg = p->bg;
    }
    child_reading(p->ch, true); /* both pipes into the rings from now on */
    pstdin_init(&p->stdin, p->has_stdin ? child_stream(p->ch, CHILD_IN) : NULL, stdin_closer, p,
                p->bg, (size_t)stdin_cap);
    if (!set) {
        /* out of memory for the list: the process cannot be managed, so it ends */
        child_kill(p->ch);
        p->removed = true;
        p->start_cb(p->start_arg, NULL, PROC_NO_MEMORY, p->cwd, "out of memory");
        return;
    }
    /* append: the list stays in start order */
    struct proc **tail = &set->head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    set->n++;
    log_info("sandbox %s: process %s started (pid %d)", sb->id, p->id, (int)p->pid);
    p->start_cb(p->start_arg, p, 0, p->cwd, NULL);
}

static const struct child_ops PROC_OPS = {
    .read = proc_read,
    .started = proc_started,
    .exited = proc_exited,
    .timer = proc_timer,
    .freed = proc_freed,
};

json_t *proc_brief_json(const proc *p)
{
    return json_pack("{s:s, s:i, s:s, s:s}", "id", p->id, "pid", (int)p->pid, "command", p->command,
                     "status", "running");
}

int proc_start(sandbox *sb, const struct config *cfg, const struct cmd_request *cmd,
               proc_started_cb cb, void *arg, proc **out, char *err, size_t errlen)
{
    struct proc_set *set = proc_set_of(sb);
    if (set && set->n + set->starting >= cfg->max_processes) {
        /* forget the oldest exited process nobody follows; else refuse */
        for (struct proc *q = set->head; q; q = q->next)
            if (q->finished && !q->followers && !q->waiters) {
                proc_remove(set, q);
                proc_maybe_free(q);
                break;
            }
    }
    if (!set || set->n + set->starting >= cfg->max_processes)
        return PROC_FULL;
    struct proc *p = calloc(1, sizeof *p);
    if (!p || !(p->command = strdup(cmd->command)) || stamp_id(p->id, sizeof p->id, "proc-")) {
        if (p)
            free(p->command);
        free(p);
        return PROC_NO_MEMORY;
    }
    snprintf(p->cwd, sizeof p->cwd, "%s", cmd->cwd);
    p->sb = sb;
    p->has_stdin = cmd->stdin_open;
    int rc = cmd_spawn(sb, cmd, cmd->stdin_open, &PROC_OPS, p, &p->ch, err, errlen);
    if (rc) {
        free(p->command);
        free(p);
        return rc;
    }
    p->start_cb = cb;
    p->start_arg = arg;
    set->starting++;
    *out = p;
    return 0;
}

/* ---- deleting ---- */

int proc_delete(sandbox *sb, proc *p, proc_ended_cb cb, void *arg)
{
    proc_remove(sb->processes, p);
    if (p->finished) {
        cb(arg, p);
        proc_maybe_free(p);
        return 1;
    }
    struct waiter *w = malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    w->cb = cb;
    w->arg = arg;
    w->next = p->waiters;
    p->waiters = w;
    child_kill(p->ch); /* the whole process group, SIGCONT first */
    log_info("sandbox %s: process %s killed", sb->id, p->id);
    return 0;
}

/* ---- stdin ---- */

int proc_stdin_write(proc *p, const void *data, size_t n, bool eof)
{
    if (!p->has_stdin)
        return PROC_STDIN_NONE;
    if (p->exited)
        return PROC_STDIN_CLOSED;
    int rc = pstdin_write(&p->stdin, data, n, eof);
    if (!rc && n)
        life_touch(p->sb); /* input is activity (lifecycle.h) */
    return rc;
}

size_t proc_stdin_held(const proc *p)
{
    return pstdin_held(&p->stdin);
}

size_t proc_stdin_cap(void)
{
    return (size_t)stdin_cap;
}

/* ---- logs ---- */

int proc_logs_json(const proc *p, buf *b)
{
    size_t cap = 256;
    for (int i = 0; i < 2; i++)
        cap += (size_t)(p->ring[i].end - p->ring[i].start) * 6 + 64;
    buf_init(b, cap);
    int rc = buf_puts(b, "{");
    for (int i = 0; i < 2 && !rc; i++) {
        const struct ring *r = &p->ring[i];
        esc_carry carry;
        memset(&carry, 0, sizeof carry);
        rc = buf_printf(b, "%s\"%s\":\"", i ? "," : "", STREAM[i]);
        uint64_t off = r->start;
        while (!rc && off < r->end) {
            const char *d = "";
            size_t n = ring_span(r, off, SIZE_MAX, &d);
            off += n;
            rc = esc_json(b, &carry, d, n, off >= r->end);
        }
        if (!rc)
            rc = buf_puts(b, "\"");
    }
    if (!rc)
        rc = buf_printf(b,
                        ",\"dropped\":{\"stdout\":%llu,\"stderr\":%llu},\"truncated\":%s,"
                        "\"status\":\"%s\"}",
                        (unsigned long long)p->ring[0].start, (unsigned long long)p->ring[1].start,
                        p->ring[0].start || p->ring[1].start ? "true" : "false",
                        p->exited ? "exited" : "running");
    return rc;
}

unsigned proc_followers(const proc *p)
{
    unsigned n = 0;
    for (struct proc_follower *f = p->followers; f; f = f->next)
        n++;
    return n;
}

proc_follower *proc_follow(proc *p, cmd_sink *sink)
{
    struct proc_follower *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->sink = sink;
    f->p = p;
    f->pos[0] = p->ring[0].start; /* replay what the rings still hold */
    f->pos[1] = p->ring[1].start;
    f->next = p->followers;
    p->followers = f;
    return f;
}

void proc_follower_start(proc_follower *f)
{
    if (f->sink->ops->begin(f->sink, f->p->bg) < 0) {
        follower_detach(f);
        return;
    }
    follower_pump(f);
}
