/*
 * api_execute.c — POST /v1/sandboxes/{sid}/execute (API.md "Running code"): validate the
 * request, find or make its context, and start an execution on it (execution.h); the
 * request then follows the execution (api_execution.c, api_exe_attach):
 *   - SSE (Accept: text/event-stream): stdout/stderr/result events as the context writes
 *     them, then error (when there is one) and end; a client that reads slowly stops the
 *     reading of the context once the execution's log is full (back-pressure), so nothing
 *     it waits for is dropped;
 *   - plain JSON: one document at the end, each output stream kept up to
 *     --max-output-bytes (then "truncated": true and "truncatedBy").
 * Both carry X-Execution-Id. A client that goes away does not stop the run: it goes on for
 * --reattach-grace-ms, for anyone to re-attach (GET …/executions/{id}/events).
 *
 * Memory: a run holds its request (the raw body, kept by http until the answer, and the
 * parsed tree): charged to the sandbox's budget (budget.h) before it is queued, and the
 * charge handed over to the execution, which holds it until the run ends; what the run
 * writes is the execution's (its log, charged too).
 */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "budget.h"
#include "context.h"
#include "escape.h"
#include "api_fields.h"
#include "api_json.h"
#include "execution.h"
#include "jsonx.h"
#include "sandbox.h"

/* ---- the handler ---- */

/* The validated request. */
struct exec_req {
    json_t *body;
    const char *src, *cid, *lang_s;
    const json_t *env;
    uint64_t timeout;
    int lang;
};

/* Parse and validate the body: 0, or -1 when the request has been answered. */
static int parse_request(struct app *app, http_req *req, const sandbox *sb, struct exec_req *x)
{
    char err[JX_ERR];
    x->body = api_body_known(req, false, API_FIELDS_EXECUTE);
    if (!x->body)
        return -1;
    x->src = x->cid = x->lang_s = NULL;
    x->env = NULL;
    x->timeout = sb->limits.timeout_ms;
    if (jx_string(x->body, "code", true, app->cfg->max_code_bytes, &x->src, err, sizeof err) ||
        jx_string(x->body, "context", false, 64, &x->cid, err, sizeof err) ||
        jx_string(x->body, "language", false, 32, &x->lang_s, err, sizeof err) ||
        jx_env_map(x->body, "envVars", app->cfg->max_env_vars, &x->env, err, sizeof err) ||
        sbx_parse_timeout(x->body, &x->timeout, err, sizeof err)) {
        json_decref(x->body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return -1;
    }
    x->lang = x->lang_s ? ctx_parse_lang(x->lang_s) : LANG_PYTHON;
    if (x->lang < 0) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "field 'language' must be python, javascript or typescript, got "
                           "\"%.32s\"",
                           x->lang_s);
        json_decref(x->body);
        return -1;
    }
    return 0;
}

/* The context the run goes to: the one named (its language must match), else the
 * sandbox's default one of the language, made now if there is none. NULL when the
 * request has been answered (the body is freed then). */
static struct context *pick_context(struct app *app, http_req *req, sandbox *sb,
                                    const struct exec_req *x)
{
    char err[JX_ERR];
    struct context *c = NULL;
    struct ctx_info i;
    if (x->cid) {
        c = ctx_find(sb, x->cid);
        if (!c) {
            if (!api_ended_by_restart(req, sb, "CONTEXT_NOT_FOUND", "context", "ctx-", x->cid))
                http_respond_error(req, 404, "CONTEXT_NOT_FOUND",
                                   "context '%s' does not exist in sandbox '%s'", x->cid, sb->id);
            json_decref(x->body);
            return NULL;
        }
        ctx_get_info(c, &i);
        if (x->lang_s && (int)i.lang != x->lang &&
            !(i.lang == LANG_TYPESCRIPT && x->lang == LANG_JAVASCRIPT)) {
            http_respond_error(req, 400, "VALIDATION_FAILED", "context '%s' runs %s, not %s",
                               x->cid, ctx_lang_name(i.lang),
                               ctx_lang_name((enum ctx_lang)x->lang));
            json_decref(x->body);
            return NULL;
        }
        return c;
    }
    c = ctx_find_default(sb, (enum ctx_lang)x->lang);
    if (c)
        return c;
    if (!api_lang_available(app, req, x->lang)) {
        json_decref(x->body);
        return NULL;
    }
    int rc = ctx_create(sb, (enum ctx_lang)x->lang, "/workspace", NULL, true, &c, err, sizeof err);
    if (rc) {
        json_decref(x->body);
        api_context_start_error(req, rc, err);
        return NULL;
    }
    return c;
}

/* Start the run on c and make req follow it (the body is freed here). */
static void start_run(struct app *app, http_req *req, sandbox *sb, struct context *c,
                      const struct exec_req *x)
{
    /* A queued run holds its request (the raw body, kept by http until the answer, and the
     * parsed tree): charged, so that queueing runs cannot fill the daemon either. */
    size_t held = 2 * req->body.len + 4096;
    if (budget_charge(sb->budget, held)) {
        json_decref(x->body);
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "the run's request (%zu bytes) does not "
                           "fit in what is left of sandbox '%s''s buffer budget "
                           "(--sandbox-buffer-bytes %llu, %llu bytes held); wait for queued "
                           "runs and unread answers",
                           req->body.len, sb->id, (unsigned long long)budget_cap(sb->budget),
                           (unsigned long long)budget_used(sb->budget));
        return;
    }
    char err[256];
    execution *e = NULL;
    int rc = exe_start(sb, c, json_object_get(x->body, "code"), json_object_get(x->body, "envVars"),
                       x->timeout, held, &e, err, sizeof err);
    json_decref(x->body); /* the execution holds what it needs */
    if (rc) {
        budget_release(sb->budget, held);
        if (rc == EXE_FULL)
            http_respond_error(req, 429, "LIMIT_REACHED", "%s", err);
        else
            http_respond_error(req, 500, "INTERNAL_ERROR", "%s", err);
        return;
    }
    if (api_exe_attach(app, req, e, req->want_sse, 0))
        exe_cancel(e, "the request could not follow its run");
}

void api_execute(struct app *app, http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    struct exec_req x;
    if (parse_request(app, req, sb, &x))
        return;
    struct context *c = pick_context(app, req, sb, &x);
    if (!c)
        return;
    struct ctx_info i;
    ctx_get_info(c, &i);
    if (i.state == CTX_DEAD && ctx_revive(c) != 0) {
        http_respond_error(req, 409, "CONFLICT",
                           "context '%s' is dead (its process could not "
                           "start); delete it or restart it",
                           i.id);
        json_decref(x.body);
        return;
    }
    start_run(app, req, sb, c, &x);
}
