/*
 * api_e2b_interp.c — E2B's code-interpreter routes (docs/compat.md "E2B"): POST /execute
 * as an NDJSON stream, and the contexts (POST/GET /contexts, POST /contexts/{cid}/restart,
 * DELETE /contexts/{cid}), mapped onto the same engine calls as /v1 (context.h).
 *
 * POST /execute answers 200 as soon as the run is queued and then writes one JSON object
 * per line, each as the context produces it: stdout/stderr {"text","timestamp"}, one
 * "result" per display with all its MIME keys ("text" with one pair of matching quotes
 * removed, "is_main_result", other MIME types as top-level keys), at most one "error"
 * {"name","value","traceback": one string}, then "number_of_executions" and
 * "end_of_execution" (always last). Nothing but JSON lines: the SDK parses every line.
 * A client that goes away interrupts the run (SIGINT, as /v1's interrupt: the context's
 * state is kept); a run still queued behind another ends without running.
 * Back-pressure and memory are /v1's: queued lines are charged to the sandbox's budget
 * and a slow reader stops the reading of the context, nothing is dropped.
 */
#include "api_e2b.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "budget.h"
#include "context.h"
#include "escape.h"
#include "jsonx.h"
#include "stamp.h"

struct e2b_run {
    http_req *req;
    struct ctx_run *run;
    json_t *body;
    budget *bg;
    size_t charged;
    budget_waiter bw;
    esc_carry c_out, c_err;
    /* Lines made during one turn of the loop go out in one write (a result and the end
     * of a short run usually arrive together): pend, charged to bg, is flushed by check
     * after the turn's I/O, or at once past PEND_FLUSH bytes. */
    buf pend;
    uv_check_t check;
    bool pause_next; /* a flush asked to pause: the engine hears it at the next output */
};

#define PEND_FLUSH 65536

static void run_closed(uv_handle_t *h)
{
    free(h->data);
}

static void run_free(struct e2b_run *a)
{
    budget_cancel(a->bg, &a->bw);
    buf_free(&a->pend);
    budget_release(a->bg, a->charged);
    budget_unref(a->bg);
    json_decref(a->body);
    uv_close((uv_handle_t *)&a->check, run_closed);
}

/* Write what is pending; 1 when the client asks the producer to pause. */
static int flush(struct e2b_run *a)
{
    uv_check_stop(&a->check);
    if (!a->pend.len)
        return 0;
    int rc = http_stream_write(a->req, a->pend.data, a->pend.len);
    buf_reset(&a->pend);
    return rc == 1;
}

static void check_cb(uv_check_t *h)
{
    struct e2b_run *a = h->data;
    if (flush(a))
        a->pause_next = true;
}

/* Queue one line (b, freed here): 1 when the engine should pause. A line that does not
 * fit in pend (past PEND_FLUSH, or the budget refuses it) goes out at once after it. */
static int write_line(struct e2b_run *a, buf *b)
{
    int pause = buf_append(b, "\n", 1);
    if (!pause && a->pend.len + b->len <= PEND_FLUSH && !buf_append(&a->pend, b->data, b->len)) {
        uv_check_start(&a->check, check_cb);
        pause = a->pause_next;
        a->pause_next = false;
    } else {
        pause = flush(a);
        pause |= http_stream_write(a->req, b->data, b->len) == 1;
    }
    buf_free(b);
    return pause;
}

static int write_json(struct e2b_run *a, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s)
        return 0;
    buf b;
    buf_init(&b, strlen(s) + 2);
    buf_puts(&b, s);
    free(s);
    return write_line(a, &b);
}

static int text_line(struct e2b_run *a, bool is_err, const char *data, size_t n, bool final)
{
    buf t;
    buf_init(&t, n * 6 + 16);
    esc_json(&t, is_err ? &a->c_err : &a->c_out, data, n, final);
    int pause = 0;
    if (t.len) {
        char ts[40];
        stamp_iso8601(stamp_now_ms(), ts, sizeof ts);
        buf b;
        buf_init(&b, t.len + 96);
        buf_printf(&b, "{\"type\":\"%s\",\"text\":\"", is_err ? "stderr" : "stdout");
        buf_append(&b, t.data, t.len);
        buf_printf(&b, "\",\"timestamp\":\"%s\"}", ts);
        pause = write_line(a, &b);
    }
    buf_free(&t);
    return pause;
}

static int sink_output(void *arg, bool is_err, const char *data, size_t n)
{
    struct e2b_run *a = arg;
    return text_line(a, is_err, data, n, false);
}

/* text/plain with one pair of matching surrounding quotes removed, as E2B does. */
static json_t *unquoted(const char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && (s[0] == '\'' || s[0] == '"') && s[n - 1] == s[0])
        return json_stringn(s + 1, n - 2);
    return json_string(s);
}

/* A native Result (docs/api.md) as E2B's result line. */
static json_t *e2b_result(json_t *r)
{
    json_t *o = json_pack("{s:s}", "type", "result");
    const char *k;
    json_t *v;
    json_object_foreach(r, k, v)
    {
        if (strcmp(k, "isMainResult") == 0)
            json_object_set(o, "is_main_result", v);
        else if (strcmp(k, "text") == 0 && json_is_string(v))
            json_object_set_new(o, "text", unquoted(json_string_value(v)));
        else if (strcmp(k, "extra") == 0 && json_is_object(v))
            json_object_update_missing(o, v);
        else
            json_object_set(o, k, v);
    }
    if (!json_object_get(o, "is_main_result"))
        json_object_set_new(o, "is_main_result", json_false());
    return o;
}

static int sink_result(void *arg, json_t *result, size_t msg_bytes)
{
    struct e2b_run *a = arg;
    (void)msg_bytes;
    return write_json(a, e2b_result(result));
}

/* As /v1's stream: a read may take a whole chunk while the budget has room for what it
 * can make, a small one when the client has taken everything, else none (wait_room). */
#define STREAM_RESERVE (65536 * 6 + 512)
#define STREAM_FLOOR 4096

static size_t sink_allowance(void *arg, size_t chunk)
{
    struct e2b_run *a = arg;
    if (a->req->aborted || budget_room(a->bg) >= STREAM_RESERVE)
        return chunk;
    return http_queued(a->req) == 0 ? STREAM_FLOOR : 0;
}

static void budget_woken(budget_waiter *w)
{
    struct e2b_run *a = w->arg;
    ctx_run_resume(a->run);
}

static void sink_wait_room(void *arg)
{
    struct e2b_run *a = arg;
    a->bw.need = STREAM_RESERVE;
    a->bw.cb = budget_woken;
    a->bw.arg = a;
    budget_wait(a->bg, &a->bw);
    a->req->paused = true;
}

/* The native error {"name","message","traceback":[…]} as E2B's. */
static json_t *e2b_error(const json_t *e)
{
    const json_t *lines = json_object_get(e, "traceback");
    size_t i, total = 1;
    const json_t *l;
    json_array_foreach(lines, i, l) total += json_string_length(l) + 1;
    buf tb;
    buf_init(&tb, total); /* the whole traceback, however long: it exists already */
    json_array_foreach(lines, i, l)
    {
        if (i)
            buf_append(&tb, "\n", 1);
        buf_puts(&tb, json_string_value(l) ? json_string_value(l) : "");
    }
    json_t *j = json_pack("{s:s, s:O, s:O, s:s%}", "type", "error", "name",
                          json_object_get(e, "name"), "value", json_object_get(e, "message"),
                          "traceback", tb.data ? tb.data : "", tb.len);
    buf_free(&tb);
    return j;
}

static void sink_end(void *arg, const struct ctx_run_end *e)
{
    struct e2b_run *a = arg;
    a->req->on_abort = NULL;
    a->req->on_drain = NULL;
    text_line(a, false, "", 0, true);
    text_line(a, true, "", 0, true);
    if (e->error)
        write_json(a, e2b_error(e->error));
    write_json(a, json_pack("{s:s, s:i}", "type", "number_of_executions", "execution_count",
                            e->exec_count));
    write_json(a, json_pack("{s:s}", "type", "end_of_execution"));
    flush(a);
    http_stream_end(a->req);
    run_free(a);
}

static const struct ctx_sink E2B_SINK = {
    .output = sink_output,
    .result = sink_result,
    .allowance = sink_allowance,
    .wait_room = sink_wait_room,
    .end = sink_end,
};

static void run_abort(http_req *req, void *arg)
{
    struct e2b_run *a = arg;
    (void)req;
    budget_cancel(a->bg, &a->bw);
    ctx_run_interrupt(a->run); /* the state is kept; a queued run never starts */
    if (ctx_run_paused(a->run))
        ctx_run_resume(a->run);
}

static void run_drain(http_req *req, void *arg)
{
    struct e2b_run *a = arg;
    (void)req;
    ctx_run_resume(a->run);
}

/* ---- POST /execute ---- */

/* Drop the fields the client sent as null (the Python SDK does): absent to us. */
static void drop_nulls(json_t *body)
{
    static const char *const FIELDS[] = { "context_id", "language", "env_vars" };
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++)
        if (json_is_null(json_object_get(body, FIELDS[i])))
            json_object_del(body, FIELDS[i]);
}

/* The context of the run, or NULL when the request has been answered. */
static struct context *pick(struct app *app, http_req *req, sandbox *sb, const char *cid, int lang)
{
    char err[JX_ERR];
    struct context *c;
    if (cid) {
        c = ctx_find(sb, cid);
        if (!c)
            http_respond_error(req, 404, "CONTEXT_NOT_FOUND", "Context %s not found", cid);
        return c;
    }
    c = ctx_find_default(sb, (enum ctx_lang)lang);
    if (c || !api_lang_available(app, req, lang))
        return c;
    int rc = ctx_create(sb, (enum ctx_lang)lang, "/workspace", NULL, true, &c, err, sizeof err);
    if (rc) {
        api_context_start_error(req, rc, err);
        return NULL;
    }
    return c;
}

static void start(uv_loop_t *loop, http_req *req, sandbox *sb, struct context *c, json_t *body)
{
    struct e2b_run *a = calloc(1, sizeof *a);
    size_t held = 2 * req->body.len + 4096;
    if (!a || budget_charge(sb->budget, held)) {
        free(a);
        json_decref(body);
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "the run's request does not fit in what is left of sandbox '%s''s "
                           "buffer budget (--sandbox-buffer-bytes)",
                           sb->id);
        return;
    }
    a->req = req;
    a->bg = budget_ref(sb->budget);
    a->charged = held;
    a->body = body;
    buf_init(&a->pend, PEND_FLUSH);
    buf_set_budget(&a->pend, a->bg);
    uv_check_init(loop, &a->check);
    a->check.data = a;
    a->run = ctx_run_queue(c, json_object_get(body, "code"), json_object_get(body, "env_vars"),
                           sb->limits.timeout_ms, &E2B_SINK, a);
    if (!a->run) {
        run_free(a);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    http_req_set_budget(req, a->bg);
    req->on_abort = run_abort;
    req->on_drain = run_drain;
    req->cb_arg = a;
    struct ctx_info i;
    char hdr[80];
    ctx_get_info(c, &i);
    snprintf(hdr, sizeof hdr, "X-Context-Id: %s\r\n", i.id);
    http_stream_begin(req, 200, "application/x-ndjson", hdr);
}

static void execute_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    if (!sb)
        return;
    char err[JX_ERR];
    json_t *body = api_body(req, false);
    if (!body)
        return;
    drop_nulls(body);
    const char *code, *cid = NULL, *lang_s = NULL;
    const json_t *env = NULL;
    int lang = LANG_PYTHON;
    if (jx_string(body, "code", true, app->cfg->max_code_bytes, &code, err, sizeof err) ||
        jx_string(body, "context_id", false, 64, &cid, err, sizeof err) ||
        jx_string(body, "language", false, 32, &lang_s, err, sizeof err) ||
        jx_env_map(body, "env_vars", app->cfg->max_env_vars, &env, err, sizeof err)) {
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
    } else if (cid && lang_s) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "give 'context_id' or 'language', not both");
    } else if (lang_s && (lang = ctx_parse_lang(lang_s)) < 0) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "language '%.32s' is not supported here (python, javascript, "
                           "typescript)",
                           lang_s);
    } else {
        struct context *c = pick(app, req, sb, cid, lang);
        struct ctx_info i;
        if (c)
            ctx_get_info(c, &i);
        if (c && i.state == CTX_DEAD)
            http_respond_error(req, 409, "CONFLICT",
                               "context '%s' is dead (its process could not start); "
                               "delete it or restart it",
                               i.id);
        else if (c) {
            start(app->loop, req, sb, c, body);
            return;
        }
    }
    json_decref(body);
}

void api_e2b_execute(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, execute_in, NULL);
}

/* ---- contexts ---- */

static json_t *e2b_context(const struct context *c)
{
    struct ctx_info i;
    ctx_get_info(c, &i);
    return json_pack("{s:s, s:s, s:s}", "id", i.id, "language", ctx_lang_name(i.lang), "cwd",
                     i.cwd);
}

static void ready(struct context *c, bool ok, const char *why, void *arg)
{
    if (ok)
        api_respond_json(arg, 200, e2b_context(c));
    else
        http_respond_error(arg, 500, "INTERNAL_ERROR", "%s", why ? why : "cannot start");
}

static void create_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    if (!sb)
        return;
    char err[JX_ERR], cwd[1100];
    json_t *body = api_body(req, true);
    if (!body)
        return;
    drop_nulls(body);
    if (json_is_null(json_object_get(body, "cwd")))
        json_object_del(body, "cwd");
    const char *lang_s = "python", *cwd_in = NULL;
    int lang = -1;
    struct context *c = NULL;
    if (jx_string(body, "language", false, 32, &lang_s, err, sizeof err) ||
        jx_string(body, "cwd", false, 1024, &cwd_in, err, sizeof err) ||
        sbx_resolve_cwd(cwd_in, cwd, sizeof cwd, err, sizeof err))
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
    else if ((lang = ctx_parse_lang(lang_s)) < 0)
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "language '%.32s' is not supported here (python, javascript, "
                           "typescript)",
                           lang_s);
    else if (api_lang_available(app, req, lang)) {
        int rc = ctx_create(sb, (enum ctx_lang)lang, cwd, NULL, false, &c, err, sizeof err);
        if (rc)
            api_context_start_error(req, rc, err);
        else if (ctx_wait_ready(c, ready, req))
            http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
    }
    json_decref(body);
}

void api_e2b_context_create(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, create_in, NULL);
}

/* E2B always lists a python and a javascript default context: make them when missing
 * (when the language can run), then list every context of the sandbox. */
static void list_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    if (!sb)
        return;
    static const enum ctx_lang DEFAULTS[] = { LANG_PYTHON, LANG_JAVASCRIPT };
    api_update_langs(app);
    for (size_t k = 0; k < sizeof DEFAULTS / sizeof DEFAULTS[0]; k++) {
        struct context *c = NULL;
        char err[JX_ERR];
        if (app->langs[DEFAULTS[k]].available && !ctx_find_default(sb, DEFAULTS[k]))
            ctx_create(sb, DEFAULTS[k], "/workspace", NULL, true, &c, err, sizeof err);
    }
    json_t *arr = json_array();
    for (struct context *c = ctx_first(sb); c; c = ctx_next(c))
        json_array_append_new(arr, e2b_context(c));
    api_respond_json(req, 200, arr);
}

void api_e2b_context_list(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, list_in, NULL);
}

/* The {cid} of the route in the request's sandbox; 404 "Context <id> not found" when
 * either does not exist (a context cannot exist in a sandbox not made yet). */
static struct context *lookup(http_req *req, const route_params *p)
{
    const char *cid = route_param(p, "cid");
    sandbox *sb = sbx_find(req->sandbox_header[0] ? req->sandbox_header : "default");
    struct context *c = sb ? ctx_find(sb, cid) : NULL;
    if (!c)
        http_respond_error(req, 404, "CONTEXT_NOT_FOUND", "Context %.64s not found", cid);
    return c;
}

void api_e2b_context_restart(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    char err[JX_ERR];
    struct context *c = lookup(req, p);
    if (!c)
        return;
    int rc = ctx_restart(c, err, sizeof err);
    if (rc)
        api_context_start_error(req, rc, err);
    else if (ctx_wait_ready(c, ready, req))
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
}

void api_e2b_context_delete(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (!c)
        return;
    ctx_delete(c, "the context was deleted");
    http_respond(req, 200, "application/json", "{}", 2, NULL);
}
