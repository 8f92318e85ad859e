/*
 * command.c — see command.h.
 */
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonx.h"

int cmd_parse(const json_t *body, const struct config *cfg, struct cmd_request *c, char *err,
              size_t errlen)
{
    const char *cwd_in = NULL;
    memset(c, 0, sizeof *c);
    if (jx_string(body, "command", true, cfg->max_code_bytes, &c->command, err, errlen) ||
        jx_string(body, "cwd", false, 1024, &cwd_in, err, errlen) ||
        jx_env_map(body, "env", cfg->max_env_vars, &c->env, err, errlen) ||
        sbx_resolve_cwd(cwd_in, c->cwd, sizeof c->cwd, err, errlen))
        return -1;
    if (!c->command[0]) {
        snprintf(err, errlen, "field 'command' is empty");
        return -1;
    }
    return 0;
}

int cmd_spawn(sandbox *sb, const struct cmd_request *c, int stdin_fd, jail_started_cb on_started,
              jail_exit_cb on_exit, void *arg, jail_req **req, int out_fds[2], char *err,
              size_t errlen)
{
    int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, nul = -1, rc;
    char **envp = sbx_environ(sb, c->env, NULL);
    if (!envp) {
        snprintf(err, errlen, "the environment is too large");
        return -E2BIG;
    }
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC) ||
        (stdin_fd < 0 && (nul = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)) {
        rc = -errno;
        snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
        goto out;
    }
    const char *argv[] = { "/bin/sh", "-c", c->command, NULL };
    struct jail_spawn_opts so = {
        .argv = argv, .envp = (const char *const *)envp, .cwd = c->cwd,
        .stdin_fd = stdin_fd >= 0 ? stdin_fd : nul, .stdout_fd = po[1], .stderr_fd = pe[1],
        .extra_fd = -1,
    };
    rc = jail_spawn(sb->jail, &so, on_started, on_exit, arg, req, err, errlen);
    if (!rc) {
        out_fds[0] = po[0];
        out_fds[1] = pe[0];
        po[0] = pe[0] = -1;    /* handed over */
    }
out:
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    if (nul >= 0)
        close(nul);
    free(envp);
    return rc;
}

void cmd_respond_error(http_req *req, int rc, const char *cwd, const char *err,
                       const char *what)
{
    if (rc == -EAGAIN)
        http_respond_error(req, 429, "LIMIT_REACHED", "the sandbox is at its process limit: %s",
                           err);
    else if (rc == -ENOMEM)   /* the sandbox's init forks only with memory to spare */
        http_respond_error(req, 507, "MEMORY_LIMIT",
                           "cannot start the %s: the sandbox's memory is full (delete files "
                           "in /workspace, /tmp or /dev/shm, or end a process): %s", what, err);
    else if (rc == -ECANCELED)
        http_respond_error(req, 404, "SANDBOX_NOT_FOUND", "cannot start the %s: %s", what, err);
    else if (rc == -EBUSY || rc == -ETIMEDOUT)
        http_respond_error(req, 429, "LIMIT_REACHED", "cannot start the %s: %s", what, err);
    else if (rc == -ENOENT || rc == -ENOTDIR || rc == -EACCES)
        http_respond_error(req, 400, "VALIDATION_FAILED", "cannot start the %s in '%s': %s",
                           what, cwd, err);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot start the %s: %s", what, err);
}
