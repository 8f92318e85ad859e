/*
 * api_command.c — see api_command.h. The sink adds nothing of its own to what goes out:
 * each operation is one call of sse.h or http.h, so what the client sees is what the
 * engine asked for, in its order.
 */
#include "api_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "process.h"
#include "jsonx.h"

int api_cmd_parse(const json_t *body, const struct config *cfg, struct cmd_request *c, char *err,
                  size_t errlen)
{
    const char *cwd_in = NULL;
    memset(c, 0, sizeof *c);
    if (jx_string(body, "command", true, cfg->max_code_bytes, &c->command, err, errlen) ||
        jx_string(body, "cwd", false, 1024, &cwd_in, err, errlen) ||
        jx_env_map(body, "env", cfg->max_env_vars, &c->env, err, errlen) ||
        sbx_resolve_cwd(cwd_in, c->cwd, sizeof c->cwd, err, errlen))
        return -1;
    if (!c->command[0]) {
        snprintf(err, errlen, "field 'command' is empty");
        return -1;
    }
    return 0;
}

void api_cmd_respond_error(http_req *req, int rc, const char *cwd, const char *err,
                           const char *what)
{
    if (rc == -EAGAIN)
        http_respond_error(req, 429, "LIMIT_REACHED", "the sandbox is at its process limit: %s",
                           err);
    else if (rc == -ENOMEM) /* the sandbox's init forks only with memory to spare */
        http_respond_error(req, 507, "MEMORY_LIMIT",
                           "cannot start the %s: the sandbox's memory is full (delete files "
                           "in /workspace, /tmp or /dev/shm, or end a process): %s",
                           what, err);
    else if (rc == -ECANCELED)
        http_respond_error(req, 404, "SANDBOX_NOT_FOUND", "cannot start the %s: %s", what, err);
    else if (rc == -EBUSY || rc == -ETIMEDOUT)
        http_respond_error(req, 429, "LIMIT_REACHED", "cannot start the %s: %s", what, err);
    else if (rc == -ENOENT || rc == -ENOTDIR || rc == -EACCES)
        http_respond_error(req, 400, "VALIDATION_FAILED", "cannot start the %s in '%s': %s", what,
                           cwd, err);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot start the %s: %s", what, err);
}

/* ---- the sink ---- */

#define SINK(s) ((struct api_sink *)(s))

static int sink_begin(cmd_sink *s, struct budget *bg)
{
    http_req *req = SINK(s)->req;
    http_req_set_budget(req, bg);
    return req->want_sse ? sse_begin(&SINK(s)->sse, req) : 0;
}

static int sink_event(cmd_sink *s, const char *type, const char *json, size_t len)
{
    return sse_event(&SINK(s)->sse, type, json, len);
}

static int sink_text(cmd_sink *s, const char *type, esc_carry *carry, const void *data, size_t n,
                     bool final)
{
    return sse_event_text(&SINK(s)->sse, type, carry, data, n, final);
}

static void sink_end(cmd_sink *s)
{
    sse_end(&SINK(s)->sse);
    api_sink_free(SINK(s));
}

static void sink_answer(cmd_sink *s, char *json, size_t len)
{
    if (json)
        http_respond_take(SINK(s)->req, 200, "application/json", json, len, NULL);
    else
        http_respond_error(SINK(s)->req, 500, "INTERNAL_ERROR",
                           "the command's result does not fit");
    api_sink_free(SINK(s));
}

static void sink_failed(cmd_sink *s, int rc, const char *cwd, const char *msg)
{
    api_cmd_respond_error(SINK(s)->req, rc, cwd, msg, SINK(s)->what);
    api_sink_free(SINK(s));
}

void api_exec_drained(http_req *req, void *arg)
{
    (void)req;
    exec_resume(arg);
}

void api_exec_aborted(http_req *req, void *arg)
{
    (void)req;
    exec_abort(arg);
}

void api_follower_drained(http_req *req, void *arg)
{
    (void)req;
    proc_follower_resume(arg);
}

void api_follower_aborted(http_req *req, void *arg)
{
    (void)req;
    proc_follower_abort(arg);
}

size_t api_sink_queued(const cmd_sink *s)
{
    return http_queued(((const struct api_req_sink *)s)->req);
}

bool api_sink_gone(const cmd_sink *s)
{
    return ((const struct api_req_sink *)s)->req->aborted;
}

void api_sink_wait_drain(cmd_sink *s)
{
    ((struct api_req_sink *)s)->req->paused = true; /* http calls on_drain once drained */
}

static const struct cmd_sink_ops SINK_OPS = {
    .begin = sink_begin,
    .event = sink_event,
    .text = sink_text,
    .end = sink_end,
    .answer = sink_answer,
    .failed = sink_failed,
    .queued = api_sink_queued,
    .gone = api_sink_gone,
    .wait_drain = api_sink_wait_drain,
};

struct api_sink *api_sink_new(http_req *req, const char *what)
{
    struct api_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->sink.ops = &SINK_OPS;
    s->req = req;
    s->what = what;
    return s;
}

void api_sink_free(struct api_sink *s)
{
    free(s);
}
