/*
 * api_process.c — the background-process routes (API.md "Background processes"):
 * POST/GET /v1/sandboxes/{sid}/processes, GET/DELETE …/processes/{pid}, GET …/{pid}/logs,
 * POST …/{pid}/stdin. Reads and validates the requests, calls process.h, and answers: a
 * start once the sandbox's init has started the process (201), a DELETE once the process
 * has ended, the logs as JSON or followed over SSE through an api_sink, a stdin write at
 * once (queued, or refused whole: process.h never blocks on the pipe).
 */
#include "api.h"
#include "process.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api_command.h"
#include "api_e2b.h"
#include "api_fields.h"
#include "api_json.h"
#include "jsonx.h"

/* The process named by {pid} in the route; when none, the request was answered. */
static proc *lookup(http_req *req, const route_params *rp, sandbox **sbo)
{
    sandbox *sb = api_sandbox_lookup(req, rp);
    if (!sb)
        return NULL;
    const char *id = route_param(rp, "pid");
    proc *p = proc_find(sb, id);
    if (!p && !api_ended_by_restart(req, sb, "PROCESS_NOT_FOUND", "process", "proc-", id))
        http_respond_error(req, 404, "PROCESS_NOT_FOUND", "no process '%.64s' in sandbox '%s'",
                           id ? id : "", sb->id);
    if (sbo)
        *sbo = sb;
    return p;
}

/* ---- POST …/processes ---- */

static void start_aborted(http_req *req, void *arg)
{
    (void)req;
    proc_start_cancel(arg);
}

static void started(void *arg, const proc *p, int rc, const char *cwd, const char *msg)
{
    http_req *req = arg;
    req->on_abort = NULL;
    req->cb_arg = NULL;
    if (rc == PROC_NO_MEMORY)
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot set up the process: out of memory");
    else if (rc)
        api_cmd_respond_error(req, rc, cwd, msg, "process");
    else
        api_respond_json(req, 201, proc_brief_json(p));
}

void api_process_start(struct app *app, http_req *req, const route_params *rp)
{
    char err[JX_ERR];
    sandbox *sb = api_sandbox_lookup(req, rp);
    if (!sb)
        return;
    json_t *body = api_body_known(req, false, API_FIELDS_PROCESS);
    if (!body)
        return;
    struct cmd_request cmd;
    bool keep_stdin = false;
    if (api_cmd_parse(body, app->cfg, &cmd, err, sizeof err) ||
        jx_bool(body, "stdin", NULL, &keep_stdin, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    cmd.stdin_open = keep_stdin;
    proc *p = NULL;
    int rc = proc_start(sb, app->cfg, &cmd, started, req, &p, err, sizeof err);
    json_decref(body);
    if (rc == PROC_FULL)
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "the sandbox has %llu background processes, its limit "
                           "(--max-processes); DELETE one first",
                           (unsigned long long)app->cfg->max_processes);
    else if (rc == PROC_NO_MEMORY)
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot set up the process: out of memory");
    else if (rc)
        api_cmd_respond_error(req, rc, cmd.cwd, err, "process");
    if (rc)
        return;
    req->on_abort = start_aborted;
    req->cb_arg = p;
}

/* ---- GET …/processes, GET and DELETE …/processes/{pid} ---- */

void api_process_list(struct app *app, http_req *req, const route_params *rp)
{
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, rp);
    if (!sb)
        return;
    api_respond_json(req, 200, json_pack("{s:o}", "processes", proc_list_json(sb)));
}

void api_process_get(struct app *app, http_req *req, const route_params *rp)
{
    (void)app;
    proc *p = lookup(req, rp, NULL);
    if (p)
        api_respond_json(req, 200, proc_json(p));
}

static void deleted(void *arg, const proc *p)
{
    json_t *j = proc_json(p);
    if (j)
        json_object_set_new(j, "deleted", json_true());
    api_respond_json(arg, 200, j);
}

static void waiter_abort(http_req *req, void *arg)
{
    /* the client went away: the answer is discarded when the process ends, which the
     * SIGKILL already sent makes prompt */
    (void)req;
    (void)arg;
}

void api_process_delete(struct app *app, http_req *req, const route_params *rp)
{
    (void)app;
    sandbox *sb = NULL;
    proc *p = lookup(req, rp, &sb);
    if (!p)
        return;
    /* set first: the process may end (and the answer go) only later, and a request that
     * is answered now never hears of it */
    req->on_abort = waiter_abort;
    req->cb_arg = NULL;
    if (proc_delete(sb, p, deleted, req) < 0)
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
}

/* ---- GET …/processes/{pid}/logs ---- */

/* JSON: both rings as strings, plus what was dropped. */
static void logs_json(http_req *req, const proc *p)
{
    buf b;
    budget *bg = proc_budget(p);
    int rc = proc_logs_json(p, &b);
    if (rc) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "the logs do not fit in memory");
    } else if (budget_room(bg) < b.len) {
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "the logs (%zu bytes as JSON) do not "
                           "fit in what is left of the sandbox's buffer budget "
                           "(--sandbox-buffer-bytes %llu, %llu bytes held); try again once "
                           "queued responses are read, or follow the logs (SSE)",
                           b.len, (unsigned long long)budget_cap(bg),
                           (unsigned long long)budget_used(bg));
    } else {
        size_t len = b.len;
        http_respond_take(req, 200, "application/json", buf_steal(&b), len, NULL);
    }
    buf_free(&b);
}

void api_process_logs(struct app *app, http_req *req, const route_params *rp)
{
    proc *p = lookup(req, rp, NULL);
    if (!p)
        return;
    http_req_set_budget(req, proc_budget(p));
    if (!req->want_sse) {
        logs_json(req, p);
        return;
    }
    unsigned n = proc_followers(p);
    if (n >= app->cfg->max_followers) {
        http_respond_error(req, 429, "LIMIT_REACHED", "process %s has %u followers, the limit",
                           proc_id(p), n);
        return;
    }
    struct api_sink *s = api_sink_new(req, "process");
    proc_follower *f = s ? proc_follow(p, &s->sink) : NULL;
    if (!f) {
        api_sink_free(s);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    req->cb_arg = f;
    req->on_drain = api_follower_drained;
    req->on_abort = api_follower_aborted;
    proc_follower_start(f);
}

/* ---- POST …/processes/{pid}/stdin ---- */

/* The body's bytes: "data" as UTF-8 text or, with "encoding": "base64", decoded into b.
 * 0, or -1 with err set. */
static int stdin_data(const json_t *body, const struct config *cfg, buf *b, char *err,
                      size_t errlen)
{
    const char *data = NULL, *enc = NULL;
    buf_init(b, 0);
    if (jx_string(body, "data", false, cfg->max_body_bytes, &data, err, errlen) ||
        jx_string(body, "encoding", false, 16, &enc, err, errlen))
        return -1;
    bool b64 = enc && strcmp(enc, "base64") == 0;
    if (enc && !b64 && strcmp(enc, "utf8") != 0) {
        snprintf(err, errlen, "field 'encoding' must be \"utf8\" or \"base64\"");
        return -1;
    }
    size_t n = data ? strlen(data) : 0;
    buf_free(b);
    buf_init(b, n + 1);
    if (b64 ? e2b_unbase64(b, data, n) : buf_append(b, data ? data : "", n)) {
        snprintf(err, errlen, b64 ? "field 'data' is not valid base64" : "out of memory");
        return -1;
    }
    return 0;
}

/* proc_stdin_write's refusal as the API's error (never called with 0). */
static void stdin_refused(http_req *req, const proc *p, int rc, size_t n)
{
    budget *bg = proc_budget(p);
    if (rc == PROC_STDIN_NONE)
        http_respond_error(req, 409, "CONFLICT",
                           "process %s was started without stdin (start it with "
                           "\"stdin\": true)",
                           proc_id(p));
    else if (rc == PROC_STDIN_CLOSED)
        http_respond_error(req, 409, "CONFLICT",
                           "the stdin of process %s is closed (EOF was sent, or the process "
                           "exited or closed it)",
                           proc_id(p));
    else if (rc == PROC_STDIN_TOO_BIG)
        http_respond_error(req, 413, "PAYLOAD_TOO_LARGE",
                           "%zu bytes of stdin in one write; at most %zu "
                           "(--process-stdin-bytes): split it",
                           n, proc_stdin_cap());
    else if (rc == PROC_STDIN_FULL)
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "process %s has not read %zu bytes of its stdin yet; %zu more would "
                           "pass --process-stdin-bytes (%zu); nothing was written, try again "
                           "once it reads",
                           proc_id(p), proc_stdin_held(p), n, proc_stdin_cap());
    else if (rc == -ENOBUFS)
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "%zu bytes of stdin do not fit in what is left of the sandbox's "
                           "buffer budget (--sandbox-buffer-bytes %llu, %llu bytes held); "
                           "nothing was written",
                           n, (unsigned long long)budget_cap(bg),
                           (unsigned long long)budget_used(bg));
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot hold the stdin: out of memory");
}

void api_process_stdin(struct app *app, http_req *req, const route_params *rp)
{
    char err[JX_ERR];
    proc *p = lookup(req, rp, NULL);
    if (!p)
        return;
    json_t *body = api_body_known(req, false, API_FIELDS_STDIN);
    if (!body)
        return;
    buf b;
    bool eof = false;
    int rc = stdin_data(body, app->cfg, &b, err, sizeof err);
    if (!rc)
        rc = jx_bool(body, "eof", NULL, &eof, err, sizeof err);
    json_decref(body);
    if (rc) {
        buf_free(&b);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    size_t n = b.len;
    rc = proc_stdin_write(p, b.data, n, eof);
    buf_free(&b);
    if (rc) {
        stdin_refused(req, p, rc, n);
        return;
    }
    json_t *j = proc_json(p);
    json_t *in = json_object_get(j, "stdin");
    api_respond_json(req, 200,
                     json_pack("{s:s, s:I, s:O, s:O}", "id", proc_id(p), "accepted", (json_int_t)n,
                               "open", json_object_get(in, "open"), "held",
                               json_object_get(in, "held")));
    json_decref(j);
}
