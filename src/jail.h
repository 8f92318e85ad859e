/*
 * jail.h — sandboxes as the daemon sees them: create one, spawn processes inside it,
 * learn when they end, read its usage, destroy it leaving nothing behind.
 *
 * A jail is one sandbox's isolation: user, pid, mount, net, ipc, uts and cgroup
 * namespaces, a tmpfs root with read-only system binds, a writable, size-capped /workspace
 * (when root: an ext4 file system in a sparse image file, STATE_DIR/sandboxes/<id>/
 * workspace.img, on a loop device, which survives the daemon; without root: a tmpfs the
 * sandbox's init mounts in its user namespace), size-capped /tmp and /dev/shm, a pid-1
 * reaper, and a cgroup carrying its limits. Every process spawned into it runs as the sandbox's unprivileged user with
 * no capabilities, no_new_privs, the seccomp filter, a new session (no controlling tty)
 * and exactly the environment the caller gives (nothing of the daemon's leaks in).
 *
 * Threading: everything here runs on the daemon's single libuv loop thread, and nothing
 * here waits on the loop for anything a sandbox controls. The sandbox's init runs under
 * the sandbox's own CPU quota, so whatever needs an answer from it (creation's ready,
 * spawns, adoptions) is asynchronous: the request goes out on a non-blocking socket
 * (queued while the socket is full), the answer comes back as a callback on the loop,
 * and a timer bounds the wait. What runs on the daemon itself with a bounded cost
 * (directories, mounts, cgroup files, starting init) stays synchronous.
 *
 * Requests waiting for init: each one is answered exactly once (success, init's error,
 * -ETIMEDOUT after the reply timeout, -EPIPE when init dies, -ECANCELED when the sandbox
 * is destroyed first), unless its caller gives up with jail_cancel(). At most
 * max_pending requests per sandbox wait at a time; one more is refused with -EBUSY.
 * A process init starts for a request nobody waits for any more is killed and reaped by
 * the jail: nothing runs in a sandbox that the daemon does not track.
 *
 * Errors: functions return 0 or a negative errno value, and fill err (when not NULL)
 * with a sentence naming what failed.
 */
#ifndef SANDBOXD_JAIL_H
#define SANDBOXD_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "jail_enter.h"

/* What this host lets us do; probed once by jail_global_init(), shown in /v1/health. */
struct jail_features {
    bool root;          /* daemon runs as root: per-sandbox host uids, cgroups, quotas */
    bool userns;        /* user namespaces usable */
    int cgroup_version; /* 1, 2, or 0 when no usable cgroup controllers */
    bool memory_limit;  /* memory cgroup usable */
    bool pids_limit;    /* pids cgroup usable */
    bool cpu_limit;     /* cpu cgroup usable */
    bool disk_limit;    /* workspace size enforceable (tmpfs-backed workspace) */
    bool seccomp;       /* seccomp filter installed on every process */
};

/* Daemon-wide settings, given once at start. */
struct jail_global {
    const char *state_dir;     /* sandboxes live in state_dir/sandboxes/<id>/ */
    const char *init_path;     /* path of the sandboxd-init binary */
    const char *runtimes_dir;  /* host dir shown read-only at /opt/sandboxd in every sandbox */
    const char *mpl_cache_dir; /* also shown, at /opt/sandboxd/mpl-cache (NULL: none) */
    uint64_t runtimes_bytes;   /* size of the private tmpfs copy of both (0: 256 MiB) */
    uid_t host_uid_base;       /* when root: sandbox slot n uses host uids base+2n, base+2n+1 */
    unsigned max_sandboxes;    /* slots */
    unsigned start_timeout_ms; /* a new sandbox's init must be ready within it (0: 10000) */
    unsigned reply_timeout_ms; /* init must answer a spawn or adoption within it (0: 10000) */
    unsigned max_pending;      /* requests per sandbox waiting for init (0: 64) */
    uint64_t spawn_reserve;    /* init forks only with this many bytes of the sandbox's memory
                                  free, else the spawn fails with -ENOMEM (0: no check) */
    const char *keep_file;     /* a sandbox dir holding a file of this name is kept at start
                                  (its workspace unmounted), to be restored; NULL: none */
    const char *site_dirs;     /* colon-separated host dirs bound read-only at
                                  /opt/python-site/0, 1, … (pysite.h); NULL or "": none */
};

/* Probe features, create the daemon's parent cgroups, and remove whatever a previous
 * daemon that crashed left behind (processes, mounts, cgroups, sandbox dirs but those
 * holding keep_file, whose workspaces are only unmounted). */
int jail_global_init(uv_loop_t *loop, const struct jail_global *g, char *err, size_t errlen);
const struct jail_features *jail_features(void);
/* Ends every sandbox still alive (used at daemon exit) and releases global state. */
void jail_global_shutdown(void);

struct jail_limits {
    uint64_t memory_bytes; /* cgroup memory limit (0 = none) */
    uint32_t pids;         /* cgroup pids.max (0 = none) */
    uint32_t cpu_millis;   /* CPU quota in thousandths of a CPU (0 = none) */
    uint64_t tmp_bytes;    /* size of /tmp and /dev/shm tmpfs */
    uint64_t disk_bytes;   /* size of /workspace (0 = unlimited) */
};

struct jail_opts {
    const char *id;    /* sandbox id, already validated by the caller */
    bool network_host; /* share the host network namespace (explicit opt-in) */
    struct jail_limits limits;
    bool restore; /* the sandbox's dir and workspace exist (kept across a daemon restart):
                     use them as they are */
    int slot;     /* restore: the slot (so the host uids) it had, see jail_slot; ignored
                     otherwise */
};

typedef struct jail jail; /* opaque */

/* Called once, on the loop, when a sandbox is ready (j, rc 0, msg NULL) or could not be
 * created (j NULL, rc a negative errno, msg a sentence). After a failure everything the
 * attempt made (directory, cgroup, processes) is already gone, so the id may be reused. */
typedef void (*jail_ready_cb)(jail *j, int rc, const char *msg, void *arg);

/* Create a sandbox: dirs, cgroup with limits, namespaces, root filesystem, init. The
 * daemon-side steps run now; the sandbox's init builds the rest under the sandbox's own
 * limits. Returns 0 when under way: on_ready is then called exactly once, later (never
 * from inside this call), within start_timeout_ms (-ETIMEDOUT) or with -ECANCELED when
 * the daemon shuts down first. Returns -errno with err set when it failed at once (then
 * on_ready is never called). */
int jail_create(uv_loop_t *loop, const struct jail_opts *o, jail_ready_cb on_ready, void *arg,
                char *err, size_t errlen);

/* End every process of the sandbox (SIGKILL through the cgroup and the pid namespace),
 * remove its cgroup, mounts and directory. done (may be NULL) is called on the loop once
 * everything is gone; after that the jail pointer is invalid. Every process still
 * tracked gets its exit callback, and every request still waiting for init gets its
 * callback with -ECANCELED, before done. */
void jail_destroy(jail *j, void (*done)(void *arg), void *arg);

/* As jail_destroy, but the sandbox's directory and workspace stay on disk for a later
 * jail_create with restore (daemon shutdown). */
void jail_release(jail *j, void (*done)(void *arg), void *arg);

/* The sandbox's slot: its host uids are a function of it (jail_host_uid). */
int jail_slot(const jail *j);

/* True when the workspace is a tmpfs (its files are held in the sandbox's memory and do
 * not survive the daemon): the rootless mode. */
bool jail_workspace_in_memory(const jail *j);

/* A path of the sandbox's /workspace for the files API: its host directory (the mounted
 * image when root), or without root /proc/self/fd/N of the tmpfs the sandbox's init made. Open it
 * once (O_PATH) and resolve below that fd; it is not a place to build paths under. */
const char *jail_workspace(const jail *j);
/* The host uid and gid that the sandbox's user (uid/gid 1000 inside) maps to: files the
 * daemon creates in the workspace are chowned to them so the sandbox owns them. */
uid_t jail_host_uid(const jail *j);
gid_t jail_host_gid(const jail *j);

struct jail_usage {
    uint64_t memory_bytes; /* cgroup memory usage */
    uint32_t processes;    /* processes alive in the sandbox */
};
int jail_usage(const jail *j, struct jail_usage *u);

/* How many times the kernel OOM-killed a process in this sandbox, from the cgroup's
 * own counter (memory.oom_control oom_kill on v1, memory.events oom_kill on v2). */
uint64_t jail_oom_kills(const jail *j);

/* Bytes the sandbox can still be charged before its memory limit (see
 * cg_memory_headroom); -ENOTSUP when it has no memory cgroup (non-root mode). */
int jail_memory_headroom(const jail *j, uint64_t *bytes);

/* Suspend and resume (lifecycle.h): freeze or thaw every process of the sandbox, its
 * init included, through the cgroup freezer. A freeze is asynchronous: jail_frozen says
 * 1 once every process is frozen, 0 before. While frozen, the deadlines of requests that
 * wait for init are paused (they resume, pushed back by the frozen time, at the thaw);
 * the caller thaws before it sends init anything new. 0, -ENOTSUP without a freezer
 * cgroup (the daemon runs without root), -ESRCH when the sandbox is going away, -errno. */
int jail_freeze(jail *j);
int jail_thaw(jail *j);
int jail_frozen(const jail *j);
/* A freeze under way that has not converged: ask again (kick, true: thaw first so that a
 * task stuck half-way gets another go, as container runtimes do). 0 or -errno. */
int jail_refreeze(jail *j, bool kick);
/* Requests someone waits for init to answer (spawns, adoptions): work under way. */
unsigned jail_waiting(const jail *j);

/* A process spawned in a sandbox. */
typedef struct jail_proc jail_proc;

/* Called once, on the loop, when the process has exited and been reaped.
 * status is a wait(2) status (WIFEXITED/WIFSIGNALED apply). The jail_proc is freed
 * right after the callback returns. */
typedef void (*jail_exit_cb)(jail_proc *p, int status, void *arg);

struct jail_spawn_opts {
    const char *const *argv; /* argv[0] is resolved inside the sandbox (absolute path) */
    const char *const *envp; /* the whole environment; NULL-terminated */
    const char *cwd;         /* inside the sandbox; must exist */
    int stdin_fd;            /* fds of the daemon given to the child as 0, 1, 2 */
    int stdout_fd;
    int stderr_fd;
    int extra_fd; /* given as fd 3 (the context channel), or -1 */
};

/* A request waiting for init's answer (opaque). Valid until its callback has been called
 * or it was given to jail_cancel(). */
typedef struct jail_req jail_req;

/* Called once, on the loop, with the outcome of jail_spawn or jail_adopt: p is the
 * process (rc 0; its exit comes later through the exit callback), or NULL with rc a
 * negative errno and msg a sentence (p NULL, the exit callback is never called). */
typedef void (*jail_started_cb)(jail_proc *p, int rc, const char *msg, void *arg);

/* Spawn a process in the sandbox: a new session and process group, the sandbox user, no
 * capabilities, seccomp, then execve. Returns 0 when the request is on its way (*req, when
 * req is not NULL, names it for jail_cancel): on_started comes later with the process, or
 * with the child's errno when it could not be started (e.g. -ENOENT for a missing
 * program, -EAGAIN at the pids limit), -ETIMEDOUT, -EPIPE or -ECANCELED (see the top).
 * Returns -errno with err set, and never calls on_started, when it is refused at once:
 * -EINVAL, -E2BIG (arguments and environment over JP_MSG_MAX), -ESRCH (the sandbox is
 * gone), -EBUSY (max_pending requests wait already). The caller keeps ownership of the
 * fds it passed: the jail dups what it needs before returning, so they may be closed. */
int jail_spawn(jail *j, const struct jail_spawn_opts *o, jail_started_cb on_started,
               jail_exit_cb on_exit, void *arg, jail_req **req, char *err, size_t errlen);

/* Give up on a request: its callback is never called, and the caller may free what it
 * gave as arg. A process init starts for it anyway is killed and reaped by the jail. */
void jail_cancel(jail_req *r);

/* Signal the process's whole process group (SIGKILL is preceded by SIGCONT so that
 * stopped processes die too). */
int jail_proc_kill(jail_proc *p, int sig);
pid_t jail_proc_pid(const jail_proc *p); /* pid as seen inside the sandbox */
/* The process's pid on the host, for reading its /proc files: an adopted one's from its
 * pidfd; one the sandbox's init started is found among the init's children by its pid
 * inside (NSpid). Reads of /proc only, no wait for the sandbox. -errno when not found. */
pid_t jail_proc_host_pid(const jail_proc *p);

/* What another process (the Python zygote's child) needs to enter this sandbox:
 * struct jail_entry, defined in jail_enter.h (which has no libuv dependency) with
 * ns_pid, cgroup_procs, uid, gid, network_host and userns_ino.
 * See jail_enter() in jail_enter.h. */
int jail_entry_info(const jail *j, struct jail_entry *e);

/* Register a process that entered the sandbox by itself (a zygote child), so that its
 * exit is reported (on_exit) like a spawned one. ns_pid is its pid inside the sandbox.
 * Asks init for a pidfd of it: asynchronous like jail_spawn (same returns, same rules). */
int jail_adopt(jail *j, pid_t ns_pid, jail_started_cb on_started, jail_exit_cb on_exit, void *arg,
               jail_req **req);

/* The same for a process that is already the daemon's own child (a zygote context,
 * created with CLONE_PARENT): no round trip to the sandbox's init. */
int jail_adopt_child(jail *j, pid_t host_pid, pid_t ns_pid, jail_exit_cb cb, void *arg,
                     jail_proc **out);

/* Calls fn with the host pid of every process jail.c may reap itself (adopted processes,
 * each sandbox's inner init), for the daemon's reaper of stray children (reaper.h). 0, or
 * -errno when the pid of some adopted process could not be told (then none may be
 * treated as a stray). */
int jail_for_each_owned(void (*fn)(pid_t host_pid, void *arg), void *arg);

#endif
