/*
 * cgroup.h — one interface over cgroup v1 and v2 for sandbox groups: find where the
 * daemon may create groups (below its own cgroup, read from /proc/self/cgroup), create
 * one group per sandbox, set memory/pids/cpu limits, join it, read usage and the
 * OOM-kill counter, kill everything in it, remove it.
 *
 * Every path is built below a cgroupfs root given at init, so tests point the code at a
 * temporary directory laid out like cgroupfs. Nothing here forks or blocks for long; the
 * kill function does one freeze/kill/thaw pass and reports whether the group is empty,
 * so the caller can retry from a timer.
 */
#ifndef SANDBOXD_CGROUP_H
#define SANDBOXD_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CG_PATH_MAX 256

/* The controllers we use. On v2 all of them share one directory. */
enum cg_ctrl { CG_MEMORY, CG_PIDS, CG_CPU, CG_FREEZER, CG_NCTRL };

/* Where sandbox groups go on this host. */
struct cg_sys {
    int version;                        /* 1, 2, or 0 when nothing is usable */
    bool have[CG_NCTRL];                /* controller usable */
    char parent[CG_NCTRL][CG_PATH_MAX]; /* dir holding sandbox groups ("" = none) */
};

/* One sandbox's group. dir[c] is "" for a controller we do not use. */
struct cg {
    int version;
    char dir[CG_NCTRL][CG_PATH_MAX];
};

/* Work out the parent dirs from a cgroupfs root (normally "/sys/fs/cgroup") and the text
 * of /proc/self/cgroup, then create the parents (named subdir, e.g. "sandboxd").
 * On v2 it enables the memory, pids and cpu controllers for the parent, moving the
 * calling process to a leaf "<subdir>-daemon" first when its own group holds processes.
 * Returns 0 (version 0 when nothing is usable) or -errno for a malformed input. */
int cg_sys_init(struct cg_sys *s, const char *fsroot, const char *self_cgroup, const char *subdir);

/* cg_sys_init() with /proc/self/cgroup read from the running process. */
int cg_sys_probe(struct cg_sys *s, const char *fsroot, const char *subdir);

/* Create the group `name` in every usable controller. -EEXIST when it already exists. */
int cg_create(const struct cg_sys *s, const char *name, struct cg *out);

/* Fill out with the group `name` without creating anything (for cleanup). */
int cg_lookup(const struct cg_sys *s, const char *name, struct cg *out);

/* Set limits; 0 means no limit for each. cpu_millis is thousandths of a CPU. */
int cg_set_limits(const struct cg *g, uint64_t memory_bytes, uint32_t pids, uint32_t cpu_millis);

/* Move pid (0 = caller) into the group, in every controller. */
int cg_join(const struct cg *g, pid_t pid);

/* The cgroup.procs files of the group, for a process that joins by itself. */
void cg_procs_paths(const struct cg *g, char out[][CG_PATH_MAX], size_t n);

int cg_memory_usage(const struct cg *g, uint64_t *bytes);
int cg_process_count(const struct cg *g, uint32_t *n);
/* Bytes the group can still be charged before its memory limit: the limit minus what it
 * holds that cannot be reclaimed (usage less clean file cache). UINT64_MAX when there is
 * no limit; -ENOTSUP without a memory controller. */
int cg_memory_headroom(const struct cg *g, uint64_t *bytes);
/* The kernel's own OOM-kill counter for the group (0 when unknown). */
uint64_t cg_oom_kills(const struct cg *g);

/* One pass of "kill everything": v2 writes cgroup.kill; v1 freezes, SIGKILLs every pid in
 * cgroup.procs, thaws. Returns 1 when the group is empty afterwards, 0 when processes
 * remain (call again), -errno on error. */
int cg_kill_all(const struct cg *g);

/* Freeze (or thaw) every process of the group: v1 freezer.state FROZEN / THAWED, v2
 * cgroup.freeze 1 / 0. The write returns at once; a freeze completes later (cg_frozen).
 * -ENOTSUP without a freezer (v1 hierarchy not mounted, v2 kernel older than 5.2). */
int cg_freeze(const struct cg *g, bool frozen);
/* 1 when every process of the group is frozen, 0 while it is not (yet), -errno. */
int cg_frozen(const struct cg *g);

/* Remove the group's directories. -EBUSY while processes remain. */
int cg_remove(const struct cg *g);

/* Kill and remove every group below the parents (what a crashed daemon left).
 * Returns how many groups were removed, or -errno. */
int cg_cleanup_stale(const struct cg_sys *s);

#endif
