/*
 * init_serve.c — pid 1 of a sandbox: serves the daemon's control socket (fd 3), spawns
 * processes, reaps every process and reports the exits of the ones it spawned.
 *
 * Single-threaded poll loop over the control socket and a signalfd for SIGCHLD.
 *   JP_SPAWN  fork (not with less than --spawn-reserve-kb of the sandbox's memory free:
 *             ENOMEM, see memory_full); the child moves the received fds to 0-3, drops
 *             to the sandbox user (jail_drop_privileges: new session, no caps,
 *             no_new_privs, oom_score_adj, seccomp last) and execs; an error before exec travels back as errno through a CLOEXEC
 *             pipe, so the reply is either the pid or the child's real errno.
 *   JP_KILL   signals a process group, only for pids we spawned and have not reaped
 *             yet (a reaped pid may be reused), or for a pid the daemon says it adopted.
 *   JP_ADOPT  a pidfd for a process that entered by itself (zygote child), so the daemon
 *             can wait for it: it is the daemon's child (see jail_enter.h), not ours.
 * Every exit is reaped (orphans included: we are the pid namespace's reaper); exits of
 * spawned pids are reported as JP_EXIT with the wait status. When the daemon's end of
 * the socket closes, init exits, and the kernel kills everything in the namespace.
 * Requests are length-checked; strings must end inside the datagram.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "init.h"
#include "../jail_enter.h"
#include "../jail_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIVE_MAX 8192 /* spawned, not yet reaped; beyond it spawns fail with EAGAIN */

static pid_t live[LIVE_MAX];
static size_t nlive;

static bool live_has(pid_t pid)
{
    for (size_t i = 0; i < nlive; i++)
        if (live[i] == pid)
            return true;
    return false;
}

static bool live_del(pid_t pid)
{
    for (size_t i = 0; i < nlive; i++) {
        if (live[i] == pid) {
            live[i] = live[--nlive];
            return true;
        }
    }
    return false;
}

/* A number from a cgroup file read through fd; "max" (v2, no limit) is UINT64_MAX. */
static int read_counter(int fd, uint64_t *v)
{
    char b[32];
    ssize_t n = pread(fd, b, sizeof b - 1, 0);
    if (n <= 0)
        return -EIO;
    b[n] = '\0';
    if (strncmp(b, "max", 3) == 0) {
        *v = UINT64_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(b, &end, 10);
    if (errno || end == b)
        return -EIO;
    *v = x;
    return 0;
}

/* Whether the sandbox's memory is too full for us to fork. The fork is charged to the
 * sandbox's memory cgroup in our own context, before the child exists: with the memory
 * full (of tmpfs pages, which no kill frees) and no other process left to kill, the OOM
 * killer would have only us and the outer init to choose from, and the sandbox would
 * end. So below cfg->spawn_reserve (--spawn-reserve-kb) of headroom we refuse (ENOMEM) until files are deleted
 * or processes end; above it, the fork fits, and whatever the command then allocates is
 * charged in its own context, where it (at JAIL_OOM_SCORE_ADJ) is the victim, not us.
 * Whether a kill could free memory instead is not asked: kernel memory (inodes of many
 * small files) frees no better than tmpfs pages. Unreadable: fork. */
/* Page cache of files (the workspace is a file system on disk, docs/lifecycle.md) counts
 * in the usage but is reclaimed for a fork: the file LRU pages of memory.stat (cgroup v1
 * "total_" lines, v2 plain; shmem and tmpfs pages are on the anon lists, not counted).
 * 0 when unreadable. */
static uint64_t file_pages(const struct init_cfg *cfg)
{
    char b[8192];
    ssize_t n = cfg->mem_stat_fd >= 0 ? pread(cfg->mem_stat_fd, b, sizeof b - 1, 0) : -1;
    if (n <= 0)
        return 0;
    b[n] = '\0';
    static const char *const KEYS[] = { "\ntotal_active_file ", "\ntotal_inactive_file ",
                                        "\nactive_file ", "\ninactive_file " };
    uint64_t v1 = 0, v2 = 0;
    for (int i = 0; i < 4; i++) {
        const char *at = strstr(b, KEYS[i]);
        if (at)
            *(i < 2 ? &v1 : &v2) += strtoull(at + strlen(KEYS[i]), NULL, 10);
    }
    return v1 ? v1 : v2;
}

static bool memory_full(const struct init_cfg *cfg)
{
    uint64_t usage, limit;
    if (cfg->mem_usage_fd < 0 || read_counter(cfg->mem_usage_fd, &usage) ||
        read_counter(cfg->mem_limit_fd, &limit))
        return false;
    if (usage >= limit || limit - usage < cfg->spawn_reserve) {
        uint64_t cache = file_pages(cfg);
        usage = cache < usage ? usage - cache : 0;
    }
    return usage >= limit || limit - usage < cfg->spawn_reserve;
}

static void reply(uint32_t type, uint32_t id, int32_t a, int32_t b, const int *fds, int nfds)
{
    struct jp_hdr h = { .type = type, .id = id, .a = a, .b = b };
    if (jp_send(INIT_CTL_FD, &h, NULL, fds, nfds) < 0)
        _exit(1); /* the daemon is gone */
}

/* Split "cwd\0argv…\0envp…\0" into pointers. 0 or -EINVAL. */
static int parse_spawn(char *p, size_t len, int argc, int envc, const char **cwd, char **argv,
                       char **envp)
{
    if (argc < 1 || envc < 0 || argc + envc > JP_MAX_ARGS || len == 0 || p[len - 1] != '\0')
        return -EINVAL;
    char *end = p + len;
    *cwd = p;
    p += strlen(p) + 1;
    for (int i = 0; i < argc + envc; i++) {
        if (p >= end)
            return -EINVAL;
        if (i < argc)
            argv[i] = p;
        else
            envp[i - argc] = p;
        p += strlen(p) + 1;
    }
    argv[argc] = NULL;
    envp[envc] = NULL;
    return p == end ? 0 : -EINVAL;
}

static __attribute__((noreturn)) void spawn_child(const int *fds, int nfds, int errfd,
                                                  const char *cwd, char **argv, char **envp,
                                                  const struct jail_sc_prog *prog)
{
    int hi[JP_MAX_FDS];
    int e = 0;
    /* Move the received fds out of the way first, then into place: a received fd may
     * already sit on 0-3. */
    for (int i = 0; i < nfds; i++) {
        hi[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64);
        if (hi[i] < 0) {
            e = errno;
            goto fail;
        }
    }
    for (int i = 0; i < nfds; i++) {
        if (dup2(hi[i], i) < 0) {
            e = errno;
            goto fail;
        }
    }
    int keep[JP_MAX_FDS + 1];
    for (int i = 0; i < nfds; i++)
        keep[i] = i;
    keep[nfds] = errfd;
    struct jail_drop d = {
        .uid = INIT_USER_UID,
        .gid = INIT_USER_GID,
        .cwd = cwd,
        .keep_fds = keep,
        .nkeep = (size_t)nfds + 1,
        .seccomp = prog,
    };
    int rc = jail_drop_privileges(&d);
    if (rc) {
        e = -rc;
        goto fail;
    }
    execve(argv[0], argv, envp);
    e = errno;
fail:
    (void)!write(errfd, &e, sizeof e);
    _exit(127);
}

static void handle_spawn(const struct init_cfg *cfg, const struct jp_hdr *h, char *payload,
                         const int *fds, int nfds, const struct jail_sc_prog *prog)
{
    static char *argv[JP_MAX_ARGS + 1], *envp[JP_MAX_ARGS + 1];
    const char *cwd;
    int ep[2] = { -1, -1 };
    int32_t res;
    if (nfds < 3 || nfds != h->c ||
        parse_spawn(payload, h->len, h->a, h->b, &cwd, argv, envp) < 0) {
        res = -EINVAL;
        goto out;
    }
    if (nlive >= LIVE_MAX) {
        res = -EAGAIN;
        goto out;
    }
    if (memory_full(cfg)) {
        res = -ENOMEM;
        goto out;
    }
    if (pipe2(ep, O_CLOEXEC) < 0) {
        res = -errno;
        goto out;
    }
    pid_t pid = fork();
    if (pid < 0) {
        res = -errno;
        goto out;
    }
    if (pid == 0) {
        close(ep[0]);
        spawn_child(fds, nfds, ep[1], cwd, argv, envp, prog);
    }
    close(ep[1]);
    ep[1] = -1;
    int e = 0;
    ssize_t r;
    do
        r = read(ep[0], &e, sizeof e);
    while (r < 0 && errno == EINTR);
    if (r == (ssize_t)sizeof e) {
        /* It never ran user code: reap it here and report only the errno. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        res = -(e ? e : EIO);
    } else {
        live[nlive++] = pid;
        res = pid;
    }
out:
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    if (ep[0] >= 0)
        close(ep[0]);
    if (ep[1] >= 0)
        close(ep[1]);
    reply(JP_SPAWNED, h->id, res, 0, NULL, 0);
}

static void handle_kill(const struct jp_hdr *h)
{
    pid_t pid = h->a;
    int sig = h->b;
    if (pid <= 1 || sig < 0 || sig >= NSIG || (!h->c && !live_has(pid)))
        return;
    if (sig == SIGKILL)
        (void)kill(-pid, SIGCONT);
    if (kill(-pid, sig) < 0 && errno == ESRCH)
        (void)kill(pid, sig); /* not a group leader any more: the process itself */
}

static void handle_adopt(const struct jp_hdr *h)
{
    int fd = h->a > 1 ? (int)syscall(SYS_pidfd_open, (pid_t)h->a, 0) : -1;
    if (fd < 0) {
        reply(JP_ADOPTED, h->id, h->a > 1 ? -errno : -EINVAL, 0, NULL, 0);
        return;
    }
    reply(JP_ADOPTED, h->id, 0, 0, &fd, 1);
    close(fd);
}

static void reap_all(void)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);
        if (pid <= 0)
            return;
        if (live_del(pid))
            reply(JP_EXIT, 0, pid, st, NULL, 0);
    }
}

void init_serve(const struct init_cfg *cfg, const struct jail_sc_prog *prog)
{
    static char payload[JP_MSG_MAX];
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        _exit(1);
    for (;;) {
        struct pollfd p[2] = { { INIT_CTL_FD, POLLIN, 0 }, { sfd, POLLIN, 0 } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            reap_all();
        }
        if (!p[0].revents)
            continue;
        for (;;) {
            struct jp_hdr h;
            int fds[JP_MAX_FDS], nfds;
            int rc = jp_recv(INIT_CTL_FD, &h, payload, sizeof payload, fds, &nfds);
            if (rc == -EAGAIN)
                break;
            if (rc == 0 || (rc < 0 && rc != -EBADMSG))
                _exit(0); /* daemon closed its end: the sandbox ends with us */
            if (rc < 0)
                continue;
            switch (h.type) {
            case JP_SPAWN:
                handle_spawn(cfg, &h, payload, fds, nfds, prog);
                nfds = 0;
                break;
            case JP_KILL: handle_kill(&h); break;
            case JP_ADOPT: handle_adopt(&h); break;
            default: break;
            }
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
            /* Reap between requests too, so a burst of spawns cannot starve reporting. */
            reap_all();
        }
    }
}
