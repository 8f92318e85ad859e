/*
 * lifecycle.h — what happens to a sandbox over time (API.md "Lifecycle and durability"):
 * suspend and resume with the cgroup freezer, the idle timeout (suspend or delete after
 * idleTimeoutMs without activity), and the maximum age (delete maxAgeMs after creation).
 *
 * Activity is a request that names the sandbox (life_resume, called by the API's lookup),
 * output of one of its background processes (life_touch), and code, commands or contexts
 * that are running or starting (seen when the idle deadline comes: a busy sandbox is
 * active now). One libuv timer per sandbox holds the earliest of its deadlines; touching
 * only stores the time, the timer re-arms itself when it fires early.
 *
 * Suspended: every process of the sandbox, its init included, is frozen; its memory is
 * kept and it uses no CPU. A suspension is asynchronous (a v1 freezer goes FREEZING →
 * FROZEN; a timer polls it, never the loop), answered once the group is frozen. Any
 * request that needs the sandbox resumes it first (a thaw is one write, done at once),
 * so its init can answer spawns again. Requests already waiting for init keep their
 * deadlines paused while frozen (jail_freeze), and the timeouts of runs and commands
 * count only the time the sandbox was not suspended (life_timer_start/life_timer_defer).
 *
 * Engine layer: plain functions on the loop thread, no HTTP.
 */
#ifndef SANDBOXD_LIFECYCLE_H
#define SANDBOXD_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "sandbox.h"

/* Daemon-wide set-up: registers the sandbox destroy hook. is_busy says whether code, a
 * command or a context start runs in a sandbox now (main.c asks the engine's modules;
 * this file depends on none of them). */
void life_init(uv_loop_t *loop, const struct config *cfg, bool (*is_busy)(sandbox *s));

/* A sandbox was registered (ready): start its clock and its deadlines. */
void life_attach(sandbox *s);

/* Activity now (a background process wrote output). s may be NULL. */
void life_touch(sandbox *s);

/* A request needs the sandbox: activity now, and thaw it when suspended (a suspension
 * under way is cancelled: its waiters get -ECANCELED). 0, or -errno when the thaw
 * failed (logged; the sandbox stays marked suspended). */
int life_resume(sandbox *s);

/* Called once a suspension ended: 0 (frozen), -ECANCELED (resumed before it was),
 * -ETIMEDOUT (it did not freeze in time: thawed again), -ESRCH (the sandbox was
 * destroyed first). */
typedef void (*life_suspended_cb)(sandbox *s, int rc, const char *msg, void *arg);

/* Freeze every process of s. Returns 0 when under way or done (cb is called once,
 * maybe before this returns when already frozen), or -errno at once (cb never called):
 * -ENOTSUP without a freezer cgroup (the daemon runs without root), -ENOMEM. cb may be
 * NULL (the idle timer's suspension). */
int life_suspend(sandbox *s, life_suspended_cb cb, void *arg);

/* Milliseconds s has spent suspended so far (the current suspension included). */
uint64_t life_frozen_ms(const sandbox *s);

/* Start a timeout of something running in s (a run, a command) that should count only
 * the time s was not suspended: uv_timer_start, plus a mark of s's frozen time. */
void life_timer_start(const sandbox *s, uint64_t *mark, uv_timer_t *t, uv_timer_cb cb, uint64_t ms);

/* At the top of that timer's callback: true when s was suspended since the mark, and the
 * timer has been started again for the time lost (at least 250 ms while s is still
 * suspended); the callback returns then. s may be NULL (false). */
bool life_timer_defer(const sandbox *s, uint64_t *mark, uv_timer_t *t, uv_timer_cb cb);

#endif
