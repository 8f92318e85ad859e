/*
 * execution.h — executions: every run of code is a resource of its sandbox with an id
 * (API.md "Executions: re-attach, cancel"). The requests are read and answered by
 * api_execution.c and api_execute.c; this is the engine, no HTTP.
 *
 * An execution is the sink of its run (struct ctx_sink, context.h): it keeps the run's
 * events in a log — stdout, stderr, result, error, end, numbered 1, 2, 3 … as the
 * streamed response numbers them — and hands them to its followers. An HTTP response is
 * a follower: a streamed one gets the events (from the start or from after an id), a
 * plain one is told when the run is over and builds its document from the log
 * (exe_document). So a client that goes away loses nothing: the run goes on, and another
 * request may attach to it.
 *
 * Policy:
 *   - Re-attach grace: when the last follower of a run that is not over goes away, the run
 *     goes on for --reattach-grace-ms; if nobody attaches by then it is cancelled (queued)
 *     or interrupted (running), so a client that gave up never leaves its context busy.
 *   - Retention: an execution that is over is kept --execution-retention-ms, then
 *     forgotten (404); at most --max-executions per sandbox are kept, the oldest finished
 *     one without followers being forgotten first to make room (when none can be, a new
 *     run gets LIMIT_REACHED).
 *   - The log's bytes are charged to the sandbox's budget (budget.h) and capped at
 *     --execution-log-bytes per execution. Past either, the oldest events that every
 *     streamed follower has already been sent are dropped (counted; a replay that asks
 *     for them gets a `dropped` notice saying how many, and a plain document says
 *     truncatedBy "execution-log-bytes"). While a streamed follower still needs them, the
 *     context is not read (back-pressure, as before: nothing a live client waits for is
 *     lost). The error and end events are never dropped.
 *
 * Lifetime: an execution is listed in its sandbox until forgotten; each follower holds it
 * too, so one being read survives its sandbox and its retention (it is then no longer
 * listed). Single-threaded: the daemon's loop is the only caller.
 */
#ifndef SANDBOXD_EXECUTION_H
#define SANDBOXD_EXECUTION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "buf.h"
#include "config.h"
#include "context.h"
#include "sandbox.h"

typedef struct execution execution;
typedef struct exe_follower exe_follower;

enum exe_state { EXE_QUEUED, EXE_RUNNING, EXE_DONE };

/* Once at start-up, after ctx_init (its destroy hook must run after the contexts'). */
void exe_init(uv_loop_t *loop, const struct config *cfg);

/* exe_start's refusals that are not an errno */
enum {
    EXE_FULL = 1, /* --max-executions kept, none can be forgotten */
};

/* Queue a run of code (a JSON string; the execution holds a reference, and env's) on c,
 * which is not dead. `held` bytes already charged to sb's budget (the request) are the
 * execution's from now on, released when it is forgotten. The new execution has no
 * follower: the caller attaches one at once (exe_follow), or the grace starts.
 * 0 with *out set; EXE_FULL or -ENOMEM (then the caller still owns `held`), err set. */
int exe_start(sandbox *sb, struct context *c, json_t *code, json_t *env, uint64_t timeout_ms,
              size_t held, execution **out, char *err, size_t errlen);

/* The execution eid of sb, or NULL (never one of another sandbox). */
execution *exe_find(sandbox *sb, const char *eid);
const char *exe_id(const execution *e);
const char *exe_context_id(const execution *e);
enum exe_state exe_state(const execution *e);
/* The id of the last event so far (0: none). */
uint64_t exe_last_event(const execution *e);
/* The sandbox's budget its log is charged to (what its followers' queues are charged to). */
struct budget *exe_budget(const execution *e);
/* Followers attached now (streamed and plain). */
unsigned exe_followers(const execution *e);

/* {"id","code","state","queuedAt","startedAt"} (ExecutionSummary). */
json_t *exe_summary_json(const execution *e);
/* The runs of context cid in sb that are not over, in arrival order: running first. */
int exe_queue_json(sandbox *sb, const char *cid, json_t **running, json_t **queued);

/* The plain document of a finished run (API.md "Plain response", with "state":"done"),
 * each output stream kept up to max_output_bytes (then truncated / truncatedBy); into b
 * (buf_init here, the caller frees it). 0, or -EAGAIN when the run is not over, or buf's
 * error. */
int exe_document(const execution *e, uint64_t max_output_bytes, buf *b);

/* What a follower is told. */
struct exe_follower_ops {
    /* One event of the log (id 0: a `dropped` notice, not a run event, with no id).
     * 0 to go on, 1 when the receiver is full: nothing more until exe_follower_resume. */
    int (*event)(void *arg, uint64_t id, const char *type, const char *json, size_t len);
    /* The run is over and, for a follower of events, the end event was delivered. The
     * last call; the follower is freed when it returns. */
    void (*done)(void *arg);
};

/* A new follower of e. events: it gets the events after id `after` (0: all), then those
 * to come, until end; else only done. Nothing is sent until exe_follower_start. NULL when
 * out of memory. */
exe_follower *exe_follow(execution *e, bool events, uint64_t after,
                         const struct exe_follower_ops *ops, void *arg);
/* Send what the log holds (or done, when the run is over). */
void exe_follower_start(exe_follower *f);
/* The receiver took what was sent: send on. */
void exe_follower_resume(exe_follower *f);
/* The receiver may be gone (its client closed its side; it may only have half-closed):
 * f no longer holds the run (the re-attach grace runs as if it had gone), but it is still
 * told everything. */
void exe_follower_loose(exe_follower *f);
/* The receiver went away: no more calls; f is freed. */
void exe_follower_detach(exe_follower *f);

/* Cancel a queued run (it ends with error Cancelled, message why) or interrupt a running
 * one. 1 cancelled, 2 interrupted, 0 the run was over already. */
int exe_cancel(execution *e, const char *why);

/* End every execution that is not over with error `name` (message why): queued ones at
 * once, running ones when their context's process has been killed (for a daemon that
 * shuts down; the contexts restart unless they are deleted too). */
void exe_fail_all(const char *name, const char *why);

#endif
