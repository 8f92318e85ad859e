/*
 * state_lock.h — one daemon per state dir. The first thing the daemon does with its state
 * dir (before any clean-up) is take an exclusive flock on STATE_DIR/daemon.lock; a second
 * daemon on the same dir fails to take it and exits at once, touching nothing, with a
 * sentence naming the running one (its pid and listen address, which the holder writes
 * into the same file once it listens). The lock ends with the process that holds it
 * (also on SIGKILL or a crash): no stale lock is ever left to clear by hand.
 *
 * Also kept here, because it needs the lock held: the state dir's generation, a counter
 * in STATE_DIR/generation that each daemon start increments (written atomically), so
 * that ids handed out by an earlier run can be told apart (sandbox_store.h).
 */
#ifndef SANDBOXD_STATE_LOCK_H
#define SANDBOXD_STATE_LOCK_H

#include <stddef.h>
#include <stdint.h>

/* Take the lock of state_dir (which must exist). 0, or -EWOULDBLOCK with err naming the
 * daemon that holds it, or another -errno with err set. The descriptor stays open (and
 * close-on-exec) for the life of the process. */
int slock_acquire(const char *state_dir, char *err, size_t errlen);

/* Write who holds the lock (our pid and url) into the lock file, for a second daemon's
 * message. 0 or -errno. */
int slock_publish(const char *url);

/* Increment and return the state dir's generation (1 on a new state dir); the lock must
 * be held. -errno on failure. */
int64_t slock_next_generation(const char *state_dir);

/* Write data to dir/name atomically: a temporary file, fsync, rename, fsync of dir.
 * 0 or -errno. */
int slock_write_atomic(const char *dir, const char *name, const char *data, size_t len);

#endif
