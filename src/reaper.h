/*
 * reaper.h — the daemon ends and reaps every child process that no module owns.
 *
 * The daemon is a child subreaper and Python contexts are its children (the zygote
 * creates them with CLONE_PARENT). Its children are owned either by libuv (uv_spawn:
 * libuv waits for those pids itself) or by a sandbox that adopted them (jail.c waits for
 * them through pidfds). Any other child (one that code in a context made with
 * CLONE_PARENT, a context given up before it was adopted) would otherwise stay a zombie
 * for the daemon's lifetime, holding a pid of its sandbox's pids quota and its host uid.
 *
 * After each SIGCHLD (at most every REAP_MIN_INTERVAL_MS) the reaper lists the daemon's
 * children; each one that is neither a libuv process nor in the known() list, and that
 * is older than REAP_GRACE_MS (a new context is adopted within milliseconds of its
 * creation), is killed if it runs and reaped once it is a zombie. It never waits for a
 * pid it was not sure of: an owner's status is never taken, and an unreaped child's pid
 * cannot be reused, so the kill cannot hit another process.
 */
#ifndef SANDBOXD_REAPER_H
#define SANDBOXD_REAPER_H

#include <stdbool.h>
#include <sys/types.h>
#include <uv.h>

typedef void (*reap_add_fn)(pid_t pid, void *set);

struct reap_hooks {
    /* Calls add(pid, set) for every child some module reaps itself, besides libuv's;
     * 0, or -errno when the list may be incomplete (the pass then leaves every child
     * alone and tries again later). May be NULL. */
    int (*known)(reap_add_fn add, void *set);
    /* True while children may exist that are about to be owned (e.g. the zygote has fork
     * requests in flight): strays are then looked at again a little later. May be NULL. */
    bool (*settling)(void);
};

/* Watch SIGCHLD on loop. The handles do not keep the loop alive. 0 or -errno. */
int reap_start(uv_loop_t *loop, const struct reap_hooks *hooks);
/* Close the handles (before uv_loop_close). */
void reap_stop(void);
/* One pass now: returns how many strays were reaped (>= 0) or -errno. */
int reap_sweep(void);
/* Strays reaped since start, for /metrics and tests. */
unsigned long long reap_strays_total(void);

#endif
