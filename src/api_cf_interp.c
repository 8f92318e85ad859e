/*
 * api_cf_interp.c — Cloudflare's interpreter routes: POST/GET /api/contexts,
 * DELETE /api/contexts/{id}, POST /api/execute/code, GET /api/interpreter/health, on the
 * native contexts (context.h), the same ones /v1 sees.
 *
 * A run streams as the code prints: each stdout/stderr chunk and each result is one
 * "data: {"type":…}" event written when the engine delivers it, then an "error" event
 * (ename/evalue/traceback; SyntaxError included) or "execution_complete". Results carry
 * every representation of one display in one event (the client accepts several keys).
 * Differences from Cloudflare's runtime, each the better thing its contract allows:
 * output is streamed rather than sent at the end, "env_vars" apply (to the context, and
 * to one run), a missing "context_id" runs in the sandbox's default context of the
 * language, "timeout_ms" is honoured, and error messages are never empty.
 *
 * Memory: as for /v1 runs (api_execute.c), the request is charged to the sandbox while
 * it is queued, the stream's queued events are charged (http_req_set_budget), and the
 * context is read only while the budget has room or the client has taken everything.
 */
#include "api_cf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "context.h"
#include "escape.h"
#include "jsonx.h"

/* ---- contexts ---- */

static json_t *context_json(const struct context *c)
{
    struct ctx_info i;
    ctx_get_info(c, &i);
    return json_pack("{s:s, s:s, s:s}", "id", i.id, "language", ctx_lang_name(i.lang), "cwd",
                     i.cwd);
}

static void context_ready(struct context *c, bool ok, const char *why, void *arg)
{
    http_req *req = arg;
    if (!ok) {
        cf_error(req, 500, "INTERNAL_ERROR", "the context could not start: %s",
                 why && why[0] ? why : "its process exited");
        return;
    }
    struct ctx_info i;
    ctx_get_info(c, &i);
    cf_ok(req, json_pack("{s:s, s:s, s:s}", "contextId", i.id, "language", ctx_lang_name(i.lang),
                         "cwd", i.cwd));
}

/* 501 with Cloudflare's code when lang cannot run here; true when it can. */
static bool lang_ok(struct app *app, http_req *req, int lang)
{
    api_update_langs(app);
    if (app->langs[lang].available)
        return true;
    cf_error(req, 501, lang == LANG_PYTHON ? "PYTHON_NOT_AVAILABLE" : "JAVASCRIPT_NOT_AVAILABLE",
             "%s", app->langs[lang].reason);
    return false;
}

/* "language" of body (default python): the enum, or -1 once answered. */
static int body_lang(http_req *req, const json_t *body)
{
    char err[JX_ERR];
    const char *s = NULL;
    if (jx_string(body, "language", false, 32, &s, err, sizeof err)) {
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return -1;
    }
    int lang = s ? ctx_parse_lang(s) : LANG_PYTHON;
    if (lang < 0)
        cf_error(req, 400, "VALIDATION_FAILED",
                 "unsupported language '%.32s' (python, python3, javascript, js, node, "
                 "typescript, ts)",
                 s);
    return lang;
}

static void context_create(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)param;
    char err[JX_ERR], cwd[1100];
    json_t *body = cf_body(req, true);
    if (!body)
        return;
    const char *cwd_in = NULL;
    const json_t *env = NULL;
    int lang = body_lang(req, body);
    if (lang < 0) {
        json_decref(body);
        return;
    }
    if (jx_string(body, "cwd", false, 1024, &cwd_in, err, sizeof err) ||
        jx_env_map(body, "env_vars", app->cfg->max_env_vars, &env, err, sizeof err) ||
        sbx_resolve_cwd(cwd_in, cwd, sizeof cwd, err, sizeof err)) {
        json_decref(body);
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    if (!lang_ok(app, req, lang)) {
        json_decref(body);
        return;
    }
    struct context *c;
    int rc = ctx_create(sb, (enum ctx_lang)lang, cwd, env, false, &c, err, sizeof err);
    json_decref(body);
    if (rc)
        cf_start_error(req, rc, err, "context");
    else if (ctx_wait_ready(c, context_ready, req))
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
}

void api_cf_context_create(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, context_create);
}

static void context_list(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)app;
    (void)param;
    json_t *arr = json_array();
    for (struct context *c = ctx_first(sb); c; c = ctx_next(c))
        json_array_insert_new(arr, 0, context_json(c));
    cf_ok(req, json_pack("{s:o}", "contexts", arr));
}

void api_cf_context_list(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, context_list);
}

static void context_delete(struct app *app, http_req *req, sandbox *sb, const char *cid)
{
    (void)app;
    struct context *c = ctx_find(sb, cid);
    if (!c) {
        cf_error(req, 404, "CONTEXT_NOT_FOUND", "Code context '%.64s' not found", cid);
        return;
    }
    ctx_delete(c, "the context was deleted");
    cf_ok(req, json_pack("{s:s}", "contextId", cid));
}

void api_cf_context_delete(struct app *app, http_req *req, const route_params *p)
{
    cf_with_sandbox(app, req, route_param(p, "cid"), context_delete);
}

void api_cf_interp_health(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    cf_ok(req, json_pack("{s:s}", "status", "healthy"));
}

/* ---- runs ---- */

struct cf_run {
    http_req *req;
    struct ctx_run *run;
    json_t *body; /* owns code and env_vars */
    budget *bg;
    size_t charged;
    budget_waiter bw;
    esc_carry carry[2];
};

static void run_free(struct cf_run *a)
{
    budget_cancel(a->bg, &a->bw);
    budget_release(a->bg, a->charged);
    budget_unref(a->bg);
    json_decref(a->body);
    free(a);
}

/* As in api_execute.c: a read's events escape to at most 6 times its bytes. */
#define STREAM_RESERVE (65536 * 6 + 512)
#define STREAM_FLOOR 4096

static int run_output(void *arg, bool is_err, const char *data, size_t n)
{
    struct cf_run *a = arg;
    buf b;
    buf_init(&b, n + 16);
    int rc = esc_utf8(&b, &a->carry[is_err], data, n, false);
    int pause = 0;
    if (!rc && b.len) /* empty text is dropped by the client anyway */
        pause = cf_sse_send(a->req, is_err ? "stderr" : "stdout",
                            json_pack("{s:s%}", "text", b.data, b.len)) == 1;
    buf_free(&b);
    return pause;
}

/* The native result's representations, in the client's formats() order. */
static const char *const RESULT_KEYS[] = {
    "text",     "html",       "png",  "jpeg",  "svg",  "latex",
    "markdown", "javascript", "json", "chart", "data",
};

static int run_result(void *arg, json_t *result, size_t msg_bytes)
{
    struct cf_run *a = arg;
    (void)msg_bytes;
    json_t *ev = json_object();
    for (size_t i = 0; i < sizeof RESULT_KEYS / sizeof RESULT_KEYS[0]; i++) {
        json_t *v = json_object_get(result, RESULT_KEYS[i]);
        if (v && !json_is_null(v))
            json_object_set(ev, RESULT_KEYS[i], v);
    }
    json_object_set_new(ev, "metadata", json_object());
    return cf_sse_send(a->req, "result", ev) == 1;
}

static size_t run_allowance(void *arg, size_t chunk)
{
    struct cf_run *a = arg;
    if (a->req->aborted || budget_room(a->bg) >= STREAM_RESERVE)
        return chunk;
    return http_queued(a->req) == 0 ? STREAM_FLOOR : 0;
}

static void budget_woken(budget_waiter *w)
{
    struct cf_run *a = w->arg;
    ctx_run_resume(a->run);
}

static void run_wait_room(void *arg)
{
    struct cf_run *a = arg;
    a->bw.need = STREAM_RESERVE;
    a->bw.cb = budget_woken;
    a->bw.arg = a;
    budget_wait(a->bg, &a->bw);
    a->req->paused = true;
}

/* The native error as Cloudflare's: ename, evalue (never empty), traceback lines. */
static json_t *error_event(const json_t *e)
{
    const char *name = json_string_value(json_object_get(e, "name"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    const json_t *tb = json_object_get(e, "traceback");
    if (!name || !name[0])
        name = "Error";
    if (!msg || !msg[0])
        msg = name;
    return json_pack("{s:s, s:s, s:O}", "ename", name, "evalue", msg, "traceback",
                     json_is_array(tb) ? tb : json_array());
}

static void run_end(void *arg, const struct ctx_run_end *e)
{
    struct cf_run *a = arg;
    a->req->on_abort = NULL;
    a->req->on_drain = NULL;
    for (int i = 0; i < 2; i++)
        run_output(a, i == 1, "", 0); /* what waits in a carry */
    if (e->error)
        cf_sse_finish(a->req, "error", error_event(e->error));
    else
        cf_sse_finish(a->req, "execution_complete",
                      json_pack("{s:i}", "execution_count", e->exec_count));
    run_free(a);
}

static const struct ctx_sink CF_SINK = {
    .output = run_output,
    .result = run_result,
    .allowance = run_allowance,
    .wait_room = run_wait_room,
    .end = run_end,
};

static void run_abort(http_req *req, void *arg)
{
    struct cf_run *a = arg;
    (void)req;
    budget_cancel(a->bg, &a->bw);
    if (ctx_run_paused(a->run))
        ctx_run_resume(a->run);
}

static void run_drain(http_req *req, void *arg)
{
    struct cf_run *a = arg;
    (void)req;
    ctx_run_resume(a->run);
}

/* The context a run goes to: the one named, else the sandbox's default one of lang (made
 * now when there is none). NULL once answered. */
static struct context *run_context(struct app *app, http_req *req, sandbox *sb, const char *cid,
                                   int lang)
{
    char err[JX_ERR];
    struct context *c;
    if (cid) {
        c = ctx_find(sb, cid);
        if (!c)
            cf_error(req, 404, "CONTEXT_NOT_FOUND", "Context %.64s not found", cid);
        return c;
    }
    c = ctx_find_default(sb, (enum ctx_lang)lang);
    if (c || !lang_ok(app, req, lang))
        return c;
    int rc = ctx_create(sb, (enum ctx_lang)lang, "/workspace", NULL, true, &c, err, sizeof err);
    if (rc) {
        cf_start_error(req, rc, err, "context");
        return NULL;
    }
    return c;
}

/* Parse the body: 0 with the fields set, or -1 once answered (the body is freed). */
static int run_parse(struct app *app, http_req *req, const sandbox *sb, json_t *body,
                     const char **cid, int *lang, uint64_t *timeout)
{
    char err[JX_ERR];
    const char *code;
    const json_t *env;
    bool has_t = false;
    *cid = NULL;
    *timeout = sb->limits.timeout_ms;
    if (jx_string(body, "code", true, app->cfg->max_code_bytes, &code, err, sizeof err) ||
        jx_string(body, "context_id", false, 64, cid, err, sizeof err) ||
        jx_env_map(body, "env_vars", app->cfg->max_env_vars, &env, err, sizeof err) ||
        jx_uint(body, "timeout_ms", 1, app->cfg->max_timeout_ms, &has_t, timeout, err,
                sizeof err)) {
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        json_decref(body);
        return -1;
    }
    *lang = body_lang(req, body);
    if (*lang < 0) {
        json_decref(body);
        return -1;
    }
    return 0;
}

static void execute_code(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)param;
    json_t *body = cf_body(req, false);
    const char *cid;
    int lang;
    uint64_t timeout;
    if (!body || run_parse(app, req, sb, body, &cid, &lang, &timeout))
        return;
    struct context *c = run_context(app, req, sb, cid, lang);
    struct ctx_info i;
    if (c)
        ctx_get_info(c, &i);
    if (c && i.state == CTX_DEAD) {
        cf_error(req, 500, "INTERNAL_ERROR",
                 "Context executor has terminated. Please delete and recreate the context.");
        c = NULL;
    }
    size_t held = 2 * req->body.len + 4096;
    if (c && budget_charge(sb->budget, held)) {
        cf_error(req, 429, "LIMIT_REACHED",
                 "the run's request does not fit in what is left of sandbox '%s''s buffer "
                 "budget (--sandbox-buffer-bytes)",
                 sb->id);
        c = NULL;
    }
    struct cf_run *a = c ? calloc(1, sizeof *a) : NULL;
    if (!a) {
        if (c) {
            budget_release(sb->budget, held);
            cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        }
        json_decref(body);
        return;
    }
    *a = (struct cf_run){ .req = req, .body = body, .bg = budget_ref(sb->budget), .charged = held };
    a->run = ctx_run_queue(c, json_object_get(body, "code"), json_object_get(body, "env_vars"),
                           timeout, &CF_SINK, a);
    if (!a->run) {
        run_free(a);
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    http_req_set_budget(req, a->bg);
    req->on_abort = run_abort;
    req->on_drain = run_drain;
    req->cb_arg = a;
    cf_sse_begin(req);
}

void api_cf_execute_code(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, execute_code);
}
