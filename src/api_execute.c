/*
 * api_execute.c — POST /v1/sandboxes/{sid}/execute (API.md "Running code"): validate the
 * request, find or make its context, queue the run on it (context.h) and answer with what
 * the run produces, through one of two sinks:
 *   - SSE (Accept: text/event-stream): stdout/stderr/result events as the context writes
 *     them, then error (when there is one) and end. A client that reads slowly stops the
 *     reading of the context (back-pressure), so the context blocks on its own writes;
 *     nothing is dropped.
 *   - plain JSON: one document at the end, each output stream kept up to
 *     --max-output-bytes (then "truncated": true and "truncatedBy").
 * A client that goes away does not stop the run (the context's state stays consistent);
 * its output is discarded and the context is read again.
 *
 * Memory: everything a run makes the daemon hold is charged to its sandbox's budget
 * (budget.h): its request while it is queued (the raw body, kept by http until the answer,
 * and the parsed tree), and for a plain run its kept output (counted as jansson will escape
 * it) and results, until the run is answered; the answer is built once and handed to http
 * without a copy, charged while it waits for the client. A streamed run's events are
 * charged while queued (http_req_set_budget); the context is read in pieces sized to what
 * is left of the budget, and when nothing fits it is not read until bytes are released.
 */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "context.h"
#include "escape.h"
#include "api_fields.h"
#include "api_json.h"
#include "jsonx.h"
#include "sandbox.h"
#include "sse.h"

/* One run's answer in the making; freed by the sink's end. */
struct api_run {
    http_req *req;
    struct ctx_run *run; /* the engine's, until the sink's end */
    const struct config *cfg;
    json_t *body; /* the request body: owns code and envVars */
    sse sse;
    json_t *results, *out_list, *err_list;
    size_t out_bytes, err_bytes;
    bool truncated;
    const char *truncated_by; /* the setting that cut the output */
    budget *bg;               /* the sandbox's budget; one reference */
    size_t charged;           /* the request, kept output and results charged to bg */
    budget_waiter bw;         /* streamed: queued while reading waits for room in bg */
    esc_carry c_out, c_err;
};

static void run_free(struct api_run *a)
{
    budget_cancel(a->bg, &a->bw);
    budget_release(a->bg, a->charged);
    budget_unref(a->bg);
    json_decref(a->body);
    json_decref(a->results);
    json_decref(a->out_list);
    json_decref(a->err_list);
    free(a);
}

/* ---- the streaming sink ---- */

/* A streamed run whose sandbox budget cannot take another read's events (a 64 KiB read
 * escapes to at most 6 times as much) is not read until bytes are released, except for
 * a small read when its client has taken everything queued (a stream that is read never
 * starves because of the sandbox's streams that are not). */
#define STREAM_RESERVE (65536 * 6 + 512)
#define STREAM_FLOOR 4096

static int stream_output(void *arg, bool is_err, const char *data, size_t n)
{
    struct api_run *a = arg;
    int rc = sse_event_text(&a->sse, is_err ? "stderr" : "stdout", is_err ? &a->c_err : &a->c_out,
                            data, n, false);
    return rc == 1;
}

static int stream_result(void *arg, json_t *result, size_t msg_bytes)
{
    struct api_run *a = arg;
    (void)msg_bytes;
    char *s = json_dumps(result, JSON_COMPACT);
    int pause = s && sse_event(&a->sse, "result", s, strlen(s)) == 1;
    free(s);
    return pause;
}

/* How much the next read may take: the whole chunk, STREAM_FLOOR, or 0 (wait). */
static size_t stream_allowance(void *arg, size_t chunk)
{
    struct api_run *a = arg;
    if (a->req->aborted || budget_room(a->bg) >= STREAM_RESERVE)
        return chunk;
    return http_queued(a->req) == 0 ? STREAM_FLOOR : 0;
}

static void budget_woken(budget_waiter *w)
{
    struct api_run *a = w->arg;
    ctx_run_resume(a->run);
}

/* The engine stopped reading: go on when the budget has room, or when the client has
 * taken everything queued (on_drain; stream_allowance decides then). */
static void stream_wait_room(void *arg)
{
    struct api_run *a = arg;
    a->bw.need = STREAM_RESERVE;
    a->bw.cb = budget_woken;
    a->bw.arg = a;
    budget_wait(a->bg, &a->bw);
    a->req->paused = true; /* so that on_drain says when the client took it all */
}

static void stream_end(void *arg, const struct ctx_run_end *e)
{
    struct api_run *a = arg;
    a->req->on_abort = NULL;
    a->req->on_drain = NULL;
    esc_carry *cs[2] = { &a->c_out, &a->c_err };
    const char *names[2] = { "stdout", "stderr" };
    for (int i = 0; i < 2; i++)
        sse_event_text(&a->sse, names[i], cs[i], "", 0, true);
    if (e->error) {
        char *s = json_dumps(e->error, JSON_COMPACT);
        if (s)
            sse_event(&a->sse, "error", s, strlen(s));
        free(s);
    }
    buf b;
    buf_init(&b, 4096);
    buf_printf(&b, "{\"executionCount\":%d,\"durationMs\":%.3f,\"statePreserved\":%s}",
               e->exec_count, e->duration_ms, e->state_preserved ? "true" : "false");
    sse_event(&a->sse, "end", b.data, b.len);
    buf_free(&b);
    sse_end(&a->sse);
    run_free(a);
}

static const struct ctx_sink STREAM_SINK = {
    .output = stream_output,
    .result = stream_result,
    .allowance = stream_allowance,
    .wait_room = stream_wait_room,
    .end = stream_end,
};

/* ---- the plain sink ---- */

/* Bytes the JSON string of s takes once jansson escapes it (6 for most control bytes). */
static size_t json_cost(const char *s, size_t n)
{
    size_t cost = n;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\' || ch == '\n' || ch == '\t' || ch == '\r' || ch == '\b' ||
            ch == '\f')
            cost += 1;
        else if (ch < 0x20)
            cost += 5;
    }
    return cost;
}

/* A plain run's output was cut; the first reason is kept, the budget's wins. */
static void run_truncate(struct api_run *a, const char *why)
{
    a->truncated = true;
    if (!a->truncated_by || strcmp(why, "sandbox-buffer-bytes") == 0)
        a->truncated_by = why;
}

static int plain_output(void *arg, bool is_err, const char *data, size_t n)
{
    struct api_run *a = arg;
    uint64_t max = a->cfg->max_output_bytes;
    size_t *used = is_err ? &a->err_bytes : &a->out_bytes;
    size_t room = max - *used;
    if (n > room) {
        n = room;
        run_truncate(a, "max-output-bytes");
    }
    if (n == 0)
        return 0;
    buf b;
    buf_init(&b, n * 3 + 16);
    esc_utf8(&b, is_err ? &a->c_err : &a->c_out, data, n, false);
    /* charged as it is held and as the answer will hold it: escaped, plus jansson's own */
    size_t cost = json_cost(b.data, b.len) + 64;
    if (b.len && budget_charge(a->bg, cost) == 0) {
        a->charged += cost;
        json_array_append_new(is_err ? a->err_list : a->out_list, json_stringn(b.data, b.len));
    } else if (b.len) {
        run_truncate(a, "sandbox-buffer-bytes");
        *used = max; /* cut here: nothing later of this stream */
    }
    *used += n;
    if (*used > max)
        *used = max;
    buf_free(&b);
    return 0;
}

static int plain_result(void *arg, json_t *result, size_t msg_bytes)
{
    struct api_run *a = arg;
    if (budget_charge(a->bg, msg_bytes) == 0) {
        a->charged += msg_bytes; /* the message's size bounds the result's JSON */
        json_array_append(a->results, result);
    } else {
        run_truncate(a, "sandbox-buffer-bytes");
    }
    return 0;
}

static void plain_end(void *arg, const struct ctx_run_end *e)
{
    struct api_run *a = arg;
    a->req->on_abort = NULL;
    a->req->on_drain = NULL;
    json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:O, s:{s:O, s:O}, s:O, s:b, s:b}", "id", e->run_id,
                          "contextId", e->context_id, "code",
                          json_string_value(json_object_get(a->body, "code")), "executionCount",
                          e->exec_count, "results", a->results, "logs", "stdout", a->out_list,
                          "stderr", a->err_list, "error", e->error ? e->error : json_null(),
                          "statePreserved", e->state_preserved, "truncated", a->truncated);
    if (j && a->truncated_by)
        json_object_set_new(j, "truncatedBy", json_string(a->truncated_by));
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    /* durationMs spliced in by hand (jansson would print 17 significant digits),
     * in the dumped string itself: the answer exists once, handed over to http */
    char hdr[80], tail[64];
    snprintf(hdr, sizeof hdr, "X-Context-Id: %s\r\n", e->context_id);
    int tn = snprintf(tail, sizeof tail, ",\"durationMs\":%.3f}", e->duration_ms);
    size_t sl = s ? strlen(s) : 0;
    char *grown = s ? realloc(s, sl + (size_t)tn + 1) : NULL;
    if (grown) {
        memcpy(grown + sl - 1, tail, (size_t)tn + 1); /* over the closing brace */
        http_respond_take(a->req, 200, "application/json", grown, sl - 1 + (size_t)tn, hdr);
    } else {
        free(s);
        http_respond_error(a->req, 500, "INTERNAL_ERROR", "cannot encode the result");
    }
    run_free(a);
}

static const struct ctx_sink PLAIN_SINK = {
    .output = plain_output,
    .result = plain_result,
    .end = plain_end,
};

/* ---- the client ---- */

static void run_abort(http_req *req, void *arg)
{
    struct api_run *a = arg;
    (void)req;
    /* The client is gone. The run goes on (the context's state should stay consistent),
     * but its output is no longer produced for anyone: resume reading so it cannot block. */
    budget_cancel(a->bg, &a->bw);
    if (ctx_run_paused(a->run))
        ctx_run_resume(a->run);
}

static void run_drain(http_req *req, void *arg)
{
    struct api_run *a = arg;
    (void)req;
    ctx_run_resume(a->run); /* stream_allowance decides what the budget allows */
}

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

/* Queue the run on c and make req its answer (the body is the run's from now on). */
static void start_run(struct app *app, http_req *req, sandbox *sb, struct context *c,
                      const struct exec_req *x)
{
    struct api_run *a = calloc(1, sizeof *a);
    if (!a) {
        json_decref(x->body);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    /* A queued run holds its request (the raw body, kept by http until the answer, and the
     * parsed tree): charged, so that queueing runs cannot fill the daemon either. */
    size_t held = 2 * req->body.len + 4096;
    if (budget_charge(sb->budget, held)) {
        free(a);
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
    a->req = req;
    a->cfg = app->cfg;
    a->bg = budget_ref(sb->budget);
    a->charged = held;
    a->body = x->body;
    a->results = json_array();
    a->out_list = json_array();
    a->err_list = json_array();
    a->run = ctx_run_queue(c, json_object_get(x->body, "code"), json_object_get(x->body, "envVars"),
                           x->timeout, req->want_sse ? &STREAM_SINK : &PLAIN_SINK, a);
    if (!a->run) {
        run_free(a);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    http_req_set_budget(req, a->bg);
    req->on_abort = run_abort;
    req->on_drain = run_drain;
    req->cb_arg = a;
    if (req->want_sse) {
        struct ctx_info i;
        char hdr[80];
        ctx_get_info(c, &i);
        snprintf(hdr, sizeof hdr, "X-Context-Id: %s\r\n", i.id);
        sse_begin_with(&a->sse, req, hdr);
    }
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
