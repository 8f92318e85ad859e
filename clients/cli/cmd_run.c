/*
 * cmd_run.c — `sbx run`: run code from the command line, a file or stdin, streaming output.
 *
 * The sandbox is got-or-created first. Exit status: 0 when the code finished cleanly,
 * 1 when it raised (the error is on stderr), 2 for usage errors, 3 for daemon errors.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "execute.h"
#include "sbx.h"

/* Fill code from CODE, -f FILE or '-' (stdin). 0 or an exit code (message printed). */
static int load_code(const sbx_args *a, buf *code)
{
    const char *src = a->file;
    if (!src) {
        if (a->argc != 1) {
            fprintf(stderr, "sbx run: give exactly one of CODE, -f FILE or - (stdin)\n");
            return SBX_EXIT_USAGE;
        }
        if (strcmp(a->argv[0], "-") != 0)
            return buf_puts(code, a->argv[0]) == 0 ? 0 : SBX_EXIT_USAGE;
        src = "-";
    } else if (a->argc != 0) {
        fprintf(stderr, "sbx run: -f FILE and CODE cannot be used together\n");
        return SBX_EXIT_USAGE;
    }
    FILE *f = strcmp(src, "-") == 0 ? stdin : fopen(src, "rbe");
    if (!f) {
        fprintf(stderr, "sbx run: cannot open %s: %s\n", src, strerror(errno));
        return SBX_EXIT_USAGE;
    }
    int rc = sbx_read_all(f, code);
    if (f != stdin)
        fclose(f);
    if (rc) {
        fprintf(stderr, "sbx run: cannot read %s: %s\n", src,
                rc == -E2BIG ? "larger than 16 MiB" : strerror(-rc));
        return SBX_EXIT_USAGE;
    }
    return 0;
}

int cmd_run(sbx_client *c, const sbx_args *a)
{
    buf code;
    buf_init(&code, SBX_CODE_CAP);
    int rc = load_code(a, &code);
    json_t *body = NULL;
    if (rc)
        goto out;
    bool bad = false;
    json_t *env = sbx_env_object(a, &bad);
    if (bad) {
        rc = SBX_EXIT_USAGE;
        goto out;
    }
    body = json_object();
    json_object_set_new(body, "code", json_stringn(code.data, code.len));
    if (a->language)
        json_object_set_new(body, "language", json_string(a->language));
    if (a->context)
        json_object_set_new(body, "context", json_string(a->context));
    if (env)
        json_object_set_new(body, "envVars", env);
    if (a->timeout_ms >= 0)
        json_object_set_new(body, "timeoutMs", json_integer(a->timeout_ms));
    if (!json_object_get(body, "code")) {
        fprintf(stderr, "sbx run: the code is not valid UTF-8\n");
        rc = SBX_EXIT_USAGE;
        goto out;
    }
    if ((rc = sbx_ensure_sandbox(c, a->sandbox)) != 0)
        goto out;
    exec_view v = { .save_dir = a->save };
    rc = execute_stream(c, a->sandbox, body, &v);
    if (rc == 0 && v.raised)
        rc = SBX_EXIT_RAISED;
out:
    json_decref(body);
    buf_free(&code);
    return rc;
}
