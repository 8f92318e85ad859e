/*
 * context_int.h — what the engine files of code contexts share (context.c, context_proc.c,
 * context_channel.c, context_run.c); nothing else includes it. See context.h.
 *
 * Objects and who frees them:
 *   struct context   — in its sandbox's list; freed after its timer handle closes, once it
 *                      is deleted (ctx_delete, or sandbox destroy).
 *   struct ctx_proc  — one incarnation: a child (child.h) with three pipes (channel,
 *                      stdout, stderr). Detached from its context when it dies or is
 *                      replaced (the child released); freed by the child's freed, once
 *                      its handles are closed and the process is reaped.
 *   struct ctx_run   — one run, queued on a context; freed once its sink's end returned.
 *   struct ctx_waiter — a caller waiting for a context to be ready or a run to end; freed
 *                      when told.
 *
 * Ordering: a context flushes stdout/stderr before each channel message, and here every
 * channel message is handled only after both pipes have been drained (context_channel.c),
 * and every message but a stream one only after the partial lines held from the pipes
 * were passed on (context_lines.c), so what was printed before a result reaches the sink
 * before it, and pipe output reaches it in whole lines.
 *
 * Memory: the channel line being assembled is a buf charged to the sandbox's budget
 * (budget.h) as it grows: a line the budget refuses, or longer than --max-result-bytes, is
 * freed at once and fails the run with OutputLimitError, the context restarting. What a
 * run's sink keeps, and how much it lets the engine read, is the sink's (api_execute.c).
 */
#ifndef SANDBOXD_CONTEXT_INT_H
#define SANDBOXD_CONTEXT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "budget.h"
#include "buf.h"
#include "child.h"
#include "config.h"
#include "context.h"
#include "jail.h"
#include "sandbox.h"

/* The longest partial line of a pipe held for the rest of it (context_lines.c): longer
 * ones are passed on as they are. Lines up to it are never split by other output. */
#define CTX_LINE_CAP 65536

struct ctx_proc {
    struct context *ctx; /* NULL once detached */
    child *ch;           /* the process and its pipes (channel, stdout, stderr); child.h */
    bool exited, ready, dying;
    uint64_t oom_base; /* the sandbox's OOM-kill count when this incarnation began */
    bool zyg_pending;  /* the zygote has not answered the fork yet (a hold on ch) */
    bool zyg_lost;     /* the fork failed because the zygote died or was restarting */
    char why[160];     /* the zygote's reason when the fork failed */
    int status;
    buf line;            /* channel bytes up to the next newline, charged to bg */
    budget *bg;          /* the sandbox's budget; one reference */
    char limit_why[256]; /* why a channel message was refused (OutputLimitError) */
    buf part[2];         /* stdout, stderr pipe bytes after the last newline (context_lines.c) */
    uint64_t part_ms[2]; /* when each partial line began (loop time) */
};

struct ctx_run {
    struct ctx_run *next;
    struct context *ctx;
    const struct ctx_sink *sink;
    void *arg; /* the sink's */
    char id[40];
    json_t *code, *env; /* one reference each (env may be NULL) */
    uint64_t timeout_ms;
    json_t *error;
    bool timed_out, interrupted, killed, state_lost, paused;
    bool report_death; /* answered at once: the context died while idle before it */
    uint64_t start_ns;
    uint64_t oom_base; /* the sandbox's OOM-kill count when the run started */
    /* usage (context_run.c): the process measured, its CPU ticks at the start */
    pid_t usage_pid;
    uint64_t usage_ticks0;
    /* ctx_run_fail: the error the run ends with, whatever ends it */
    char fail_name[32];
    char fail_why[200];
};

/* A caller waiting for a context to be ready (create, restart) or a run to end
 * (interrupt). */
enum ctx_wait_kind { CTX_W_READY, CTX_W_INTERRUPT };
struct ctx_waiter {
    struct ctx_waiter *next;
    enum ctx_wait_kind kind;
    ctx_wait_cb cb;
    void *arg;
};

struct context {
    char id[40];
    sandbox *sb;
    enum ctx_lang lang;
    bool is_default;
    char cwd[1100];
    json_t *env;
    uint64_t created_ms, last_used_ms;
    int exec_count;
    enum ctx_state state;
    struct ctx_proc *proc;
    struct ctx_run *cur, *q_head, *q_tail;
    struct ctx_waiter *waiters;
    uv_timer_t timer; /* start timeout, run timeout, kill grace */
    bool deleting;
    bool ever_ready; /* an incarnation that never got ready is not retried */
    /* Died while idle: how and when, reported (ContextDied) to the next run. */
    char died_how[200];
    uint64_t died_ms;
    /* Waiting for the Python zygote to be back (it died or was restarting when this
     * context needed a process): retried until rt_deadline (loop ms), then dead with
     * rt_lost set. */
    bool rt_wait, rt_lost;
    uint64_t rt_deadline;
    uv_timer_t line_timer; /* flushes partial output lines (context_lines.c) */
    int open_timers;       /* timer handles not closed yet; freed at 0 */
    struct context *next;  /* the sandbox's list */
    uint64_t frozen_mark;  /* lifecycle.h: its timeouts count only unsuspended time */
};

/* Set by ctx_init. */
extern uv_loop_t *ctx_loop;
extern const struct config *ctx_cfg;

/* context.c */
/* The incarnation p of c ended (exit seen, or killed): say what the run in flight
 * reports, then start a fresh incarnation unless the context is going away. */
void ctx_proc_died(struct context *c, struct ctx_proc *p);
/* Answer r (the run in flight) with the ContextDied report of a death while idle. */
void ctx_report_death(struct context *c, struct ctx_run *r);
/* The zygote may be back: try to start the context's process again. */
void ctx_runtime_retry(struct context *c);
/* Tell every waiter of this kind, and free it. */
void ctx_answer_waiters(struct context *c, enum ctx_wait_kind kind, bool ok, const char *why);

/* context_proc.c */
/* Start an incarnation of c (c->proc, state CTX_STARTING, the start timeout running).
 * 0, or -errno with err set. */
int ctx_proc_start(struct context *c, char *err, size_t errlen);
void ctx_proc_kill(struct ctx_proc *p);
/* Let go of an incarnation: it is killed and its child released; the proc frees itself
 * once reaped and closed (never inside this call). */
void ctx_proc_detach(struct ctx_proc *p);
/* After detach: its child let go of (again; idempotent), so the proc frees itself when
 * quiet. Kept so that callers read as before: detach, then maybe_free. */
void ctx_proc_maybe_free(struct ctx_proc *p);

/* context_channel.c */
/* Stop or resume reading the context's channel and pipes (back-pressure). */
void ctx_set_paused(struct context *c, bool paused);
/* Send the execute message of r on the context's channel. */
void ctx_send_execute(struct context *c, const struct ctx_run *r);
/* The child's reads (child_ops alloc and read) of an incarnation's pipes. */
void ctx_chan_alloc(void *owner, int i, uv_buf_t *b);
void ctx_chan_read(void *owner, int i, ssize_t n, const char *data);

/* context_lines.c — pipe output as whole lines */
/* Bytes read from the incarnation's stdout (is_err false) or stderr pipe: whole lines
 * go to the run at once, the rest waits for its newline, for --output-line-wait-ms, or
 * for ctx_lines_flush. */
void ctx_lines_add(struct ctx_proc *p, bool is_err, const char *data, size_t n);
/* Give the run every partial line held (before a result, an error, the end, a death). */
void ctx_lines_flush(struct ctx_proc *p);
/* The context's line timer fired. */
void ctx_lines_timer_cb(uv_timer_t *t);
/* Free what p holds. */
void ctx_lines_free(struct ctx_proc *p);

/* context_run.c */
/* Start the next queued run if the context is idle. */
void ctx_run_next(struct context *c);
/* End r through its sink and free it (r is no longer the context's). */
void ctx_run_answer(struct ctx_run *r);
/* The error of a run that the context could not finish. */
void ctx_run_set_error(struct ctx_run *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Output of the running cell (or of nothing, between runs: then it is dropped). */
void ctx_run_output(struct context *c, bool is_err, const char *data, size_t n);
/* End every queued run with this error. */
void ctx_fail_queue(struct context *c, const char *name, const char *why);
/* SIGINT now; SIGKILL (and a fresh incarnation) if the run has not ended after the grace. */
void ctx_interrupt_run(struct context *c);
/* The context's timer: start timeout, run timeout, kill grace. */
void ctx_timer_cb(uv_timer_t *t);

#endif
