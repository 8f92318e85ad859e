/*
 * zygote.c — sandboxd-zygote: a process that imports the Python data stack once and then
 * forks one child per Python context on the daemon's request, so that a context is ready
 * in milliseconds and shares the imported modules' memory copy-on-write.
 *
 * Started by the daemon (zygote_client.c) with its control socket (SOCK_SEQPACKET) on fd
 * 3, as the daemon's user: root, or an ordinary user in non-root mode (then every
 * context is created the double-fork way, see direct_init() in zygote_spawn.c). It runs no user code and stays single-threaded: fork()
 * copies only the calling thread, so a thread pool started by an import (numexpr,
 * OpenBLAS) would leave its locks held forever in every child. The thread-count variables
 * are set before Python starts and the thread count is checked after preload; more than
 * one thread is a start-up failure, reported in the ready message.
 *
 * Start-up: environment (thread counts, MPLCONFIGDIR → the pre-built font cache, or a
 * private copy of it when it is read-only for us, IPYTHONDIR), an isolated embedded interpreter (no user site, no PYTHON* variables,
 * sys.executable = /usr/bin/python3, the runtimes dir first on sys.path), the --preload
 * modules, sandboxd_runtime.preload(), gc.freeze() (so a child's collections never write
 * to the shared pages), the seccomp filter compiled once, then malloc_trim() and no free
 * memory left where a child would allocate from shared pages (every free heap chunk and
 * every free block of a used pymalloc pool allocated for good). Before that, every host
 * path the interpreter holds is rewritten to the sandbox's side and argv is cleared
 * (hide_host_paths, hide_argv: zygote_start.c). Then `ready`.
 *
 * The loop never waits for a child (each runs in its sandbox's cgroups from its first
 * step: waiting for it would run this loop, and every tenant's context creation, at that
 * sandbox's CPU quota). Each request is checked (sizes, NUL termination, exactly three
 * fds, cgroup paths under /sys/fs/cgroup/), then the context is created directly in the
 * sandbox's pid namespace as the daemon's child (one clone3, see "creating the context
 * process" in zygote_spawn.c) and the reply leaves at once, with the pid inside read from the
 * clone's pidfd; the child tells its own success ("ready") or failure ("failed") on the
 * context's channel. Where the direct way is not available (a non-root daemon), the
 * child forks once more inside jail_enter(); the reply then needs the intermediate's
 * report, which is awaited in the same poll() as new requests, each with its own
 * deadline (REPORT_TIMEOUT_MS), and exited intermediates are reaped without blocking.
 * The request is dropped as soon as the child has its copy (zyg_forget_request): no later
 * child inherits another tenant's environment, cwd or cgroup paths.
 * The daemon is trusted (it is our parent and the only peer of the socket), but the
 * checks keep a daemon bug from becoming a zygote crash.
 *
 * Exits 0 when the control socket reaches EOF (the daemon is gone); PR_SET_PDEATHSIG
 * covers a daemon that dies without closing it.
 *
 * The program in three files (their shared declarations in zygote_int.h):
 *   zygote.c        main(), the request loop: receiving, checking and forgetting requests
 *   zygote_start.c  start-up: arguments, environment, interpreter, preload, heap trimming
 *   zygote_spawn.c  creating a context: the direct way (clone3) and the double fork
 * and zygote_child.c, what a freshly forked context runs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "zygote_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CGROUP_PREFIX "/sys/fs/cgroup/"

/* The receive buffer: its own mapping (see zyg_forget_request), ZYG_MSG_MAX bytes. */
static char *msgbuf;
static struct zyg_req req; /* the request being served, parsed in place in msgbuf */

/* Reply to request id: a = result, b = inside pid, msg optional. */
void zyg_reply(uint32_t id, int32_t a, int32_t b, const char *msg)
{
    struct zyg_hdr h = { .magic = ZYG_MAGIC, .type = ZYG_FORKED, .id = id, .a = a, .b = b };
    size_t n = msg ? strnlen(msg, 1024) : 0;
    char text[1025];
    if (n) {
        memcpy(text, msg, n);
        text[n++] = '\0';
    }
    h.len = (uint32_t)n;
    /* The socket is blocking in the zygote: a full buffer means the daemon is behind;
     * we wait for it (zyg_send uses MSG_DONTWAIT, so poll and retry). */
    for (;;) {
        int rc = zyg_send(ZYG_CTL_FD, &h, text, NULL, 0);
        if (rc != -EAGAIN)
            return;
        struct pollfd p = { .fd = ZYG_CTL_FD, .events = POLLOUT };
        if (poll(&p, 1, 1000) < 0 && errno != EINTR)
            return;
    }
}

static void send_ready(int32_t a, const char *text)
{
    struct zyg_hdr h = { .magic = ZYG_MAGIC, .type = ZYG_READY, .a = a };
    h.len = (uint32_t)strnlen(text, 1023) + 1;
    (void)zyg_send(ZYG_CTL_FD, &h, text, NULL, 0);
}

/* Check a request and point r's fields into the datagram. 0 or -EINVAL. */
static int parse_request(const struct zyg_hdr *h, char *payload, struct zyg_req *r)
{
    if (h->len < sizeof r->entry + 1 || h->a < 0 || h->a > ZYG_MAX_ENV)
        return -EINVAL;
    memcpy(&r->entry, payload, sizeof r->entry);
    for (int i = 0; i < 4; i++) {
        const char *cg = r->entry.cgroup_procs[i];
        if (!memchr(cg, '\0', sizeof r->entry.cgroup_procs[i]))
            return -EINVAL;
        if (cg[0] && (strncmp(cg, CGROUP_PREFIX, strlen(CGROUP_PREFIX)) || strstr(cg, "/../")))
            return -EINVAL;
    }
    if (r->entry.ns_pid <= 0 || r->entry.anchor_pid < 0)
        return -EINVAL;
    char *p = payload + sizeof r->entry, *end = payload + h->len;
    char *nul = memchr(p, '\0', (size_t)(end - p));
    if (!nul || nul - p >= ZYG_CWD_MAX || p[0] != '/')
        return -EINVAL;
    r->cwd = p;
    p = nul + 1;
    r->nenv = 0;
    for (int i = 0; i < h->a; i++) {
        nul = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;
        if (!nul || !memchr(p, '=', (size_t)(nul - p)) || p[0] == '=')
            return -EINVAL;
        r->env[r->nenv++] = p;
        p = nul + 1;
    }
    r->env[r->nenv] = NULL;
    return p == end ? 0 : -EINVAL;
}

long long zyg_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Forget the request once the child has its copy: no later child is forked with this
 * tenant's cgroup paths, cwd or environment (class 1 of docs/security.md). The request
 * is parsed in place (parse_request only points into msgbuf; the Python objects a
 * context needs are built in the child), so the buffer and the parsed struct are all
 * there is. The buffer's pages are dropped (MADV_DONTNEED: the next touch finds zeros)
 * rather than written: zeroing them would first copy each page the child shares with
 * us (16 page copies per context) and leave the child the only owner of the old ones;
 * dropped, they stay the child's until it drops them too (zygote_child.c, once the
 * environment is built), and nothing is copied. explicit_bzero if madvise fails. */
void zyg_forget_request(void)
{
    if (msgbuf && madvise(msgbuf, ZYG_MSG_MAX, MADV_DONTNEED) < 0)
        explicit_bzero(msgbuf, ZYG_MSG_MAX);
    explicit_bzero(&req, sizeof req);
}

void zyg_close_request_fds(struct zyg_req *r)
{
    close(r->channel_fd);
    close(r->stdout_fd);
    close(r->stderr_fd);
}

/* Take one request from the control socket, if one is waiting. 1 to go on, 0 when the
 * daemon is gone, -1 on a socket error. */
static int take_request(void)
{
    struct zyg_hdr h;
    int fds[ZYG_MAX_FDS], nfds = 0;
    int rc = zyg_recv(ZYG_CTL_FD, &h, msgbuf, ZYG_MSG_MAX - sizeof h, fds, &nfds, 1);
    if (rc == -EAGAIN)
        return 1;
    if (rc == 0)
        return 0;
    if (rc == -EBADMSG) {
        zyg_forget_request();
        if (h.magic == ZYG_MAGIC && h.type == ZYG_FORK)
            zyg_reply(h.id, -EBADMSG, 0, "zygote: malformed request");
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "sandboxd-zygote: control socket: %s\n", strerror(-rc));
        return -1;
    }
    if (h.type != ZYG_FORK || nfds != 3) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        zyg_forget_request();
        if (h.type == ZYG_FORK)
            zyg_reply(h.id, -EINVAL, 0, "zygote: a fork request needs exactly 3 fds");
        return 1;
    }
    req.id = h.id;
    req.channel_fd = fds[0];
    req.stdout_fd = fds[1];
    req.stderr_fd = fds[2];
    if (parse_request(&h, msgbuf, &req)) {
        zyg_close_request_fds(&req);
        zyg_forget_request();
        zyg_reply(h.id, -EINVAL, 0, "zygote: invalid fork request");
        return 1;
    }
    zyg_spawn(&req);
    return 1;
}

/* One loop, never blocked by a child: the control socket and the report pipes of the
 * requests still waiting (double-fork way, zygote_spawn.c) are polled together; deadlines
 * and exited intermediates are handled on each turn. */
static int serve_loop(void)
{
    static struct pollfd p[1 + ZYG_MAX_WAITING];
    for (;;) {
        long long timeout = -1;
        p[0] = (struct pollfd){ .fd = ZYG_CTL_FD, .events = POLLIN };
        unsigned n = zyg_waiting_pollfds(p + 1, zyg_now_ms(), &timeout);
        int pr = poll(p, 1 + n, (int)timeout);
        if (pr < 0 && errno != EINTR) {
            fprintf(stderr, "sandboxd-zygote: poll: %s\n", strerror(errno));
            return 1;
        }
        zyg_waiting_events(p + 1, n, pr);
        if (pr > 0 && p[0].revents) {
            int rc = take_request();
            if (rc <= 0)
                return rc < 0 ? 1 : 0;
        }
    }
}

/* Start up (zygote_start.c), map the receive buffer, say ready, serve until the daemon
 * is gone. Exit status: 0 at EOF, 1 on a failure after start-up began (reported in the
 * ready message too), 2 for bad arguments. */
int main(int argc, char **argv)
{
    char err[512] = "", version[64];
    int rc;
    /* Die with the daemon; if it is already gone, the socket read below sees EOF. */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(ZYG_CTL_FD, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET) {
        fprintf(stderr, "sandboxd-zygote: fd 3 must be the daemon's SOCK_SEQPACKET socket\n");
        return 2;
    }
    (void)fcntl(ZYG_CTL_FD, F_SETFD, FD_CLOEXEC);
    if (zyg_start_args(argc, argv))
        return 2;
    if ((rc = zyg_start_up(version, sizeof version, err, sizeof err)))
        goto fail;
    /* Mapped after the heap was trimmed and drained: a mapping of its own, not heap. */
    msgbuf = mmap(NULL, ZYG_MSG_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (msgbuf == MAP_FAILED) {
        msgbuf = NULL;
        rc = -errno;
        snprintf(err, sizeof err, "mapping the receive buffer failed: %s", strerror(errno));
        goto fail;
    }
    send_ready(0, version);
    return serve_loop();
fail:
    fprintf(stderr, "sandboxd-zygote: %s\n", err);
    send_ready(rc < 0 ? rc : -EINVAL, err);
    return 1;
}
