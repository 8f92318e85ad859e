/*
 * api_cf.c — what the Cloudflare routes share (api_cf.h): the error envelope, JSON and
 * SSE answers in Cloudflare's shapes, the sandbox of a request (X-Sandbox-Id,
 * get-or-create), cf_shell_run (one shell command through exec.h, its outcome as data),
 * and the small routes /api/ping, /api/version, /api/commands.
 *
 * Statuses follow the client's status map (CONTEXT_NOT_FOUND 404, VALIDATION_FAILED 400,
 * FILE_NOT_FOUND 404, …); a refusal the native API answers 503-free with 429 or 507 keeps
 * that status here, and nothing is ever 503 (the client retries a 503 for 120 s).
 */
#include "api_cf.h"
#include "api_command.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "budget.h"
#include "exec.h"
#include "jsonx.h"
#include "stamp.h"

/* ---- answers ---- */

void cf_now(char *out, size_t n)
{
    stamp_iso8601(stamp_now_ms(), out, n);
}

void cf_error_msg(http_req *req, int status, const char *code, const char *msg,
                  const char *extra_headers)
{
    char now[40];
    cf_now(now, sizeof now);
    json_t *j = json_pack("{s:s, s:s, s:s, s:{}, s:i, s:s}", "code", code, "message", msg, "error",
                          msg, "context", "httpStatus", status, "timestamp", now);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        http_respond_error(req, status, code, "%s", "the error could not be encoded");
        return;
    }
    http_respond_take(req, status, "application/json", s, strlen(s), extra_headers);
}

void cf_error(http_req *req, int status, const char *code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cf_error_msg(req, status, code, msg, NULL);
}

bool cf_path(const char *path)
{
    return strncmp(path, "/api/", 5) == 0 || strcmp(path, "/api") == 0;
}

json_t *cf_body(http_req *req, bool allow_empty)
{
    char err[JX_ERR];
    int status;
    const char *code;
    json_t *j = api_parse_body(req, allow_empty, &status, &code, err, sizeof err);
    if (!j)
        cf_error(req, status, "VALIDATION_FAILED", "%s", err);
    return j;
}

void cf_ok(http_req *req, json_t *j)
{
    char now[40];
    cf_now(now, sizeof now);
    if (!j) {
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    if (!json_object_get(j, "success"))
        json_object_set_new(j, "success", json_true());
    json_object_set_new(j, "timestamp", json_string(now));
    api_respond_json(req, 200, j);
}

int cf_sse_begin(http_req *req)
{
    return http_stream_begin(req, 200, "text/event-stream",
                             "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n");
}

/* Write (or, with last, write and end the stream with) one event. */
static int sse_put(http_req *req, const char *type, json_t *j, bool last)
{
    json_t *ev = json_pack("{s:s}", "type", type);
    if (ev && j)
        json_object_update(ev, j);
    json_decref(j);
    char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    size_t n = s ? strlen(s) : 0;
    buf b;
    buf_init(&b, n + 16);
    int rc = s ? buf_puts(&b, "data: ") : -ENOMEM;
    rc = rc ? rc : buf_append(&b, s, n);
    rc = rc ? rc : buf_puts(&b, "\n\n");
    free(s);
    /* one write per event: the client decodes each chunk on its own */
    if (last)
        http_stream_end_with(req, b.data, rc ? 0 : b.len);
    else
        rc = rc ? 0 : http_stream_write(req, b.data, b.len);
    buf_free(&b);
    return rc;
}

int cf_sse_send(http_req *req, const char *type, json_t *j)
{
    return sse_put(req, type, j, false);
}

void cf_sse_finish(http_req *req, const char *type, json_t *j)
{
    sse_put(req, type, j, true);
}

void cf_start_error(http_req *req, int rc, const char *err, const char *what)
{
    if (rc == -EAGAIN || rc == -EBUSY || rc == -ETIMEDOUT || rc == -EMFILE)
        cf_error(req, 429, "LIMIT_REACHED", "cannot start the %s: %s", what, err);
    else if (rc == -ENOMEM)
        cf_error(req, 507, "MEMORY_LIMIT", "cannot start the %s: the sandbox's memory is full: %s",
                 what, err);
    else if (rc == -ENOENT || rc == -ENOTDIR || rc == -EACCES)
        cf_error(req, 400, "VALIDATION_FAILED", "cannot start the %s: %s", what, err);
    else
        cf_error(req, 500, "INTERNAL_ERROR", "cannot start the %s: %s", what,
                 err && err[0] ? err : strerror(rc < 0 ? -rc : EIO));
}

/* ---- the sandbox of a request ---- */

struct deferred {
    struct app *app;
    http_req *req;
    cf_next next;
    bool has_param;
    char param[512];
};

static void sandbox_ready(sandbox *s, const char *id, int rc, const char *err, void *arg)
{
    struct deferred *d = arg;
    if (rc)
        cf_error(d->req, 500, "INTERNAL_ERROR", "cannot create sandbox '%s': %s", id,
                 err && err[0] ? err : strerror(-rc));
    else
        d->next(d->app, d->req, s, d->has_param ? d->param : NULL);
    free(d);
}

void cf_with_sandbox(struct app *app, http_req *req, const char *param, cf_next next)
{
    char err[JX_ERR];
    const char *id = req->x_sandbox_id[0] ? req->x_sandbox_id : "default";
    if (!sbx_valid_id(id)) {
        cf_error(req, 400, "VALIDATION_FAILED",
                 "X-Sandbox-Id '%.80s' is not a valid sandbox id ([A-Za-z0-9][A-Za-z0-9._-]{0,62})",
                 id);
        return;
    }
    sandbox *s = sbx_find(id);
    if (s) {
        next(app, req, s, param);
        return;
    }
    struct deferred *d = calloc(1, sizeof *d);
    if (!d) {
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    *d = (struct deferred){ .app = app, .req = req, .next = next, .has_param = param != NULL };
    if (param)
        snprintf(d->param, sizeof d->param, "%s", param);
    err[0] = '\0';
    int rc = sbx_ensure(id, sandbox_ready, d, err, sizeof err);
    if (rc == 0)
        return;
    free(d);
    if (rc == -EMFILE || rc == -EBUSY)
        cf_error(req, 429, "LIMIT_REACHED", "%s", err);
    else
        cf_error(req, 500, "INTERNAL_ERROR", "cannot create sandbox '%s': %s", id,
                 err[0] ? err : strerror(rc < 0 ? -rc : EIO));
}

/* ---- one shell command, its outcome as data ---- */

struct shell_sink {
    cmd_sink sink; /* first: the engine holds &sink */
    http_req *req;
    cf_shell_cb cb;
    void *arg;
};

#define SHELL(s) ((struct shell_sink *)(s))

static int sh_begin(cmd_sink *s, struct budget *bg)
{
    http_req_set_budget(SHELL(s)->req, bg);
    return 0;
}

static void sh_answer(cmd_sink *s, char *json, size_t len)
{
    struct shell_sink *k = SHELL(s);
    json_t *j = json ? json_loadb(json, len, JSON_ALLOW_NUL, NULL) : NULL;
    free(json);
    if (!j) {
        cf_error(k->req, 500, "COMMAND_EXECUTION_ERROR", "the command's result does not fit");
    } else {
        const json_t *so = json_object_get(j, "stdout"), *se = json_object_get(j, "stderr");
        struct cf_shell_out o = {
            .exit_code = (int)json_integer_value(json_object_get(j, "exitCode")),
            .timed_out = json_is_true(json_object_get(j, "timedOut")),
            .truncated = json_is_true(json_object_get(j, "truncated")),
            .out = json_string_value(so) ? json_string_value(so) : "",
            .err = json_string_value(se) ? json_string_value(se) : "",
            .out_len = json_string_length(so),
            .err_len = json_string_length(se),
        };
        k->cb(k->req, &o, k->arg);
        json_decref(j);
    }
    free(k);
}

static void sh_failed(cmd_sink *s, int rc, const char *cwd, const char *msg)
{
    (void)cwd;
    cf_start_error(SHELL(s)->req, rc, msg, "command");
    free(SHELL(s));
}

static const struct cmd_sink_ops SHELL_OPS = {
    .begin = sh_begin,
    .answer = sh_answer,
    .failed = sh_failed,
    .queued = api_sink_queued,
    .gone = api_sink_gone,
    .wait_drain = api_sink_wait_drain,
};

int cf_shell_run(struct app *app, http_req *req, sandbox *sb, const struct cf_shell *s,
                 cf_shell_cb cb, void *arg)
{
    char err[JX_ERR];
    struct cmd_request cmd = { .command = s->script, .env = s->env };
    snprintf(cmd.cwd, sizeof cmd.cwd, "%s", s->cwd ? s->cwd : "/workspace");
    struct exec_opts o = {
        .cmd = &cmd,
        .stdin_data = s->stdin_data,
        .timeout_ms = s->timeout_ms ? s->timeout_ms : sb->limits.timeout_ms,
    };
    struct shell_sink *k = calloc(1, sizeof *k);
    if (!k) {
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return -1;
    }
    *k = (struct shell_sink){ .sink.ops = &SHELL_OPS, .req = req, .cb = cb, .arg = arg };
    exec_run *r = NULL;
    err[0] = '\0';
    int rc = exec_start(sb, app->cfg, &o, &k->sink, &r, err, sizeof err);
    if (rc) {
        free(k);
        if (rc == EXEC_NO_ROOM)
            cf_error(req, 429, "LIMIT_REACHED",
                     "the request does not fit in what is left of sandbox '%s''s buffer budget",
                     sb->id);
        else
            cf_start_error(req, rc == EXEC_NO_SETUP ? -EIO : rc, err, "command");
        return -1;
    }
    req->on_drain = api_exec_drained;
    req->on_abort = api_exec_aborted;
    req->cb_arg = r;
    return 0;
}

/* ---- small routes ---- */

void api_cf_ping(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    cf_ok(req, json_pack("{s:s, s:s}", "status", "healthy", "message", "pong"));
}

void api_cf_version(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    cf_ok(req, json_pack("{s:s}", "version", "sandboxd-" SANDBOXD_VERSION));
}

void api_cf_commands(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    cf_ok(req, json_pack("{s:[s,s,s,s,s], s:i}", "availableCommands", "sh", "python3", "node",
                         "cat", "ls", "count", 5));
}
