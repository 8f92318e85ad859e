/*
 * jail_wait.h — for test drivers and benchmarks only: the asynchronous jail calls
 * (jail_create, jail_spawn, jail_adopt) made synchronous by running the loop until their
 * callback came. The daemon itself never does this (it must not wait on its loop for a
 * sandbox); a test that drives one sandbox at a time may. Header-only, static functions.
 */
#ifndef SANDBOXD_JAIL_WAIT_H
#define SANDBOXD_JAIL_WAIT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include "jail.h"

struct jail_wait {
    bool done;
    int rc;
    jail *j;
    jail_proc *p;
    char msg[256];
};

static inline void jail_wait_ready(jail *j, int rc, const char *msg, void *arg)
{
    struct jail_wait *w = arg;
    w->done = true;
    w->rc = rc;
    w->j = j;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
}

static inline void jail_wait_started(jail_proc *p, int rc, const char *msg, void *arg)
{
    struct jail_wait *w = arg;
    w->done = true;
    w->rc = rc;
    w->p = p;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
}

static inline int jail_wait_run(uv_loop_t *loop, struct jail_wait *w, int rc, char *err,
                                size_t errlen)
{
    if (rc)
        return rc;
    while (!w->done)
        uv_run(loop, UV_RUN_ONCE);
    if (w->rc && err && errlen)
        snprintf(err, errlen, "%s", w->msg);
    return w->rc;
}

/* jail_create, waiting for the sandbox to be ready. */
static inline int jail_create_wait(uv_loop_t *loop, const struct jail_opts *o, jail **out,
                                   char *err, size_t errlen)
{
    struct jail_wait w = { 0 };
    int rc = jail_create(loop, o, jail_wait_ready, &w, err, errlen);
    rc = jail_wait_run(loop, &w, rc, err, errlen);
    *out = rc ? NULL : w.j;
    return rc;
}

/* One arg serves both callbacks of jail_spawn/jail_adopt: this carries the wait and the
 * caller's exit callback, and is freed when the exit is reported (or the start failed). */
struct jail_wait_exit {
    struct jail_wait w;
    jail_exit_cb cb;
    void *arg;
    bool waiting, exited;      /* freed once both are over */
};

static inline void jail_wait_exited(jail_proc *p, int status, void *arg)
{
    struct jail_wait_exit *x = arg;
    jail_exit_cb cb = x->cb;
    void *a = x->arg;
    x->exited = true;
    if (!x->waiting)
        free(x);
    if (cb)
        cb(p, status, a);
}

static inline void jail_wait_started_x(jail_proc *p, int rc, const char *msg, void *arg)
{
    jail_wait_started(p, rc, msg, &((struct jail_wait_exit *)arg)->w);
}

static inline int jail_wait_x(uv_loop_t *loop, struct jail_wait_exit *x, int rc, jail_proc **out,
                              char *err, size_t errlen)
{
    x->waiting = true;
    rc = jail_wait_run(loop, &x->w, rc, err, errlen);
    *out = rc ? NULL : x->w.p;
    x->waiting = false;
    if (rc || x->exited)
        free(x);   /* no exit will be reported, or it was already */
    return rc;
}

/* jail_spawn, waiting until the process runs (or could not start). */
static inline int jail_spawn_wait(uv_loop_t *loop, jail *j, const struct jail_spawn_opts *o,
                                  jail_exit_cb cb, void *arg, jail_proc **out, char *err,
                                  size_t errlen)
{
    struct jail_wait_exit *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    x->cb = cb;
    x->arg = arg;
    int rc = jail_spawn(j, o, jail_wait_started_x, jail_wait_exited, x, NULL, err, errlen);
    return jail_wait_x(loop, x, rc, out, err, errlen);
}

/* jail_adopt, waiting for init's pidfd. */
static inline int jail_adopt_wait(uv_loop_t *loop, jail *j, pid_t ns_pid, jail_exit_cb cb,
                                  void *arg, jail_proc **out)
{
    struct jail_wait_exit *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    x->cb = cb;
    x->arg = arg;
    int rc = jail_adopt(j, ns_pid, jail_wait_started_x, jail_wait_exited, x, NULL);
    return jail_wait_x(loop, x, rc, out, NULL, 0);
}

#endif
