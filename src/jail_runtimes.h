/*
 * jail_runtimes.h — the daemon's private copy of the runtimes dir: a read-only tmpfs
 * made once at start by sandboxd-init's --make-runtimes mode (src/init/init_runtimes.c)
 * and kept as a detached mount, never attached to a host path. Every sandbox's init
 * attaches a clone of it at /opt/sandboxd, so the sandbox's mountinfo shows source
 * "sandboxd" and root "/" instead of the runtimes dir's host path.
 */
#ifndef SANDBOXD_JAIL_RUNTIMES_H
#define SANDBOXD_JAIL_RUNTIMES_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* Spawn init_path in --make-runtimes mode to copy runtimes_dir (and mpl_dir, may be NULL,
 * into mpl-cache/) into a tmpfs of max_bytes; wait for its answer (bounded: this runs at
 * daemon start, before any request). Returns the mount's descriptor (O_CLOEXEC), or
 * -errno with err naming what failed. */
int jail_runtimes_make(uv_loop_t *loop, const char *init_path, const char *runtimes_dir,
                       const char *mpl_dir, uint64_t max_bytes, char *err, size_t errlen);

#endif
