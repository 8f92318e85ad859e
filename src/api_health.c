/*
 * api_health.c — GET /v1/health (public: load balancers and SDKs probe it) and
 * GET /metrics (Prometheus text format).
 */
#include <string.h>

#include "api.h"
#include "escape.h"
#include "jail.h"
#include "sandbox.h"
#include "metrics.h"
#include "pysite.h"

/* Rendered by hand, not through a jansson DOM: health is the request probes send most,
 * and this halves its cost (bench/http_bench.py). */
void api_health(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    api_update_langs(app);
    buf b;
    const char *packages = pysite_health_fragment(); /* made once at start (pysite.h) */
    buf_init(&b, 4096 + (packages ? strlen(packages) : 0));
    int rc =
        buf_puts(&b, "{\"status\":\"ok\",\"version\":\"" SANDBOXD_VERSION "\",\"languages\":{");
    for (int i = 0; i < 3 && !rc; i++) {
        const struct lang_status *l = &app->langs[i];
        const char *v = l->available ? l->version : l->reason;
        rc = buf_printf(&b, "%s\"%s\":{\"available\":%s,\"%s\":", i ? "," : "", l->name,
                        l->available ? "true" : "false", l->available ? "version" : "reason");
        if (!rc)
            rc = esc_json_quoted(&b, v, strlen(v));
        if (!rc)
            rc = buf_puts(&b, "}");
    }
    const struct jail_features *f = jail_features();
#define B(x) ((x) ? "true" : "false")
    if (!rc)
        rc = buf_printf(&b,
                        "},\"sandbox\":{\"root\":%s,\"userNamespaces\":%s,\"cgroupVersion\":%d,"
                        "\"memoryLimit\":%s,\"pidsLimit\":%s,\"cpuLimit\":%s,\"diskLimit\":%s,"
                        "\"seccomp\":%s},\"sandboxes\":%u,\"uptimeSeconds\":%.3f",
                        B(f->root), B(f->userns), f->cgroup_version, B(f->memory_limit),
                        B(f->pids_limit), B(f->cpu_limit), B(f->disk_limit), B(f->seccomp),
                        sbx_count(), (double)(uv_hrtime() - app->started_ns) / 1e9);
#undef B
    if (!rc) /* the Python packages contexts can import */
        rc = buf_printf(&b, ",%s}", packages ? packages : "\"packages\":null");
    if (rc)
        http_respond_error(req, 500, "INTERNAL_ERROR", "the health report does not fit");
    else
        http_respond(req, 200, "application/json", b.data, b.len, NULL);
    buf_free(&b);
}

void api_metrics(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    buf b;
    buf_init(&b, 1 << 20);
    if (metrics_render(&b)) {
        buf_free(&b);
        http_respond_error(req, 500, "INTERNAL_ERROR", "the metrics do not fit in 1 MiB");
        return;
    }
    http_respond(req, 200, "text/plain; version=0.0.4", b.data, b.len, NULL);
    buf_free(&b);
}
