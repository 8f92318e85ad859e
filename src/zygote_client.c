/*
 * zygote_client.c — the daemon's side of the Python zygote (see zygote_client.h and
 * src/zygote/zygote_proto.h for the wire format).
 *
 * State: one zygote process, its SOCK_SEQPACKET control socket (non-blocking, watched by a
 * uv_poll), and one FIFO of fork requests. A request is "unsent" (it owns duplicates of
 * the caller's three fds and its encoded payload) until sendmsg() takes it, then "sent"
 * (fds closed: the kernel holds them in flight) until the zygote's FORKED reply with its
 * id arrives. The list is capped (max_pending), the payload by ZYG_MSG_MAX, so a burst of
 * requests costs bounded memory and never blocks the loop: a full socket only delays the
 * rest until the poll says writable.
 *
 * Failure handling: the zygote's death is noticed by EOF/HUP on the socket or by the
 * process exit callback, whichever comes first. Every request in flight then fails with
 * -EPIPE (a context the zygote forked but did not report sees its channel closed and
 * exits), the process is killed and reaped, and a restart is scheduled with exponential
 * backoff. Callbacks always run from the loop (poll, timer or exit callbacks), never
 * inside zyg_fork(); the request list is detached before callbacks run, so a callback may
 * call zyg_fork() or zyg_stop().
 *
 * A failed context the zygote names for us to reap (it killed it, but waits for no
 * child) is reaped through a pidfd on a retry timer (REAP_MS), since it may not have
 * exited, or not be our child yet, when the reply arrives.
 *
 * Handles are reused across restarts only after their close callbacks ran.
 */
#include "zygote_client.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "zygote/zygote_proto.h"

#define DEFAULT_READY_TIMEOUT_MS 20000
#define DEFAULT_MAX_PENDING 256
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000
#define HEALTHY_MS 60000 /* a zygote alive this long resets the backoff */
#define STR_CAP 1024
#define REAP_MS 50     /* retry period for a failed context still to be reaped */
#define REAP_TRIES 200 /* 10 s, then it is left (logged) */
#define REAP_MAX 64

struct zreq {
    struct zreq *next;
    uint32_t id;
    bool sent;
    int fds[3];
    uint32_t nenv;
    uint32_t len;
    zyg_fork_cb cb;
    void *arg;
    char payload[]; /* len bytes */
};

enum zstate { Z_OFF, Z_STARTING, Z_READY, Z_BACKOFF, Z_STOPPED };

static struct {
    uv_loop_t *loop;
    enum zstate state;
    /* configuration (copied) */
    char path[STR_CAP], runtimes[STR_CAP], inside[STR_CAP], mpl[STR_CAP], ipy[STR_CAP],
        preload[STR_CAP];
    unsigned ready_timeout_ms, max_pending;
    /* the process */
    uv_process_t proc;
    bool proc_open, proc_exited;
    pid_t pid;
    uint64_t ready_at;
    unsigned failures;
    /* the socket */
    int fd;
    uv_poll_t poll;
    bool poll_open, want_write;
    /* timers: ready timeout / backoff, and deferred loss */
    uv_timer_t timer, lost_timer, reap_timer;
    bool timers_open;
    int timers_closing;
    /* failed contexts the zygote named for us to reap (FORKED, a < 0, b > 0) */
    struct {
        int pidfd;
        unsigned tries;
    } reaps[REAP_MAX];
    unsigned nreaps;
    char lost_reason[128];
    /* requests */
    struct zreq *head, *tail;
    unsigned npending;
    uint32_t next_id;
    char version[32];
} Z = { .fd = -1 };

static void zygote_lost(const char *reason);
static void on_poll(uv_poll_t *h, int status, int events);
static void on_lost_timer(uv_timer_t *t);
static void reap_later(pid_t pid);

static int copy_str(char *dst, const char *src, const char *def)
{
    int n = snprintf(dst, STR_CAP, "%s", src ? src : def);
    return n < 0 || n >= STR_CAP ? -ENAMETOOLONG : 0;
}

static void req_free(struct zreq *r)
{
    if (!r)
        return;
    if (!r->sent)
        for (int i = 0; i < 3; i++)
            if (r->fds[i] >= 0)
                close(r->fds[i]);
    free(r);
}

/* Detach every request, then fail each with rc (callbacks may re-enter). */
static void fail_all(int rc, const char *msg)
{
    struct zreq *r = Z.head;
    Z.head = Z.tail = NULL;
    Z.npending = 0;
    while (r) {
        struct zreq *next = r->next;
        zyg_fork_cb cb = r->cb;
        void *arg = r->arg;
        req_free(r);
        cb(rc, 0, msg, arg);
        r = next;
    }
}

static void update_poll(void)
{
    if (!Z.poll_open)
        return;
    bool want = false;
    for (struct zreq *r = Z.head; r; r = r->next)
        if (!r->sent) {
            want = true;
            break;
        }
    int ev = UV_READABLE | UV_DISCONNECT | (want ? UV_WRITABLE : 0);
    uv_poll_start(&Z.poll, ev, on_poll);
    Z.want_write = want;
}

/* Send unsent requests in order until the socket is full. */
static void flush(void)
{
    if (Z.state != Z_READY || Z.fd < 0)
        return;
    for (struct zreq *r = Z.head; r; r = r->next) {
        if (r->sent)
            continue;
        struct zyg_hdr h = {
            .magic = ZYG_MAGIC, .type = ZYG_FORK, .id = r->id, .a = (int32_t)r->nenv, .len = r->len
        };
        int rc = zyg_send(Z.fd, &h, r->payload, r->fds, 3);
        if (rc == -EAGAIN)
            break;
        if (rc) {
            /* The zygote is gone or broken: handle it from the loop, not from our caller. */
            snprintf(Z.lost_reason, sizeof Z.lost_reason, "sending a request failed: %s",
                     strerror(-rc));
            uv_timer_start(&Z.lost_timer, on_lost_timer, 0, 0);
            return;
        }
        r->sent = true;
        for (int i = 0; i < 3; i++) {
            close(r->fds[i]);
            r->fds[i] = -1;
        }
    }
    update_poll();
}

static void handle_forked(const struct zyg_hdr *h, const char *payload)
{
    struct zreq **pp = &Z.head, *prev = NULL;
    while (*pp && !((*pp)->sent && (*pp)->id == h->id)) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    struct zreq *r = *pp;
    if (!r) {
        log_warn("zygote: reply for unknown request %" PRIu32, h->id);
        return;
    }
    *pp = r->next;
    if (Z.tail == r)
        Z.tail = prev;
    assert(Z.npending > 0); /* npending counts the requests on the list */
    Z.npending--;
    const char *msg = NULL;
    if (h->a <= 0)
        msg = h->len && payload[h->len - 1] == '\0' ? payload : "the zygote could not fork";
    /* A failed context the zygote killed (b = its host pid): ours to reap, once it has
     * exited (the zygote waits for no child) and, on the double-fork way, once its
     * exiting intermediate has left it to us. */
    if (h->a <= 0 && h->b > 0)
        reap_later((pid_t)h->b);
    zyg_fork_cb cb = r->cb;
    void *arg = r->arg;
    req_free(r);
    cb(h->a > 0 ? (pid_t)h->a : (h->a < 0 ? h->a : -EIO), h->a > 0 ? (pid_t)h->b : 0, msg, arg);
}

/* Try to reap each pending failed context, through its pidfd (never another process
 * that reused its pid); waitid says ECHILD while it is not our child yet. */
static void on_reap_timer(uv_timer_t *t)
{
    for (unsigned i = Z.nreaps; i-- > 0;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int rc = waitid((idtype_t)P_PIDFD, (id_t)Z.reaps[i].pidfd, &si, WEXITED | WNOHANG);
        bool done = rc == 0 && si.si_pid != 0;
        if (!done && ++Z.reaps[i].tries >= REAP_TRIES)
            log_warn("zygote: a failed context was not reaped within %d ms", REAP_MS * REAP_TRIES);
        if (done || Z.reaps[i].tries >= REAP_TRIES) {
            close(Z.reaps[i].pidfd);
            Z.reaps[i] = Z.reaps[--Z.nreaps];
        }
    }
    if (Z.nreaps)
        uv_timer_start(t, on_reap_timer, REAP_MS, 0);
}

static void reap_later(pid_t pid)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return; /* gone already (reaped) */
    if (Z.nreaps == REAP_MAX || !Z.timers_open) {
        log_warn("zygote: too many failed contexts to reap, pid %d left", (int)pid);
        close(fd);
        return;
    }
    Z.reaps[Z.nreaps].pidfd = fd;
    Z.reaps[Z.nreaps++].tries = 0;
    on_reap_timer(&Z.reap_timer);
}

static void set_ready(const struct zyg_hdr *h, const char *payload)
{
    if (h->a < 0) {
        char why[256];
        snprintf(why, sizeof why, "start-up failed: %.200s",
                 h->len && payload[h->len - 1] == '\0' ? payload : "?");
        zygote_lost(why);
        return;
    }
    snprintf(Z.version, sizeof Z.version, "%.*s", (int)(h->len ? h->len - 1 : 0), payload);
    Z.state = Z_READY;
    Z.ready_at = uv_now(Z.loop);
    uv_timer_stop(&Z.timer);
    log_info("zygote: ready (pid %d, Python %s)", (int)Z.pid, Z.version);
    flush();
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    (void)h;
    static char buf[ZYG_MSG_MAX];
    if (status < 0) {
        zygote_lost(uv_strerror(status));
        return;
    }
    if (events & UV_READABLE) {
        for (;;) {
            struct zyg_hdr hdr;
            int fds[ZYG_MAX_FDS], nfds = 0;
            int rc = zyg_recv(Z.fd, &hdr, buf, sizeof buf - sizeof hdr, fds, &nfds, 1);
            for (int i = 0; i < nfds; i++)
                close(fds[i]); /* the zygote never sends fds */
            if (rc == -EAGAIN)
                break;
            if (rc == 0) {
                zygote_lost("it closed its control socket");
                return;
            }
            if (rc == -EBADMSG) {
                log_warn("zygote: malformed message ignored");
                continue;
            }
            if (rc < 0) {
                zygote_lost(strerror(-rc));
                return;
            }
            if (hdr.type == ZYG_READY && Z.state == Z_STARTING)
                set_ready(&hdr, buf);
            else if (hdr.type == ZYG_FORKED)
                handle_forked(&hdr, buf);
            else
                log_warn("zygote: unexpected message type %" PRIu32, hdr.type);
            if (Z.state != Z_READY && Z.state != Z_STARTING)
                return; /* a callback stopped us, or the zygote was lost */
        }
    }
    if (events & UV_DISCONNECT) {
        zygote_lost("its control socket hung up");
        return;
    }
    if (events & UV_WRITABLE)
        flush();
}

static void on_poll_closed(uv_handle_t *h)
{
    (void)h;
    Z.poll_open = false;
}

static void close_socket(void)
{
    if (Z.poll_open && !uv_is_closing((uv_handle_t *)&Z.poll))
        uv_close((uv_handle_t *)&Z.poll, on_poll_closed);
    if (Z.fd >= 0) {
        close(Z.fd);
        Z.fd = -1;
    }
}

static int spawn_zygote(char *err, size_t errlen);

static void on_backoff(uv_timer_t *t)
{
    (void)t;
    if (Z.state != Z_BACKOFF)
        return;
    if (Z.poll_open || Z.proc_open) { /* handles still closing: try again shortly */
        uv_timer_start(&Z.timer, on_backoff, 10, 0);
        return;
    }
    char err[256];
    if (spawn_zygote(err, sizeof err)) {
        log_error("zygote: restart failed: %s", err);
        zygote_lost("it could not be started");
    }
}

static void schedule_restart(void)
{
    unsigned shift = Z.failures < 9 ? Z.failures : 9;
    uint64_t delay = (uint64_t)BACKOFF_MIN_MS << shift;
    if (delay > BACKOFF_MAX_MS)
        delay = BACKOFF_MAX_MS;
    Z.failures++;
    log_warn("zygote: restarting in %" PRIu64 " ms", delay);
    uv_timer_start(&Z.timer, on_backoff, delay, 0);
}

static void on_proc_closed(uv_handle_t *h)
{
    (void)h;
    Z.proc_open = false;
    Z.pid = 0;
    if (Z.state == Z_BACKOFF)
        schedule_restart();
}

static void on_proc_exit(uv_process_t *p, int64_t status, int sig)
{
    Z.proc_exited = true;
    if (Z.state == Z_READY || Z.state == Z_STARTING) {
        char why[64];
        if (sig)
            snprintf(why, sizeof why, "it was killed by signal %d", sig);
        else
            snprintf(why, sizeof why, "it exited with status %" PRId64, status);
        zygote_lost(why);
    }
    uv_close((uv_handle_t *)p, on_proc_closed);
}

/* The zygote is gone or unusable: fail requests, kill it, restart later. */
static void zygote_lost(const char *reason)
{
    if (Z.state == Z_STOPPED || Z.state == Z_BACKOFF || Z.state == Z_OFF)
        return;
    bool was_ready = Z.state == Z_READY;
    log_warn("zygote: lost (pid %d): %s", (int)Z.pid, reason);
    if (was_ready && uv_now(Z.loop) - Z.ready_at > HEALTHY_MS)
        Z.failures = 0;
    Z.state = Z_BACKOFF;
    uv_timer_stop(&Z.timer);
    close_socket();
    if (Z.proc_open && !Z.proc_exited)
        uv_process_kill(&Z.proc, SIGKILL); /* its exit callback closes the handle */
    fail_all(-EPIPE, "the Python zygote died");
}

static void on_lost_timer(uv_timer_t *t)
{
    (void)t;
    zygote_lost(Z.lost_reason[0] ? Z.lost_reason : "unknown");
}

static void on_ready_timeout(uv_timer_t *t)
{
    (void)t;
    if (Z.state == Z_STARTING)
        zygote_lost("no ready message in time");
}

static int spawn_zygote(char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        return -errno;
    }
    int fl = fcntl(sv[0], F_GETFL);
    if (fl < 0 || fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        snprintf(err, errlen, "fcntl: %s", strerror(e));
        return -e;
    }
    char *args[16];
    int n = 0;
    args[n++] = Z.path;
    args[n++] = (char *)"--runtimes";
    args[n++] = Z.runtimes;
    args[n++] = (char *)"--inside-runtimes";
    args[n++] = Z.inside;
    if (Z.mpl[0]) {
        args[n++] = (char *)"--mpl-cache";
        args[n++] = Z.mpl;
    }
    if (Z.ipy[0]) {
        args[n++] = (char *)"--ipython-dir";
        args[n++] = Z.ipy;
    }
    if (Z.preload[0]) {
        args[n++] = (char *)"--preload";
        args[n++] = Z.preload;
    }
    args[n] = NULL;
    /* A small fixed environment: no daemon variable reaches Python (and each context's
     * environment is replaced from its request anyway). */
    char *env[] = { (char *)"PATH=/usr/local/bin:/usr/bin:/bin", (char *)"LANG=C.UTF-8", NULL };
    uv_stdio_container_t stdio[4] = {
        { .flags = UV_IGNORE },
        { .flags = UV_INHERIT_FD, .data.fd = 2 },
        { .flags = UV_INHERIT_FD, .data.fd = 2 },
        { .flags = UV_INHERIT_FD, .data.fd = sv[1] },
    };
    uv_process_options_t o = {
        .exit_cb = on_proc_exit,
        .file = Z.path,
        .args = args,
        .env = env,
        .stdio_count = 4,
        .stdio = stdio,
    };
    Z.proc_exited = false;
    int rc = uv_spawn(Z.loop, &Z.proc, &o);
    close(sv[1]);
    if (rc) {
        close(sv[0]);
        /* uv_spawn initialised the handle even on failure: it must be closed. */
        uv_close((uv_handle_t *)&Z.proc, NULL);
        snprintf(err, errlen, "spawning %s: %s", Z.path, uv_strerror(rc));
        return rc;
    }
    Z.proc_open = true;
    Z.pid = Z.proc.pid;
    Z.fd = sv[0];
    uv_poll_init(Z.loop, &Z.poll, Z.fd);
    Z.poll_open = true;
    Z.state = Z_STARTING;
    update_poll();
    uv_timer_start(&Z.timer, on_ready_timeout, Z.ready_timeout_ms, 0);
    return 0;
}

/* zyg_start's wait for the first ready, blocking (bounded by ready_timeout_ms) on the
 * socket while the loop is not running yet. 0 when ready (or no longer starting), else
 * -errno with err set: a timeout, the zygote's own start-up error, or its exit. */
static int wait_first_ready(char *err, size_t errlen)
{
    uint64_t deadline = uv_hrtime() / 1000000 + Z.ready_timeout_ms;
    while (Z.state == Z_STARTING) {
        int64_t left = (int64_t)(deadline - uv_hrtime() / 1000000);
        struct pollfd p = { .fd = Z.fd, .events = POLLIN };
        int pr = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            snprintf(err, errlen, "the zygote did not become ready within %u ms",
                     Z.ready_timeout_ms);
            return -ETIMEDOUT;
        }
        struct zyg_hdr h;
        char buf[1024];
        int fds[ZYG_MAX_FDS], nfds = 0;
        int r = zyg_recv(Z.fd, &h, buf, sizeof buf, fds, &nfds, 1);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        if (r == -EAGAIN)
            continue;
        if (r == 1 && h.type == ZYG_READY && h.a == 0) {
            set_ready(&h, buf);
            return 0;
        }
        if (r == 1 && h.type == ZYG_READY)
            snprintf(err, errlen, "the zygote failed to start: %.400s",
                     h.len && buf[h.len - 1] == '\0' ? buf : "?");
        else
            snprintf(err, errlen, "the zygote exited before it was ready (see its stderr)");
        return r == 1 && h.a < 0 ? h.a : -ECHILD;
    }
    return 0;
}

int zyg_start(uv_loop_t *loop, const struct zyg_config *cfg, char *err, size_t errlen)
{
    if (Z.state != Z_OFF && Z.state != Z_STOPPED) {
        snprintf(err, errlen, "the zygote is already started");
        return -EALREADY;
    }
    if (Z.proc_open || Z.poll_open || Z.timers_open) {
        snprintf(err, errlen, "the previous zygote's handles are still closing");
        return -EBUSY;
    }
    if (!cfg->zygote_path || !cfg->runtimes_dir || copy_str(Z.path, cfg->zygote_path, "") ||
        copy_str(Z.runtimes, cfg->runtimes_dir, "") ||
        copy_str(Z.inside, cfg->inside_runtimes, "/opt/sandboxd") ||
        copy_str(Z.mpl, cfg->mpl_cache, "") || copy_str(Z.ipy, cfg->ipython_dir, "") ||
        copy_str(Z.preload, cfg->preload, "")) {
        snprintf(err, errlen, "zygote configuration: a path is missing or too long");
        return -EINVAL;
    }
    Z.loop = loop;
    Z.ready_timeout_ms = cfg->ready_timeout_ms ? cfg->ready_timeout_ms : DEFAULT_READY_TIMEOUT_MS;
    Z.max_pending = cfg->max_pending ? cfg->max_pending : DEFAULT_MAX_PENDING;
    Z.failures = 0;
    Z.version[0] = '\0';
    uv_timer_init(loop, &Z.timer);
    uv_timer_init(loop, &Z.lost_timer);
    uv_timer_init(loop, &Z.reap_timer);
    Z.timer.data = Z.lost_timer.data = Z.reap_timer.data = NULL;
    Z.timers_open = true;
    int rc = spawn_zygote(err, errlen);
    if (rc) {
        Z.state = Z_STOPPED;
        zyg_stop();
        return rc;
    }
    /* Block (bounded) for the first ready: the daemon is starting and has nothing else
     * to do; a restart later waits asynchronously instead. */
    rc = wait_first_ready(err, errlen);
    if (Z.state != Z_READY) {
        /* Reap it here: the loop is not running, and a zombie must not outlive us. */
        if (!Z.proc_exited) {
            kill(Z.pid, SIGKILL);
            (void)waitpid(Z.pid, NULL, 0);
            Z.proc_exited = true;
        }
        zyg_stop();
        return rc ? rc : -ECHILD;
    }
    return 0;
}

int zyg_fork(const struct jail_entry *e, const char *cwd, const char *const *envp, int channel_fd,
             int stdout_fd, int stderr_fd, zyg_fork_cb cb, void *arg)
{
    if (!e || !cwd || cwd[0] != '/' || !cb || channel_fd < 0 || stdout_fd < 0 || stderr_fd < 0)
        return -EINVAL;
    if (Z.state != Z_READY || Z.npending >= Z.max_pending)
        return -EAGAIN;
    size_t cwdlen = strlen(cwd) + 1, len = sizeof *e + cwdlen, nenv = 0;
    if (cwdlen > ZYG_CWD_MAX)
        return -E2BIG;
    for (; envp && envp[nenv]; nenv++) {
        const char *eq = strchr(envp[nenv], '=');
        if (!eq || eq == envp[nenv])
            return -EINVAL;
        len += strlen(envp[nenv]) + 1;
        if (nenv >= ZYG_MAX_ENV || len > ZYG_MSG_MAX - sizeof(struct zyg_hdr))
            return -E2BIG;
    }
    struct zreq *r = malloc(sizeof *r + len);
    if (!r)
        return -ENOMEM;
    memset(r, 0, sizeof *r);
    r->fds[0] = fcntl(channel_fd, F_DUPFD_CLOEXEC, 3);
    r->fds[1] = fcntl(stdout_fd, F_DUPFD_CLOEXEC, 3);
    r->fds[2] = fcntl(stderr_fd, F_DUPFD_CLOEXEC, 3);
    if (r->fds[0] < 0 || r->fds[1] < 0 || r->fds[2] < 0) {
        int rc = -errno;
        req_free(r);
        return rc;
    }
    char *p = r->payload;
    memcpy(p, e, sizeof *e);
    p += sizeof *e;
    memcpy(p, cwd, cwdlen);
    p += cwdlen;
    for (size_t i = 0; i < nenv; i++) {
        size_t l = strlen(envp[i]) + 1;
        memcpy(p, envp[i], l);
        p += l;
    }
    r->len = (uint32_t)len;
    r->nenv = (uint32_t)nenv;
    r->id = ++Z.next_id;
    r->cb = cb;
    r->arg = arg;
    if (Z.tail)
        Z.tail->next = r;
    else
        Z.head = r;
    Z.tail = r;
    Z.npending++;
    flush();
    return 0;
}

const char *zyg_version(void)
{
    return Z.version;
}

bool zyg_available(void)
{
    return Z.state == Z_READY;
}

bool zyg_restarting(void)
{
    return Z.state == Z_BACKOFF || (Z.state == Z_STARTING && Z.version[0]);
}

unsigned zyg_forks_in_flight(void)
{
    return Z.npending;
}

pid_t zyg_pid(void)
{
    return Z.proc_open && !Z.proc_exited ? Z.pid : 0;
}

static void on_timer_closed(uv_handle_t *h)
{
    (void)h;
    if (--Z.timers_closing == 0)
        Z.timers_open = false;
}

void zyg_stop(void)
{
    if (Z.state == Z_OFF)
        return;
    bool already = Z.state == Z_STOPPED && !Z.timers_open;
    Z.state = Z_STOPPED;
    close_socket(); /* EOF: the zygote exits by itself */
    if (Z.proc_open && !Z.proc_exited)
        uv_process_kill(&Z.proc, SIGTERM);
    if (Z.proc_open && Z.proc_exited && !uv_is_closing((uv_handle_t *)&Z.proc))
        uv_close((uv_handle_t *)&Z.proc, on_proc_closed);
    if (!already && Z.timers_open && !uv_is_closing((uv_handle_t *)&Z.timer)) {
        Z.timers_closing = 3;
        uv_close((uv_handle_t *)&Z.timer, on_timer_closed);
        uv_close((uv_handle_t *)&Z.lost_timer, on_timer_closed);
        uv_close((uv_handle_t *)&Z.reap_timer, on_timer_closed);
        for (unsigned i = 0; i < Z.nreaps; i++)
            close(Z.reaps[i].pidfd);
        Z.nreaps = 0;
    }
    fail_all(-ECANCELED, "the Python zygote was stopped");
}
