/*
 * context.h — code contexts: persistent Python / JavaScript / TypeScript interpreters
 * inside a sandbox, and the runs queued on them (API.md "Code contexts", "Running code").
 *
 * A context is one process at a time (an "incarnation"): a Python child forked from the
 * zygote, or a Node kernel spawned in the sandbox. The engine talks to it over the
 * channel of docs/protocol.md and reads its stdout/stderr pipes. When the process dies —
 * crash, OOM, a kill after a timeout's grace — the context gets a new, empty incarnation
 * with the same id, and the run that was in flight says statePreserved:false; with no
 * run in flight, the next run says so instead of running (ContextDied: how and when).
 * A Python context that needs a process while the zygote restarts waits for it (up to
 * --context-start-timeout-ms).
 *
 * Runs on one context execute one at a time, in arrival order; contexts run in parallel.
 * A run's output goes to the sink its caller gave (struct ctx_sink) as it is written,
 * stdout and stderr before the results and channel messages written after them; a sink
 * may ask the engine to stop reading the context (back-pressure), so the context blocks
 * instead of the daemon buffering without bound.
 *
 * This is the engine: plain functions and data, no HTTP. The API (api_context.c,
 * api_execute.c) parses requests, calls these and answers. Single-threaded: the daemon's
 * event loop is the only caller. Implemented by context.c (contexts, waiters, deaths),
 * context_proc.c (incarnations), context_channel.c (the channel and the pipes) and
 * context_run.c (the run queue, timeouts, interrupts).
 */
#ifndef SANDBOXD_CONTEXT_H
#define SANDBOXD_CONTEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "sandbox.h"

enum ctx_lang { LANG_PYTHON = 0, LANG_JAVASCRIPT = 1, LANG_TYPESCRIPT = 2 };
enum ctx_state { CTX_STARTING, CTX_IDLE, CTX_BUSY, CTX_DEAD };

struct context; /* one context; owned by its sandbox's list */
struct ctx_run; /* one queued run; owned by the engine until its sink's end returns */

/* Daemon-wide set-up (registers the sandbox destroy hook). loop and cfg outlive it. */
void ctx_init(uv_loop_t *loop, const struct config *cfg);

/* Parses "python" | "javascript" | "typescript" (and the aliases Cloudflare's client
 * accepts: python3, js, node, ts). -1 when unknown. */
int ctx_parse_lang(const char *s);
/* "python", "javascript" or "typescript". */
const char *ctx_lang_name(enum ctx_lang lang);

/* A context as data; the strings are the context's own (valid while it lives). */
struct ctx_info {
    const char *id;
    enum ctx_lang lang;
    const char *cwd;
    uint64_t created_ms, last_used_ms;
    int exec_count;
    enum ctx_state state;
};
void ctx_get_info(const struct context *c, struct ctx_info *out);

/* The sandbox's contexts, newest first: ctx_first, then ctx_next until NULL. */
struct context *ctx_first(sandbox *sb);
struct context *ctx_next(const struct context *c);
/* The context with this id, or NULL. */
struct context *ctx_find(sandbox *sb, const char *id);
/* The sandbox's default context of lang (made by a run that named no context), or NULL. */
struct context *ctx_find_default(sandbox *sb, enum ctx_lang lang);

/* Create a context and start its first incarnation (ctx_wait_ready says when it is
 * ready). 0 with *out set, or -errno with err set: -EMFILE at --max-contexts, -ENOENT,
 * -ENOTDIR or -EACCES for a cwd or program that cannot be used, others for the rest. */
int ctx_create(sandbox *sb, enum ctx_lang lang, const char *cwd, const json_t *env, bool is_default,
               struct context **out, char *err, size_t errlen);
/* Remove a context: its process ends, its runs end with a ContextDied error saying why,
 * its waiters are told (ok false). c is invalid afterwards. */
void ctx_delete(struct context *c, const char *why);
/* Kill the incarnation and start a fresh, empty one: the run in flight ends with
 * ContextDied, interrupt waiters are told (ok false), queued runs wait for the new one.
 * 0, or -errno with err set as for ctx_create (the context is dead then). */
int ctx_restart(struct context *c, char *err, size_t errlen);
/* True when the context is dead because the Python runtime (the zygote) restarted and was
 * not back within --context-start-timeout-ms: a transient failure, not the context's. */
bool ctx_runtime_lost(const struct context *c);
/* Start a context that ctx_runtime_lost says is dead for that reason again (as
 * ctx_restart). 0, or -errno (-EINVAL when it is not). */
int ctx_revive(struct context *c);

/* Told once, when what was waited for happened (ok) or cannot (ok false, why may say
 * why). May be called from any engine function that changes the context's state. */
typedef void (*ctx_wait_cb)(struct context *c, bool ok, const char *why, void *arg);
/* Call cb when the context's incarnation gets ready (ok), or cannot start (ok false).
 * 0, or -ENOMEM (cb will not be called). */
int ctx_wait_ready(struct context *c, ctx_wait_cb cb, void *arg);
/* Interrupt the run in flight (SIGINT; SIGKILL and a fresh incarnation after
 * --kill-grace-ms) and call cb when it has ended: ok says whether the state was kept.
 * 1 when nothing runs (cb will not be called); 0; -ENOMEM when cb cannot be queued (the
 * run is interrupted all the same). */
int ctx_interrupt(struct context *c, ctx_wait_cb cb, void *arg);

/* How a run ended, for the sink's end. */
struct ctx_run_end {
    const char *run_id; /* "exe-…" */
    const char *context_id;
    int exec_count; /* the context's execution count after the run */
    double duration_ms;
    bool state_preserved; /* false: the context's process died or was replaced */
    json_t *error;        /* {"name","message","traceback"}, or NULL when none */
    /* The run's usage (context_run.c): CPU time of the context's process and the children
     * it waited for, and its peak resident memory, both over this run only; -1 when they
     * could not be read (the process died during the run). */
    double cpu_ms;
    int64_t peak_memory_bytes;
};

/* Where a run's output goes. output and result return 0 to go on, or 1 to stop reading
 * the context until ctx_run_resume (back-pressure). */
struct ctx_sink {
    /* The run leaves the queue and starts on the context (NULL: not told). */
    void (*start)(void *arg);
    /* Bytes the run wrote to stdout or stderr, as they come (a UTF-8 sequence may be cut
     * between calls). */
    int (*output)(void *arg, bool is_err, const char *data, size_t n);
    /* A result object; msg_bytes is the size of the channel message that carried it
     * (a bound on the size of its JSON). */
    int (*result)(void *arg, json_t *result, size_t msg_bytes);
    /* How many bytes the next read of the context may take, at most chunk; 0 stops the
     * reading, and wait_room is called: the sink calls ctx_run_resume once there is room.
     * NULL: always chunk. */
    size_t (*allowance)(void *arg, size_t chunk);
    void (*wait_room)(void *arg);
    /* The run ended. The last call for the run, which is freed when it returns. */
    void (*end)(void *arg, const struct ctx_run_end *e);
};

/* Queue a run of code (a JSON string) with env (the request's envVars: an object of
 * strings, JSON null, or NULL for none) on c, which is not dead; timeout_ms 0 is none. The engine holds references to code and env;
 * sink (static) and arg are used until sink->end. NULL when out of memory. */
struct ctx_run *ctx_run_queue(struct context *c, json_t *code, json_t *env, uint64_t timeout_ms,
                              const struct ctx_sink *sink, void *arg);
/* Read the context again if r is running (after a sink asked to pause, or to let the
 * sink's allowance decide again). */
void ctx_run_resume(struct ctx_run *r);
/* The run's id ("exe-…"), valid until the sink's end returns. */
const char *ctx_run_id(const struct ctx_run *r);
/* True while reading is stopped on r's behalf. */
bool ctx_run_paused(const struct ctx_run *r);
/* Cancel r if it is queued: it leaves the queue and ends now with error Cancelled
 * (message why), the context untouched (1). Interrupt it if it runs (SIGINT, as
 * ctx_interrupt; 2). 0 when neither (it is ending). */
int ctx_run_cancel(struct ctx_run *r, const char *why);
/* End r with error name (message why) whatever it is doing: a queued run at once, a
 * running one by killing its context's process (the context restarts, as after a
 * crash). For a daemon that shuts down (exe_fail_all). */
void ctx_run_fail(struct ctx_run *r, const char *name, const char *why);
/* Interrupt r: in flight, as ctx_interrupt does (no waiter); still queued, it will end
 * with KeyboardInterrupt when its turn comes, without running. Its sink's end says how
 * it ended. 0, or 1 when r is on no context any more. */
int ctx_run_interrupt(struct ctx_run *r);

#endif
