/*
 * zygote_spawn.c — creating a context's process from the zygote, once its request was
 * checked (zygote.c): the direct way, one clone3 into the sandbox's pid namespace with
 * the daemon as the parent, and where that is not available (a non-root daemon) the
 * double fork through jail_enter(), whose reports are awaited in slots polled by the
 * request loop, each with its own deadline.
 *
 * Guarantees: nothing here blocks on a child (each runs in its sandbox's cgroups from its
 * first step); every request is answered exactly once (at clone time, or when its slot's
 * report arrives, fails or times out); the request's three fds are closed in the zygote
 * and the request forgotten on every path before the next request is read; a context
 * that failed half-way is killed and named in the reply for the daemon to reap.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zygote_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../jail_seccomp.h"

#define REPORT_TIMEOUT_MS 10000

static struct jail_sc_prog seccomp_prog;
static unsigned unreaped; /* intermediates forked and not yet waited for */

/* ---- creating the context process ----------------------------------------------------
 *
 * The direct way (used whenever direct_init() succeeded): the zygote joins the sandbox's
 * pid namespace for its children only (setns(CLONE_NEWPID) through a pidfd of the
 * sandbox's process; the zygote itself stays where it is), creates the context with one
 * clone3(CLONE_PARENT), and goes back to its own pid namespace for children at once.
 * CLONE_PARENT makes the daemon the context's parent, as the old intermediate's exit did
 * (the daemon, a child subreaper, inherited the orphan), so the daemon still reaps it
 * and gets its real exit status (jail_adopt). Measured on the 2-vCPU VM: the second
 * fork copied the page tables of the ~115 MiB image again and the intermediate's exit
 * tore them down, 3-6 ms of CPU per context on the critical path or next to it.
 *
 * clone3 bypasses glibc's fork(), so its bookkeeping is redone here: the child's
 * pthread tid field is set by CLONE_CHILD_SETTID at the address glibc registered with
 * set_tid_address (PR_GET_TID_ADDRESS), CLONE_CHILD_CLEARTID as glibc does, and the
 * robust-futex list head is registered again (the kernel does not copy it). What is
 * skipped: pthread_atfork handlers (this process is single-threaded and none of them is
 * a thread pool's: only libbsd registers one, for its arc4random, which also checks
 * getpid()) and the re-initialisation of glibc's internal locks, which no other thread
 * can hold. Python's own fork hooks run as before (PyOS_BeforeFork/AfterFork_*).
 * If any piece is missing (old kernel, no PR_GET_TID_ADDRESS) the classic double fork
 * through jail_enter() is used. */

static struct {
    bool on;
    int own_pidns;   /* the zygote's pid namespace, to return to after each clone */
    pid_t *tid_addr; /* glibc's tid field of this thread */
    void *robust_head;
    size_t robust_len;
} direct = { .own_pidns = -1 };

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

struct zyg_clone_args { /* struct clone_args, CLONE_ARGS_SIZE_VER0 */
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void direct_init(void)
{
    pid_t *tid = NULL;
    void *head = NULL;
    size_t len = 0;
    if (prctl(PR_GET_TID_ADDRESS, &tid, 0, 0, 0) < 0 || !tid || *tid != gettid())
        return;
    if (syscall(SYS_get_robust_list, 0, &head, &len) < 0)
        return;
    int fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    /* Joining a pid namespace needs CAP_SYS_ADMIN in our own user namespace as well as
     * in the target's: a daemon run by an ordinary user has the latter (it owns every
     * sandbox's user namespace) but never the former, so setns(CLONE_NEWPID) is EPERM
     * for each request. Probe it once with our own namespace (a no-op when allowed):
     * without it, the child joins the user namespace first and forks (jail_enter). */
    if (setns(fd, CLONE_NEWPID) < 0) {
        close(fd);
        return;
    }
    direct.own_pidns = fd;
    direct.tid_addr = tid;
    direct.robust_head = head;
    direct.robust_len = len;
    direct.on = true;
}

/* Create the context's process in the pid namespace of the process pidfd names: 0 in
 * the child, its host pid in the zygote (*child_pidfd set), or -errno. Exits the zygote
 * if it cannot return to its own pid namespace (every later context would land in the
 * wrong sandbox). */
static pid_t clone_into(int pidfd, int *child_pidfd)
{
    if (setns(pidfd, CLONE_NEWPID) < 0)
        return -errno;
    struct zyg_clone_args ca = {
        .flags = CLONE_PARENT | CLONE_PIDFD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID,
        .pidfd = (uint64_t)(uintptr_t)child_pidfd,
        .child_tid = (uint64_t)(uintptr_t)direct.tid_addr,
        /* exit_signal must be 0 with CLONE_PARENT: the kernel uses the zygote's own
         * (SIGCHLD, to the daemon). */
    };
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid == 0) {
        (void)syscall(SYS_set_robust_list, direct.robust_head, direct.robust_len);
        return 0;
    }
    int err = errno;
    if (setns(direct.own_pidns, CLONE_NEWPID) < 0) {
        fprintf(stderr, "sandboxd-zygote: cannot return to its pid namespace: %s\n",
                strerror(errno));
        _exit(1);
    }
    return pid < 0 ? -err : (pid_t)pid;
}

/* The context's pid inside the sandbox: the last field of the NSpid line in its pidfd's
 * fdinfo (the innermost pid namespace). Readable for a zombie too (the context is the
 * daemon's child, and the daemon reaps only what it was told about). > 0 or -errno. */
static pid_t inside_pid(int child_pidfd)
{
    return jail_pidfd_pid(child_pidfd, "NSpid:", true);
}

/* The direct way: clone the context into the sandbox's pid namespace and reply at once
 * with its host pid and its pid inside. Nothing here waits for the child, which joins the
 * sandbox's cgroups first thing and would make this loop run at that sandbox's CPU
 * quota: whatever happens to it later (entering the sandbox failed, or it got ready)
 * reaches the daemon on the context's own channel ({"type":"failed"} or "ready") and
 * as its exit status, and the daemon bounds the wait with the context start timeout. */
static void serve_direct(struct zyg_req *r)
{
    char msg[256];
    int child_pidfd = -1;
    uint32_t id = r->id;
    int pidfd = (int)syscall(SYS_pidfd_open, r->entry.ns_pid, 0);
    if (pidfd < 0) {
        int e = errno;
        zyg_close_request_fds(r);
        zyg_forget_request();
        snprintf(msg, sizeof msg, "entering the sandbox failed: %s", strerror(e));
        zyg_reply(id, -e, 0, msg);
        return;
    }
    (void)zyg_call_noargs("gc", "freeze", msg, sizeof msg);
    PyOS_BeforeFork();
    pid_t pid = clone_into(pidfd, &child_pidfd);
    if (pid == 0) {
        PyOS_AfterFork_Child();
        zyg_child_main(r, -1, pidfd, &seccomp_prog);
    }
    PyOS_AfterFork_Parent();
    close(pidfd);
    zyg_close_request_fds(r);
    zyg_forget_request();
    if (pid < 0) {
        snprintf(msg, sizeof msg, "zygote: clone: %s", strerror(-pid));
        zyg_reply(id, pid, 0, msg);
        return;
    }
    pid_t inside = inside_pid(child_pidfd);
    if (inside < 0) {
        /* Not seen in practice (the fdinfo of a pidfd always has NSpid). The child is
         * killed, not waited for: b names it for the daemon to reap. */
        (void)syscall(SYS_pidfd_send_signal, child_pidfd, SIGKILL, NULL, 0);
        snprintf(msg, sizeof msg, "zygote: the context's pid in the sandbox: %s",
                 strerror(-inside));
        zyg_reply(id, inside, pid, msg);
    } else {
        zyg_reply(id, pid, inside, NULL);
    }
    close(child_pidfd);
}

/* ---- the double-fork way: replies that wait for the intermediate ---------------------
 *
 * Without the direct way (a daemon run by an ordinary user) the context's host pid is
 * known only to the intermediate process of jail_enter(), which already runs in the
 * sandbox's cgroups. Its report (and the context's pid inside) is awaited here, but
 * never by blocking: each request waiting for its records has a slot with its own
 * deadline, and serve_loop() polls the control socket and every slot's report pipe
 * together. A sandbox starved of CPU so delays only its own contexts. A slot holds no
 * tenant data: an id, a descriptor, pids. */
#define ZYG_MAX_WAITING 256

struct waiting {
    uint32_t id;
    int rp;               /* read end of the report pipe (non-blocking) */
    pid_t mid;            /* the intermediate (our child, reaped by reap_children) */
    int32_t host, inside; /* records received so far (0 = not yet) */
    long long deadline;
};
static struct waiting waiting[ZYG_MAX_WAITING];
static unsigned nwaiting;

/* Reply for slot i with result (host pid or -errno) and free the slot. On failure the
 * context (if it was created) is killed; b then names it for the daemon to reap. */
static void waiting_done(unsigned i, int32_t result, const char *msg)
{
    struct waiting *w = &waiting[i];
    int32_t b = w->inside;
    if (result < 0) {
        if (w->host > 0)
            kill(w->host, SIGKILL);
        if (w->mid > 0)
            kill(w->mid, SIGKILL); /* stuck in its sandbox: it is ours to reap */
        b = w->host > 0 ? w->host : 0;
    }
    zyg_reply(w->id, result, b, msg);
    close(w->rp);
    waiting[i] = waiting[--nwaiting];
}

/* Read what slot i's report pipe holds. Up to two records, in either order: the
 * intermediate's (host pid or -errno) and the context's (tagged: pid inside or -errno). */
static void waiting_read(unsigned i)
{
    struct waiting *w = &waiting[i];
    char msg[256];
    for (;;) {
        int32_t v;
        ssize_t n = read(w->rp, &v, sizeof v); /* records are written whole (< PIPE_BUF) */
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n != (ssize_t)sizeof v) {
            snprintf(msg, sizeof msg, "the context died while entering the sandbox (no report)");
            waiting_done(i, -ECHILD, msg);
            return;
        }
        if (ZYG_REPORT_IS_INSIDE(v) && v > 0) {
            w->inside = v & 0x3fffffff;
        } else if (ZYG_REPORT_IS_INSIDE(v)) {
            int32_t e = -(-v - 0x40000000);
            snprintf(msg, sizeof msg, "the context could not drop privileges in the sandbox: %s",
                     strerror(-e));
            waiting_done(i, e, msg);
            return;
        } else if (v > 0) {
            w->host = v;
        } else {
            int32_t e = v ? v : -EIO;
            snprintf(msg, sizeof msg, "entering the sandbox failed: %s", strerror(-e));
            waiting_done(i, e, msg);
            return;
        }
        if (w->host > 0 && w->inside > 0) {
            waiting_done(i, w->host, NULL);
            return;
        }
    }
}

static void serve_forked(struct zyg_req *r)
{
    char msg[256];
    int rp[2];
    uint32_t id = r->id;
    if (nwaiting == ZYG_MAX_WAITING || pipe2(rp, O_CLOEXEC) < 0) {
        int e = nwaiting == ZYG_MAX_WAITING ? EAGAIN : errno;
        zyg_close_request_fds(r);
        zyg_forget_request();
        snprintf(msg, sizeof msg, "zygote: %s",
                 nwaiting == ZYG_MAX_WAITING ? "too many contexts are entering their sandboxes"
                                             : strerror(e));
        zyg_reply(id, -e, 0, msg);
        return;
    }
    (void)zyg_call_noargs("gc", "freeze", msg, sizeof msg);
    PyOS_BeforeFork();
    pid_t pid = fork();
    if (pid == 0) {
        PyOS_AfterFork_Child();
        close(rp[0]);
        zyg_child_main(r, rp[1], -1, &seccomp_prog);
    }
    int fork_errno = errno;
    PyOS_AfterFork_Parent();
    close(rp[1]);
    zyg_close_request_fds(r);
    zyg_forget_request();
    if (pid < 0) {
        close(rp[0]);
        snprintf(msg, sizeof msg, "zygote: fork: %s", strerror(fork_errno));
        zyg_reply(id, -fork_errno, 0, msg);
        return;
    }
    unreaped++;
    (void)fcntl(rp[0], F_SETFL, O_NONBLOCK);
    waiting[nwaiting++] = (struct waiting){
        .id = id,
        .rp = rp[0],
        .mid = pid,
        .deadline = zyg_now_ms() + REPORT_TIMEOUT_MS,
    };
}

/* Reap exited intermediates, never blocking. */
static void reap_children(void)
{
    while (unreaped > 0) {
        pid_t p = waitpid(-1, NULL, WNOHANG);
        if (p < 0 && errno == EINTR)
            continue;
        if (p <= 0) {
            if (p < 0)
                unreaped = 0; /* ECHILD: nothing left */
            return;
        }
        unreaped--;
        for (unsigned i = 0; i < nwaiting; i++)
            if (waiting[i].mid == p)
                waiting[i].mid = 0; /* gone: never signal its pid again */
    }
}

int zyg_spawn_init(char *err, size_t errlen)
{
    direct_init();
    int rc = jail_seccomp_compile(&seccomp_prog);
    if (rc)
        snprintf(err, errlen, "compiling the seccomp filter failed: %s", strerror(-rc));
    return rc;
}

void zyg_spawn(struct zyg_req *r)
{
    /* A request with an anchor (non-root daemon) cannot be served the direct way: only
     * the child, once in the sandbox's user namespace, may join its pid namespace. */
    if (direct.on && !r->entry.anchor_pid)
        serve_direct(r);
    else
        serve_forked(r);
}

unsigned zyg_waiting_pollfds(struct pollfd *p, long long now, long long *timeout)
{
    for (unsigned i = 0; i < nwaiting; i++) {
        p[i] = (struct pollfd){ .fd = waiting[i].rp, .events = POLLIN };
        long long left = waiting[i].deadline - now;
        if (*timeout < 0 || left < *timeout)
            *timeout = left < 0 ? 0 : left;
    }
    if (unreaped && (*timeout < 0 || *timeout > 20))
        *timeout = 20; /* intermediates exit within milliseconds of their report */
    return nwaiting;
}

void zyg_waiting_events(const struct pollfd *p, unsigned n, int pr)
{
    reap_children();
    /* Slots move when one is freed (the last takes its place): walk backwards, each
     * slot matched with its pollfd by descriptor. */
    for (unsigned i = n; pr > 0 && i-- > 0;)
        if (p[i].revents && i < nwaiting && waiting[i].rp == p[i].fd)
            waiting_read(i);
    long long now = zyg_now_ms();
    for (unsigned i = nwaiting; i-- > 0;)
        if (waiting[i].deadline <= now)
            waiting_done(i, -ETIMEDOUT,
                         "the context did not report from its sandbox in "
                         "time (killed)");
}
