/*
 * exec.h — running one shell command in a sandbox (POST /v1/sandboxes/{sid}/exec; the
 * request is read and answered by api_exec.c).
 *
 * The command runs as `/bin/sh -c COMMAND` through jail_spawn (the sandbox user, no
 * capabilities, seccomp, its own session and process group). Its stdout and stderr are
 * pipes read by the daemon and delivered to a cmd_sink (command.h):
 *   - plain: each stream is kept up to --max-output-bytes; the rest is read and dropped,
 *     and the answer says "truncated": true; the whole JSON answer goes to the sink's
 *     answer once the command is over;
 *   - streaming: `stdout`/`stderr` events as the command writes, under back-pressure (a
 *     sink that asks to pause stops the reading, so the command blocks on its own writes;
 *     nothing is dropped), then `exit`.
 * On timeout the whole process group gets SIGCONT + SIGKILL and "timedOut" is true. A
 * receiver that goes away mid-command (exec_abort) ends the command the same way. The
 * answer comes once the command has exited and its pipes are drained (orphans that keep
 * the pipes open get a short grace, then are ignored).
 */
#ifndef SANDBOXD_EXEC_H
#define SANDBOXD_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "command.h"
#include "config.h"
#include "sandbox.h"

typedef struct exec_run exec_run;

struct exec_opts {
    const struct cmd_request *cmd;
    const char *stdin_data; /* NULL: stdin is /dev/null; copied */
    uint64_t timeout_ms;    /* 0: none */
    bool streaming;         /* events to the sink rather than one JSON answer */
};

/* exec_start's refusals that are not an errno of the start itself */
enum {
    EXEC_NO_ROOM = 1,  /* stdin does not fit in the sandbox's budget (budget.h) */
    EXEC_NO_SETUP = 2, /* out of memory or pipes; err says why */
};

/* Start the command o describes in sb, its output to sink. 0: started asynchronously,
 * *out is the run, and the sink gets either failed (the start did not happen) or begin,
 * output and a final end/answer; the caller keeps sink alive until then. Else nothing
 * was started and the sink is not called: EXEC_NO_ROOM, EXEC_NO_SETUP, or -errno from
 * cmd_spawn with err set. */
int exec_start(sandbox *sb, const struct config *cfg, const struct exec_opts *o, cmd_sink *sink,
               exec_run **out, char *err, size_t errlen);
/* The sink's receiver has taken what was queued: read on (after a write returned 1 or
 * after wait_drain). */
void exec_resume(exec_run *r);
/* The receiver went away: a pending start is cancelled (the sink gets failed with
 * -ECONNABORTED), a running command is killed and its output read and discarded. */
void exec_abort(exec_run *r);

/* child_exit_code (child.h), under the name contexts use: "exitCode" for a wait status
 * (128+signal when killed, as shells report it) and the signal's name, or NULL. */
int exec_exit_code(int status, const char **signame);

#endif
