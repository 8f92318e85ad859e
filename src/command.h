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
 * whose read ends (O_CLOEXEC) are returned in out_fds. 0, or -errno with err set and
 * nothing left open. */
int cmd_spawn(sandbox *sb, const struct cmd_request *c, int stdin_fd, jail_exit_cb cb,
              void *arg, jail_proc **jp, int out_fds[2], char *err, size_t errlen);

/* Answer a failed cmd_spawn: 429 at the process limit, 400 for a bad cwd, else 500.
 * what names the thing ("command", "process"). */
void cmd_respond_error(http_req *req, int rc, const struct cmd_request *c, const char *err,
                       const char *what);

#endif
