/*
 * api.c — the route table and dispatch (see api.h). Authentication happens before any
 * handler runs; a wrong or missing token gets 401 without saying which.
 */
#include "api.h"

#include <stdio.h>
#include <string.h>

#include "api_cf.h"
#include "api_e2b.h"
#include "api_mcp.h"
#include "log.h"
#include "sse.h"

enum {
    ROUTE_PUBLIC = 1,      /* no token needed */
    ROUTE_STREAM_BODY = 2, /* the body streams to the handler (http_server_set_body_hook) */
};

#define H(fn) ((void (*)(void))(fn))

/* One row per route of API.md. */
/* clang-format off */
static const struct route ROUTES[] = {
    { "GET", "/v1/health", H(api_health), ROUTE_PUBLIC },
    { "GET", "/metrics", H(api_metrics), 0 },
    { "GET", "/v1/sandboxes", H(api_sandbox_list), 0 },
    { "POST", "/v1/sandboxes", H(api_sandbox_post), 0 },
    { "PUT", "/v1/sandboxes/{sid}", H(api_sandbox_put), 0 },
    { "GET", "/v1/sandboxes/{sid}", H(api_sandbox_get), 0 },
    { "DELETE", "/v1/sandboxes/{sid}", H(api_sandbox_delete), 0 },
    { "POST", "/v1/sandboxes/{sid}/exec", H(api_exec), 0 },
    { "POST", "/v1/sandboxes/{sid}/contexts", H(api_context_create), 0 },
    { "GET", "/v1/sandboxes/{sid}/contexts", H(api_context_list), 0 },
    { "GET", "/v1/sandboxes/{sid}/contexts/{cid}", H(api_context_get), 0 },
    { "DELETE", "/v1/sandboxes/{sid}/contexts/{cid}", H(api_context_delete), 0 },
    { "POST", "/v1/sandboxes/{sid}/contexts/{cid}/interrupt", H(api_context_interrupt), 0 },
    { "POST", "/v1/sandboxes/{sid}/contexts/{cid}/restart", H(api_context_restart), 0 },
    { "POST", "/v1/sandboxes/{sid}/execute", H(api_execute), 0 },
    { "PUT", "/v1/sandboxes/{sid}/files/{path...}", H(api_files_put), ROUTE_STREAM_BODY },
    { "GET", "/v1/sandboxes/{sid}/files/{path...}", H(api_files_get), 0 },
    { "DELETE", "/v1/sandboxes/{sid}/files/{path...}", H(api_files_delete), 0 },
    { "GET", "/v1/sandboxes/{sid}/files", H(api_files_get), 0 },
    { "POST", "/v1/sandboxes/{sid}/files:move", H(api_files_move), 0 },
    { "POST", "/v1/sandboxes/{sid}/files:mkdir", H(api_files_mkdir), 0 },
    { "POST", "/v1/sandboxes/{sid}/processes", H(api_process_start), 0 },
    { "GET", "/v1/sandboxes/{sid}/processes", H(api_process_list), 0 },
    { "GET", "/v1/sandboxes/{sid}/processes/{pid}", H(api_process_get), 0 },
    { "DELETE", "/v1/sandboxes/{sid}/processes/{pid}", H(api_process_delete), 0 },
    { "GET", "/v1/sandboxes/{sid}/processes/{pid}/logs", H(api_process_logs), 0 },
    { "POST", "/v1/sandboxes/{sid}/processes/{pid}/stdin", H(api_process_stdin), 0 },
    /* lifecycle: suspend and resume (lifecycle.h) */
    { "POST", "/v1/sandboxes/{sid}/suspend", H(api_sandbox_suspend), 0 },
    { "POST", "/v1/sandboxes/{sid}/resume", H(api_sandbox_resume), 0 },
    { "GET", "/v1/sandboxes/{sid}/executions/{eid}", H(api_execution_get), 0 },
    { "GET", "/v1/sandboxes/{sid}/executions/{eid}/events", H(api_execution_events), 0 },
    { "DELETE", "/v1/sandboxes/{sid}/executions/{eid}", H(api_execution_delete), 0 },
    { "GET", "/v1/sandboxes/{sid}/contexts/{cid}/queue", H(api_context_queue), 0 },
    /* The Cloudflare container protocol (@cloudflare/sandbox 0.12; api_cf*.c, docs/compat.md) */
    { "GET", "/api/ping", H(api_cf_ping), 0 },
    { "GET", "/api/version", H(api_cf_version), 0 },
    { "GET", "/api/commands", H(api_cf_commands), 0 },
    { "POST", "/api/contexts", H(api_cf_context_create), 0 },
    { "GET", "/api/contexts", H(api_cf_context_list), 0 },
    { "DELETE", "/api/contexts/{cid}", H(api_cf_context_delete), 0 },
    { "POST", "/api/execute/code", H(api_cf_execute_code), 0 },
    { "GET", "/api/interpreter/health", H(api_cf_interp_health), 0 },
    { "POST", "/api/execute", H(api_cf_execute), 0 },
    { "POST", "/api/execute/stream", H(api_cf_execute_stream), 0 },
    { "POST", "/api/session/create", H(api_cf_session_create), 0 },
    { "POST", "/api/session/delete", H(api_cf_session_delete), 0 },
    { "POST", "/api/write", H(api_cf_write), 0 },
    { "POST", "/api/read", H(api_cf_read), 0 },
    { "POST", "/api/read/stream", H(api_cf_read_stream), 0 },
    { "POST", "/api/exists", H(api_cf_exists), 0 },
    { "POST", "/api/mkdir", H(api_cf_mkdir), 0 },
    { "POST", "/api/delete", H(api_cf_delete), 0 },
    { "POST", "/api/rename", H(api_cf_rename), 0 },
    { "POST", "/api/move", H(api_cf_move), 0 },
    { "POST", "/api/list-files", H(api_cf_list_files), 0 },
    { "POST", "/api/process/start", H(api_cf_process_start), 0 },
    { "GET", "/api/process/list", H(api_cf_process_list), 0 },
    { "DELETE", "/api/process/kill-all", H(api_cf_process_kill_all), 0 },
    { "GET", "/api/process/{pid}", H(api_cf_process_get), 0 },
    { "DELETE", "/api/process/{pid}", H(api_cf_process_kill), 0 },
    { "GET", "/api/process/{pid}/logs", H(api_cf_process_logs), 0 },
    { "GET", "/api/process/{pid}/stream", H(api_cf_process_stream), 0 },
    /* E2B's code interpreter and envd (api_e2b*.c, docs/compat.md) */
    { "GET", "/health", H(api_e2b_health), ROUTE_PUBLIC },
    { "POST", "/execute", H(api_e2b_execute), 0 },
    { "POST", "/contexts", H(api_e2b_context_create), 0 },
    { "GET", "/contexts", H(api_e2b_context_list), 0 },
    { "POST", "/contexts/{cid}/restart", H(api_e2b_context_restart), 0 },
    { "DELETE", "/contexts/{cid}", H(api_e2b_context_delete), 0 },
    { "GET", "/files", H(api_e2b_files_get), 0 },
    { "POST", "/files", H(api_e2b_files_post), 0 },
    { "POST", "/process.Process/Start", H(api_e2b_process_start), 0 },
    { "POST", "/process.Process/Connect", H(api_e2b_process_connect), 0 },
    { "POST", "/process.Process/List", H(api_e2b_process_list), 0 },
    { "POST", "/process.Process/SendSignal", H(api_e2b_process_signal), 0 },
    { "POST", "/process.Process/SendInput", H(api_e2b_process_input), 0 },
    { "POST", "/process.Process/CloseStdin", H(api_e2b_process_close_stdin), 0 },
    { "POST", "/process.Process/Update", H(api_e2b_unimplemented), 0 },
    { "POST", "/process.Process/StreamInput", H(api_e2b_unimplemented), 0 },
    { "POST", "/filesystem.Filesystem/Stat", H(api_e2b_fs_stat), 0 },
    { "POST", "/filesystem.Filesystem/ListDir", H(api_e2b_fs_listdir), 0 },
    { "POST", "/filesystem.Filesystem/MakeDir", H(api_e2b_fs_mkdir), 0 },
    { "POST", "/filesystem.Filesystem/Move", H(api_e2b_fs_move), 0 },
    { "POST", "/filesystem.Filesystem/Remove", H(api_e2b_fs_remove), 0 },
    { "POST", "/filesystem.Filesystem/WatchDir", H(api_e2b_unimplemented), 0 },
    { "POST", "/filesystem.Filesystem/CreateWatcher", H(api_e2b_unimplemented), 0 },
    /* The MCP server: Streamable HTTP transport, no GET stream, so GET gets 405 (api_mcp*.c, docs/mcp.md) */
    { "POST", "/mcp", H(api_mcp_post), 0 },
    { "DELETE", "/mcp", H(api_mcp_delete), 0 },
};
/* clang-format on */

bool api_stream_body(const http_req *req, void *arg)
{
    (void)arg;
    const struct route *rt = NULL;
    route_params params;
    char allow[128];
    /* asked for every request: match only when a streaming route has this method */
    bool candidate = false;
    for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0] && !candidate; i++)
        candidate = (ROUTES[i].flags & ROUTE_STREAM_BODY) &&
                    strcmp(ROUTES[i].method, req->method_name) == 0;
    if (!candidate)
        return false;
    if (router_match(ROUTES, sizeof ROUTES / sizeof ROUTES[0], req->method_name, req->path, &rt,
                     &params, allow, sizeof allow) != ROUTE_FOUND)
        return false;
    route_params_free(&params);
    return (rt->flags & ROUTE_STREAM_BODY) != 0;
}

void api_init(struct app *app, uv_loop_t *loop, const struct config *cfg)
{
    memset(app, 0, sizeof *app);
    app->loop = loop;
    app->cfg = cfg;
    app->started_ns = uv_hrtime();
    sse_configure(loop, cfg->sse_heartbeat_ms);
    static const char *const names[] = { "python", "javascript", "typescript" };
    for (int i = 0; i < 3; i++) {
        app->langs[i].name = names[i];
        snprintf(app->langs[i].reason, sizeof app->langs[i].reason,
                 "%s contexts are not implemented in this build", names[i]);
    }
}

/* Constant-time comparison of a presented token h with the daemon's tok. */
static bool token_equal(const char *tok, const char *h)
{
    size_t hl = strlen(h), tl = strlen(tok);
    unsigned char diff = hl != tl;
    for (size_t i = 0; i < tl; i++)
        diff |= (unsigned char)(tok[i] ^ (i < hl ? h[i] : 0));
    return diff == 0;
}

/* The Authorization header "Bearer <token>", or (for the E2B client, which cannot set
 * Authorization: docs/compat.md) X-Access-Token / E2B-Traffic-Access-Token "<token>". */
static bool authorized(const struct app *app, const http_req *req)
{
    const char *tok = app->cfg->token;
    if (!tok[0])
        return true;
    const char *h = req->authorization;
    if (strncmp(h, "Bearer ", 7) == 0 && token_equal(tok, h + 7))
        return true;
    return req->access_token[0] && token_equal(tok, req->access_token);
}

void api_dispatch(http_req *req, void *arg)
{
    struct app *app = arg;
    const struct route *rt = NULL;
    route_params params;
    char allow[128];
    /* HEAD is answered like GET, without a body (http.c drops it). */
    const char *method = strcmp(req->method_name, "HEAD") == 0 ? "GET" : req->method_name;
    int m = router_match(ROUTES, sizeof ROUTES / sizeof ROUTES[0], method, req->path, &rt, &params,
                         allow, sizeof allow);
    switch (m) {
    case ROUTE_NO_PATH:
        if (cf_path(req->path))
            cf_error(req, 404, "NOT_FOUND", "no such route: %.200s", req->path);
        else
            http_respond_error(req, 404, "NOT_FOUND", "no such route: %.200s", req->path);
        return;
    case ROUTE_BAD_PATH:
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "the path has a broken %%-escape or a NUL byte");
        return;
    case ROUTE_NO_METHOD: {
        char hdr[160];
        snprintf(hdr, sizeof hdr, "Allow: %s\r\n", allow);
        char body[256];
        int n = snprintf(body, sizeof body,
                         "{\"code\":\"METHOD_NOT_ALLOWED\",\"message\":\"%s is not allowed "
                         "here; allowed: %s\"}",
                         req->method_name, allow);
        http_respond(req, 405, "application/json", body, (size_t)n, hdr);
        return;
    }
    default: break;
    }
    req->route = rt->pattern;
    if (!(rt->flags & ROUTE_PUBLIC) && !authorized(app, req)) {
        route_params_free(&params);
        static const char body[] = "{\"code\":\"UNAUTHORIZED\",\"message\":\"a valid "
                                   "'Authorization: Bearer <token>' header is required\"}";
        if (cf_path(req->path))
            cf_error_msg(req, 401, "UNAUTHORIZED",
                         "a valid 'Authorization: Bearer <token>' header is required",
                         "WWW-Authenticate: Bearer\r\n");
        else
            http_respond(req, 401, "application/json", body, sizeof body - 1,
                         "WWW-Authenticate: Bearer\r\n");
        return;
    }
    ((api_handler)rt->handler)(app, req, &params);
    route_params_free(&params);
}
