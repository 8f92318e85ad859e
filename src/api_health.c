/*
 * api_health.c — GET /v1/health (public: load balancers and SDKs probe it) and
 * GET /metrics (Prometheus text format).
 */
#include <jansson.h>

#include "api.h"
#include "jsonx.h"
#include "metrics.h"

void api_health(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    json_t *langs = json_object();
    for (int i = 0; i < 3; i++) {
        const struct lang_status *l = &app->langs[i];
        json_t *o = json_pack("{s:b}", "available", l->available);
        if (l->available)
            json_object_set_new(o, "version", json_string(l->version));
        else
            json_object_set_new(o, "reason", json_string(l->reason));
        json_object_set_new(langs, l->name, o);
    }
    json_t *j = json_pack("{s:s, s:s, s:o, s:f}", "status", "ok", "version", SANDBOXD_VERSION,
                          "languages", langs, "uptimeSeconds",
                          (double)(uv_hrtime() - app->started_ns) / 1e9);
    jx_respond(req, 200, j);
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
