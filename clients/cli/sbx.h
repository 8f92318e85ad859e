/*
 * sbx.h — what the parts of the sbx command line share: the parsed arguments, the exit
 * codes, and one entry point per command (cmd_*.c, repl.c).
 *
 * Exit codes: 0 success; 1 the user's code raised (run) or a command failed; 2 usage error;
 * 3 the daemon refused or could not be reached. `sbx exec` exits with the command's own code.
 */
#ifndef SBX_CLI_SBX_H
#define SBX_CLI_SBX_H

#include <stdbool.h>
#include <stddef.h>

#include <stdio.h>

#include "client.h"

#define SBX_EXIT_OK 0
#define SBX_EXIT_RAISED 1
#define SBX_EXIT_USAGE 2
#define SBX_EXIT_API 3

#define SBX_MAX_ENV 64               /* -e K=V options */
#define SBX_CODE_CAP ((size_t)16 << 20)  /* code read from a file or stdin */

typedef struct sbx_args {
    const char *url;        /* --url, $SANDBOXD_URL, default http://127.0.0.1:7878 */
    const char *token;      /* --token, $SANDBOXD_TOKEN */
    const char *sandbox;    /* -s, default "default" */
    const char *language;   /* -l */
    const char *context;    /* -c */
    const char *file;       /* -f */
    const char *save;       /* --save DIR */
    const char *cwd;        /* --cwd */
    long long timeout_ms;   /* --timeout, -1 when not given */
    const char *env[SBX_MAX_ENV];
    size_t nenv;
    bool json;              /* --json: print the daemon's JSON as is */
    bool stdin_in;          /* -i: send stdin to the command (exec) */
    const char *cmd;        /* the command word */
    int argc;               /* positionals after the command */
    char **argv;
} sbx_args;

/* Builds {"K":"V",…} from -e options; NULL when there are none (or on a bad one, with a
 * message printed and *bad set). Caller json_decref()s. */
struct json_t *sbx_env_object(const sbx_args *a, bool *bad);
/* PUT /v1/sandboxes/{id}: get-or-create. 0 or an exit code (the error is printed). */
int sbx_ensure_sandbox(sbx_client *c, const char *id);
/* "/v1/sandboxes/<escaped id>" + suffix into out (cap bytes). 0 or -E2BIG. */
int sbx_path(char *out, size_t cap, const char *id, const char *suffix);

/* Reads f to its end into out (whose cap bounds it). 0, -E2BIG, -ENOMEM or -EIO. */
int sbx_read_all(FILE *f, buf *out);

int cmd_run(sbx_client *c, const sbx_args *a);
int cmd_exec(sbx_client *c, const sbx_args *a);
int cmd_ls(sbx_client *c, const sbx_args *a);
int cmd_contexts(sbx_client *c, const sbx_args *a);
int cmd_rm(sbx_client *c, const sbx_args *a);
int cmd_cp(sbx_client *c, const sbx_args *a);
int cmd_repl(sbx_client *c, const sbx_args *a);
int cmd_mcp(sbx_client *c, const sbx_args *a); /* MCP over stdio, forwarded to /mcp */

#endif
