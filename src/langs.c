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
#include "probe.h"
#include "zygote_client.h"

#define NODE "/usr/bin/node"

static void set_node(struct app *app, bool ok, const char *version_or_reason)
{
    for (int i = 1; i <= 2; i++) {
        struct lang_status *l = &app->langs[i];
        l->available = ok;
        snprintf(ok ? l->version : l->reason, ok ? sizeof l->version : sizeof l->reason, "%s",
                 version_or_reason);
    }
}

/* node --version's answer: available with its version, or why not. */
static void node_done(int64_t status, int sig, const char *out, size_t len, bool overflow,
                      void *arg)
{
    struct app *app = arg;
    (void)len;
    (void)overflow;
    char version[sizeof app->langs[0].version];
    snprintf(version, sizeof version, "%s", out);
    version[strcspn(version, "\r\n")] = '\0';
    char kernel[700];
    snprintf(kernel, sizeof kernel, "%s/node/node_modules/sucrase", app->runtimes_dir);
    if (status != 0 || sig || version[0] != 'v')
        set_node(app, false, "node --version failed");
    else if (access(kernel, R_OK) != 0)
        set_node(app, false,
                 "the Node kernel's dependencies are missing "
                 "(run scripts/install-deps)");
    else
        set_node(app, true, version + 1);
    app->node_probed = true;
}

void api_probe_node(struct app *app)
{
    set_node(app, false, NODE " was not found");
    app->node_probed = true; /* until a probe runs, the answer above stands */
    if (access(NODE, X_OK) != 0)
        return;
    char *args[] = { (char *)NODE, (char *)"--version", NULL };
    int rc = probe_run(app->loop, args, NULL, 63, node_done, app);
    if (rc)
        log_warn("cannot run %s --version: %s", NODE, uv_strerror(rc));
    else
        app->node_probed = false;
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
