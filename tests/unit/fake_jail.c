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

void fake_jail_reset(void)
{
    memset(&fake_jail, 0, sizeof fake_jail);
    ncreates = ndestroys = 0;
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
