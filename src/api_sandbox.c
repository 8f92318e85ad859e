/*
 * api_sandbox.c — the sandbox routes of API.md: PUT (get-or-create), POST (generated id),
 * GET one and all, DELETE (answered once every process has ended and the workspace is
 * gone). A create is answered once the sandbox is ready (its init built it), never by
 * waiting on the loop; a PUT of an id being created waits for that same creation and
 * gets 200 (the sandbox exists; this request did not create it) or the creation's error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_fields.h"
#include "api_json.h"
#include "jsonx.h"
#include "lifecycle.h"
#include "log.h"
#include "sandbox.h"
#include "sandbox_store.h"
#include "stamp.h"

/* The creation this request started (or joined) ended. */
static void created(sandbox *s, const char *id, int rc, const char *err, void *arg, int status)
{
    http_req *req = arg;
    if (rc) {
        log_error("sandbox %s: cannot create: %s", id, err);
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot create sandbox '%s': %s", id,
                           err && err[0] ? err : strerror(-rc));
        return;
    }
    if (status == 201)
        log_info("sandbox %s created", id);
    api_respond_json(req, status, sbx_to_json(s));
}

static void on_created(sandbox *s, const char *id, int rc, const char *err, void *arg)
{
    created(s, id, rc, err, arg, 201);
}

/* A PUT that joined a creation under way: its body is compared with what was created. */
struct join {
    http_req *req;
    json_t *body;
};

static void on_joined(sandbox *s, const char *id, int rc, const char *err, void *arg)
{
    struct join *w = arg;
    char why[JX_ERR];
    if (!rc && s && sbx_same_settings(s, w->body, why, sizeof why))
        http_respond_error(w->req, 409, "CONFLICT", "%s", why);
    else
        created(s, id, rc, err, w->req, 200); /* it exists now; this request did not create it */
    json_decref(w->body);
    free(w);
}

/* Get-or-create of an id that exists or is being created: answered (1), or 0 when it is
 * neither. Takes body (released) when it answers. */
static int get_existing(http_req *req, const char *id, json_t *body)
{
    char err[JX_ERR];
    sandbox *s = sbx_find(id);
    if (s) {
        if (sbx_same_settings(s, body, err, sizeof err))
            http_respond_error(req, 409, "CONFLICT", "%s", err);
        else
            api_respond_json(req, 200, sbx_to_json(s));
        json_decref(body);
        return 1;
    }
    /* Being created by another request: wait for that creation, answered like it. */
    struct join *w = malloc(sizeof *w);
    int jr = w ? sbx_join(id, on_joined, w) : -ENOMEM;
    if (jr == 0) {
        *w = (struct join){ req, body };
        return 1;
    }
    free(w);
    if (jr == -ENOENT)
        return 0;
    json_decref(body);
    if (jr == -EBUSY)
        http_respond_error(req, 429, "LIMIT_REACHED",
                           "too many requests already wait for "
                           "sandbox '%s' to be created (--max-pending-spawns)",
                           id);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
    return 1;
}

/* What a create body (or a stored sandbox's settings) asks for. */
struct settings {
    struct sbx_limits lim;
    struct sbx_lifecycle life;
    bool network_host;
    const json_t *env; /* borrowed from the body */
    json_t *normal;    /* the body with every limit filled in: what is stored (owned) */
};

/* Parse and check a create body; 0, or -1 with err naming the field. The normalised
 * copy keeps every other field of the body as it came, so that whatever the create
 * accepts comes back the same way after a restart (sandbox_store.h). */
static int parse_settings(struct app *app, const json_t *body, struct settings *st, char *err,
                          size_t errlen)
{
    const char *network = "none";
    st->env = NULL;
    st->normal = NULL;
    if (sbx_parse_limits(json_object_get(body, "limits"), &st->lim, err, errlen) ||
        sbx_parse_lifecycle(json_object_get(body, "lifecycle"), &st->life, err, errlen) ||
        jx_string(body, "network", false, 16, &network, err, errlen) ||
        jx_env_map(body, "env", app->cfg->max_env_vars, &st->env, err, errlen))
        return -1;
    if (strcmp(network, "none") != 0 && strcmp(network, "host") != 0) {
        snprintf(err, errlen, "field 'network' must be \"none\" or \"host\", got \"%.16s\"",
                 network);
        return -1;
    }
    st->network_host = strcmp(network, "host") == 0;
    if (st->network_host && !app->cfg->allow_host_network) {
        snprintf(err, errlen,
                 "field 'network': \"host\" (the host's own network) is refused by this daemon; "
                 "the operator allows it with --allow-host-network");
        return -1;
    }
    st->normal = json_is_object(body) ? json_deep_copy(body) : json_object();
    const struct sbx_limits *l = &st->lim;
    json_object_set_new(st->normal, "limits",
                        json_pack("{s:I, s:I, s:f, s:I, s:I, s:I}", "memoryMb",
                                  (json_int_t)l->memory_mb, "pids", (json_int_t)l->pids, "cpus",
                                  l->cpus, "diskMb", (json_int_t)l->disk_mb, "tmpMb",
                                  (json_int_t)l->tmp_mb, "timeoutMs", (json_int_t)l->timeout_ms));
    json_object_set_new(st->normal, "network", json_string(network));
    json_object_set_new(st->normal, "lifecycle", sbx_lifecycle_json(&st->life));
    return 0;
}

/* sbx_create_with of what st asks for (its normalised copy released), restored being
 * the stored record of a sandbox kept across a restart (or NULL). */
static int create_from(const char *id, struct settings *st, const json_t *restored,
                       sbx_created_cb cb, void *arg, char *err, size_t errlen)
{
    err[0] = '\0';
    const struct sbx_spec spec = { .id = id,
                                   .lim = &st->lim,
                                   .network_host = st->network_host,
                                   .env = st->env,
                                   .life = &st->life,
                                   .settings = st->normal,
                                   .restored = restored };
    int rc = sbx_create_with(&spec, cb, arg, err, errlen);
    json_decref(st->normal);
    st->normal = NULL;
    return rc;
}

/* Parse a create body and create; answers the request in every case (at once, or when
 * the sandbox is ready). */
static void create(struct app *app, http_req *req, const char *id, bool get_or_create)
{
    char err[JX_ERR];
    json_t *body = api_body_known(req, true, API_FIELDS_SANDBOX);
    if (!body)
        return;
    struct settings st;
    if (parse_settings(app, body, &st, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    if (get_or_create && get_existing(req, id, body)) {
        json_decref(st.normal);
        return;
    }
    int rc = create_from(id, &st, NULL, on_created, req, err, sizeof err);
    json_decref(body);
    if (rc == 0)
        return; /* answered by on_created */
    if (rc == -EMFILE) {
        http_respond_error(req, 429, "LIMIT_REACHED", "%s", err);
        return;
    }
    if (rc == -EEXIST) {
        http_respond_error(req, 409, "CONFLICT", "sandbox '%s' already exists", id);
        return;
    }
    log_error("sandbox %s: cannot create: %s", id, err);
    http_respond_error(req, 500, "INTERNAL_ERROR", "cannot create sandbox '%s': %s", id,
                       err[0] ? err : strerror(-rc));
}

/* The sandbox named by {sid}, or an answer (400, 404) and NULL. Neither resumes it nor
 * counts as activity: reading a sandbox's state must not change it. */
static sandbox *find(http_req *req, const route_params *p)
{
    const char *id = route_param(p, "sid");
    if (!sbx_valid_id(id)) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "'%.80s' is not a valid sandbox id ([A-Za-z0-9][A-Za-z0-9._-]{0,62})",
                           id);
        return NULL;
    }
    sandbox *s = sbx_find(id);
    if (!s)
        http_respond_error(req, 404, "SANDBOX_NOT_FOUND", "sandbox '%s' does not exist", id);
    return s;
}

/* Reads the daemon answers from what it holds (GET of processes, their logs, contexts)
 * neither need the sandbox's processes nor count as its activity: a dashboard that polls
 * them must not keep a sandbox awake, and a client can watch a suspended one. Everything
 * else (runs, commands, files, any change) resumes it. */
static bool needs_sandbox(const http_req *req)
{
    bool read = strcmp(req->method_name, "GET") == 0 || strcmp(req->method_name, "HEAD") == 0;
    return !read || (req->route && strstr(req->route, "/files"));
}

sandbox *api_sandbox_lookup(http_req *req, const route_params *p)
{
    sandbox *s = find(req, p);
    if (s && needs_sandbox(req) && life_resume(s)) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot resume sandbox '%s'", s->id);
        return NULL;
    }
    return s;
}

void api_sandbox_put(struct app *app, http_req *req, const route_params *p)
{
    const char *id = route_param(p, "sid");
    if (!sbx_valid_id(id)) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "'%.80s' is not a valid sandbox id ([A-Za-z0-9][A-Za-z0-9._-]{0,62})",
                           id);
        return;
    }
    create(app, req, id, true);
}

void api_sandbox_post(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    char id[32];
    if (stamp_id(id, sizeof id, "sbx-")) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "no randomness for an id");
        return;
    }
    create(app, req, id, false);
}

void api_sandbox_get(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *s = find(req, p);
    if (s)
        api_respond_json(req, 200, sbx_to_json(s));
}

void api_sandbox_list(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    json_t *arr = json_array();
    for (sandbox *s = sbx_first(); s; s = s->lnext)
        json_array_append_new(arr, sbx_to_json(s));
    api_respond_json(req, 200, json_pack("{s:o}", "sandboxes", arr));
}

static void deleted(void *arg)
{
    http_req *req = arg;
    http_respond(req, 200, "application/json", "{\"deleted\":true}", 16, NULL);
}

void api_sandbox_delete(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *s = find(req, p); /* destroying thaws it first (lifecycle.c) */
    if (s)
        sbx_destroy(s, deleted, req);
}

/* ---- POST …/suspend, POST …/resume ---- */

static void suspended(sandbox *s, int rc, const char *msg, void *arg)
{
    http_req *req = arg;
    if (rc == 0)
        api_respond_json(req, 200, sbx_to_json(s));
    else if (rc == -ECANCELED)
        http_respond_error(req, 409, "CONFLICT",
                           "sandbox '%s' was resumed by another request before it was frozen",
                           s->id);
    else if (rc == -ESRCH)
        http_respond_error(req, 404, "SANDBOX_NOT_FOUND",
                           "sandbox '%s' was deleted before it was frozen", s->id);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot suspend sandbox '%s': %s", s->id,
                           msg && msg[0] ? msg : strerror(-rc));
}

void api_sandbox_suspend(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *s = find(req, p);
    if (!s || api_body_none(req))
        return;
    int rc = life_suspend(s, suspended, req);
    if (rc == -ENOTSUP)
        http_respond_error(req, 409, "CONFLICT",
                           "sandbox '%s' cannot be suspended: this daemon has no freezer "
                           "cgroup (it runs without root, or the freezer is not mounted)",
                           s->id);
    else if (rc)
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot suspend sandbox '%s': %s", s->id,
                           strerror(-rc));
}

void api_sandbox_resume(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *s = find(req, p);
    if (!s || api_body_none(req))
        return;
    if (life_resume(s))
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot resume sandbox '%s'", s->id);
    else
        api_respond_json(req, 200, sbx_to_json(s));
}

/* ---- restarts ---- */

bool api_ended_by_restart(http_req *req, const sandbox *s, const char *code, const char *what,
                          const char *prefix, const char *id)
{
    if (!store_ended_by_restart(s, id, prefix))
        return false;
    http_respond_error(req, 404, code,
                       "%s '%.64s' of sandbox '%s' ended when the daemon restarted (contexts, "
                       "runs and processes do not survive a restart; the sandbox and its files "
                       "do)",
                       what, id, s->id);
    return true;
}

static void on_restored(sandbox *s, const char *id, int rc, const char *err, void *arg)
{
    unsigned *pending = arg;
    (*pending)--;
    if (rc)
        log_error("sandbox %s: not restored: %s (its files stay in the state dir)", id,
                  err && err[0] ? err : strerror(-rc));
    else
        log_info("sandbox %s restored (%s)", id, s->id);
}

struct restore_all {
    struct app *app;
    unsigned *pending;
    unsigned started;
};

static void restore_one(const char *id, const json_t *rec, void *arg)
{
    struct restore_all *r = arg;
    char err[JX_ERR];
    struct settings st;
    if (parse_settings(r->app, json_object_get(rec, "settings"), &st, err, sizeof err)) {
        log_error("sandbox %s: not restored: its stored settings are refused now: %s (its files "
                  "stay in the state dir)",
                  id, err);
        return;
    }
    int rc = create_from(id, &st, rec, on_restored, r->pending, err, sizeof err);
    if (rc) {
        log_error("sandbox %s: not restored: %s (its files stay in the state dir)", id,
                  err[0] ? err : strerror(-rc));
        return;
    }
    (*r->pending)++;
    r->started++;
}

unsigned api_sandbox_restore_all(struct app *app, unsigned *pending)
{
    struct restore_all r = { app, pending, 0 };
    store_load_all(restore_one, &r);
    return r.started;
}
