/*
 * uid_range.h — host uids unique across daemons. When root, each sandbox runs as two host
 * uids of its own (jail.h). Several daemons on one machine (different state dirs) must
 * never hand out the same uid at the same time, and a restarted daemon must get its
 * sandboxes' uids back (their workspace files are owned by them).
 *
 * Each state dir reserves a contiguous range of uids in a machine-wide registry file
 * (--uid-registry), one line per range: "BASE COUNT STATE_DIR". The state dir keeps its
 * own copy in STATE_DIR/uid-range ("BASE COUNT"). A registry line is alive while its
 * state dir exists and holds that same copy; a line whose state dir is gone (or holds
 * another range) is dropped by the next daemon that reserves, so temporary state dirs
 * do not use the uid space up. Every read-modify-write of the registry happens under an
 * exclusive flock on REGISTRY.lock, and the registry is replaced atomically (rename).
 */
#ifndef SANDBOXD_UID_RANGE_H
#define SANDBOXD_UID_RANGE_H

#include <stddef.h>
#include <stdint.h>

/* Reserve count uids for state_dir at or above lowest: the range it had (grown in place
 * if count is larger and the uids above are free), or the lowest free one. *base is its
 * first uid. 0, or -errno with err set (e.g. -EADDRINUSE: its old range is taken). */
int uidr_reserve(const char *registry, const char *state_dir, uint64_t lowest, uint64_t count,
                 uint64_t *base, char *err, size_t errlen);

#endif
