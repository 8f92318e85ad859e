/*
 * context_int.h — what the engine files of code contexts share (context.c, context_proc.c,
 * context_channel.c, context_run.c); nothing else includes it. See context.h.
 *
 * Objects and who frees them:
 *   struct context   — in its sandbox's list; freed after its timer handle closes, once it
 *                      is deleted (ctx_delete, or sandbox destroy).
 *   struct ctx_proc  — one incarnation: three pipes (channel, stdout, stderr) and the
 *                      process. Detached from its context when it dies or is replaced;
 *                      freed when its handles are closed and the process is reaped.
 *   struct ctx_run   — one run, queued on a context; freed once its sink's end returned.
 *   struct ctx_waiter — a caller waiting for a context to be ready or a run to end; freed
 *                      when told.
 *
 * Ordering: a context flushes stdout/stderr before each channel message, and here every
 * channel message is handled only after both pipes have been drained (context_channel.c),
 * so what was printed before a result reaches the sink before it.
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
#include "config.h"
#include "context.h"
#include "jail.h"
#include "sandbox.h"

struct ctx_proc {
    struct context *ctx; /* NULL once detached */
    jail_proc *jp;       /* watches the exit; NULL once reaped */
    uv_pipe_t chan, out, err;
    bool chan_open, out_open, err_open;
    int handles;
    bool exited, ready, dying;
    uint64_t oom_base;   /* the sandbox's OOM-kill count when this incarnation began */
    bool zyg_pending;    /* the zygote has not answered the fork yet */
    jail_req *spawn_req; /* Node: the sandbox's init has not started it yet */
    char why[160];       /* the zygote's reason when the fork failed */
    pid_t host_pid;      /* from the zygote, until the process is adopted */
    int status;
    buf line;            /* channel bytes up to the next newline, charged to bg */
    budget *bg;          /* the sandbox's budget; one reference */
    char limit_why[256]; /* why a channel message was refused (OutputLimitError) */
    int nspid;
    uint64_t started_ns;
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
    uint64_t start_ns;
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
    bool ever_ready;      /* an incarnation that never got ready is not retried */
    struct context *next; /* the sandbox's list */
};

/* Set by ctx_init. */
extern uv_loop_t *ctx_loop;
extern const struct config *ctx_cfg;

/* context.c */
/* The incarnation p of c ended (exit seen, or killed): say what the run in flight
 * reports, then start a fresh incarnation unless the context is going away. */
void ctx_proc_died(struct context *c, struct ctx_proc *p);
/* Tell every waiter of this kind, and free it. */
void ctx_answer_waiters(struct context *c, enum ctx_wait_kind kind, bool ok, const char *why);

/* context_proc.c */
/* Start an incarnation of c (c->proc, state CTX_STARTING, the start timeout running).
 * 0, or -errno with err set. */
int ctx_proc_start(struct context *c, char *err, size_t errlen);
void ctx_proc_kill(struct ctx_proc *p);
/* Let go of an incarnation: it is killed and its pipes closed. The caller then calls
 * ctx_proc_maybe_free(), and the proc frees itself once reaped and closed. */
void ctx_proc_detach(struct ctx_proc *p);
void ctx_proc_maybe_free(struct ctx_proc *p);
void ctx_proc_handle_closed(uv_handle_t *h);

/* context_channel.c */
/* Stop or resume reading the context's channel and pipes (back-pressure). */
void ctx_set_paused(struct context *c, bool paused);
/* Send the execute message of r on the context's channel. */
void ctx_send_execute(struct context *c, const struct ctx_run *r);

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
