/*
 * sandbox.c — the sandbox registry (see sandbox.h): a hash of live sandboxes by id plus a
 * creation-ordered list for listing, the per-sandbox limits, and the environment
 * allow-list every process in a sandbox starts from.
 *
 * Sandboxes being created are not in the hash or the list (nothing may use them before
 * their jail is ready) but in a short list of struct creation, which reserves their id
 * and counts against --max-sandboxes. Concurrent get-or-create of an id being created
 * joins that creation (up to --max-pending-spawns requests) rather than failing with 409:
 * a client that retries its PUT, or two workers that share a sandbox id, then see one
 * sandbox, created once.
 */
#include "stamp.h"
#include "sandbox.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "lifecycle.h"
#include "pysite.h"
#include "log.h"
#include "sandbox_store.h"

#define NBUCKETS 1024
#define ENV_MAX_BYTES (1 << 20) /* the whole environment: execve's own limit is ~2 MiB */

static const struct config *cfg;
static sandbox *buckets[NBUCKETS];
static sandbox *list_head, *list_tail;
static unsigned count;
#define MAX_HOOKS 8 /* one per module that keeps things in a sandbox */
static void (*destroy_hooks[MAX_HOOKS])(sandbox *s);
static unsigned nhooks;

/* A request waiting for a creation under way. */
struct joiner {
    struct joiner *next;
    sbx_created_cb cb;
    void *arg;
};

/* A creation under way: the sandbox (no jail yet), who asked, who joined. */
struct creation {
    struct creation *next;
    sandbox *s;
    sbx_created_cb cb;
    void *arg;
    struct joiner *joiners; /* in arrival order */
    unsigned njoiners;
    bool restored; /* from a stored record: nothing to write */
};
static struct creation *creations;
static unsigned ncreating;
static bool stopping; /* sbx_stop_all: sandboxes end but stay on disk */

/* The environment every sandboxed process starts from. Nothing of the daemon's own
 * environment is inherited: secrets in it (tokens, cloud credentials) never reach code. */
/* clang-format off */
static const char *const BASE_ENV[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/workspace",          /* dotfiles land where the user can see them */
    "USER=sandbox",
    "LOGNAME=sandbox",
    "SHELL=/bin/sh",
    "TMPDIR=/tmp",
    "LANG=C.UTF-8",             /* UTF-8 stdio for Python, Node and coreutils */
    "PYTHONUNBUFFERED=1",       /* scripts' output streams as it is printed */
    "MPLBACKEND=Agg",           /* no display in a sandbox */
    /* Packages (docs/packages.md): pip installs into the sandbox's own user site under
     * /workspace (the system's site dirs are read-only binds: pip falls back to --user by
     * itself). PEP 668's marker protects a distribution's Python from pip; here that Python
     * cannot be written at all, so overriding the marker only lets pip use the user site. */
    "PYTHONUSERBASE=/workspace/.local",
    "PIP_BREAK_SYSTEM_PACKAGES=1",
    "PIP_DISABLE_PIP_VERSION_CHECK=1", /* no index query on every pip run */
    "NPM_CONFIG_UPDATE_NOTIFIER=false", /* nor a registry query on every npm run */
};
/* clang-format on */

void sbx_init(const struct config *c)
{
    cfg = c;
}

bool sbx_valid_id(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > SBX_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        bool alnum =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && (i == 0 || (ch != '.' && ch != '_' && ch != '-')))
            return false;
    }
    return true;
}

static unsigned hash(const char *s)
{
    uint32_t h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % NBUCKETS;
}

sandbox *sbx_find(const char *id)
{
    for (sandbox *s = buckets[hash(id)]; s; s = s->hnext)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

unsigned sbx_count(void)
{
    return count;
}

sandbox *sbx_first(void)
{
    return list_head;
}

/* An integer limit from a request: first the field's own range (what the kernel and the
 * API accept), then the operator's ceiling, named with its flag. */
static int limit_u64(const json_t *obj, const char *field, uint64_t min, uint64_t range_max,
                     uint64_t ceiling, const char *flag, uint64_t *out, char *err, size_t errlen)
{
    bool present;
    uint64_t v = 0;
    if (jx_uint(obj, field, min, range_max, &present, &v, err, errlen))
        return -1;
    if (!present)
        return 0;
    if (v > ceiling) {
        snprintf(err, errlen, "field '%s' is %llu, above this daemon's maximum of %llu (%s)", field,
                 (unsigned long long)v, (unsigned long long)ceiling, flag);
        return -1;
    }
    *out = v;
    return 0;
}

int sbx_parse_limits(const json_t *limits, struct sbx_limits *o, char *err, size_t errlen)
{
    o->memory_mb = cfg->memory_mb;
    o->pids = cfg->pids;
    o->cpus = cfg->cpus;
    o->disk_mb = cfg->disk_mb;
    o->tmp_mb = cfg->tmp_mb;
    o->timeout_ms = cfg->exec_timeout_ms;
    if (!limits || json_is_null(limits))
        return 0;
    if (!json_is_object(limits)) {
        snprintf(err, errlen, "field 'limits' must be an object");
        return -1;
    }
    bool has_cpus;
    double cpus = o->cpus;
    if (limit_u64(limits, "memoryMb", 16, 1 << 24, cfg->max_memory_mb, "--max-memory-mb",
                  &o->memory_mb, err, errlen) ||
        limit_u64(limits, "pids", 8, 1 << 22, cfg->max_pids, "--max-pids", &o->pids, err, errlen) ||
        jx_number(limits, "cpus", 0.01, 1024, &has_cpus, &cpus, err, errlen) ||
        limit_u64(limits, "diskMb", 1, 1 << 24, cfg->max_disk_mb, "--max-disk-mb", &o->disk_mb, err,
                  errlen) ||
        limit_u64(limits, "tmpMb", 1, 1 << 24, cfg->max_tmp_mb, "--max-tmp-mb", &o->tmp_mb, err,
                  errlen) ||
        sbx_parse_timeout(limits, &o->timeout_ms, err, errlen))
        return -1;
    if (has_cpus && cpus > cfg->max_cpus) {
        snprintf(err, errlen,
                 "field 'cpus' is %g, above this daemon's maximum of %g "
                 "(--max-cpus)",
                 cpus, cfg->max_cpus);
        return -1;
    }
    o->cpus = cpus;
    return 0;
}

int sbx_parse_timeout(const json_t *obj, uint64_t *timeout_ms, char *err, size_t errlen)
{
    return limit_u64(obj, "timeoutMs", 0, 86400000, cfg->max_timeout_ms, "--max-timeout-ms",
                     timeout_ms, err, errlen);
}

int sbx_parse_lifecycle(const json_t *life, struct sbx_lifecycle *o, char *err, size_t errlen)
{
    o->idle_timeout_ms = cfg->sandbox_idle_timeout_ms;
    o->on_idle =
        strcmp(cfg->sandbox_on_idle_name, "delete") == 0 ? SBX_IDLE_DELETE : SBX_IDLE_SUSPEND;
    o->max_age_ms = cfg->sandbox_max_age_ms;
    if (!life || json_is_null(life))
        return 0;
    if (!json_is_object(life)) {
        snprintf(err, errlen, "field 'lifecycle' must be an object");
        return -1;
    }
    bool present;
    const char *on_idle = NULL;
    if (jx_uint(life, "idleTimeoutMs", 0, UINT64_C(2592000000), &present, &o->idle_timeout_ms, err,
                errlen) ||
        jx_uint(life, "maxAgeMs", 0, UINT64_C(31536000000), &present, &o->max_age_ms, err,
                errlen) ||
        jx_string(life, "onIdle", false, 16, &on_idle, err, errlen))
        return -1;
    if (on_idle && strcmp(on_idle, "suspend") != 0 && strcmp(on_idle, "delete") != 0) {
        snprintf(err, errlen, "field 'onIdle' must be \"suspend\" or \"delete\", got \"%.16s\"",
                 on_idle);
        return -1;
    }
    if (on_idle)
        o->on_idle = strcmp(on_idle, "delete") == 0 ? SBX_IDLE_DELETE : SBX_IDLE_SUSPEND;
    return 0;
}

/* The limits and lifecycle of a sandbox as the API shows them. */
static json_t *limits_json(const struct sbx_limits *l)
{
    return json_pack("{s:I, s:I, s:f, s:I, s:I, s:I}", "memoryMb", (json_int_t)l->memory_mb, "pids",
                     (json_int_t)l->pids, "cpus", l->cpus, "diskMb", (json_int_t)l->disk_mb,
                     "tmpMb", (json_int_t)l->tmp_mb, "timeoutMs", (json_int_t)l->timeout_ms);
}

json_t *sbx_lifecycle_json(const struct sbx_lifecycle *l)
{
    return json_pack("{s:I, s:s, s:I}", "idleTimeoutMs", (json_int_t)l->idle_timeout_ms, "onIdle",
                     l->on_idle == SBX_IDLE_DELETE ? "delete" : "suspend", "maxAgeMs",
                     (json_int_t)l->max_age_ms);
}

/* The fields of asked (the request's object, as given) that differ in want (what it
 * asks for, normalized) from have (the sandbox's): -1 with err naming the first. */
static int same_fields(const char *id, const char *what, const json_t *asked, json_t *want,
                       json_t *have, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach((json_t *)asked, k, v)
    {
        json_t *a = json_object_get(want, k), *b = json_object_get(have, k);
        if (json_is_null(v) || !a || !b || json_equal(a, b))
            continue;
        char *sa = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
        char *sb = json_dumps(b, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(err, errlen,
                 "sandbox '%s' exists with %s.%s %.40s; this request asks for %.40s "
                 "(DELETE it first, or ask for the same)",
                 id, what, k, sb ? sb : "?", sa ? sa : "?");
        free(sa);
        free(sb);
        rc = -1;
        break;
    }
    json_decref(want);
    json_decref(have);
    return rc;
}

int sbx_same_settings(const sandbox *s, const json_t *body, char *err, size_t errlen)
{
    struct sbx_limits lim;
    struct sbx_lifecycle life;
    const json_t *limits = json_object_get(body, "limits"),
                 *lc = json_object_get(body, "lifecycle");
    const json_t *net = json_object_get(body, "network"), *env = json_object_get(body, "env");
    if (json_is_object(limits) && (sbx_parse_limits(limits, &lim, err, errlen) ||
                                   same_fields(s->id, "limits", limits, limits_json(&lim),
                                               limits_json(&s->limits), err, errlen)))
        return -1;
    if (json_is_object(lc) && (sbx_parse_lifecycle(lc, &life, err, errlen) ||
                               same_fields(s->id, "lifecycle", lc, sbx_lifecycle_json(&life),
                                           sbx_lifecycle_json(&s->lifecycle), err, errlen)))
        return -1;
    const char *have_net = s->network_host ? "host" : "none";
    if (json_is_string(net) && strcmp(json_string_value(net), have_net) != 0) {
        snprintf(err, errlen,
                 "sandbox '%s' exists with network \"%s\"; this request asks for \"%.16s\"", s->id,
                 have_net, json_string_value(net));
        return -1;
    }
    if (json_is_object(env) && !json_equal(env, s->env)) {
        snprintf(err, errlen,
                 "sandbox '%s' exists with another env (%zu variables); this request asks "
                 "for %zu variables that differ",
                 s->id, json_object_size(s->env), json_object_size(env));
        return -1;
    }
    return 0;
}

static struct creation *creation_find(const char *id)
{
    for (struct creation *c = creations; c; c = c->next)
        if (strcmp(c->s->id, id) == 0)
            return c;
    return NULL;
}

static void registry_add(sandbox *s)
{
    assert(!sbx_find(s->id)); /* ids are unique: sbx_create reserved this one */
    unsigned h = hash(s->id);
    s->hnext = buckets[h];
    buckets[h] = s;
    s->lprev = list_tail;
    if (list_tail)
        list_tail->lnext = s;
    else
        list_head = s;
    list_tail = s;
    count++;
}

/* The jail is ready or could not be made: register or free, then tell everyone. */
static void jail_ready(jail *j, int rc, const char *msg, void *arg)
{
    struct creation *c = arg;
    bool listed = false;
    for (struct creation **pp = &creations; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            listed = true;
            break;
        }
    assert(listed && ncreating > 0); /* the jail answers each creation exactly once */
    (void)listed;
    ncreating--;
    sandbox *s = c->s;
    char id[SBX_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", s->id);
    if (rc) {
        budget_unref(s->budget);
        json_decref(s->env);
        json_decref(s->settings);
        free(s);
        s = NULL;
    } else {
        s->jail = j;
        if (!s->created_ms)
            s->created_ms = stamp_now_ms();
        s->last_activity_ms = stamp_now_ms();
        registry_add(s);
        life_attach(s);
        if (!c->restored)
            (void)store_save(s); /* logged; the sandbox lives on, without durability */
    }
    c->cb(s, id, rc, msg, c->arg);
    while (c->joiners) {
        struct joiner *w = c->joiners;
        c->joiners = w->next;
        w->cb(s, id, rc, msg, w->arg);
        free(w);
    }
    free(c);
}

int sbx_create(const char *id, const struct sbx_limits *lim, bool network_host, const json_t *env,
               const struct sbx_lifecycle *life, sbx_created_cb cb, void *arg, char *err,
               size_t errlen)
{
    const struct sbx_spec spec = {
        .id = id, .lim = lim, .network_host = network_host, .env = env, .life = life
    };
    return sbx_create_with(&spec, cb, arg, err, errlen);
}

/* A restored sandbox's slot, creation time and generation, from its record. */
static int spec_restored(sandbox *s, const json_t *rec, int *slot)
{
    json_int_t sl = json_integer_value(json_object_get(rec, "slot"));
    json_int_t created = json_integer_value(json_object_get(rec, "createdAt"));
    if (sl < 0 || sl > 1 << 20 || created <= 0)
        return -EINVAL;
    *slot = (int)sl;
    s->created_ms = (uint64_t)created;
    s->born_gen = (uint16_t)json_integer_value(json_object_get(rec, "bornGeneration"));
    return 0;
}

static void sandbox_free_unborn(sandbox *s, struct creation *c)
{
    budget_unref(s->budget);
    json_decref(s->env);
    json_decref(s->settings);
    free(s);
    free(c);
}

int sbx_create_with(const struct sbx_spec *sp, sbx_created_cb cb, void *arg, char *err,
                    size_t errlen)
{
    const char *id = sp->id;
    const struct sbx_limits *lim = sp->lim;
    if (stopping) {
        snprintf(err, errlen, "the daemon is shutting down");
        return -ESHUTDOWN;
    }
    if (sbx_find(id) || creation_find(id))
        return -EEXIST;
    if (count + ncreating >= cfg->max_sandboxes) {
        snprintf(err, errlen, "%u sandboxes exist, the limit (--max-sandboxes)", count + ncreating);
        return -EMFILE;
    }
    sandbox *s = calloc(1, sizeof *s);
    struct creation *c = calloc(1, sizeof *c);
    if (!s || !c) {
        free(s);
        free(c);
        return -ENOMEM;
    }
    snprintf(s->id, sizeof s->id, "%s", id);
    s->limits = *lim;
    s->network_host = sp->network_host;
    if (sp->life)
        s->lifecycle = *sp->life;
    else
        (void)sbx_parse_lifecycle(NULL, &s->lifecycle, err, errlen);
    s->env = sp->env ? json_deep_copy(sp->env) : json_object();
    /* what is stored (sandbox_store.h): the request's normalised body, or, for a sandbox
     * made without one (the compatibility surfaces' get-or-create), what it got */
    s->settings = sp->settings ? json_deep_copy(sp->settings)
                               : json_pack("{s:o, s:s, s:O, s:o}", "limits", limits_json(lim),
                                           "network", sp->network_host ? "host" : "none", "env",
                                           s->env, "lifecycle", sbx_lifecycle_json(&s->lifecycle));
    s->born_gen = store_generation();
    s->budget = budget_new(cfg->sandbox_buffer_bytes);
    int slot = -1;
    if (!s->budget || (sp->restored && spec_restored(s, sp->restored, &slot))) {
        int rc = s->budget ? -EINVAL : -ENOMEM;
        snprintf(err, errlen, "%s", s->budget ? "its stored record is invalid" : "out of memory");
        sandbox_free_unborn(s, c);
        return rc;
    }
    struct jail_opts jo = {
        .id = id,
        .network_host = sp->network_host,
        .limits = {
            .memory_bytes = lim->memory_mb << 20,
            .pids = (uint32_t)lim->pids,
            .cpu_millis = (uint32_t)(lim->cpus * 1000 + 0.5),
            .tmp_bytes = lim->tmp_mb << 20,
            .disk_bytes = lim->disk_mb << 20,
        },
        .restore = sp->restored != NULL,
        .slot = slot,
    };
    c->s = s;
    c->cb = cb;
    c->arg = arg;
    c->restored = sp->restored != NULL;
    int rc = jail_create(uv_default_loop(), &jo, jail_ready, c, err, errlen);
    if (rc) {
        sandbox_free_unborn(s, c);
        return rc;
    }
    c->next = creations;
    creations = c;
    ncreating++;
    return 0;
}

int sbx_ensure(const char *id, sbx_created_cb cb, void *arg, char *err, size_t errlen)
{
    int rc = sbx_join(id, cb, arg);
    if (rc == -EBUSY)
        snprintf(err, errlen,
                 "too many requests already wait for sandbox '%s' to be created "
                 "(--max-pending-spawns)",
                 id);
    if (rc != -ENOENT)
        return rc;
    struct sbx_limits lim;
    err[0] = '\0';
    if (sbx_parse_limits(NULL, &lim, err, errlen))
        return -EINVAL;
    return sbx_create(id, &lim, false, NULL, NULL, cb, arg, err, errlen);
}

int sbx_join(const char *id, sbx_created_cb cb, void *arg)
{
    struct creation *c = creation_find(id);
    if (!c)
        return -ENOENT;
    if (c->njoiners >= cfg->max_pending_spawns)
        return -EBUSY;
    struct joiner *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->cb = cb;
    w->arg = arg;
    struct joiner **tail = &c->joiners;
    while (*tail)
        tail = &(*tail)->next;
    *tail = w;
    c->njoiners++;
    return 0;
}

int sbx_on_destroy(void (*hook)(sandbox *s))
{
    if (nhooks >= MAX_HOOKS) {
        /* a programming error (one hook per module, registered at start-up) */
        log_error("sbx_on_destroy: more than %d destroy hooks", MAX_HOOKS);
        assert(!"too many sandbox destroy hooks: raise MAX_HOOKS");
        return -ENOSPC;
    }
    destroy_hooks[nhooks++] = hook;
    return 0;
}

static void unregister(sandbox *s)
{
    sandbox **pp = &buckets[hash(s->id)];
    while (*pp && *pp != s)
        pp = &(*pp)->hnext;
    assert(*pp == s && count > 0); /* only registered sandboxes are unregistered */
    if (*pp)
        *pp = s->hnext;
    if (s->lprev)
        s->lprev->lnext = s->lnext;
    else
        list_head = s->lnext;
    if (s->lnext)
        s->lnext->lprev = s->lprev;
    else
        list_tail = s->lprev;
    count--;
}

struct destroy_wait {
    sandbox *s;
    void (*done)(void *);
    void *arg;
};

static void destroyed(void *arg)
{
    struct destroy_wait *w = arg;
    log_info("sandbox %s %s", w->s->id, stopping ? "stopped (kept on disk)" : "destroyed");
    json_decref(w->s->env);
    json_decref(w->s->settings);
    budget_unref(w->s->budget); /* holders of charged bytes keep their own references */
    free(w->s);
    if (w->done)
        w->done(w->arg);
    free(w);
}

void sbx_destroy(sandbox *s, void (*done)(void *), void *arg)
{
    if (s->destroying)
        return;
    s->destroying = true;
    if (!stopping)
        store_forget(s->id); /* first: a crash from here on must not bring it back */
    unregister(s);
    for (unsigned i = 0; i < nhooks; i++)
        destroy_hooks[i](s);
    void (*end)(jail *, void (*)(void *), void *) = stopping ? jail_release : jail_destroy;
    struct destroy_wait *w = malloc(sizeof *w);
    if (!w) {
        /* cannot track completion: still destroy, report done now */
        end(s->jail, NULL, NULL);
        if (done)
            done(arg);
        return;
    }
    *w = (struct destroy_wait){ s, done, arg };
    end(s->jail, destroyed, w);
}

struct destroy_all {
    unsigned left;
    void (*done)(void *);
    void *arg;
};

static void one_destroyed(void *arg)
{
    struct destroy_all *d = arg;
    assert(d->left > 0); /* one call per sandbox counted */
    if (--d->left == 0) {
        if (d->done)
            d->done(d->arg);
        free(d);
    }
}

void sbx_destroy_all(void (*done)(void *), void *arg)
{
    struct destroy_all *d = malloc(sizeof *d);
    if (!d || count == 0) {
        free(d);
        while (list_head)
            sbx_destroy(list_head, NULL, NULL);
        if (done)
            done(arg);
        return;
    }
    *d = (struct destroy_all){ count, done, arg };
    while (list_head)
        sbx_destroy(list_head, one_destroyed, d);
}

void sbx_stop_all(void (*done)(void *), void *arg)
{
    stopping = true;
    sbx_destroy_all(done, arg);
}

const char *sbx_end_why(void)
{
    return stopping ? "the daemon is shutting down" : "the sandbox was deleted";
}

/* Set KEY=VALUE in obj from a "KEY=VALUE" string. */
static void env_set_kv(json_t *obj, const char *kv)
{
    const char *eq = strchr(kv, '=');
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
    json_object_set_new(obj, key, json_string(eq + 1));
}

/* A PYTHONPATH of the sandbox's or the request's own keeps the operator's site dirs after
 * its entries (pysite.h): an import path of one's own does not take those packages away. */
static void keep_site_dirs(json_t *env)
{
    const char *ours = pysite_pythonpath(),
               *theirs = json_string_value(json_object_get(env, "PYTHONPATH"));
    if (!ours || !theirs)
        return;
    ours += sizeof "PYTHONPATH=" - 1;
    if (strcmp(theirs, ours) == 0)
        return;
    if (theirs[0] == '\0') {
        json_object_set_new(env, "PYTHONPATH", json_string(ours));
        return;
    }
    json_object_set_new(env, "PYTHONPATH", json_sprintf("%s:%s", theirs, ours));
}

char **sbx_environ(const sandbox *s, const json_t *extra, const json_t *extra2)
{
    json_t *merged = json_object();
    for (size_t i = 0; i < sizeof BASE_ENV / sizeof BASE_ENV[0]; i++)
        env_set_kv(merged, BASE_ENV[i]);
    if (pysite_pythonpath()) /* the operator's site dirs (pysite.h) */
        env_set_kv(merged, pysite_pythonpath());
    json_object_update(merged, s->env);
    if (extra)
        json_object_update(merged, (json_t *)extra);
    if (extra2)
        json_object_update(merged, (json_t *)extra2);
    keep_site_dirs(merged);
    size_t n = json_object_size(merged), bytes = 0;
    const char *k;
    json_t *v;
    json_object_foreach(merged, k, v) bytes += strlen(k) + json_string_length(v) + 2;
    char **envp = NULL;
    if (bytes <= ENV_MAX_BYTES)
        envp = malloc((n + 1) * sizeof(char *) + bytes);
    if (envp) {
        char *p = (char *)(envp + n + 1);
        size_t i = 0;
        json_object_foreach(merged, k, v)
        {
            size_t kl = strlen(k), vl = json_string_length(v);
            envp[i++] = p;
            memcpy(p, k, kl);
            p[kl] = '=';
            memcpy(p + kl + 1, json_string_value(v), vl + 1);
            p += kl + vl + 2;
        }
        envp[i] = NULL;
    }
    json_decref(merged);
    return envp;
}

int sbx_resolve_cwd(const char *in, char *out, size_t outlen, char *err, size_t errlen)
{
    int n;
    if (!in || !in[0])
        n = snprintf(out, outlen, "/workspace");
    else if (in[0] == '/')
        n = snprintf(out, outlen, "%s", in);
    else
        n = snprintf(out, outlen, "/workspace/%s", in);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "field 'cwd' is longer than %zu bytes", outlen - 1);
        return -1;
    }
    return 0;
}

json_t *sbx_to_json(const sandbox *s)
{
    char created[40], active[40];
    stamp_iso8601(s->created_ms, created, sizeof created);
    stamp_iso8601(s->last_activity_ms, active, sizeof active);
    struct jail_usage u = { 0, 0 };
    jail_usage(s->jail, &u);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, "
                     "s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
                     "id", s->id, "createdAt", created, "lastActivity", active, "state",
                     s->suspended ? "suspended" : "running", "network",
                     s->network_host ? "host" : "none", "limits", limits_json(&s->limits),
                     "lifecycle", sbx_lifecycle_json(&s->lifecycle), "usage", "memoryBytes",
                     (json_int_t)u.memory_bytes, "processes", (json_int_t)u.processes, "contexts",
                     (json_int_t)s->ncontexts, "bufferBytes", (json_int_t)budget_used(s->budget),
                     "bufferPeakBytes", (json_int_t)budget_peak(s->budget), "bufferLimitBytes",
                     (json_int_t)budget_cap(s->budget), "bufferRefusals",
                     (json_int_t)budget_refusals(s->budget));
}
