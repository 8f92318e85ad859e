/*
 * api_mcp.c — the MCP Streamable HTTP transport (protocol revision 2025-06-18, also
 * answering 2025-03-26 clients): POST /mcp carries one JSON-RPC 2.0 message per request,
 * DELETE /mcp ends a session; GET /mcp is not routed, so it gets 405 as the revision
 * allows a server that offers no server-initiated stream. docs/mcp.md has the details.
 *
 * A request gets its response as application/json, or, for tools/call when the client
 * accepts text/event-stream, as an SSE stream of one "message" event (the response), so
 * a long run keeps its connection busy rather than idle. Notifications and responses
 * from the client get 202 with no body. `initialize` makes a session (Mcp-Session-Id on
 * its response); every later message must carry that header: without it 400, with an
 * id the daemon does not know (never made, ended or expired) 404, as the transport says,
 * so the client starts a new session. Sessions are capped (--mcp-max-sessions) and end
 * after --mcp-session-idle-ms without a request (checked at every request: expiry costs
 * nothing while nobody calls).
 *
 * Hostile input: the body is buffered by http.c (--max-body-bytes); anything that is not
 * one JSON-RPC object gets its exact JSON-RPC error (parse error, invalid request),
 * unknown methods -32601, bad params -32602. Nothing here trusts an id or a field.
 */
#include "api_mcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "context.h"
#include "log.h"
#include "sandbox.h"
#include "sse.h"
#include "stamp.h"

/* The revisions understood, newest first: a client asking for another gets the first. */
static const char *const VERSIONS[] = { "2025-06-18", "2025-03-26" };

#define MCP_MAX_DEFAULTS 16 /* default contexts one session keeps (sandbox x language) */

struct mcp_default {
    char sandbox[64];
    int lang;
    char ctx_id[40];
};

struct mcp_session {
    struct mcp_session *next;
    char id[40];
    char version[16];
    uint64_t last_ms;
    struct mcp_default defs[MCP_MAX_DEFAULTS];
    size_t ndefs;
};

static struct mcp_session *sessions;
static size_t nsessions;

/* A tools/call in flight: answered once (call_finish), listed meanwhile so that a
 * notifications/cancelled of its session can reach it. */
struct mcp_call {
    struct mcp_call *next;
    http_req *req;
    json_t *id;
    char session[40];
    bool sse; /* the answer streams: stream was begun when the call came */
    sse stream;
    json_t *progress_token; /* params._meta.progressToken, or NULL */
    int progress;
    void (*cancel)(void *arg); /* set by the tool while something runs */
    void *cancel_arg;
};

static struct mcp_call *calls;

/* Progress notifications are advisory: while this much is queued for the client and not
 * taken, they are skipped rather than buffered (the result carries all output). */
#define PROGRESS_QUEUE_CAP 262144

/* ---- sessions ---- */

static struct mcp_session *session_find(const char *id)
{
    for (struct mcp_session *s = sessions; s; s = s->next)
        if (id[0] && strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

/* Unlink s, delete the contexts it made, free it. */
static void session_end(struct mcp_session *s, const char *why)
{
    for (struct mcp_session **pp = &sessions; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    for (size_t i = 0; i < s->ndefs; i++) {
        sandbox *sb = sbx_find(s->defs[i].sandbox);
        struct context *c = sb ? ctx_find(sb, s->defs[i].ctx_id) : NULL;
        if (c)
            ctx_delete(c, why);
    }
    log_info("mcp session %s ended: %s", s->id, why);
    free(s);
    nsessions--;
}

static void sessions_expire(uint64_t idle_ms)
{
    uint64_t now = stamp_now_ms();
    struct mcp_session *s = sessions, *next;
    for (; s; s = next) {
        next = s->next;
        if (now - s->last_ms > idle_ms)
            session_end(s, "the MCP session expired (--mcp-session-idle-ms)");
    }
}

const char *mcp_session_context(const char *sid, const char *sbx_id, int lang)
{
    struct mcp_session *s = session_find(sid);
    for (size_t i = 0; s && i < s->ndefs; i++)
        if (s->defs[i].lang == lang && strcmp(s->defs[i].sandbox, sbx_id) == 0)
            return s->defs[i].ctx_id;
    return NULL;
}

int mcp_session_remember(const char *sid, const char *sbx_id, int lang, const char *ctx_id)
{
    struct mcp_session *s = session_find(sid);
    if (!s)
        return -ENOENT;
    struct mcp_default *d = NULL;
    for (size_t i = 0; i < s->ndefs && !d; i++)
        if (s->defs[i].lang == lang && strcmp(s->defs[i].sandbox, sbx_id) == 0)
            d = &s->defs[i];
    if (!d && s->ndefs == MCP_MAX_DEFAULTS)
        return -ENOSPC;
    if (!d)
        d = &s->defs[s->ndefs++];
    snprintf(d->sandbox, sizeof d->sandbox, "%s", sbx_id);
    snprintf(d->ctx_id, sizeof d->ctx_id, "%s", ctx_id);
    d->lang = lang;
    return 0;
}

/* ---- answers ---- */

/* Send one JSON-RPC message (j, handed over) as the JSON answer to req. */
static void send_message(http_req *req, int status, json_t *j, const char *sid)
{
    char hdr[128] = "";
    if (sid && sid[0])
        snprintf(hdr, sizeof hdr, "Mcp-Session-Id: %s\r\n", sid);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (s)
        http_respond_take(req, status, "application/json", s, strlen(s), hdr);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
}

static json_t *error_message(const json_t *id, int code, const char *msg)
{
    return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                     "error", "code", code, "message", msg);
}

static void rpc_error(http_req *req, int status, const json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void rpc_error(http_req *req, int status, const json_t *id, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    send_message(req, status, error_message(id, code, msg), NULL);
}

static void rpc_result(http_req *req, const json_t *id, json_t *result, const char *sid)
{
    send_message(req, 200,
                 json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result), sid);
}

const char *mcp_call_session(const mcp_call *call)
{
    return call->session;
}

/* Send m (handed over) as the call's answer, unlist and free the call. */
static void call_finish(mcp_call *call, json_t *m)
{
    for (struct mcp_call **pp = &calls; *pp; pp = &(*pp)->next)
        if (*pp == call) {
            *pp = call->next;
            break;
        }
    struct mcp_session *s = session_find(call->session);
    if (s)
        s->last_ms = stamp_now_ms();
    call->req->on_abort = NULL;
    char *txt = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (!call->sse && txt)
        http_respond_take(call->req, 200, "application/json", txt, strlen(txt), NULL);
    else if (!call->sse)
        http_respond_error(call->req, 500, "INTERNAL_ERROR", "out of memory");
    if (call->sse) {
        if (txt)
            sse_event(&call->stream, "message", txt, strlen(txt));
        free(txt);
        sse_end(&call->stream);
    }
    json_decref(call->id);
    json_decref(call->progress_token);
    free(call);
}

void mcp_call_done(mcp_call *call, json_t *result)
{
    call_finish(call,
                json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", call->id, "result", result));
}

void mcp_call_fail(mcp_call *call, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    call_finish(call, error_message(call->id, code, msg));
}

void mcp_call_set_budget(mcp_call *call, struct budget *bg)
{
    http_req_set_budget(call->req, bg);
}

void mcp_call_on_cancel(mcp_call *call, void (*fn)(void *arg), void *arg)
{
    call->cancel = fn;
    call->cancel_arg = arg;
}

void mcp_call_progress(mcp_call *call, const char *text)
{
    if (!call->sse || !call->progress_token || call->req->aborted ||
        http_queued(call->req) > PROGRESS_QUEUE_CAP)
        return;
    json_t *m = json_pack("{s:s, s:s, s:{s:O, s:i, s:s}}", "jsonrpc", "2.0", "method",
                          "notifications/progress", "params", "progressToken", call->progress_token,
                          "progress", ++call->progress, "message", text);
    char *txt = m ? json_dumps(m, JSON_COMPACT) : NULL;
    json_decref(m);
    if (txt)
        sse_event(&call->stream, "message", txt, strlen(txt));
    free(txt);
}

/* The client went away: stop what the call runs (its answer will be discarded). */
static void call_aborted(http_req *req, void *arg)
{
    (void)req;
    mcp_call *call = arg;
    if (call->cancel)
        call->cancel(call->cancel_arg);
}

/* notifications/cancelled {"requestId"}: cancel that call of session sid, if in flight. */
static void cancel_request(const char *sid, const json_t *params)
{
    const json_t *rid = json_object_get(params, "requestId");
    for (struct mcp_call *c = calls; c && rid; c = c->next)
        if (strcmp(c->session, sid) == 0 && json_equal(c->id, rid) && c->cancel) {
            c->cancel(c->cancel_arg);
            return;
        }
}

/* ---- methods ---- */

static const char *negotiate(const char *asked)
{
    for (size_t i = 0; i < sizeof VERSIONS / sizeof VERSIONS[0]; i++)
        if (strcmp(asked, VERSIONS[i]) == 0)
            return VERSIONS[i];
    return VERSIONS[0];
}

static void do_initialize(struct app *app, http_req *req, const json_t *id, const json_t *params)
{
    const json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_object(params) || !json_is_string(pv)) {
        rpc_error(req, 200, id, MCP_INVALID_PARAMS,
                  "initialize needs params {\"protocolVersion\": string, \"capabilities\", "
                  "\"clientInfo\"}");
        return;
    }
    if (nsessions >= app->cfg->mcp_max_sessions) {
        rpc_error(req, 429, id, MCP_SERVER_LIMIT,
                  "too many MCP sessions (--mcp-max-sessions %llu); end one with DELETE /mcp",
                  (unsigned long long)app->cfg->mcp_max_sessions);
        return;
    }
    struct mcp_session *s = calloc(1, sizeof *s);
    if (!s || stamp_id(s->id, sizeof s->id, "mcp-")) {
        free(s);
        rpc_error(req, 500, id, MCP_INTERNAL_ERROR, "cannot make a session");
        return;
    }
    snprintf(s->version, sizeof s->version, "%s", negotiate(json_string_value(pv)));
    s->last_ms = stamp_now_ms();
    s->next = sessions;
    sessions = s;
    nsessions++;
    json_t *r = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}, s:s}", "protocolVersion", s->version,
                          "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
                          "sandboxd", "version", SANDBOXD_VERSION, "instructions",
                          "Run code in persistent sandboxed interpreters (run_code), shell "
                          "commands (exec) and work with the sandbox's /workspace files.");
    rpc_result(req, id, r, s->id);
}

/* tools/call: the tools answer (now or later). */
static void do_call(struct app *app, http_req *req, const json_t *id, const json_t *params,
                    const struct mcp_session *s)
{
    mcp_call *call = calloc(1, sizeof *call);
    if (!call) {
        rpc_error(req, 500, id, MCP_INTERNAL_ERROR, "out of memory");
        return;
    }
    call->req = req;
    call->id = json_deep_copy(id);
    snprintf(call->session, sizeof call->session, "%s", s->id);
    const json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (json_is_string(tok) || json_is_integer(tok))
        call->progress_token = json_incref((json_t *)tok);
    call->next = calls;
    calls = call;
    req->on_abort = call_aborted;
    req->cb_arg = call;
    /* streamed: the stream's heartbeats keep a long run's connection alive, and progress
     * notifications can go out before the answer */
    call->sse = req->want_sse && sse_begin(&call->stream, req) >= 0;
    mcp_tools_call(app, params, call);
}

/* A request (it has an id) in session s. */
static void dispatch(struct app *app, http_req *req, const json_t *id, const char *method,
                     const json_t *params, struct mcp_session *s)
{
    if (params && !json_is_object(params) && !json_is_array(params))
        rpc_error(req, 200, id, MCP_INVALID_REQUEST, "'params' must be an object or an array");
    else if (strcmp(method, "ping") == 0)
        rpc_result(req, id, json_object(), NULL);
    else if (strcmp(method, "tools/list") == 0)
        rpc_result(req, id, mcp_tools_list(), NULL);
    else if (strcmp(method, "tools/call") == 0)
        do_call(app, req, id, params, s);
    else
        rpc_error(req, 200, id, MCP_METHOD_NOT_FOUND,
                  "method '%.100s' is not offered (initialize, ping, tools/list, tools/call)",
                  method);
}

/* The session a non-initialize message names; NULL once answered (400 or 404). */
static struct mcp_session *need_session(http_req *req, const json_t *id)
{
    if (!req->mcp_session[0]) {
        rpc_error(req, 400, id, MCP_SERVER_LIMIT,
                  "no Mcp-Session-Id header: send initialize first and then its session id");
        return NULL;
    }
    struct mcp_session *s = session_find(req->mcp_session);
    if (!s) {
        rpc_error(req, 404, id, MCP_SESSION_UNKNOWN,
                  "session '%.64s' not found (ended or expired): initialize a new one",
                  req->mcp_session);
        return NULL;
    }
    if (req->mcp_protocol[0] && strcmp(req->mcp_protocol, VERSIONS[0]) &&
        strcmp(req->mcp_protocol, VERSIONS[1])) {
        rpc_error(req, 400, id, MCP_INVALID_REQUEST,
                  "MCP-Protocol-Version '%.31s' is not supported (2025-06-18, 2025-03-26)",
                  req->mcp_protocol);
        return NULL;
    }
    s->last_ms = stamp_now_ms();
    return s;
}

/* One parsed message m: a request, a notification or a response. */
static void handle(struct app *app, http_req *req, const json_t *m)
{
    const json_t *id = json_object_get(m, "id");
    const json_t *method = json_object_get(m, "method");
    const json_t *ver = json_object_get(m, "jsonrpc");
    bool is_response = !method && (json_object_get(m, "result") || json_object_get(m, "error"));
    if (id && !json_is_string(id) && !json_is_integer(id)) {
        rpc_error(req, 400, NULL, MCP_INVALID_REQUEST, "'id' must be a string or an integer");
    } else if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
        rpc_error(req, 400, id, MCP_INVALID_REQUEST, "'jsonrpc' must be \"2.0\"");
    } else if (!is_response && !json_is_string(method)) {
        rpc_error(req, 400, id, MCP_INVALID_REQUEST, "'method' must be a string");
    } else if (method && strcmp(json_string_value(method), "initialize") == 0) {
        if (!id)
            rpc_error(req, 400, NULL, MCP_INVALID_REQUEST, "initialize must be a request (an id)");
        else
            do_initialize(app, req, id, json_object_get(m, "params"));
    } else {
        struct mcp_session *s = need_session(req, id);
        if (!s)
            return;
        if (!id && strcmp(json_string_value(method), "notifications/cancelled") == 0)
            cancel_request(s->id, json_object_get(m, "params"));
        if (!id || is_response) /* notifications (initialized, cancelled …) and responses */
            http_respond(req, 202, "application/json", NULL, 0, NULL);
        else
            dispatch(app, req, id, json_string_value(method), json_object_get(m, "params"), s);
    }
}

void api_mcp_post(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    sessions_expire(app->cfg->mcp_session_idle_ms);
    json_error_t je;
    json_t *m = json_loadb(req->body.data ? req->body.data : "", req->body.len,
                           JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!m)
        rpc_error(req, 400, NULL, MCP_PARSE_ERROR, "not JSON: %s (line %d)", je.text, je.line);
    else if (json_is_array(m))
        rpc_error(req, 400, NULL, MCP_INVALID_REQUEST,
                  "JSON-RPC batches are not part of MCP 2025-06-18: send one message per POST");
    else if (!json_is_object(m))
        rpc_error(req, 400, NULL, MCP_INVALID_REQUEST, "a JSON-RPC message is a JSON object");
    else
        handle(app, req, m);
    json_decref(m);
}

void api_mcp_delete(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    sessions_expire(app->cfg->mcp_session_idle_ms);
    struct mcp_session *s = need_session(req, NULL);
    if (!s)
        return;
    session_end(s, "the MCP session was ended (DELETE /mcp)");
    http_respond(req, 200, "application/json", "{}", 2, NULL);
}
