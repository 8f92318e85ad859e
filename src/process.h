/*
 * process.h — background processes of a sandbox (API.md "Background processes"; the
 * requests are read and answered by api_process.c).
 *
 * A background process is `/bin/sh -c COMMAND` spawned into the sandbox like an exec
 * command (jail_spawn: the sandbox user, its own session and process group), but owned by
 * the sandbox instead of a request: it runs until it exits, proc_delete kills its process
 * group, or the sandbox is deleted. Its stdout and stderr are read all the time into one
 * ring buffer per stream (--process-log-bytes each); when a ring is full the oldest bytes
 * are dropped and counted, so a process is never blocked by its log, whoever reads it.
 *
 * Logs are read whole (proc_logs_json: what the rings hold plus how much was dropped) or
 * followed (a cmd_sink, command.h): a follower first gets what the rings still hold, then
 * output as it arrives, then an `exit` event. Followers are independent and any number of
 * them may follow a process (the API caps them at --max-followers). A slow follower never
 * slows the process or the others: it reads from the ring at its own pace, and when it
 * falls so far behind that the ring has overwritten what it had not read yet, it skips to
 * the oldest byte still held and gets a `dropped` event {"stream","bytes"} saying how
 * much it missed.
 *
 * Stdin: a process started with cmd->stdin_open has a pipe as its stdin, written with
 * proc_stdin_write (never blocking: libuv writes as the pipe takes it). What it has not
 * taken yet is held by the daemon, charged to the sandbox's budget, and at most
 * --process-stdin-bytes per process: a write that would hold more is refused whole
 * (nothing of it is written), so a process that never reads costs at most that much.
 * EOF closes the pipe once everything before it has been written.
 */
#ifndef SANDBOXD_PROCESS_H
#define SANDBOXD_PROCESS_H

#include <jansson.h>

#include "buf.h"
#include "budget.h"
#include "command.h"
#include "config.h"
#include "sandbox.h"

typedef struct proc proc;
typedef struct proc_follower proc_follower;

/* Once at start-up, before any sandbox: the settings, and the sandbox-destroy hook that
 * lets go of a sandbox's processes. */
void proc_init(const struct config *cfg);

/* proc_start's refusals, and the started callback's rc, that are not an errno */
enum {
    PROC_FULL = 1,      /* --max-processes reached (none exited to forget) */
    PROC_NO_MEMORY = 2, /* out of memory setting it up */
};

/* proc_stdin_write's refusals that are not an errno */
enum {
    PROC_STDIN_NONE = 3,    /* started without stdin */
    PROC_STDIN_CLOSED = 4,  /* closed: EOF was sent, the process exited or closed its end */
    PROC_STDIN_FULL = 5,    /* held + n would pass --process-stdin-bytes */
    PROC_STDIN_TOO_BIG = 6, /* n alone is more than --process-stdin-bytes */
};

/* The start's outcome, once: rc 0 and p listed in its sandbox; PROC_NO_MEMORY (p NULL;
 * the process was started but is being ended); or -errno as cmd_spawn's with msg (p
 * NULL; cwd is where it was to run; -ECONNABORTED after proc_start_cancel). */
typedef void (*proc_started_cb)(void *arg, const proc *p, int rc, const char *cwd, const char *msg);
/* A deleted process has ended (p is still valid during the call). */
typedef void (*proc_ended_cb)(void *arg, const proc *p);

/* Start cmd in sb as a background process. 0: *out is the pending start and cb comes
 * later (or from proc_start_cancel(*out)); else nothing was started and cb is never
 * called: PROC_FULL, PROC_NO_MEMORY, or -errno from cmd_spawn with err set. */
int proc_start(sandbox *sb, const struct config *cfg, const struct cmd_request *cmd,
               proc_started_cb cb, void *arg, proc **out, char *err, size_t errlen);
/* The starter went away before the start's outcome: cb gets -ECONNABORTED now. */
void proc_start_cancel(proc *p);

/* The process id names in sb, or NULL. */
proc *proc_find(sandbox *sb, const char *id);
const char *proc_id(const proc *p);
/* The sandbox's budget (what reading the logs is charged to). */
budget *proc_budget(const proc *p);
/* Its description: id, pid, command, cwd, status, times, exit code, outputDropped. */
json_t *proc_json(const proc *p);
/* What a start answers: id, pid, command, status "running". */
json_t *proc_brief_json(const proc *p);
/* Every process of sb, in start order, as proc_json. */
json_t *proc_list_json(sandbox *sb);

/* Take p out of sb and kill its process group. 1: it had already ended and cb was called
 * now; 0: cb comes once it has ended; -ENOMEM: it is out of sb, but cb never comes. */
int proc_delete(sandbox *sb, proc *p, proc_ended_cb cb, void *arg);

/* The logs as JSON {"stdout","stderr","dropped","truncated","status"} into b (buf_init
 * here; the caller frees it). 0, or buf.h's error when it does not fit. */
int proc_logs_json(const proc *p, buf *b);

/* Queue n bytes for p's stdin (all of them or none), then EOF when eof (after every byte
 * queued before). 0; PROC_STDIN_*; -ENOBUFS when the sandbox's budget has no room for
 * them; -ENOMEM. n may be 0 (only eof, or nothing). */
int proc_stdin_write(proc *p, const void *data, size_t n, bool eof);
/* Bytes written to p's stdin but not taken by the process yet; the cap. */
size_t proc_stdin_held(const proc *p);
size_t proc_stdin_cap(void);

unsigned proc_followers(const proc *p);
/* A new follower of p with its output to sink (NULL: out of memory); nothing is sent
 * until proc_follower_start. The sink's end is its last call, when the process is over
 * or the follower is detached. */
proc_follower *proc_follow(proc *p, cmd_sink *sink);
/* Begin the sink's stream and send what the rings hold. */
void proc_follower_start(proc_follower *f);
/* The sink's receiver took what was queued: send on. */
void proc_follower_resume(proc_follower *f);
/* The receiver went away: detach (the sink gets end). */
void proc_follower_abort(proc_follower *f);

#endif
