/*
 * command.h — a shell command started in a sandbox, as both POST …/exec and background
 * processes start one: `/bin/sh -c COMMAND` spawned through the jail with stdout and
 * stderr on fresh pipes. Nothing here knows what happens to the output; exec.c and
 * process.c decide that. The request fields are read by the API layer (api_command.c).
 *
 * Also here: cmd_sink, the interface through which exec.c and process.c deliver output
 * to whoever asked for it. The API layer implements it over HTTP (a whole JSON answer or
 * SSE events); the engine never sees a request.
 */
#ifndef SANDBOXD_COMMAND_H
#define SANDBOXD_COMMAND_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "child.h"
#include "escape.h"
#include "jail.h"
#include "sandbox.h"

struct budget;

struct cmd_request {
    const char *command; /* borrowed from the request body */
    const json_t *env;   /* borrowed; NULL when absent */
    char cwd[1100];      /* resolved against /workspace */
    bool stdin_open;     /* background processes: a stdin pipe kept open (proc_stdin_write) */
};

/* Spawn the command in sb as a new child (child.h) of owner: stdout and stderr on new
 * pipes, stdin on one more when with_stdin (else /dev/null). The start itself is
 * asynchronous (child_spawn): 0 means *out is live and ops->started comes later with
 * the outcome, unless the owner gives up first (child_release). -errno with err set
 * means it was refused at once: nothing is left and no ops are called. */
int cmd_spawn(sandbox *sb, const struct cmd_request *c, bool with_stdin,
              const struct child_ops *ops, void *owner, child **out, char *err, size_t errlen);

/* Where a command's (or a process's) output goes. The engine calls the operations; the
 * one who made the sink (the API layer) implements them. Writes answer as SSE does: 0 go
 * on, 1 pause until the engine's resume function is called (exec_resume,
 * proc_follower_resume), negative: the receiver is gone (the data is discarded).
 * end, answer and failed are final: the engine calls nothing on the sink afterwards, so
 * the sink may free itself there. */
typedef struct cmd_sink cmd_sink;
struct cmd_sink_ops {
    /* The output starts: charge what is queued to the receiver to bg from now on; open
     * the event stream when there is one (its result: as for writes). */
    int (*begin)(cmd_sink *s, struct budget *bg);
    /* One event: type and one line of JSON. */
    int (*event)(cmd_sink *s, const char *type, const char *json, size_t len);
    /* An output event {"text":"…"} from raw bytes, escaped with carry across chunks;
     * nothing is sent while everything waits in the carry. */
    int (*text)(cmd_sink *s, const char *type, esc_carry *carry, const void *data, size_t n,
                bool final);
    /* Final: the event stream is over. */
    void (*end)(cmd_sink *s);
    /* Final: the whole JSON answer (malloc'd, handed over), or json NULL when it could
     * not be built. */
    void (*answer)(cmd_sink *s, char *json, size_t len);
    /* Final: the start failed (rc and msg as cmd_spawn's; cwd is where it was to run). */
    void (*failed)(cmd_sink *s, int rc, const char *cwd, const char *msg);
    /* Bytes queued to the receiver and not taken yet (0: it has taken everything). */
    size_t (*queued)(const cmd_sink *s);
    /* The receiver has gone away. */
    bool (*gone)(const cmd_sink *s);
    /* Call the engine's resume function once the receiver has taken what is queued. */
    void (*wait_drain)(cmd_sink *s);
};
struct cmd_sink {
    const struct cmd_sink_ops *ops;
};

#endif
