/*
 * cmd_run.c — `sbx run`: run code from the command line, a file or stdin, streaming output.
 *
 * The sandbox is got-or-created first. Exit status: 0 when the code finished cleanly,
 * 1 when it raised (the error is on stderr), 2 for usage errors, 3 for daemon errors.
 *
 * Ctrl-C while the code runs interrupts the run in the sandbox (DELETE of the execution
 * that X-Execution-Id names, on a second connection) and the stream goes on to the run's
 * end, so the interrupt's error is shown and the context is not left busy; a second
 * Ctrl-C abandons the stream (the daemon interrupts the run after its re-attach grace).
 */
#include <errno.h>
#include <signal.h>
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

static volatile sig_atomic_t g_sigint;

static void on_sigint(int sig)
{
    (void)sig;
    g_sigint++;
}

typedef struct run_ctl {
    sbx_client ctl; /* a second connection for the interrupt */
    const char *sandbox;
    const exec_view *v;
    bool sent;
} run_ctl;

/* Called by libcurl during the run: the first Ctrl-C interrupts, a second one abandons. */
static int on_progress(void *ud)
{
    run_ctl *r = ud;
    if (!g_sigint)
        return 0;
    if (r->sent || !r->v->resp || !r->v->resp->exec_id[0])
        return g_sigint > 1 || !r->v->resp || !r->v->resp->exec_id[0];
    r->sent = true;
    char path[512], suffix[128];
    snprintf(suffix, sizeof(suffix), "/executions/%s", r->v->resp->exec_id);
    if (sbx_path(path, sizeof(path), r->sandbox, suffix) != 0)
        return 1;
    sbx_resp resp;
    cl_resp_init(&resp, CL_ERR_CAP);
    int rc = cl_request(&r->ctl, "DELETE", path, NULL, 0, &resp);
    bool ok = rc == 0 && resp.status == 200;
    if (!ok)
        cl_print_error(&r->ctl, rc, &resp);
    cl_resp_free(&resp);
    return ok ? 0 : 1;
}

/* Stream the run with Ctrl-C turned into an interrupt of the run. */
static int run_interruptible(sbx_client *c, const sbx_args *a, json_t *body, exec_view *v)
{
    run_ctl r = { .sandbox = a->sandbox, .v = v };
    if (cl_init(&r.ctl, a->url, a->token) != 0)
        return SBX_EXIT_API;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    c->on_progress = on_progress;
    c->progress_ud = &r;
    int rc = execute_stream(c, a->sandbox, body, v);
    c->on_progress = NULL;
    c->progress_ud = NULL;
    sigaction(SIGINT, &old, NULL);
    cl_free(&r.ctl);
    return rc;
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
    rc = run_interruptible(c, a, body, &v);
    if (rc == 0 && v.raised)
        rc = SBX_EXIT_RAISED;
out:
    json_decref(body);
    buf_free(&code);
    return rc;
}
