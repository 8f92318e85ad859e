/*
 * langs.c — which languages this daemon can run right now, for /v1/health and for
 * refusing contexts early (501 LANGUAGE_UNAVAILABLE). Python follows the zygote (it may
 * be restarting); JavaScript and TypeScript need Node and the kernel's dependencies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "log.h"
#include "zygote_client.h"

#define NODE "/usr/bin/node"

struct probe {
    uv_process_t proc;
    uv_pipe_t out;
    struct app *app;
    char buf[64];
    size_t len;
    int closed;
};

static void probe_closed(uv_handle_t *h)
{
    struct probe *pr = h->data;
    if (++pr->closed == 2)
        free(pr);
}

static void set_node(struct app *app, bool ok, const char *version_or_reason)
{
    for (int i = 1; i <= 2; i++) {
        struct lang_status *l = &app->langs[i];
        l->available = ok;
        snprintf(ok ? l->version : l->reason, ok ? sizeof l->version : sizeof l->reason, "%s",
                 version_or_reason);
    }
}

static void probe_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct probe *pr = h->data;
    (void)hint;
    *b = uv_buf_init(pr->buf + pr->len, (unsigned)(sizeof pr->buf - 1 - pr->len));
}

static void probe_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct probe *pr = s->data;
    (void)b;
    if (n > 0)
        pr->len += (size_t)n;
    if (n < 0 || pr->len >= sizeof pr->buf - 1)
        uv_read_stop(s);
}

static void probe_exit(uv_process_t *p, int64_t status, int sig)
{
    struct probe *pr = p->data;
    pr->buf[pr->len] = '\0';
    pr->buf[strcspn(pr->buf, "\r\n")] = '\0';
    char kernel[700];
    snprintf(kernel, sizeof kernel, "%s/node/node_modules/sucrase", pr->app->runtimes_dir);
    if (status != 0 || sig || pr->buf[0] != 'v')
        set_node(pr->app, false, "node --version failed");
    else if (access(kernel, R_OK) != 0)
        set_node(pr->app, false,
                 "the Node kernel's dependencies are missing "
                 "(run scripts/install-deps)");
    else
        set_node(pr->app, true, pr->buf + 1);
    pr->app->node_probed = true;
    uv_close((uv_handle_t *)&pr->proc, probe_closed);
    uv_close((uv_handle_t *)&pr->out, probe_closed);
}

void api_probe_node(struct app *app)
{
    set_node(app, false, NODE " was not found");
    app->node_probed = true; /* until a probe runs, the answer above stands */
    if (access(NODE, X_OK) != 0)
        return;
    struct probe *pr = calloc(1, sizeof *pr);
    if (!pr)
        return;
    app->node_probed = false;
    pr->app = app;
    uv_pipe_init(app->loop, &pr->out, 0);
    pr->out.data = pr;
    pr->proc.data = pr;
    char *args[] = { (char *)NODE, (char *)"--version", NULL };
    uv_stdio_container_t stdio[3] = {
        { .flags = UV_IGNORE },
        { .flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&pr->out },
        { .flags = UV_IGNORE },
    };
    uv_process_options_t o = {
        .exit_cb = probe_exit, .file = NODE, .args = args, .stdio_count = 3, .stdio = stdio
    };
    int rc = uv_spawn(app->loop, &pr->proc, &o);
    if (rc) {
        log_warn("cannot run %s --version: %s", NODE, uv_strerror(rc));
        app->node_probed = true;
        uv_close((uv_handle_t *)&pr->out, probe_closed);
        pr->closed++;
        return;
    }
    uv_read_start((uv_stream_t *)&pr->out, probe_alloc, probe_read);
}

void api_update_langs(struct app *app)
{
    struct lang_status *py = &app->langs[0];
    py->available = zyg_available();
    if (py->available)
        snprintf(py->version, sizeof py->version, "%s", zyg_version());
    else
        snprintf(py->reason, sizeof py->reason,
                 "the Python zygote is not running (see the "
                 "daemon's log)");
}
