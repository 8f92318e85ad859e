/*
 * jail_enter.h — entering a sandbox and dropping privileges, without libuv.
 *
 * Two users: the sandbox init (src/init/) calls jail_drop_privileges() in each child it
 * forks before execve; the Python zygote's forked child calls jail_enter() to join a
 * sandbox that already exists and then keeps running Python (no exec).
 *
 * Both functions assume a single-threaded process that was just forked: they change
 * process-wide state (namespaces, credentials, signal dispositions, fds, seccomp) and
 * are not reversible. On any error the caller must _exit() without running user code.
 */
#ifndef SANDBOXD_JAIL_ENTER_H
#define SANDBOXD_JAIL_ENTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "jail_seccomp.h"

/* What a process needs to enter a sandbox (filled by jail_entry_info() in the daemon,
 * passed to the zygote, used by jail_enter()). */
struct jail_entry {
    pid_t ns_pid;              /* host pid of a process whose namespaces to enter */
    char cgroup_procs[4][256]; /* cgroup.procs files to write the entering pid to ("" = unused) */
    uid_t uid, gid;            /* the sandbox user as seen inside */
    bool network_host;
    /* Added: inode of the sandbox's user namespace (/proc/<ns_pid>/ns/user). jail_enter()
     * refuses to continue when the namespaces it joined are not this one (ns_pid died and
     * was reused). 0 skips the check. */
    unsigned long long userns_ino;
    /* Added for non-root mode: host pid of the sandbox's outer init, which holds a
     * descriptor of each of the sandbox's namespaces at JAIL_ANCHOR_FD + enum jail_ns
     * (0 = not used: join through ns_pid). A daemon without privileges cannot join
     * through ns_pid: pid 1 is non-dumpable, so every way to its namespaces (setns on a
     * pidfd, /proc/<pid>/ns, the pidfd ioctls) needs CAP_SYS_PTRACE over the host user
     * namespace; the outer is dumpable and runs as the daemon's user on the host side. */
    pid_t anchor_pid;
};

/* The descriptors a sandbox's outer init keeps for jail_enter() in non-root mode, from
 * JAIL_ANCHOR_FD on, in this order (JAIL_NS_NET is absent with network_host). */
#define JAIL_ANCHOR_FD 10
enum jail_ns {
    JAIL_NS_USER, /* first: joining it grants the capabilities the others need */
    JAIL_NS_MNT,
    JAIL_NS_PID,
    JAIL_NS_IPC,
    JAIL_NS_UTS,
    JAIL_NS_CGROUP,
    JAIL_NS_NET,
    JAIL_NS_COUNT
};

/* The oom_score_adj of every process in a sandbox, as written to /proc (its init keeps the
 * one it got: -1000 when the outer init may set it, else the daemon's, normally 0). The OOM killer scores a
 * process by its pages plus oom_score_adj thousandths of the memory limit, so at +500 any
 * sandbox process outscores an init of up to half the limit (a few hundred KiB in
 * practice) and the init is never the victim while another process is there to kill;
 * among themselves the biggest goes first, as usual; an upload's writer (+1000) still
 * goes before code using less than half the limit. */
#define JAIL_OOM_SCORE_ADJ "500"

/* How a process drops to the sandbox user. */
struct jail_drop {
    uid_t uid; /* inside ids of the sandbox user */
    gid_t gid;
    const char *cwd;     /* chdir after the uid change; NULL = stay */
    const int *keep_fds; /* fds to keep open; every other fd is closed */
    size_t nkeep;
    const struct jail_sc_prog *seccomp; /* compiled filter (NULL: compile here, slower) */
};

/* In this order: unblock every signal and reset every disposition to default; setsid();
 * close every fd not in keep_fds; clear ambient capabilities and the bounding set;
 * setgroups(0), setresgid, setresuid to the sandbox user; clear the effective,
 * permitted and inheritable sets; chdir(cwd); PR_SET_DUMPABLE; oom_score_adj to
 * JAIL_OOM_SCORE_ADJ; PR_SET_NO_NEW_PRIVS; install seccomp
 * (last, so that nothing above needs a syscall the filter denies).
 * Returns 0 or -errno (the process is then half-dropped: _exit). */
int jail_drop_privileges(const struct jail_drop *d);

struct jail_enter_opts {
    const char *cwd;     /* inside the sandbox, e.g. "/workspace" */
    const int *keep_fds; /* fds the grandchild keeps (e.g. 0, 1, 2, 3) */
    size_t nkeep;
    const struct jail_sc_prog *seccomp; /* compiled beforehand by the caller */
    int report_fd;                      /* the intermediate writes the grandchild's host
                                               pid here as an int32 before exiting; -1 = no */
    /* Set when the caller was created directly in the sandbox's pid namespace (the
     * zygote's clone after setns(CLONE_NEWPID), see src/zygote/zygote_spawn.c): no second
     * fork, and pidfd (a pidfd of e->ns_pid, not closed here) names the namespaces to
     * join, the same process whose pid namespace the caller was created in. */
    bool in_pidns;
    int pidfd;
};

/* Enter the sandbox described by e, from a single-threaded process in the host
 * namespaces, as root or (e->anchor_pid > 0) as the daemon's unprivileged user (the
 * zygote's child):
 *   1. write our pid to each e->cgroup_procs file (host paths: before leaving the host
 *      mount namespace);
 *   2. setns() into user, mnt, pid, ipc, uts, cgroup (and net unless network_host) of
 *      e->ns_pid in one call through a pidfd, so the kernel joins the user namespace first
 *      and the others with the capabilities it grants; with e->anchor_pid, the same
 *      namespaces one by one, user first, through the anchor's descriptors (opened
 *      through /proc/<anchor>/fd, all before the mount namespace changes what /proc is);
 *   3. fork: setns(pid) only affects children. The intermediate (this process) writes the
 *      grandchild's host pid to report_fd and _exit(0)s without returning;
 *      with o->in_pidns there is no fork (and no pid setns): the caller already is there;
 *   4. the grandchild, now in the sandbox's pid namespace, runs jail_drop_privileges()
 *      and returns 0 to the caller.
 * The grandchild is NOT reparented to the sandbox's pid 1 when the intermediate exits:
 * Linux reparents an orphan to a reaper in the pid namespace of its dead parent, i.e. to
 * the nearest host-side child subreaper (the daemon, see jail_global_init()), which
 * then reaps it and reports its real status through jail_adopt(). Its own children,
 * once orphaned, do go to the sandbox's pid 1.
 * Returns 0 in the grandchild, -errno in whichever process failed (caller: _exit). */
int jail_enter(const struct jail_entry *e, const struct jail_enter_opts *o);

/* A pid from the pidfd's fdinfo line named field ("Pid:", "NSpid:"): its first value (as
 * the caller's pid namespace sees it) or, with innermost, its last (the innermost pid
 * namespace). > 0; -ESRCH when the process is gone (the kernel shows -1); -ENOSYS when the
 * line is missing; or -errno. */
pid_t jail_pidfd_pid(int pidfd, const char *field, bool innermost);

#endif
