/*
 * jail_enter.c — the shared "enter a sandbox, drop privileges" path (see jail_enter.h).
 *
 * Runs between fork and exec (init's children) or between fork and user code (zygote
 * children), so it allocates nothing, uses raw system calls where glibc would allocate,
 * and stops at the first error. Order matters and is explained inline: anything that
 * needs a capability comes before the uid change; chdir comes after it so that the
 * sandbox user's permissions apply; seccomp comes last because it denies calls made
 * above (setns, mount-related prctls are fine but we keep the filter strictly last).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_enter.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Close every fd except those in keep (at most 16 are honoured). */
static int close_others(const int *keep, size_t nkeep)
{
    int k[16];
    size_t n = 0;
    for (size_t i = 0; i < nkeep && n < 16; i++)
        if (keep[i] >= 0)
            k[n++] = keep[i];
    /* insertion sort: n is tiny */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && k[j - 1] > k[j]; j--) {
            int t = k[j];
            k[j] = k[j - 1];
            k[j - 1] = t;
        }
    unsigned lo = 0;
    for (size_t i = 0; i <= n; i++) {
        unsigned hi = i < n ? (unsigned)k[i] : ~0U;
        if (i < n && (unsigned)k[i] < lo)
            continue; /* duplicate */
        if (hi > lo && syscall(SYS_close_range, lo, hi - 1, 0) < 0)
            return -errno;
        if (i < n)
            lo = (unsigned)k[i] + 1;
    }
    return 0;
}

static int reset_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
        return -errno;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        (void)sigaction(s, &sa, NULL); /* EINVAL for glibc-reserved signals: fine */
    }
    return 0;
}

static int clear_capabilities(void)
{
    struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) < 0)
        return -errno;
    return 0;
}

/* Every process of a sandbox is a likelier OOM victim than its init, which the kernel
 * would otherwise pick when it is the biggest process left in a sandbox whose memory is
 * full of tmpfs pages, and the whole sandbox would die with it. The init's value (-1000
 * where the outer init could set it, else the daemon's) is inherited across fork: we
 * set ours outright. Raising needs no privilege. Sandbox code may lower its own value
 * again down to the floor it inherited (oom_score_adj_min: the daemon's, normally 0),
 * which only gives up its own protection of init; below the floor would need
 * CAP_SYS_RESOURCE on the host, so it can never make itself unkillable. */
static int set_oom_score_adj(void)
{
    static const char v[] = JAIL_OOM_SCORE_ADJ;
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = write(fd, v, sizeof v - 1) == (ssize_t)(sizeof v - 1) ? 0 : -errno;
    close(fd);
    return rc;
}

int jail_drop_privileges(const struct jail_drop *d)
{
    int rc = reset_signals();
    if (rc)
        return rc;
    /* A new session: no controlling terminal, so TIOCSTI/TIOCSCTTY-style tricks on an
     * inherited tty are moot (seccomp denies TIOCSTI too). Fails only for a session
     * leader, which a freshly forked child is not. */
    if (setsid() < 0 && errno != EPERM)
        return -errno;
    rc = close_others(d->keep_fds, d->nkeep);
    if (rc)
        return rc;
    /* Capabilities over the sandbox's user namespace: ambient and bounding first (these
     * need CAP_SETPCAP, which we lose with the uid change below). */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno;
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EINVAL)
                break; /* past the last capability this kernel knows */
            return -errno;
        }
    }
    /* No supplementary groups. EPERM when setgroups is denied in this user namespace
     * (non-root mode): the process then has none mapped anyway. */
    if (setgroups(0, NULL) < 0 && errno != EPERM)
        return -errno;
    if (setresgid(d->gid, d->gid, d->gid) < 0)
        return -errno;
    if (setresuid(d->uid, d->uid, d->uid) < 0)
        return -errno;
    /* The uid change clears caps only when leaving uid 0 of this namespace; be explicit. */
    rc = clear_capabilities();
    if (rc)
        return rc;
    if (d->cwd && chdir(d->cwd) < 0)
        return -errno;
    /* The credential change made us non-dumpable; an exec makes a process dumpable again,
     * so do the same for the no-exec (zygote) path: /proc/self stays owned by us. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
        return -errno;
    /* Dumpable and the sandbox user now: /proc/self/oom_score_adj is ours to write
     * (before, a child of the non-dumpable init found it owned by a root we may not be). */
    rc = set_oom_score_adj();
    if (rc)
        return rc;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    if (d->seccomp)
        return jail_seccomp_install(d->seccomp);
    static struct jail_sc_prog prog; /* fallback: compiled here (allocates) */
    rc = jail_seccomp_compile(&prog);
    return rc ? rc : jail_seccomp_install(&prog);
}

static int write_pid(const char *path, pid_t pid)
{
    char v[24];
    int len = snprintf(v, sizeof v, "%d", (int)pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = write(fd, v, (size_t)len) == len ? 0 : -errno;
    close(fd);
    return rc;
}

/* Non-root mode: join the sandbox's namespaces through the descriptors its outer init
 * holds (see struct jail_entry). Every descriptor is opened first, while /proc is still
 * the host's; the user namespace is joined first (as its owner we may, and we then hold
 * every capability in it), then the others, each of which checks those capabilities.
 * The pid namespace applies to children only: the caller forks next. 0 or -errno. */
static int join_through_anchor(const struct jail_entry *e)
{
    static const int types[JAIL_NS_COUNT] = {
        [JAIL_NS_USER] = CLONE_NEWUSER, [JAIL_NS_MNT] = CLONE_NEWNS,
        [JAIL_NS_PID] = CLONE_NEWPID,   [JAIL_NS_IPC] = CLONE_NEWIPC,
        [JAIL_NS_UTS] = CLONE_NEWUTS,   [JAIL_NS_CGROUP] = CLONE_NEWCGROUP,
        [JAIL_NS_NET] = CLONE_NEWNET,
    };
    int fds[JAIL_NS_COUNT], n = e->network_host ? JAIL_NS_NET : JAIL_NS_COUNT, rc = 0, i;
    for (i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)e->anchor_pid, JAIL_ANCHOR_FD + i);
        fds[i] = open(path, O_RDONLY | O_CLOEXEC);
        if (fds[i] < 0) {
            rc = errno == ENOENT ? -ESRCH : -errno; /* the sandbox is gone */
            break;
        }
    }
    struct stat st;
    if (!rc && e->userns_ino &&
        (fstat(fds[JAIL_NS_USER], &st) < 0 || (unsigned long long)st.st_ino != e->userns_ino))
        rc = -ESRCH; /* anchor_pid was not the sandbox's outer init any more */
    for (int k = 0; !rc && k < n; k++)
        if (setns(fds[k], types[k]) < 0)
            rc = -errno;
    while (i-- > 0)
        close(fds[i]);
    return rc;
}

int jail_enter(const struct jail_entry *e, const struct jail_enter_opts *o)
{
    int rc, pidfd = -1;
    for (int i = 0; i < 4; i++) {
        if (e->cgroup_procs[i][0] && (rc = write_pid(e->cgroup_procs[i], getpid())))
            return rc;
    }
    if (e->anchor_pid > 0 && o->in_pidns)
        return -EINVAL; /* only a privileged caller can have been created in there */
    if (e->anchor_pid > 0) {
        rc = join_through_anchor(e);
    } else {
        pidfd = o->in_pidns ? o->pidfd : (int)syscall(SYS_pidfd_open, e->ns_pid, 0);
        if (pidfd < 0)
            return o->in_pidns ? -EBADF : -errno;
        int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                    (o->in_pidns ? 0 : CLONE_NEWPID) | (e->network_host ? 0 : CLONE_NEWNET);
        rc = setns(pidfd, flags) < 0 ? -errno : 0;
        if (!o->in_pidns)
            close(pidfd);
    }
    if (rc)
        return rc;
    pid_t child = o->in_pidns ? 0 : fork();
    if (child < 0)
        return -errno;
    if (child > 0) {
        if (o->report_fd >= 0) {
            int32_t v = (int32_t)child;
            (void)!write(o->report_fd, &v, sizeof v);
        }
        _exit(0);
    }
    /* Only now is /proc/self ours: the sandbox's /proc shows its own pid namespace.
     * (With in_pidns the user namespace check also covers the pid namespace: the caller
     * was created in the pid namespace of the process pidfd names.) */
    if (e->userns_ino) {
        struct stat st;
        if (stat("/proc/self/ns/user", &st) < 0)
            return -errno;
        if ((unsigned long long)st.st_ino != e->userns_ino)
            return -ESRCH; /* ns_pid was not the sandbox any more */
    }
    struct jail_drop d = {
        .uid = e->uid,
        .gid = e->gid,
        .cwd = o->cwd,
        .keep_fds = o->keep_fds,
        .nkeep = o->nkeep,
        .seccomp = o->seccomp,
    };
    return jail_drop_privileges(&d);
}

pid_t jail_pidfd_pid(int pidfd, const char *field, bool innermost)
{
    char path[64], text[1024], key[32];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    snprintf(key, sizeof key, "\n%s", field);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, text, sizeof text - 1);
    int e = errno;
    close(fd);
    if (n <= 0)
        return n < 0 ? -e : -EIO;
    text[n] = '\0';
    char *l = strstr(text, key);
    if (!l)
        return -ENOSYS;
    l += strlen(key);
    long v = -1;
    for (;;) {
        char *end;
        long x = strtol(l, &end, 10);
        if (end == l)
            break;
        v = x;
        l = end;
        if (!innermost)
            break;
    }
    return v > 0 ? (pid_t)v : -ESRCH;
}
