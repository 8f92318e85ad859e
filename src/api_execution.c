/*
 * api_execution.c — executions as resources (API.md "Executions: re-attach, cancel"):
 * GET /v1/sandboxes/{sid}/executions/{eid}, GET …/{eid}/events (SSE), DELETE …/{eid};
 * and the two ways a request follows an execution (execution.h), shared with
 * POST …/execute (api_execute.c):
 *   - streamed: the execution's events with their ids, from after a given id, then live
 *     until `end`; a client that reads slowly pauses its follower (and, once the log is
 *     full of what it has not taken, the context: back-pressure);
 *   - plain: one document when the run is over (exe_document).
 * A request that goes away only detaches its follower: the run goes on (the re-attach
 * grace is the execution's). Every answer about an execution carries X-Execution-Id and
 * X-Context-Id. What a follower queues for its client is charged to the sandbox's budget
 * (http_req_set_budget).
 */
#include "api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "execution.h"
#include "sandbox.h"
#include "sse.h"

/* One request following one execution; freed by done or by the client's going away. */
struct api_follow {
    http_req *req;
    exe_follower *f;
    execution *e; /* valid while f is */
    uint64_t max_output;
    bool stream;
    sse sse;
    char hdr[160];
};

static void headers_of(const execution *e, char *hdr, size_t n)
{
    snprintf(hdr, n, "X-Execution-Id: %s\r\nX-Context-Id: %s\r\n", exe_id(e), exe_context_id(e));
}

/* The finished document of e as the answer to req. */
static void respond_document(http_req *req, const execution *e, uint64_t max_output,
                             const char *hdr)
{
    buf b;
    if (exe_document(e, max_output, &b)) {
        buf_free(&b);
        http_respond_error(req, 500, "INTERNAL_ERROR", "the execution's document does not fit");
        return;
    }
    size_t len = b.len;
    http_respond_take(req, 200, "application/json", buf_steal(&b), len, hdr);
}

static int follow_event(void *arg, uint64_t id, const char *type, const char *json, size_t len)
{
    struct api_follow *a = arg;
    return sse_event_id(&a->sse, type, id, json, len) == 1;
}

static void follow_done(void *arg)
{
    struct api_follow *a = arg;
    a->req->on_abort = NULL;
    a->req->on_drain = NULL;
    a->req->on_peer_eof = NULL;
    if (a->stream)
        sse_end(&a->sse);
    else
        respond_document(a->req, a->e, a->max_output, a->hdr);
    free(a);
}

static const struct exe_follower_ops FOLLOW_OPS = {
    .event = follow_event,
    .done = follow_done,
};

static void follow_drained(http_req *req, void *arg)
{
    struct api_follow *a = arg;
    (void)req;
    exe_follower_resume(a->f);
}

/* The client closed its side: it may be gone, the run does not wait for it. */
static void follow_peer_eof(http_req *req, void *arg)
{
    struct api_follow *a = arg;
    (void)req;
    exe_follower_loose(a->f);
}

/* The client went away: the run goes on without this follower. */
static void follow_aborted(http_req *req, void *arg)
{
    struct api_follow *a = arg;
    exe_follower_detach(a->f);
    req->on_abort = NULL;
    req->on_drain = NULL;
    req->on_peer_eof = NULL;
    if (a->stream)
        sse_end(&a->sse); /* completes the request; nothing more is written */
    else
        http_respond(req, 202, "application/json", "{\"detached\":true}", 17, a->hdr);
    free(a);
}

int api_exe_attach(struct app *app, http_req *req, execution *e, bool stream, uint64_t after)
{
    if (exe_followers(e) >= app->cfg->max_followers) {
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "execution %s has %u clients attached, the limit (--max-followers)",
                           exe_id(e), exe_followers(e));
        return -EBUSY;
    }
    struct api_follow *a = calloc(1, sizeof *a);
    if (a)
        a->f = exe_follow(e, stream, after, &FOLLOW_OPS, a);
    if (!a || !a->f) {
        free(a);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return -ENOMEM;
    }
    a->req = req;
    a->e = e;
    a->stream = stream;
    a->max_output = app->cfg->max_output_bytes;
    headers_of(e, a->hdr, sizeof a->hdr);
    http_req_set_budget(req, exe_budget(e));
    req->cb_arg = a;
    req->on_abort = follow_aborted;
    req->on_drain = follow_drained;
    req->on_peer_eof = follow_peer_eof;
    if (req->peer_eof)
        exe_follower_loose(a->f);
    if (stream)
        sse_begin_with(&a->sse, req, a->hdr);
    exe_follower_start(a->f);
    return 0;
}

/* ---- the routes ---- */

/* The execution of the route's {eid} in its sandbox, or NULL when the request has been
 * answered (404 for one that does not exist there, or no longer). */
static execution *lookup(http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return NULL;
    const char *eid = route_param(p, "eid");
    execution *e = eid ? exe_find(sb, eid) : NULL;
    if (!e)
        http_respond_error(req, 404, "NOT_FOUND",
                           "execution '%.64s' does not exist in sandbox '%s' (or it finished "
                           "longer than --execution-retention-ms ago)",
                           eid ? eid : "", sb->id);
    return e;
}

void api_execution_get(struct app *app, http_req *req, const route_params *p)
{
    execution *e = lookup(req, p);
    if (!e)
        return;
    char hdr[160];
    headers_of(e, hdr, sizeof hdr);
    if (exe_state(e) == EXE_DONE) {
        http_req_set_budget(req, exe_budget(e));
        respond_document(req, e, app->cfg->max_output_bytes, hdr);
        return;
    }
    json_t *j = exe_summary_json(e);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    http_respond_take(req, 200, "application/json", s, strlen(s), hdr);
}

/* The id to replay after: ?after=N, else Last-Event-ID, else 0. -1 when malformed. */
static int replay_from(const http_req *req, uint64_t *after)
{
    const char *v = NULL;
    const char *q = strstr(req->query, "after=");
    if (q && (q == req->query || q[-1] == '&'))
        v = q + 6;
    else if (req->last_event_id[0])
        v = req->last_event_id;
    *after = 0;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || (*end && *end != '&') || v[0] == '-')
        return -1;
    *after = n;
    return 0;
}

void api_execution_events(struct app *app, http_req *req, const route_params *p)
{
    execution *e = lookup(req, p);
    if (!e)
        return;
    uint64_t after;
    if (replay_from(req, &after)) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "'after' (or Last-Event-ID) must be an event id, a non-negative "
                           "integer");
        return;
    }
    api_exe_attach(app, req, e, true, after);
}

void api_execution_delete(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    execution *e = lookup(req, p);
    if (!e)
        return;
    char hdr[160], body[200];
    headers_of(e, hdr, sizeof hdr);
    int rc = exe_cancel(e, "the execution was cancelled (DELETE)");
    int n = snprintf(body, sizeof body, "{\"id\":\"%s\",\"cancelled\":%s,\"interrupted\":%s}",
                     exe_id(e), rc == 1 ? "true" : "false", rc == 2 ? "true" : "false");
    http_respond(req, 200, "application/json", body, (size_t)n, hdr);
}
