/*
 * fake_jail.c — see fake_jail.h. Every call that the real jail layer would make
 * asynchronous stays pending here until the test runs it, so a test controls the order
 * of outcomes exactly. Fixed-size tables: a test that overflows them fails loudly.
 */
#include "fake_jail.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct jail {
    int n;
};

struct pending_create {
    jail_ready_cb cb;
    void *arg;
};
struct pending_destroy {
    jail *j;
    void (*done)(void *arg);
    void *arg;
};

struct fake_jail_state fake_jail;
static struct pending_create creates[FAKE_JAIL_MAX];
static unsigned ncreates;
static struct pending_destroy destroys[FAKE_JAIL_MAX];
static unsigned ndestroys;

/* jail_spawn and jail_adopt_child */
struct jail_proc {
    pid_t pid;
    jail_exit_cb on_exit;
    void *arg;
};
struct jail_req {
    struct fake_spawn s;
    jail_started_cb on_started;
    jail_exit_cb on_exit;
    void *arg;
};
static jail_req *spawns[FAKE_JAIL_MAX];
static unsigned nspawns;
static jail_proc *adopted;

static void spawn_close(jail_req *r)
{
    for (int i = 0; i < 4; i++)
        if (r->s.fds[i] >= 0)
            close(r->s.fds[i]);
}

void fake_jail_reset(void)
{
    memset(&fake_jail, 0, sizeof fake_jail);
    ncreates = ndestroys = 0;
    for (unsigned i = 0; i < nspawns; i++) {
        spawn_close(spawns[i]);
        free(spawns[i]);
    }
    nspawns = 0;
    adopted = NULL;
}

int jail_create(uv_loop_t *loop, const struct jail_opts *o, jail_ready_cb on_ready, void *arg,
                char *err, size_t errlen)
{
    (void)loop;
    if (fake_jail.create_rc) {
        snprintf(err, errlen, "fake jail_create failure");
        return fake_jail.create_rc;
    }
    if (ncreates == FAKE_JAIL_MAX)
        abort();
    fake_jail.last_opts = *o;
    fake_jail.last_opts.id = NULL;
    creates[ncreates++] = (struct pending_create){ on_ready, arg };
    fake_jail.creates++;
    return 0;
}

void fake_jail_ready(unsigned n, int rc, const char *msg)
{
    if (n >= ncreates)
        abort();
    struct pending_create c = creates[n];
    memmove(&creates[n], &creates[n + 1], (ncreates - n - 1) * sizeof creates[0]);
    ncreates--;
    jail *j = NULL;
    if (rc == 0) {
        j = calloc(1, sizeof *j);
        if (!j)
            abort();
    }
    c.cb(j, rc, msg, c.arg);
}

unsigned fake_jail_pending_creates(void)
{
    return ncreates;
}

void jail_destroy(jail *j, void (*done)(void *arg), void *arg)
{
    if (ndestroys == FAKE_JAIL_MAX)
        abort();
    destroys[ndestroys++] = (struct pending_destroy){ j, done, arg };
    fake_jail.destroys++;
}

void jail_release(jail *j, void (*done)(void *arg), void *arg)
{
    jail_destroy(j, done, arg);
}

int jail_slot(const jail *j)
{
    (void)j;
    return 0;
}

bool jail_workspace_in_memory(const jail *j)
{
    (void)j;
    return true;
}

unsigned fake_jail_pending_destroys(void)
{
    return ndestroys;
}

void fake_jail_destroyed(void)
{
    while (ndestroys) {
        struct pending_destroy d = destroys[0];
        memmove(&destroys[0], &destroys[1], (ndestroys - 1) * sizeof destroys[0]);
        ndestroys--;
        free(d.j);
        if (d.done)
            d.done(d.arg);
    }
}

int jail_usage(const jail *j, struct jail_usage *u)
{
    (void)j;
    u->memory_bytes = 0;
    u->processes = 0;
    return 0;
}

static int dup_or_none(int fd)
{
    if (fd < 0)
        return -1;
    int d = dup(fd);
    if (d < 0)
        abort();
    return d;
}

int jail_spawn(jail *j, const struct jail_spawn_opts *o, jail_started_cb on_started,
               jail_exit_cb on_exit, void *arg, jail_req **req, char *err, size_t errlen)
{
    (void)j;
    if (fake_jail.spawn_rc) {
        snprintf(err, errlen, "fake jail_spawn refusal");
        return fake_jail.spawn_rc;
    }
    jail_req *r = calloc(1, sizeof *r);
    if (!r || nspawns == FAKE_JAIL_MAX)
        abort();
    r->s.fds[0] = dup_or_none(o->stdin_fd);
    r->s.fds[1] = dup_or_none(o->stdout_fd);
    r->s.fds[2] = dup_or_none(o->stderr_fd);
    r->s.fds[3] = dup_or_none(o->extra_fd);
    r->on_started = on_started;
    r->on_exit = on_exit;
    r->arg = arg;
    spawns[nspawns++] = r;
    fake_jail.spawns++;
    if (req)
        *req = r;
    return 0;
}

static void spawn_unlist(unsigned n)
{
    memmove(&spawns[n], &spawns[n + 1], (nspawns - n - 1) * sizeof spawns[0]);
    nspawns--;
}

void jail_cancel(jail_req *r)
{
    for (unsigned i = 0; i < nspawns; i++)
        if (spawns[i] == r) {
            spawn_unlist(i);
            spawn_close(r);
            free(r);
            fake_jail.cancels++;
            return;
        }
    abort(); /* not a request under way */
}

unsigned fake_jail_pending_spawns(void)
{
    return nspawns;
}

struct fake_spawn *fake_jail_spawn(unsigned n)
{
    if (n >= nspawns)
        abort();
    return &spawns[n]->s;
}

jail_proc *fake_jail_started(unsigned n, int rc, const char *msg, pid_t pid)
{
    if (n >= nspawns)
        abort();
    jail_req *r = spawns[n];
    spawn_unlist(n);
    spawn_close(r);
    jail_proc *p = NULL;
    if (rc == 0) {
        p = calloc(1, sizeof *p);
        if (!p)
            abort();
        p->pid = pid;
        p->on_exit = r->on_exit;
        p->arg = r->arg;
    }
    jail_started_cb cb = r->on_started;
    void *arg = r->arg;
    free(r);
    cb(p, rc, msg, arg);
    return p;
}

void fake_jail_exit(jail_proc *p, int status)
{
    if (p == adopted)
        adopted = NULL;
    p->on_exit(p, status, p->arg);
    free(p);
}

int jail_adopt_child(jail *j, pid_t host_pid, pid_t ns_pid, jail_exit_cb cb, void *arg,
                     jail_proc **out)
{
    (void)j;
    (void)host_pid;
    *out = NULL;
    fake_jail.adopts++;
    if (fake_jail.adopt_rc)
        return fake_jail.adopt_rc;
    jail_proc *p = calloc(1, sizeof *p);
    if (!p)
        abort();
    p->pid = ns_pid;
    p->on_exit = cb;
    p->arg = arg;
    adopted = p;
    *out = p;
    return 0;
}

jail_proc *fake_jail_adopted(void)
{
    return adopted;
}

int jail_proc_kill(jail_proc *p, int sig)
{
    (void)p;
    fake_jail.kills++;
    fake_jail.last_signal = sig;
    return 0;
}

pid_t jail_proc_pid(const jail_proc *p)
{
    return p->pid;
}
/* Suspend and resume (lifecycle.c): nothing to freeze here; a freeze completes at once. */
int jail_freeze(jail *j)
{
    (void)j;
    return 0;
}

int jail_thaw(jail *j)
{
    (void)j;
    return 0;
}

int jail_refreeze(jail *j, bool kick)
{
    (void)j;
    (void)kick;
    return 0;
}

int jail_frozen(const jail *j)
{
    (void)j;
    return 1;
}

unsigned jail_waiting(const jail *j)
{
    (void)j;
    return 0;
}

pid_t jail_proc_host_pid(const jail_proc *p)
{
    (void)p;
    return 0; /* the fake's processes have no host pid */
}
