/*
 * api_context.c — the code-context routes of API.md: create, list, get, delete, interrupt
 * and restart a context (POST/GET /v1/sandboxes/{sid}/contexts, GET/DELETE …/{cid},
 * POST …/{cid}/interrupt, …/{cid}/restart). Runs are api_execute.c's.
 *
 * Each handler validates the request, calls the engine (context.h) and answers. Create
 * and restart answer once the context's process is ready (201 and 200 with the context),
 * or 500 when it cannot start (429 when only because the Python zygote restarted and was
 * not back in time: a retry works); interrupt answers once the run in flight has ended. A
 * request the engine holds stays valid until it is answered (http.h), so its callback
 * needs no other state.
 */
#include "api.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "api_fields.h"
#include "execution.h"
#include "api_json.h"
#include "jsonx.h"
#include "sandbox.h"
#include "stamp.h"
#include "zygote_client.h"

/* ---- shared with api_execute.c ---- */

bool api_lang_available(struct app *app, http_req *req, int lang)
{
    api_update_langs(app);
    const struct lang_status *l = &app->langs[lang];
    if (l->available)
        return true;
    if (lang == LANG_PYTHON && zyg_restarting())
        return true; /* the context waits for the zygote (context.c) */
    http_respond_error(req, 501, "LANGUAGE_UNAVAILABLE", "%s", l->reason);
    return false;
}

void api_context_start_error(http_req *req, int rc, const char *err)
{
    if (rc == -EMFILE || rc == -EBUSY || rc == -EAGAIN)
        http_respond_error(req, 429, "LIMIT_REACHED", "%s", err);
    else if (rc == -ENOENT || rc == -ENOTDIR || rc == -EACCES)
        http_respond_error(req, 400, "VALIDATION_FAILED", "cannot start the context: %s", err);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot start the context: %s", err);
}

/* ---- helpers ---- */

/* A context as API JSON; a context still starting shows as idle. */
static json_t *context_json(const struct context *c)
{
    static const char *const STATE_NAMES[] = { "idle", "idle", "busy", "dead" };
    struct ctx_info i;
    char created[40], used[40];
    ctx_get_info(c, &i);
    stamp_iso8601(i.created_ms, created, sizeof created);
    stamp_iso8601(i.last_used_ms, used, sizeof used);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "id", i.id, "language",
                     ctx_lang_name(i.lang), "cwd", i.cwd, "createdAt", created, "lastUsed", used,
                     "executionCount", i.exec_count, "state", STATE_NAMES[i.state]);
}

/* The context named by {cid} in the sandbox, or a 404 answer and NULL. */
static struct context *lookup(http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return NULL;
    const char *cid = route_param(p, "cid");
    struct context *c = ctx_find(sb, cid);
    if (!c && !api_ended_by_restart(req, sb, "CONTEXT_NOT_FOUND", "context", "ctx-", cid))
        http_respond_error(req, 404, "CONTEXT_NOT_FOUND",
                           "context '%.64s' does not exist in "
                           "sandbox '%s'",
                           cid, sb->id);
    return c;
}

/* ctx_wait_ready callbacks: the context is ready (the answer), or could not start. */
static void answer_ready(http_req *req, int status, const struct context *c, bool ok,
                         const char *why)
{
    if (ok)
        api_respond_json(req, status, context_json(c));
    else if (ctx_runtime_lost(c)) /* transient: the zygote restarted; a retry works */
        http_respond_error(req, 429, "LIMIT_REACHED", "%s", why);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "%s", why);
}

static void created(struct context *c, bool ok, const char *why, void *arg)
{
    answer_ready(arg, 201, c, ok, why);
}

static void restarted(struct context *c, bool ok, const char *why, void *arg)
{
    answer_ready(arg, 200, c, ok, why);
}

/* ctx_interrupt callback: the interrupted run has ended. */
static void interrupted(struct context *c, bool ok, const char *why, void *arg)
{
    char body[96];
    (void)c;
    (void)why;
    int n = snprintf(body, sizeof body, "{\"interrupted\":true,\"statePreserved\":%s}",
                     ok ? "true" : "false");
    http_respond(arg, 200, "application/json", body, (size_t)n, NULL);
}

static void wait_ready(struct context *c, http_req *req, ctx_wait_cb cb)
{
    if (ctx_wait_ready(c, cb, req))
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
}

/* ---- handlers ---- */

void api_context_create(struct app *app, http_req *req, const route_params *p)
{
    char err[JX_ERR];
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    json_t *body = api_body_known(req, true, API_FIELDS_CONTEXT);
    if (!body)
        return;
    const char *lang_s = "python", *cwd_in = NULL;
    const json_t *env = NULL;
    char cwd[1100];
    if (jx_string(body, "language", false, 32, &lang_s, err, sizeof err) ||
        jx_string(body, "cwd", false, 1024, &cwd_in, err, sizeof err) ||
        jx_env_map(body, "envVars", app->cfg->max_env_vars, &env, err, sizeof err) ||
        sbx_resolve_cwd(cwd_in, cwd, sizeof cwd, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    int lang = ctx_parse_lang(lang_s);
    if (lang < 0) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "field 'language' must be python, javascript or typescript, got "
                           "\"%.32s\"",
                           lang_s);
        json_decref(body);
        return;
    }
    if (!api_lang_available(app, req, lang)) {
        json_decref(body);
        return;
    }
    struct context *c;
    int rc = ctx_create(sb, (enum ctx_lang)lang, cwd, env, false, &c, err, sizeof err);
    json_decref(body);
    if (rc) {
        api_context_start_error(req, rc, err);
        return;
    }
    wait_ready(c, req, created);
}

void api_context_list(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    json_t *arr = json_array();
    for (struct context *c = ctx_first(sb); c; c = ctx_next(c))
        json_array_insert_new(arr, 0, context_json(c));
    api_respond_json(req, 200, json_pack("{s:o}", "contexts", arr));
}

void api_context_get(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (c)
        api_respond_json(req, 200, context_json(c));
}

void api_context_delete(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (!c)
        return;
    ctx_delete(c, "the context was deleted");
    http_respond(req, 200, "application/json", "{\"deleted\":true}", 16, NULL);
}

void api_context_interrupt(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (!c || api_body_none(req))
        return;
    int rc = ctx_interrupt(c, interrupted, req);
    if (rc == 1)
        http_respond(req, 200, "application/json",
                     "{\"interrupted\":false,\"statePreserved\":true}", 43, NULL);
    else if (rc)
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
}

void api_context_queue(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (!c)
        return;
    struct ctx_info i;
    json_t *running, *queued;
    ctx_get_info(c, &i);
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb || exe_queue_json(sb, i.id, &running, &queued)) {
        if (sb)
            http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    api_respond_json(
        req, 200,
        json_pack("{s:o, s:o}", "running", running ? running : json_null(), "queued", queued));
}

void api_context_restart(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    char err[256];
    struct context *c = lookup(req, p);
    if (!c || api_body_none(req))
        return;
    int rc = ctx_restart(c, err, sizeof err);
    if (rc) {
        api_context_start_error(req, rc, err);
        return;
    }
    wait_ready(c, req, restarted);
}
