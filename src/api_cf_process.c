/*
 * api_cf_process.c — Cloudflare's process routes: POST /api/process/start,
 * GET /api/process/list, GET and DELETE /api/process/{id}, DELETE /api/process/kill-all,
 * GET /api/process/{id}/logs and GET /api/process/{id}/stream (SSE), on the native
 * background processes (process.h): the same processes /v1 lists, with their ring-buffer
 * logs and independent followers.
 *
 * A process is the sandbox's (it outlives its session), but it starts in its session's
 * state: with a "sessionId" its command runs after cf_session_prefix (the session's exports
 * and directory, then the start's own "env"; its own "cwd" wins), and every answer shows the
 * command as given. Ids are the engine's ("proc-…"); a "processId" the client proposes is
 * not used (the answer names the real one). Status: running, completed (exit 0), failed
 * (other exit codes), killed (a signal).
 */
#include "api_cf.h"
#include "api_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jsonx.h"
#include "process.h"

/* The command as the client gave it: without a session's prefix (cf_session_prefix). */
static const char *shown_command(const char *c)
{
    const char *m = c ? strstr(c, CF_SESSION_MARK) : NULL;
    if (m && strncmp(c, "__s=\"/tmp/.sandboxd-cf/", 22) == 0)
        return m + strlen(CF_SESSION_MARK);
    return c ? c : "";
}

/* The native description in Cloudflare's words. */
static json_t *cf_proc(const proc *p)
{
    json_t *n = proc_json(p);
    if (!n)
        return NULL;
    const char *st = json_string_value(json_object_get(n, "status"));
    json_t *code = json_object_get(n, "exitCode");
    const char *status = "running";
    if (st && strcmp(st, "running") != 0)
        status = json_object_get(n, "signal")    ? "killed"
                 : json_integer_value(code) == 0 ? "completed"
                                                 : "failed";
    json_t *j = json_pack("{s:O, s:O, s:s, s:s, s:O}", "id", json_object_get(n, "id"), "pid",
                          json_object_get(n, "pid"), "command",
                          shown_command(json_string_value(json_object_get(n, "command"))), "status",
                          status, "startTime", json_object_get(n, "startedAt"));
    if (j && code)
        json_object_set(j, "exitCode", code);
    if (j && json_object_get(n, "endedAt"))
        json_object_set(j, "endTime", json_object_get(n, "endedAt"));
    json_decref(n);
    return j;
}

/* ---- start ---- */

static void start_aborted(http_req *req, void *arg)
{
    (void)req;
    proc_start_cancel(arg);
}

static void started(void *arg, const proc *p, int rc, const char *cwd, const char *msg)
{
    http_req *req = arg;
    (void)cwd;
    req->on_abort = NULL;
    req->cb_arg = NULL;
    if (rc == PROC_NO_MEMORY)
        cf_error(req, 500, "INTERNAL_ERROR", "cannot set up the process: out of memory");
    else if (rc)
        cf_start_error(req, rc, msg, "process");
    else {
        json_t *b = proc_brief_json(p);
        cf_ok(req, json_pack("{s:O, s:O, s:s}", "processId", json_object_get(b, "id"), "pid",
                             json_object_get(b, "pid"), "command",
                             shown_command(json_string_value(json_object_get(b, "command")))));
        json_decref(b);
    }
}

static void process_start(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)param;
    char err[JX_ERR];
    json_t *body = cf_body(req, false);
    if (!body)
        return;
    struct cmd_request cmd = { 0 };
    const char *cwd_in = NULL, *command, *sid = NULL;
    buf full;
    buf_init(&full, app->cfg->max_code_bytes + 65536);
    if (jx_string(body, "command", true, app->cfg->max_code_bytes, &command, err, sizeof err) ||
        jx_string(body, "sessionId", false, 1024, &sid, err, sizeof err) ||
        jx_string(body, "cwd", false, 1024, &cwd_in, err, sizeof err) ||
        jx_env_map(body, "env", app->cfg->max_env_vars, &cmd.env, err, sizeof err) ||
        sbx_resolve_cwd(cwd_in, cmd.cwd, sizeof cmd.cwd, err, sizeof err) ||
        (sid && cf_session_prefix(&full, sid, cmd.env, !cwd_in, err, sizeof err)) ||
        (buf_puts(&full, command) && snprintf(err, sizeof err, "the command is too long") > 0)) {
        buf_free(&full);
        json_decref(body);
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    cmd.command = full.data;
    proc *p = NULL;
    int rc = proc_start(sb, app->cfg, &cmd, started, req, &p, err, sizeof err);
    buf_free(&full); /* the engine keeps its own copy */
    json_decref(body);
    if (rc == PROC_FULL)
        cf_error(req, 429, "LIMIT_REACHED",
                 "the sandbox has %llu background processes, its limit (--max-processes)",
                 (unsigned long long)app->cfg->max_processes);
    else if (rc == PROC_NO_MEMORY)
        cf_error(req, 500, "INTERNAL_ERROR", "cannot set up the process: out of memory");
    else if (rc)
        cf_start_error(req, rc, err, "process");
    if (rc)
        return;
    req->on_abort = start_aborted;
    req->cb_arg = p;
}

void api_cf_process_start(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, process_start);
}

/* ---- list, get, kill ---- */

static void process_list(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)app;
    (void)param;
    json_t *native = proc_list_json(sb), *out = json_array(), *v;
    size_t i;
    json_array_foreach(native, i, v)
    {
        proc *p = proc_find(sb, json_string_value(json_object_get(v, "id")));
        if (p)
            json_array_append_new(out, cf_proc(p));
    }
    json_decref(native);
    cf_ok(req, json_pack("{s:o}", "processes", out));
}

void api_cf_process_list(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, process_list);
}

/* The process id names, or a 404 answer and NULL. */
static proc *lookup(http_req *req, sandbox *sb, const char *id)
{
    proc *p = proc_find(sb, id);
    if (!p)
        cf_error(req, 404, "PROCESS_NOT_FOUND", "Process not found: %.64s", id);
    return p;
}

static void process_get(struct app *app, http_req *req, sandbox *sb, const char *id)
{
    (void)app;
    proc *p = lookup(req, sb, id);
    if (p)
        cf_ok(req, json_pack("{s:o}", "process", cf_proc(p)));
}

void api_cf_process_get(struct app *app, http_req *req, const route_params *p)
{
    cf_with_sandbox(app, req, route_param(p, "pid"), process_get);
}

static void killed(void *arg, const proc *p)
{
    cf_ok(arg, json_pack("{s:s}", "processId", proc_id(p)));
}

static void waiter_abort(http_req *req, void *arg)
{
    (void)req;
    (void)arg; /* the answer is discarded once the process has ended (SIGKILL was sent) */
}

static void process_kill(struct app *app, http_req *req, sandbox *sb, const char *id)
{
    (void)app;
    proc *p = lookup(req, sb, id);
    if (!p)
        return;
    req->on_abort = waiter_abort;
    req->cb_arg = NULL;
    if (proc_delete(sb, p, killed, req) < 0)
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
}

void api_cf_process_kill(struct app *app, http_req *req, const route_params *p)
{
    cf_with_sandbox(app, req, route_param(p, "pid"), process_kill);
}

static void ended_quietly(void *arg, const proc *p)
{
    (void)arg;
    (void)p;
}

static void process_kill_all(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)app;
    (void)param;
    json_t *native = proc_list_json(sb), *v;
    size_t i, n = 0;
    json_array_foreach(native, i, v)
    {
        proc *p = proc_find(sb, json_string_value(json_object_get(v, "id")));
        if (p && proc_delete(sb, p, ended_quietly, NULL) >= 0)
            n++;
    }
    json_decref(native);
    cf_ok(req, json_pack("{s:I}", "cleanedCount", (json_int_t)n));
}

void api_cf_process_kill_all(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, process_kill_all);
}

/* ---- logs ---- */

static void process_logs(struct app *app, http_req *req, sandbox *sb, const char *id)
{
    (void)app;
    proc *p = lookup(req, sb, id);
    if (!p)
        return;
    buf b;
    if (proc_logs_json(p, &b)) {
        buf_free(&b);
        cf_error(req, 500, "INTERNAL_ERROR", "the logs do not fit in memory");
        return;
    }
    json_t *n = json_loadb(b.data, b.len, 0, NULL);
    buf_free(&b);
    if (!n) {
        cf_error(req, 500, "INTERNAL_ERROR", "the logs cannot be encoded");
        return;
    }
    cf_ok(req, json_pack("{s:s, s:O, s:O}", "processId", proc_id(p), "stdout",
                         json_object_get(n, "stdout"), "stderr", json_object_get(n, "stderr")));
    json_decref(n);
}

void api_cf_process_logs(struct app *app, http_req *req, const route_params *p)
{
    cf_with_sandbox(app, req, route_param(p, "pid"), process_logs);
}

/* ---- the followed stream ---- */

struct follow_sink {
    cmd_sink sink; /* first: the engine holds &sink */
    http_req *req;
    char id[64];
    char *command;
};

#define FOLLOW(s) ((struct follow_sink *)(s))

static int fo_begin(cmd_sink *s, struct budget *bg)
{
    struct follow_sink *k = FOLLOW(s);
    char now[40];
    cf_now(now, sizeof now);
    http_req_set_budget(k->req, bg);
    int rc = cf_sse_begin(k->req);
    if (rc < 0)
        return rc;
    return cf_sse_send(k->req, "process_info",
                       json_pack("{s:s, s:s, s:s, s:s}", "processId", k->id, "command",
                                 k->command ? k->command : "", "status", "running", "timestamp",
                                 now));
}

static int fo_event(cmd_sink *s, const char *type, const char *json, size_t len)
{
    struct follow_sink *k = FOLLOW(s);
    char now[40];
    if (strcmp(type, "exit") != 0)
        return 0; /* "dropped": the ring overwrote what this follower had not read */
    cf_now(now, sizeof now);
    json_t *e = json_loadb(json, len, 0, NULL);
    int code = (int)json_integer_value(json_object_get(e, "exitCode"));
    json_decref(e);
    char msg[48];
    snprintf(msg, sizeof msg, "Process exited with code %d", code);
    return cf_sse_send(k->req, "exit",
                       json_pack("{s:s, s:i, s:s, s:s}", "processId", k->id, "exitCode", code,
                                 "data", msg, "timestamp", now));
}

static int fo_text(cmd_sink *s, const char *type, esc_carry *carry, const void *data, size_t n,
                   bool final)
{
    struct follow_sink *k = FOLLOW(s);
    char now[40];
    buf b;
    buf_init(&b, n + 16);
    int rc = esc_utf8(&b, carry, data, n, final);
    if (!rc && b.len) {
        cf_now(now, sizeof now);
        rc = cf_sse_send(k->req, type,
                         json_pack("{s:s%, s:s, s:s}", "data", b.data, b.len, "processId", k->id,
                                   "timestamp", now));
    }
    buf_free(&b);
    return rc;
}

static void fo_free(struct follow_sink *k)
{
    free(k->command);
    free(k);
}

static void fo_end(cmd_sink *s)
{
    http_stream_end(FOLLOW(s)->req);
    fo_free(FOLLOW(s));
}

static const struct cmd_sink_ops FOLLOW_OPS = {
    .begin = fo_begin,
    .event = fo_event,
    .text = fo_text,
    .end = fo_end,
    .queued = api_sink_queued,
    .gone = api_sink_gone,
    .wait_drain = api_sink_wait_drain,
};

static void process_stream(struct app *app, http_req *req, sandbox *sb, const char *id)
{
    proc *p = lookup(req, sb, id);
    if (!p)
        return;
    unsigned n = proc_followers(p);
    if (n >= app->cfg->max_followers) {
        cf_error(req, 429, "LIMIT_REACHED", "process %s has %u followers, the limit", proc_id(p),
                 n);
        return;
    }
    struct follow_sink *k = calloc(1, sizeof *k);
    json_t *b = proc_brief_json(p);
    if (k) {
        k->sink.ops = &FOLLOW_OPS;
        k->req = req;
        snprintf(k->id, sizeof k->id, "%s", proc_id(p));
        k->command = strdup(shown_command(json_string_value(json_object_get(b, "command"))));
    }
    json_decref(b);
    proc_follower *f = k ? proc_follow(p, &k->sink) : NULL;
    if (!f) {
        if (k)
            fo_free(k);
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    req->cb_arg = f;
    req->on_drain = api_follower_drained;
    req->on_abort = api_follower_aborted;
    proc_follower_start(f);
}

void api_cf_process_stream(struct app *app, http_req *req, const route_params *p)
{
    cf_with_sandbox(app, req, route_param(p, "pid"), process_stream);
}
