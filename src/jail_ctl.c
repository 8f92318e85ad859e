/*
 * jail_ctl.c — the daemon's end of the control channel to a sandbox's init (jail_int.h,
 * protocol in jail_proto.h): what needs an answer from init never waits on the loop.
 *
 * Sending: every message goes through the sandbox's queue (struct ctl_msg: the header,
 * a copy of the payload, dups of the fds it carries) and is sent when the non-blocking
 * socket takes it; the poll watches for writability only while the queue is not empty.
 * The queue is bounded: requests are capped (max_pending), unsent kills are not queued
 * twice. A send that fails for good marks init as gone (the timer then ends everything).
 *
 * Requests (JP_SPAWN, JP_ADOPT): a struct jail_req on j->reqs, oldest first, with a
 * deadline; j->timer is armed for the earliest one. Each is answered exactly once, by
 * init's answer, by its deadline (-ETIMEDOUT), or by jail__reqs_fail_all (init gone,
 * sandbox destroyed) — unless its caller gave up (jail_cancel). A request given up on
 * before it was sent is dropped; after, it stays listed as abandoned until its answer
 * comes, and a process started for it is killed and tracked until its exit. Callbacks
 * run with the request already off the list, so they may call back into the jail.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the queue of messages for init ------------------------------------------------ */

static void msg_free(struct ctl_msg *m)
{
    for (int i = 0; i < m->nfds; i++)
        close(m->fds[i]);
    free(m);
}

/* Watch for writability only while something waits to be sent. */
void jail__poll_update(jail *j)
{
    if (!j->poll_init || j->destroying || j->dead)
        return;
    int ev = UV_READABLE | UV_DISCONNECT | (j->out ? UV_WRITABLE : 0);
    if (ev != j->poll_events) {
        j->poll_events = ev;
        uv_poll_start(&j->poll, ev, jail__on_ctl);
    }
}

/* Send what the socket takes now, oldest first; the rest waits for UV_WRITABLE. A send
 * that fails for good means init is gone: the timer (not this call, which may run inside
 * jail_spawn) then answers every request. */
void jail__ctl_flush(jail *j)
{
    while (j->out && j->ctl >= 0 && !j->dead && !j->send_err) {
        struct ctl_msg *m = j->out;
        int rc = jp_send(j->ctl, &m->h, m->payload, m->fds, m->nfds);
        if (rc == -EAGAIN)
            break;
        j->out = m->next;
        if (!j->out)
            j->out_tail = NULL;
        if (m->req)
            m->req->msg = NULL;
        msg_free(m);
        if (rc < 0) {
            j->send_err = rc;
            if (j->timer_init && !j->destroying)
                uv_timer_start(&j->timer, jail__on_timer, 0, 0);
        }
    }
    jail__poll_update(j);
}

/* Take a message out of the queue (it was never sent) and free it. */
static void ctl_unqueue(jail *j, struct ctl_msg *m)
{
    struct ctl_msg *prev = NULL;
    for (struct ctl_msg *x = j->out; x; prev = x, x = x->next) {
        if (x != m)
            continue;
        if (prev)
            prev->next = x->next;
        else
            j->out = x->next;
        if (j->out_tail == x)
            j->out_tail = prev;
        break;
    }
    if (m->req)
        m->req->msg = NULL;
    msg_free(m);
    jail__poll_update(j);
}

/* Queue a message (payload copied, fds dupped) and send what can be sent. 0 or -errno. */
static int ctl_queue(jail *j, const struct jp_hdr *h, const void *payload, const int *fds, int nfds,
                     jail_req *req)
{
    struct ctl_msg *m = malloc(sizeof *m + h->len);
    if (!m)
        return -ENOMEM;
    m->next = NULL;
    m->h = *h;
    m->req = req;
    m->nfds = 0;
    if (h->len)
        memcpy(m->payload, payload, h->len);
    for (int i = 0; i < nfds; i++) {
        int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
            int e = -errno;
            msg_free(m);
            return e;
        }
        m->fds[m->nfds++] = fd;
    }
    if (j->out_tail)
        j->out_tail->next = m;
    else
        j->out = m;
    j->out_tail = m;
    if (req)
        req->msg = m;
    jail__ctl_flush(j);
    return 0;
}

/* Ask init to signal pid's process group. An identical kill still queued is not queued
 * twice, so the queue stays bounded whatever callers repeat. */
static int ctl_kill(jail *j, pid_t pid, int sig, bool adopted)
{
    if (j->dead || j->ctl < 0 || j->send_err)
        return -ESRCH;
    for (const struct ctl_msg *m = j->out; m; m = m->next)
        if (m->h.type == JP_KILL && m->h.a == pid && m->h.b == sig)
            return 0;
    struct jp_hdr h = { .type = JP_KILL, .a = pid, .b = sig, .c = adopted };
    return ctl_queue(j, &h, NULL, NULL, 0, NULL);
}

/* ---- requests waiting for init ------------------------------------------------------ */

static void req_unlink(jail *j, jail_req *r)
{
    assert(r->prev ? r->prev->next == r : j->reqs == r); /* r is on j's list */
    assert(r->abandoned || j->nreqs > 0);
    if (r->prev)
        r->prev->next = r->next;
    else
        j->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        j->reqs_tail = r->prev;
    r->prev = r->next = NULL;
    if (!r->abandoned)
        j->nreqs--;
}

static jail_req *req_find(jail *j, uint32_t id, uint32_t type)
{
    for (jail_req *r = j->reqs; r; r = r->next)
        if (r->id == id && r->type == type)
            return r;
    return NULL;
}

/* Arm the timer for the earliest deadline of a request someone waits for. */
static void req_arm(jail *j)
{
    if (!j->timer_init || j->destroying || j->creating || j->send_err || j->frozen)
        return;
    int64_t first = INT64_MAX;
    for (const jail_req *r = j->reqs; r; r = r->next)
        if (!r->abandoned && r->deadline < first)
            first = r->deadline;
    if (first == INT64_MAX) {
        uv_timer_stop(&j->timer);
        return;
    }
    int64_t left = first - jail__now_ms();
    uv_timer_start(&j->timer, jail__on_timer, left > 0 ? (uint64_t)left : 0, 0);
}

void jail__reqs_pause(jail *j, bool pause)
{
    int64_t now = jail__now_ms();
    if (pause) {
        if (j->frozen)
            return;
        j->frozen = true;
        j->frozen_at = now;
        if (j->timer_init && !j->destroying && !j->creating && !j->send_err)
            uv_timer_stop(&j->timer);
        return;
    }
    if (!j->frozen)
        return;
    j->frozen = false;
    for (jail_req *r = j->reqs; r; r = r->next)
        r->deadline += now - j->frozen_at;
    req_arm(j);
}

/* Nobody waits for r any more. Unsent, it is dropped (init never sees it); sent, it stays
 * listed as abandoned until init answers, and the answer is consumed here. */
static void req_abandon(jail *j, jail_req *r)
{
    if (!r->abandoned) {
        assert(j->nreqs > 0); /* nreqs counts the requests someone waits for */
        r->abandoned = true;
        j->nreqs--;
    }
    r->on_started = NULL;
    if (r->msg) {
        ctl_unqueue(j, r->msg);
        req_unlink(j, r);
        free(r);
    }
}

/* Answer every request with rc (init is gone, or the sandbox is): used once, when no
 * more answers can come. Callbacks may call back into the jail; they find it dead or
 * destroying, and every request is taken off the list before its callback runs. */
void jail__reqs_fail_all(jail *j, int rc, const char *why)
{
    while (j->out) {
        struct ctl_msg *m = j->out;
        j->out = m->next;
        if (m->req)
            m->req->msg = NULL;
        msg_free(m);
    }
    j->out_tail = NULL;
    while (j->reqs) {
        jail_req *r = j->reqs;
        bool waited = !r->abandoned;
        req_unlink(j, r);
        if (waited && r->on_started)
            r->on_started(NULL, rc, why, r->arg);
        free(r);
    }
}

/* The timer fired in the running state: answer the requests whose deadline passed. One
 * at a time from the head, since a callback may cancel or add others. */
void jail__reqs_expire(jail *j)
{
    for (;;) {
        if (j->destroying || j->dead)
            return;
        int64_t now = jail__now_ms();
        jail_req *r = j->reqs;
        while (r && (r->abandoned || r->deadline > now))
            r = r->next;
        if (!r)
            break;
        jail_started_cb cb = r->on_started;
        void *arg = r->arg;
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the sandbox did not %s %s within %u ms (its init is "
                 "short of CPU or blocked; --init-reply-timeout-ms)",
                 r->type == JP_SPAWN ? "start" : "adopt", r->what, j->reply_timeout_ms);
        req_abandon(j, r);
        if (cb)
            cb(NULL, -ETIMEDOUT, msg, arg);
    }
    req_arm(j);
}

/* JP_SPAWNED: the process runs (a > 0, its pid inside) or could not start (a < 0). */
void jail__on_spawned(jail *j, const struct jp_hdr *m)
{
    jail_req *r = req_find(j, m->id, JP_SPAWN);
    if (!r)
        return; /* not a request of ours: init answers only what we asked */
    bool waited = !r->abandoned;
    req_unlink(j, r);
    req_arm(j);
    int rc = m->a > 0 ? 0 : m->a < 0 ? m->a : -EIO;
    jail_proc *p = NULL;
    if (!rc) {
        p = calloc(1, sizeof *p);
        if (!p)
            rc = -ENOMEM;
        else {
            p->pid = m->a;
            p->pidfd = -1;
            if (waited) {
                p->cb = r->on_exit;
                p->arg = r->arg;
            }
            jail__proc_link(j, p); /* tracked until init reports its exit */
        }
        if (!p || !waited)
            (void)ctl_kill(j, m->a, SIGKILL, false); /* it runs for nobody: end it */
    }
    if (waited && r->on_started) {
        char msg[128];
        if (rc)
            snprintf(msg, sizeof msg, "could not start %s: %s", r->what, strerror(-rc));
        r->on_started(rc ? NULL : p, rc, rc ? msg : NULL, r->arg);
    }
    free(r);
}

/* JP_ADOPTED: a pidfd of the process (a == 0) or why not (a < 0). fd is taken over. */
void jail__on_adopted(jail *j, const struct jp_hdr *m, int fd)
{
    jail_req *r = req_find(j, m->id, JP_ADOPT);
    if (!r) {
        if (fd >= 0)
            close(fd);
        return;
    }
    bool waited = !r->abandoned;
    req_unlink(j, r);
    req_arm(j);
    int rc = m->a < 0 ? m->a : fd < 0 ? -EPROTO : 0;
    jail_proc *p = NULL;
    if (!rc) {
        if (!waited)
            (void)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0); /* for nobody */
        rc = jail__adopt_pidfd(j, r->ns_pid, fd, waited ? r->on_exit : NULL, r->arg, &p);
        fd = -1;
    }
    if (fd >= 0)
        close(fd);
    if (waited && r->on_started) {
        char msg[96];
        if (rc)
            snprintf(msg, sizeof msg, "could not adopt pid %d: %s", (int)r->ns_pid, strerror(-rc));
        r->on_started(rc ? NULL : p, rc, rc ? msg : NULL, r->arg);
    }
    free(r);
}

/* ---- the calls of jail.h: spawn, adopt, cancel, kill --------------------------------- */

static size_t put_str(char *buf, size_t off, size_t cap, const char *s)
{
    size_t l = strlen(s) + 1;
    if (off == SIZE_MAX || off + l > cap)
        return SIZE_MAX;
    memcpy(buf + off, s, l);
    return off + l;
}

/* Whether j takes one more request; err says why not. */
static int req_admit(jail *j, char *err, size_t errlen)
{
    if (j->destroying || j->dead || j->creating || j->send_err) {
        jail__set_err(err, errlen, "the sandbox is gone");
        return -ESRCH;
    }
    if (j->nreqs >= j->max_pending) {
        jail__set_err(err, errlen,
                      "%u requests already wait for this sandbox's init "
                      "(--max-pending-spawns)",
                      j->nreqs);
        return -EBUSY;
    }
    return 0;
}

/* A request with its id and deadline, on the list; its message is queued by the caller. */
static jail_req *req_new(jail *j, uint32_t type, const char *what, jail_started_cb on_started,
                         jail_exit_cb on_exit, void *arg)
{
    jail_req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->j = j;
    r->id = ++j->next_id;
    r->type = type;
    r->deadline = jail__now_ms() + j->reply_timeout_ms;
    r->on_started = on_started;
    r->on_exit = on_exit;
    r->arg = arg;
    snprintf(r->what, sizeof r->what, "%s", what);
    r->prev = j->reqs_tail;
    if (j->reqs_tail)
        j->reqs_tail->next = r;
    else
        j->reqs = r;
    j->reqs_tail = r;
    j->nreqs++;
    return r;
}

/* Queue r's message; on failure r is gone again. */
static int req_send(jail *j, jail_req *r, struct jp_hdr *h, const void *payload, const int *fds,
                    int nfds)
{
    h->id = r->id;
    int rc = ctl_queue(j, h, payload, fds, nfds, r);
    if (rc) {
        req_unlink(j, r);
        free(r);
        return rc;
    }
    req_arm(j);
    return 0;
}

int jail_spawn(jail *j, const struct jail_spawn_opts *o, jail_started_cb on_started,
               jail_exit_cb on_exit, void *arg, jail_req **req, char *err, size_t errlen)
{
    size_t cap = JP_MSG_MAX - sizeof(struct jp_hdr), len = 0;
    int argc = 0, envc = 0;
    if (req)
        *req = NULL;
    int rc = req_admit(j, err, errlen);
    if (rc)
        return rc;
    if (!o->argv || !o->argv[0] || o->argv[0][0] != '/') {
        jail__set_err(err, errlen, "argv[0] must be an absolute path");
        return -EINVAL;
    }
    const char *cwd = o->cwd ? o->cwd : "/workspace";
    len = strlen(cwd) + 1;
    for (; o->argv[argc]; argc++)
        len += strlen(o->argv[argc]) + 1;
    for (; o->envp && o->envp[envc]; envc++)
        len += strlen(o->envp[envc]) + 1;
    if (len > cap || argc + envc > JP_MAX_ARGS) {
        jail__set_err(err, errlen, "arguments and environment exceed %d bytes", JP_MSG_MAX - 64);
        return -E2BIG;
    }
    char *payload = malloc(len);
    jail_req *r = payload ? req_new(j, JP_SPAWN, o->argv[0], on_started, on_exit, arg) : NULL;
    if (!r) {
        free(payload);
        jail__set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    size_t off = put_str(payload, 0, len, cwd);
    for (int i = 0; i < argc; i++)
        off = put_str(payload, off, len, o->argv[i]);
    for (int i = 0; i < envc; i++)
        off = put_str(payload, off, len, o->envp[i]);
    int fds[4] = { o->stdin_fd, o->stdout_fd, o->stderr_fd, o->extra_fd };
    int nfds = o->extra_fd >= 0 ? 4 : 3;
    struct jp_hdr h = { .type = JP_SPAWN, .a = argc, .b = envc, .c = nfds, .len = (uint32_t)off };
    rc = req_send(j, r, &h, payload, fds, nfds);
    free(payload);
    if (rc) {
        jail__set_err(err, errlen, "cannot queue the spawn: %s", strerror(-rc));
        return rc;
    }
    if (req)
        *req = r;
    return 0;
}

void jail_cancel(jail_req *r)
{
    if (!r)
        return;
    jail *j = r->j;
    req_abandon(j, r);
    req_arm(j);
}

int jail_proc_kill(jail_proc *p, int sig)
{
    jail *j = p->j;
    if (p->adopted && p->pidfd >= 0) {
        if (sig == SIGKILL)
            (void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGCONT, NULL, 0);
        (void)syscall(SYS_pidfd_send_signal, p->pidfd, sig, NULL, 0);
        /* Only a kill also goes to its process group (through init); any other signal
         * must arrive once: a second SIGINT would interrupt the code's own handler. */
        if (sig != SIGKILL)
            return 0;
    }
    if (j->destroying)
        return 0; /* everything of the sandbox is being killed */
    int rc = ctl_kill(j, p->pid, sig, p->adopted);
    return rc == -ESRCH && p->adopted ? 0 : rc;
}

int jail_adopt(jail *j, pid_t ns_pid, jail_started_cb on_started, jail_exit_cb on_exit, void *arg,
               jail_req **req)
{
    if (req)
        *req = NULL;
    int rc = req_admit(j, NULL, 0);
    if (rc)
        return rc;
    char what[32];
    snprintf(what, sizeof what, "pid %d", (int)ns_pid);
    jail_req *r = req_new(j, JP_ADOPT, what, on_started, on_exit, arg);
    if (!r)
        return -ENOMEM;
    r->ns_pid = ns_pid;
    struct jp_hdr h = { .type = JP_ADOPT, .a = ns_pid };
    rc = req_send(j, r, &h, NULL, NULL, 0);
    if (rc)
        return rc;
    if (req)
        *req = r;
    return 0;
}
