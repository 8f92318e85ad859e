/*
 * api_mcp.h — the Model Context Protocol server (docs/mcp.md): what its transport
 * (api_mcp.c: POST/DELETE /mcp, JSON-RPC 2.0, sessions) and its tools (api_mcp_tools.c:
 * run_code, exec, files, contexts) say to each other.
 *
 * A tools/call is a mcp_call owned by the transport: the tools answer it exactly once,
 * now or later, with mcp_call_done (a tool result, which may say isError) or
 * mcp_call_fail (a JSON-RPC error: bad params, an unknown tool). The HTTP request behind
 * it stays valid until then (http.h), even when its client went away.
 *
 * A session keeps, per sandbox and language, the id of the context its run_code calls
 * use when they name none, so state persists across calls; the contexts are deleted when
 * the session ends (DELETE /mcp, or --mcp-session-idle-ms without a request).
 */
#ifndef SANDBOXD_API_MCP_H
#define SANDBOXD_API_MCP_H

#include <jansson.h>

#include "api.h"

/* JSON-RPC 2.0 error codes (jsonrpc.org/specification) and the MCP server's own. */
enum {
    MCP_PARSE_ERROR = -32700,
    MCP_INVALID_REQUEST = -32600,
    MCP_METHOD_NOT_FOUND = -32601,
    MCP_INVALID_PARAMS = -32602,
    MCP_INTERNAL_ERROR = -32603,
    MCP_SERVER_LIMIT = -32000,    /* --mcp-max-sessions reached; missing session header */
    MCP_SESSION_UNKNOWN = -32001, /* no such session (never made, ended or expired) */
};

typedef struct mcp_call mcp_call;

/* The session the call came in (its id, copied; valid until the call is answered). */
const char *mcp_call_session(const mcp_call *call);
/* Answer with a tool result (handed over: {"content":[…],"isError"?…}). */
void mcp_call_done(mcp_call *call, json_t *result);
/* Answer with a JSON-RPC error. */
void mcp_call_fail(mcp_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* From now on the call's response bytes queued for the client are charged to bg (the
 * sandbox's budget, budget.h), as /v1's are. */
struct budget;
void mcp_call_set_budget(mcp_call *call, struct budget *bg);
/* While something of the call runs: fn(arg) stops it (the client went away, or sent
 * notifications/cancelled for it); the tool still answers. Cleared by answering. */
void mcp_call_on_cancel(mcp_call *call, void (*fn)(void *arg), void *arg);
/* Send text (UTF-8) as a notifications/progress message before the answer, when the call
 * streams and asked for progress (params._meta.progressToken); else nothing. */
void mcp_call_progress(mcp_call *call, const char *text);

/* The context id the session uses by default in sandbox for lang (enum ctx_lang), or
 * NULL when it has none (or the session is gone). */
const char *mcp_session_context(const char *sid, const char *sbx_id, int lang);
/* Remember ctx_id as that default. 0, -ENOENT (no such session), -ENOSPC (the session's
 * table of defaults is full: the run goes on in a context the session will not delete). */
int mcp_session_remember(const char *sid, const char *sbx_id, int lang, const char *ctx_id);

/* The tools (api_mcp_tools.c). */
json_t *mcp_tools_list(void); /* {"tools":[{"name","description","inputSchema"}…]} */
/* Run tools/call with params {"name","arguments"}; answers call. */
void mcp_tools_call(struct app *app, const json_t *params, mcp_call *call);

/* Handlers (api_mcp.c). */
void api_mcp_post(struct app *app, http_req *req, const route_params *p);
void api_mcp_delete(struct app *app, http_req *req, const route_params *p);

#endif
