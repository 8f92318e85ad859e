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
        .argv = argv,
        .envp = (const char *const *)envp,
        .cwd = c->cwd,
        .stdin_fd = stdin_fd >= 0 ? stdin_fd : nul,
        .stdout_fd = po[1],
        .stderr_fd = pe[1],
        .extra_fd = -1,
    };
    rc = jail_spawn(sb->jail, &so, on_started, on_exit, arg, req, err, errlen);
    if (!rc) {
        out_fds[0] = po[0];
        out_fds[1] = pe[0];
        po[0] = pe[0] = -1; /* handed over */
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
