/*
 * command.h — a shell command started in a sandbox, as both POST …/exec and background
 * processes start one: the request's "command", "cwd" and "env" fields validated, then
 * `/bin/sh -c COMMAND` spawned through the jail with stdout and stderr on fresh pipes.
 * Nothing here knows what happens to the output; exec.c and process.c decide that.
 */
#ifndef SANDBOXD_COMMAND_H
#define SANDBOXD_COMMAND_H

#include <jansson.h>

#include "http.h"
#include "jail.h"
#include "sandbox.h"

struct cmd_request {
    const char *command;       /* borrowed from the request body */
    const json_t *env;         /* borrowed; NULL when absent */
    char cwd[1100];            /* resolved against /workspace */
};

/* Read "command" (required, not empty, at most --max-code-bytes), "cwd" and "env" (at
 * most --max-env-vars) from body. 0, or -1 with err naming the bad field (the request
 * should get 400 VALIDATION_FAILED). */
int cmd_parse(const json_t *body, const struct config *cfg, struct cmd_request *c, char *err,
              size_t errlen);

/* Spawn the command in sb: stdin is stdin_fd (-1: /dev/null), stdout/stderr are new pipes
 * whose read ends (O_CLOEXEC) are returned in out_fds at once. The start itself is
 * asynchronous (jail_spawn): 0 means on_started comes later with the process or an
 * error (then the caller closes out_fds), unless the caller gives up with
 * jail_cancel(*req). -errno with err set means it was refused at once, nothing left
 * open and on_started never called. */
int cmd_spawn(sandbox *sb, const struct cmd_request *c, int stdin_fd, jail_started_cb on_started,
              jail_exit_cb on_exit, void *arg, jail_req **req, int out_fds[2], char *err,
              size_t errlen);

/* Answer a failed cmd_spawn: 429 at the process limit, when too many starts wait for the
 * sandbox's init (-EBUSY) or when it did not answer in time (-ETIMEDOUT: the sandbox is
 * starved of CPU), 404 when the sandbox was deleted first (-ECANCELED), 400 for a bad
 * cwd, else 500.
 * what names the thing ("command", "process"). */
void cmd_respond_error(http_req *req, int rc, const char *cwd, const char *err,
                       const char *what);

#endif
