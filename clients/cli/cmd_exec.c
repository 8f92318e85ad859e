/*
 * cmd_exec.c — `sbx exec CMD…`: run a shell command in the sandbox, streaming its output.
 *
 * The words after `exec` are joined with single spaces into the shell command line the API
 * takes (one quoted argument passes through verbatim). Output streams live (SSE); the exit
 * status is the command's own. -i sends this program's stdin (capped) as the command's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sbx.h"

#define EXEC_STDIN_CAP ((size_t)16 << 20)

typedef struct exec_state {
    bool exited;
    int exit_code;
    bool timed_out;
} exec_state;

static int on_event(const char *event, const char *data, size_t len, void *ud)
{
    exec_state *st = ud;
    json_error_t jerr;
    json_t *doc = json_loadb(data, len, 0, &jerr);
    if (!doc)
        return 0;
    if (strcmp(event, "stdout") == 0 || strcmp(event, "stderr") == 0) {
        const char *t = json_string_value(json_object_get(doc, "text"));
        FILE *f = event[3] == 'o' ? stdout : stderr;
        if (t) {
            fputs(t, f);
            fflush(f);
        }
    } else if (strcmp(event, "exit") == 0) {
        json_t *code = json_object_get(doc, "exitCode");
        st->exited = true;
        st->exit_code = json_is_integer(code) ? (int)json_integer_value(code) : 255;
        st->timed_out = json_is_true(json_object_get(doc, "timedOut"));
    }
    json_decref(doc);
    return 0;
}

int cmd_exec(sbx_client *c, const sbx_args *a)
{
    if (a->argc < 1) {
        fprintf(stderr, "sbx exec: which command? e.g. sbx exec 'ls -la'\n");
        return SBX_EXIT_USAGE;
    }
    int rc = 0;
    buf cmd, in;
    buf_init(&cmd, SBX_CODE_CAP);
    buf_init(&in, EXEC_STDIN_CAP);
    json_t *body = NULL;
    char *json = NULL;
    for (int i = 0; i < a->argc; i++) {
        if ((i > 0 && buf_puts(&cmd, " ") != 0) || buf_puts(&cmd, a->argv[i]) != 0) {
            fprintf(stderr, "sbx exec: command too long\n");
            rc = SBX_EXIT_USAGE;
            goto out;
        }
    }
    bool bad = false;
    json_t *env = sbx_env_object(a, &bad);
    if (bad) {
        rc = SBX_EXIT_USAGE;
        goto out;
    }
    body = json_object();
    json_object_set_new(body, "command", json_stringn(cmd.data, cmd.len));
    if (a->cwd)
        json_object_set_new(body, "cwd", json_string(a->cwd));
    if (env)
        json_object_set_new(body, "env", env);
    if (a->timeout_ms >= 0)
        json_object_set_new(body, "timeoutMs", json_integer(a->timeout_ms));
    if (a->stdin_in) {
        if (sbx_read_all(stdin, &in) != 0) {
            fprintf(stderr, "sbx exec: cannot read stdin (at most 16 MiB)\n");
            rc = SBX_EXIT_USAGE;
            goto out;
        }
        json_object_set_new(body, "stdin", json_stringn(in.data, in.len));
    }
    if (!(json = json_dumps(body, JSON_COMPACT))) {
        fprintf(stderr, "sbx exec: the command or stdin is not valid UTF-8\n");
        rc = SBX_EXIT_USAGE;
        goto out;
    }
    if ((rc = sbx_ensure_sandbox(c, a->sandbox)) != 0)
        goto out;
    char path[512];
    if (sbx_path(path, sizeof(path), a->sandbox, "/exec") != 0) {
        rc = SBX_EXIT_USAGE;
        goto out;
    }
    exec_state st = { 0 };
    sbx_resp r;
    cl_resp_init(&r, CL_ERR_CAP);
    int trc = cl_stream(c, "POST", path, json, on_event, &st, &r);
    if (trc != 0 || r.status < 200 || r.status >= 300) {
        cl_print_error(c, trc, &r);
        rc = SBX_EXIT_API;
    } else if (!st.exited) {
        fprintf(stderr, "sbx exec: the stream ended before the exit event\n");
        rc = SBX_EXIT_API;
    } else {
        if (st.timed_out)
            fprintf(stderr, "sbx exec: timed out\n");
        rc = st.exit_code & 0xff;
    }
    cl_resp_free(&r);
out:
    free(json);
    json_decref(body);
    buf_free(&cmd);
    buf_free(&in);
    return rc;
}
