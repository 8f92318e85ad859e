/*
 * sandbox_store.h — durable sandboxes: each sandbox's settings on disk, so that a daemon
 * restarted on the same state dir (after SIGTERM, SIGKILL or a crash) brings every
 * sandbox back with its id, creation time, settings and host uids (its slot), and its
 * workspace files (kept by the jail layer, jail.h).
 *
 * One small JSON file per sandbox, STATE_DIR/sandboxes/<id>/sandbox.json, written
 * atomically (temporary file, fsync, rename, fsync of the directory) when the sandbox is
 * created and whenever its settings change, removed first thing when it is deleted:
 *   {"version":1, "id", "createdAt" (Unix ms), "slot", "bornGeneration",
 *    "settings": {…}}
 * "settings" is whatever the API layer gives: the create request's body, normalised (every
 * limit filled in). Restoring feeds it back through the same parser as a create, so a
 * field added to the create body is carried across restarts without code here.
 *
 * Generations: each daemon start increments the state dir's generation (state_lock.h),
 * and every id the daemon makes carries it (stamp_set_epoch). A context or process id of
 * a sandbox that carries a generation at or after the sandbox's birth and before the
 * current one ended when the daemon restarted (store_ended_by_restart).
 *
 * Loop thread only; the writes are small and bounded (a few KiB; the env's size is capped
 * by --max-env-vars), done at creation and settings changes, never per request.
 */
#ifndef SANDBOXD_SANDBOX_STORE_H
#define SANDBOXD_SANDBOX_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sandbox.h"

#define STORE_FILE "sandbox.json" /* the jail layer keeps dirs holding it (keep_file) */
#define STORE_MAX_BYTES (4 << 20) /* a record larger than this is not loaded */

/* Remember the state dir and this run's generation (already incremented, see
 * slock_next_generation); sets the ids' epoch. */
void store_init(const char *state_dir, int64_t generation);
uint16_t store_generation(void); /* this run's, as ids carry it */

/* Write s's record (its settings, slot, creation time). 0 or -errno (logged). */
int store_save(const sandbox *s);
/* Remove s's record: the sandbox is being deleted and must not come back. */
void store_forget(const char *id);

/* Every stored record, in no particular order: fn(id, record, arg), the record borrowed.
 * Records that cannot be read are logged and skipped (their files stay). Returns how many
 * were handed to fn. */
unsigned store_load_all(void (*fn)(const char *id, const json_t *record, void *arg), void *arg);

/* True when id (made with prefix, e.g. "ctx-") was one of s's before the daemon's last
 * restart: its generation is at or after s's birth and not the current one. */
bool store_ended_by_restart(const sandbox *s, const char *id, const char *prefix);

#endif
