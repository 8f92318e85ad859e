/*
 * sandbox.h — the daemon's sandboxes: a registry of live sandboxes by id, each owning its
 * jail (isolation and limits, jail.h) and what runs in it (commands, contexts, processes).
 *
 * A sandbox is created on request (PUT get-or-create, POST with a generated id), lives
 * until DELETE or daemon shutdown, and is destroyed asynchronously: while it is being
 * destroyed it is no longer found by id, and its jail ends every process it holds.
 * Creation is asynchronous too (the sandbox's init builds it under the sandbox's own
 * limits, and the daemon never waits for that on its loop): while it is being created,
 * its id is taken but sbx_find() does not return it; a get-or-create of the same id
 * joins the creation under way (sbx_join) and gets the same outcome.
 *
 * Ids are validated here (sbx_valid_id) before they reach a path or a log line.
 */
#ifndef SANDBOXD_SANDBOX_H
#define SANDBOXD_SANDBOX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "budget.h"
#include "config.h"
#include "jail.h"

#define SBX_ID_MAX 63

struct sbx_limits {
    uint64_t memory_mb;
    uint64_t pids;
    double cpus;
    uint64_t disk_mb;
    uint64_t tmp_mb;
    uint64_t timeout_ms; /* default wall-clock timeout of commands and runs */
};

/* What happens to a sandbox over time (lifecycle.h); 0 means never for both times. */
enum sbx_on_idle { SBX_IDLE_SUSPEND, SBX_IDLE_DELETE };
struct sbx_lifecycle {
    uint64_t idle_timeout_ms; /* idleTimeoutMs */
    enum sbx_on_idle on_idle; /* onIdle */
    uint64_t max_age_ms;      /* maxAgeMs */
};

typedef struct sandbox {
    char id[SBX_ID_MAX + 1];
    jail *jail;
    struct sbx_limits limits;
    bool network_host;
    json_t *env;         /* sandbox-level environment (object of strings), owned */
    json_t *settings;    /* the create request's settings, normalised (sandbox_store.h), owned */
    uint16_t born_gen;   /* the daemon generation it was created in (sandbox_store.h) */
    budget *budget;      /* what the daemon holds for it (budget.h); one reference */
    uint64_t created_ms; /* Unix epoch, ms */
    unsigned nexec;      /* commands running */
    unsigned ncontexts;  /* code contexts alive */
    bool destroying;
    struct sbx_lifecycle lifecycle;
    uint64_t last_activity_ms;     /* Unix epoch, ms: the last request, output or run */
    bool suspended;                /* frozen or being frozen (lifecycle.c) */
    void *life;                    /* owned by lifecycle.c */
    struct sandbox *hnext;         /* hash chain */
    struct sandbox *lnext, *lprev; /* creation-ordered list */
    void *contexts;                /* owned by context.c */
    void *processes;               /* owned by process.c */
    void *executions;              /* owned by execution.c */
} sandbox;

/* Daemon-wide set-up: remembers the configuration; the jail layer must be initialised. */
void sbx_init(const struct config *cfg);

bool sbx_valid_id(const char *id);
sandbox *sbx_find(const char *id);
unsigned sbx_count(void);
sandbox *sbx_first(void); /* in creation order; then s->lnext */

/* The defaults from the configuration, overridden by a request's "limits" object, each
 * within its range and below the operator's ceiling (--max-memory-mb, --max-pids,
 * --max-cpus, --max-disk-mb, --max-tmp-mb, --max-timeout-ms). Returns 0 or -1 with err
 * naming the bad field (and the ceiling it passed). */
int sbx_parse_limits(const json_t *limits, struct sbx_limits *out, char *err, size_t errlen);

/* A lifecycle as the API shows it (a new reference). */
json_t *sbx_lifecycle_json(const struct sbx_lifecycle *l);
/* The defaults from the configuration (--sandbox-idle-timeout-ms, --sandbox-on-idle,
 * --sandbox-max-age-ms), overridden by a request's "lifecycle" object. 0 or -1 with err
 * naming the bad field. */
int sbx_parse_lifecycle(const json_t *lifecycle, struct sbx_lifecycle *out, char *err,
                        size_t errlen);

/* Strict get-or-create: 0 when body (a create request's, validated) asks for nothing other
 * than what s has (only the fields it names are compared); else -1 with err naming the
 * first field that differs, with both values (the request should get 409 CONFLICT). */
int sbx_same_settings(const sandbox *s, const json_t *body, char *err, size_t errlen);

/* "timeoutMs" of obj (a sandbox's limits, a command, a run) into *timeout_ms when present:
 * 0 (none) to --max-timeout-ms. 0 or -1 with err naming the field and the maximum. */
int sbx_parse_timeout(const json_t *obj, uint64_t *timeout_ms, char *err, size_t errlen);

/* The outcome of a creation: s is the registered, ready sandbox (rc 0), or NULL with rc a
 * negative errno and err a sentence. id is the id asked for. */
typedef void (*sbx_created_cb)(sandbox *s, const char *id, int rc, const char *err, void *arg);

/* Create and register. Returns 0 when under way: cb is called once, later. Returns at once
 * -EEXIST when the id is taken (live or being created), -EMFILE past --max-sandboxes,
 * -ESHUTDOWN once sbx_stop_all has begun,
 * other -errno from the jail with err set; then cb is never called. env is borrowed
 * (copied); life NULL means the daemon's defaults. */
int sbx_create(const char *id, const struct sbx_limits *lim, bool network_host, const json_t *env,
               const struct sbx_lifecycle *life, sbx_created_cb cb, void *arg, char *err,
               size_t errlen);

/* sbx_create with what a durable sandbox needs: settings (borrowed, copied) is what is
 * stored for it (sandbox_store.h; NULL: nothing of the request beyond the above), and
 * restored, when not NULL, the stored record of a sandbox kept across a daemon restart:
 * its directory, workspace, slot, creation time and generation are taken from it and
 * nothing is written. Same returns as sbx_create. */
struct sbx_spec {
    const char *id;
    const struct sbx_limits *lim;
    bool network_host;
    const json_t *env;
    const struct sbx_lifecycle *life; /* NULL: the daemon's defaults */
    const json_t *settings;
    const json_t *restored;
};
int sbx_create_with(const struct sbx_spec *spec, sbx_created_cb cb, void *arg, char *err,
                    size_t errlen);

/* Wait for the creation of id under way: 0 (cb is called once, with its outcome, after
 * the creator's), -ENOENT when none is under way, -EBUSY when --max-pending-spawns
 * requests already wait for it. */
int sbx_join(const char *id, sbx_created_cb cb, void *arg);

/* Get-or-create of id with the daemon's defaults (the compatibility surfaces' sandboxes,
 * named by a header), for an id sbx_find did not find: 0 when cb comes later (a creation
 * under way joined, or a new one begun), else -errno with err a sentence: -EBUSY (too
 * many wait already), -EMFILE (past --max-sandboxes), others from sbx_create. */
int sbx_ensure(const char *id, sbx_created_cb cb, void *arg, char *err, size_t errlen);

/* Unregister now and destroy: every process ends, the workspace is removed; done (may be
 * NULL) runs when all is gone. Hooks registered with sbx_on_destroy run first. */
void sbx_destroy(sandbox *s, void (*done)(void *arg), void *arg);
/* Destroy every sandbox; done runs when the last one is gone. */
void sbx_destroy_all(void (*done)(void *arg), void *arg);
/* Daemon shutdown: end what runs in every sandbox (the destroy hooks run, with
 * sbx_end_why() saying why) but keep each one's record and files for the next daemon. */
void sbx_stop_all(void (*done)(void *arg), void *arg);
/* Why a sandbox's contexts and processes end in a destroy hook: "the sandbox was deleted",
 * or "the daemon is shutting down" during sbx_stop_all. */
const char *sbx_end_why(void);

/* Called at the start of sbx_destroy, so that contexts and processes can let go of the
 * sandbox (each module registers one hook at start-up). 0, or -ENOSPC (logged, and an
 * assertion in debug builds) when the table of hooks is full. */
int sbx_on_destroy(void (*hook)(sandbox *s));

/* The base environment of every process in s: the allow-listed defaults, then the
 * sandbox's env, then extra (may be NULL). Returns a NULL-terminated array of
 * "KEY=VALUE" strings in one allocation (free() it), or NULL on ENOMEM/over the cap. */
char **sbx_environ(const sandbox *s, const json_t *extra, const json_t *extra2);

/* Resolve a cwd from a request against the sandbox's view: NULL/"" → /workspace;
 * relative → under /workspace. Returns 0 or -1 with err set (too long, NUL, not clean). */
int sbx_resolve_cwd(const char *in, char *out, size_t outlen, char *err, size_t errlen);

/* Sandbox as API JSON (with usage). */
json_t *sbx_to_json(const sandbox *s);

#endif
