/*
 * api_exec.c — POST /v1/sandboxes/{sid}/exec (API.md "Commands"): reads the request
 * ("command", "cwd", "env", "stdin", "timeoutMs"), starts the command (exec.h) with an
 * api_sink over the request, and ties the request's drain and abort to the run. The
 * answer (plain JSON or SSE events) is the engine's; this file only says which HTTP
 * status a refusal gets.
 */
#include "api.h"
#include "exec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api_command.h"
#include "budget.h"
#include "api_fields.h"
#include "api_json.h"
#include "jsonx.h"

/* exec_start refused at once: say why. */
static void exec_refused(http_req *req, sandbox *sb, int rc, const struct exec_opts *o,
                         const char *err)
{
    if (rc == EXEC_NO_ROOM)
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "stdin (%zu bytes) does not fit in what "
                           "is left of sandbox '%s''s buffer budget (--sandbox-buffer-bytes "
                           "%llu, %llu bytes held); try again once output is read",
                           o->stdin_data ? strlen(o->stdin_data) : 0, sb->id,
                           (unsigned long long)budget_cap(sb->budget),
                           (unsigned long long)budget_used(sb->budget));
    else if (rc == EXEC_NO_SETUP)
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot set up the command: %s", err);
    else
        api_cmd_respond_error(req, rc, o->cmd->cwd, err, "command");
}

void api_exec(struct app *app, http_req *req, const route_params *p)
{
    char err[JX_ERR];
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    json_t *body = api_body_known(req, false, API_FIELDS_EXEC);
    if (!body)
        return;
    struct cmd_request cmd;
    struct exec_opts o = {
        .cmd = &cmd,
        .timeout_ms = sb->limits.timeout_ms,
        .streaming = req->want_sse,
    };
    if (api_cmd_parse(body, app->cfg, &cmd, err, sizeof err) ||
        jx_string(body, "stdin", false, app->cfg->max_body_bytes, &o.stdin_data, err, sizeof err) ||
        sbx_parse_timeout(body, &o.timeout_ms, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    struct api_sink *s = api_sink_new(req, "command");
    exec_run *r = NULL;
    int rc = EXEC_NO_SETUP;
    if (s)
        rc = exec_start(sb, app->cfg, &o, &s->sink, &r, err, sizeof err);
    else
        snprintf(err, sizeof err, "%s", strerror(ENOMEM));
    if (rc) {
        api_sink_free(s);
        exec_refused(req, sb, rc, &o, err);
        json_decref(body); /* after: o and err may point into it */
        return;
    }
    json_decref(body);
    req->on_drain = api_exec_drained;
    req->on_abort = api_exec_aborted; /* also while the start is pending */
    req->cb_arg = r;
}
