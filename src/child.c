/*
 * child.c — one sandboxed child: its pipes, its start, its exit, its handles, and the
 * moment its memory may go (see child.h for the contract).
 *
 * State: the pipes (near end ours, far end the child's until it has been passed on), a
 * timer, the jail's request while init has not started it (req), the jail's process
 * while its exit is not known (jp), holds, and released. handles counts the libuv handles
 * not yet closed (pipes and timer, from child_open on). The timer is closed only by
 * child_release, so a live child that is not released always has a handle open: that is
 * why freeing never happens inside the owner's calls, only in a close callback, an exit
 * callback or child_unhold.
 */
#include "child.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lifecycle.h"

struct child_pipe_h {
    uv_pipe_t h;
    bool open;     /* a handle not closed yet */
    int near, far; /* raw fds until child_open (-1 once handed on or closed) */
    child *ch;
    int i;
};

struct child {
    uv_loop_t *loop;
    const struct child_ops *ops;
    void *owner;
    struct child_pipe_h p[CHILD_NPIPES];
    uv_timer_t timer;
    bool timer_open;
    const struct sandbox *timer_sb; /* its time counts only while this one runs (or NULL) */
    uint64_t frozen_mark;           /* lifecycle.h */
    bool live, released, exited;
    int handles;
    unsigned holds;
    jail_req *req;       /* child_spawn: init has not answered yet */
    jail_proc *jp;       /* its exit is watched, not reported yet */
    pid_t host_pid;      /* child_adopt's, until its exit */
    pid_t seen_host_pid; /* a spawned one's, once child_host_pid looked it up */
    pid_t pid;           /* inside the sandbox */
};

static void maybe_free(child *ch)
{
    if (!ch->released || ch->holds || ch->handles || ch->req || ch->jp)
        return;
    const struct child_ops *ops = ch->ops;
    void *owner = ch->owner;
    free(ch);
    if (ops->freed)
        ops->freed(owner);
}

/* ---- making and giving up ---- */

int child_new(uv_loop_t *loop, unsigned mask, const struct child_ops *ops, void *owner, child **out)
{
    child *ch = calloc(1, sizeof *ch);
    if (!ch)
        return -ENOMEM;
    ch->loop = loop;
    ch->ops = ops;
    ch->owner = owner;
    for (int i = 0; i < CHILD_NPIPES; i++)
        ch->p[i].near = ch->p[i].far = -1;
    for (int i = 0; i < CHILD_NPIPES; i++) {
        if (!(mask & CHILD_BIT(i)))
            continue;
        int fd[2];
        int rc = i == CHILD_CHAN ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd)
                                 : pipe2(fd, O_CLOEXEC);
        if (rc) {
            int e = -errno;
            child_discard(ch);
            return e;
        }
        /* a pipe's read end is fd[0]: ours for output, the child's for its stdin */
        bool ours_reads = i != CHILD_IN;
        ch->p[i].near = ours_reads ? fd[0] : fd[1];
        ch->p[i].far = ours_reads ? fd[1] : fd[0];
    }
    *out = ch;
    return 0;
}

void child_far_fds(const child *ch, int fds[CHILD_NPIPES])
{
    for (int i = 0; i < CHILD_NPIPES; i++)
        fds[i] = ch->p[i].far;
}

static void close_far(child *ch)
{
    for (int i = 0; i < CHILD_NPIPES; i++)
        if (ch->p[i].far >= 0) {
            close(ch->p[i].far);
            ch->p[i].far = -1;
        }
}

void child_discard(child *ch)
{
    close_far(ch);
    for (int i = 0; i < CHILD_NPIPES; i++)
        if (ch->p[i].near >= 0)
            close(ch->p[i].near);
    free(ch);
}

/* ---- handles ---- */

static void handle_closed(uv_handle_t *h)
{
    child *ch = h->data;
    ch->handles--;
    maybe_free(ch);
}

static void pipe_closed(uv_handle_t *h)
{
    struct child_pipe_h *pp = h->data;
    pp->ch->handles--;
    maybe_free(pp->ch);
}

void child_close(child *ch, int i)
{
    struct child_pipe_h *pp = &ch->p[i];
    if (!pp->open)
        return;
    pp->open = false;
    uv_close((uv_handle_t *)&pp->h, pipe_closed);
}

void child_open(child *ch)
{
    if (ch->live)
        return;
    close_far(ch);
    ch->live = true;
    uv_timer_init(ch->loop, &ch->timer);
    ch->timer.data = ch;
    ch->timer_open = true;
    ch->handles++;
    for (int i = 0; i < CHILD_NPIPES; i++) {
        struct child_pipe_h *pp = &ch->p[i];
        if (pp->near < 0)
            continue;
        pp->ch = ch;
        pp->i = i;
        uv_pipe_init(ch->loop, &pp->h, 0);
        pp->h.data = pp;
        ch->handles++;
        pp->open = true;
        if (uv_pipe_open(&pp->h, pp->near)) {
            close(pp->near); /* not the handle's: no output from this pipe */
            child_close(ch, i);
        }
        pp->near = -1;
    }
}

bool child_is_open(const child *ch, int i)
{
    return ch->p[i].open;
}

bool child_output_open(const child *ch)
{
    return ch->p[CHILD_OUT].open || ch->p[CHILD_ERR].open;
}

void child_close_output(child *ch)
{
    child_close(ch, CHILD_OUT);
    child_close(ch, CHILD_ERR);
}

int child_fd(const child *ch, int i)
{
    uv_os_fd_t fd;
    if (!ch->p[i].open || uv_fileno((const uv_handle_t *)&ch->p[i].h, &fd))
        return -1;
    return fd;
}

uv_stream_t *child_stream(child *ch, int i)
{
    return ch->p[i].open ? (uv_stream_t *)&ch->p[i].h : NULL;
}

/* ---- reading ---- */

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char chunk[65536];
    struct child_pipe_h *pp = h->data;
    (void)hint;
    if (pp->ch->ops->alloc)
        pp->ch->ops->alloc(pp->ch->owner, pp->i, b);
    else
        *b = uv_buf_init(chunk, sizeof chunk);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct child_pipe_h *pp = s->data;
    child *ch = pp->ch;
    if (n < 0 && n != UV_ENOBUFS)
        child_close(ch, pp->i);
    if (n != 0 && !ch->released)
        ch->ops->read(ch->owner, pp->i, n, b->base);
}

void child_reading(child *ch, bool on)
{
    for (int i = 0; i < CHILD_NPIPES; i++) {
        struct child_pipe_h *pp = &ch->p[i];
        if (i == CHILD_IN || !pp->open)
            continue;
        if (!on) {
            uv_read_stop((uv_stream_t *)&pp->h);
            continue;
        }
        int rc = uv_read_start((uv_stream_t *)&pp->h, alloc_cb, read_cb);
        if (rc && rc != UV_EALREADY) /* already reading is fine */
            child_close(ch, i);
    }
}

/* ---- the timer ---- */

static void timer_cb(uv_timer_t *t)
{
    child *ch = t->data;
    if (life_timer_defer(ch->timer_sb, &ch->frozen_mark, t, timer_cb))
        return; /* the sandbox was suspended: its time is not the child's */
    if (!ch->released && ch->ops->timer)
        ch->ops->timer(ch->owner);
}

void child_timer_start(child *ch, const struct sandbox *sb, uint64_t ms)
{
    ch->timer_sb = sb;
    if (ch->timer_open)
        life_timer_start(sb, &ch->frozen_mark, &ch->timer, timer_cb, ms);
}

void child_timer_stop(child *ch)
{
    if (ch->timer_open)
        uv_timer_stop(&ch->timer);
}

/* ---- the process ---- */

static void exit_cb(jail_proc *jp, int status, void *arg)
{
    child *ch = arg;
    (void)jp;
    ch->jp = NULL;
    ch->host_pid = 0;
    ch->exited = true;
    if (!ch->released && ch->ops->exited)
        ch->ops->exited(ch->owner, status);
    maybe_free(ch);
}

static void started_cb(jail_proc *jp, int rc, const char *msg, void *arg)
{
    child *ch = arg;
    ch->req = NULL;
    if (!rc) {
        ch->jp = jp;
        ch->pid = jail_proc_pid(jp);
    }
    if (!ch->released && ch->ops->started)
        ch->ops->started(ch->owner, rc, msg);
    maybe_free(ch);
}

int child_spawn(child *ch, jail *j, const char *const *argv, const char *const *envp,
                const char *cwd, char *err, size_t errlen)
{
    int nul = -1;
    if (ch->p[CHILD_OUT].far < 0 || ch->p[CHILD_ERR].far < 0) {
        snprintf(err, errlen, "a child is spawned with its stdout and stderr pipes");
        return -EINVAL;
    }
    if (ch->p[CHILD_IN].far < 0 && (nul = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        int e = -errno;
        snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
        return e;
    }
    const struct child_pipe_h *p = ch->p;
    struct jail_spawn_opts so = {
        .argv = argv,
        .envp = envp,
        .cwd = cwd,
        .stdin_fd = p[CHILD_IN].far >= 0 ? p[CHILD_IN].far : nul,
        .stdout_fd = p[CHILD_OUT].far,
        .stderr_fd = p[CHILD_ERR].far,
        .extra_fd = p[CHILD_CHAN].far,
    };
    int rc = jail_spawn(j, &so, started_cb, exit_cb, ch, &ch->req, err, errlen);
    if (nul >= 0)
        close(nul);
    if (!rc)
        child_open(ch);
    return rc;
}

pid_t child_host_pid(child *ch)
{
    if (ch->host_pid > 0)
        return ch->host_pid;
    if (!ch->jp || ch->exited)
        return 0;
    if (ch->seen_host_pid <= 0)
        ch->seen_host_pid = jail_proc_host_pid(ch->jp); /* once: it reads /proc */
    return ch->seen_host_pid > 0 ? ch->seen_host_pid : 0;
}

int child_adopt(child *ch, jail *j, pid_t host_pid, pid_t ns_pid)
{
    ch->host_pid = host_pid;
    ch->pid = ns_pid;
    if (ch->released) {
        child_kill(ch); /* let go of while it was being started */
        return 0;
    }
    int rc = jail_adopt_child(j, host_pid, ns_pid, exit_cb, ch, &ch->jp);
    if (rc)
        ch->jp = NULL;
    return rc;
}

void child_kill(child *ch)
{
    if (ch->exited)
        return;
    if (ch->jp)
        jail_proc_kill(ch->jp, SIGKILL);
    else if (ch->host_pid > 0)
        kill(ch->host_pid, SIGKILL); /* not watched (yet): the daemon's reaper reaps it */
    else if (ch->req) {
        jail_cancel(ch->req); /* not started yet: the jail ends it if it starts */
        ch->req = NULL;
    }
}

void child_signal(child *ch, int sig)
{
    if (ch->jp)
        jail_proc_kill(ch->jp, sig);
}

pid_t child_pid(const child *ch)
{
    return ch->pid;
}

bool child_starting(const child *ch)
{
    return ch->req != NULL;
}

bool child_watched(const child *ch)
{
    return ch->jp != NULL;
}

/* ---- letting go ---- */

void child_hold(child *ch)
{
    ch->holds++;
}

void child_unhold(child *ch)
{
    ch->holds--;
    maybe_free(ch);
}

void child_release(child *ch)
{
    assert(ch->live); /* one that never was is given up with child_discard */
    if (ch->released)
        return;
    ch->released = true;
    if (ch->req) {
        jail_cancel(ch->req); /* the jail ends the process if init starts it anyway */
        ch->req = NULL;
    }
    for (int i = 0; i < CHILD_NPIPES; i++)
        child_close(ch, i);
    if (ch->timer_open) {
        ch->timer_open = false;
        uv_timer_stop(&ch->timer);
        uv_close((uv_handle_t *)&ch->timer, handle_closed);
    }
    maybe_free(ch);
}

int child_exit_code(int status, const char **signame)
{
    *signame = NULL;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        *signame = sigabbrev_np(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return -1;
}
