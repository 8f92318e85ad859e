/*
 * command.c — see command.h: the shell command's argv and environment; the pipes and
 * the start are the child's (child.c).
 */
#include "command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_spawn(sandbox *sb, const struct cmd_request *c, bool with_stdin,
              const struct child_ops *ops, void *owner, child **out, char *err, size_t errlen)
{
    char **envp = sbx_environ(sb, c->env, NULL);
    if (!envp) {
        snprintf(err, errlen, "the environment is too large");
        return -E2BIG;
    }
    unsigned mask = CHILD_BIT(CHILD_OUT) | CHILD_BIT(CHILD_ERR);
    int rc = child_new(uv_default_loop(), mask | (with_stdin ? CHILD_BIT(CHILD_IN) : 0), ops, owner,
                       out);
    if (rc) {
        snprintf(err, errlen, "cannot create pipes: %s", strerror(-rc));
        free(envp);
        return rc;
    }
    const char *argv[] = { "/bin/sh", "-c", c->command, NULL };
    rc = child_spawn(*out, sb->jail, argv, (const char *const *)envp, c->cwd, err, errlen);
    if (rc) {
        child_discard(*out);
        *out = NULL;
    }
    free(envp);
    return rc;
}
