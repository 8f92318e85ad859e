/*
 * zygote_child.c — the life of a forked Python context, from the zygote's fork() to
 * _exit(): descriptors, entering the sandbox, environment, then the runtime's serve loop.
 *
 * Runs in a single-threaded copy of the zygote (PyOS_AfterFork_Child() already done) that
 * still has the daemon's credentials in the host namespaces: root, or in non-root mode
 * the daemon's ordinary user, which owns the sandbox's user namespace and joins it
 * through the outer init's descriptors (entry.anchor_pid, see jail_enter.h). Order:
 *   1. descriptors: the request's channel, stdout and stderr become 3, 1, 2 and /dev/null
 *      becomes 0. The zygote's own control socket sits on fd 3, so it is replaced here
 *      (dup2 onto 3 closes it); every source fd is first moved above the targets so that
 *      no dup2 can clobber another source;
 *   2. the sandbox's cgroups (join_cgroups_fast: the cheap way on cgroup v1), then
 *      jail_enter(): setns, and the privilege drop (uid 1000, no capabilities,
 *      no_new_privs, seccomp, every fd but 0-3 and the report pipe closed). When the
 *      zygote created this process directly in the sandbox's pid namespace (pidfd >= 0,
 *      the usual case, see zygote_spawn.c) there is no second fork; otherwise jail_enter()
 *      forks once more and the rest happens in the grandchild;
 *   3. on the double-fork way, the context reports its pid inside the sandbox and closes
 *      the report pipe (on the direct way the zygote has replied already);
 *   4. SIGPIPE and SIGXFSZ ignored again (as python3 does at start; jail_drop_privileges
 *      reset every disposition), the environment replaced (C environ and os.environ
 *      together) and the runtime package made importable from the sandbox's path;
 *   5. sandboxd_runtime.serve(3); its return value is the exit status.
 * Before 2, expat's hash salt is drawn afresh (reseed_expat_salt).
 * Any failure writes -errno to the report pipe (double-fork way) or a "failed" message
 * to the channel (direct way) and _exit(127)s: this code never returns into the
 * zygote's loop and never runs user code before the sandbox is fully entered. What the
 * child holds of its request (the zygote's receive buffer, copied by fork) is its own
 * tenant's: the zygote zeroes its copy before it forks for anyone else.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define HIGH_FD 10 /* sources are moved to fds >= this before the dup2s */

static void report(int fd, int32_t v)
{
    (void)!write(fd, &v, sizeof v);
}

/* Where a failure goes: the report pipe (double-fork way: the zygote waits for it), else
 * the context's channel, which the daemon reads already (direct way: the zygote replied
 * at clone time and waits for nothing). */
static int report_fd = -1, chan_fd = -1;

/* Tell the daemon on the channel that the context could not start (docs/protocol.md:
 * "failed", then the process exits 127). */
static void channel_failed(int e)
{
    char line[256];
    int n = snprintf(line, sizeof line,
                     "{\"type\":\"failed\",\"errno\":%d,\"message\":\"entering the sandbox "
                     "failed: %s\"}\n",
                     e, strerror(e));
    if (chan_fd >= 0 && n > 0 && (size_t)n < sizeof line)
        (void)!write(chan_fd, line, (size_t)n);
}

static __attribute__((noreturn)) void fail(int err)
{
    if (err >= 0 || err <= -4096)
        err = -EIO;
    if (report_fd >= 0)
        report(report_fd, err);
    else
        channel_failed(-err);
    _exit(127);
}

static int move_high(int fd)
{
    return fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
}

/* Join the sandbox's cgroups by writing "0" (this thread) to each v1 `tasks` file next to
 * the cgroup.procs files named in e, clearing those from e. Measured here: moving a
 * whole process through cgroup.procs takes the global threadgroup rwsem for writing and
 * waits for an RCU grace period (5-16 ms per context on this VM, the dominant cost of a
 * context start); moving only the current thread of a single-threaded process skips that
 * lock (kernel >= 6.x) and takes 0.3 ms, with the same result. On cgroup v2 there is no
 * `tasks` file: the entry is left for jail_enter() to write. 0 or -errno. */
static int join_cgroups_fast(struct jail_entry *e)
{
    static const char procs[] = "cgroup.procs";
    for (int i = 0; i < 4; i++) {
        char *p = e->cgroup_procs[i], tasks[sizeof e->cgroup_procs[i]];
        size_t len = strnlen(p, sizeof e->cgroup_procs[i]);
        if (!len || len < sizeof procs - 1 || strcmp(p + len - (sizeof procs - 1), procs))
            continue;
        size_t dir = len - (sizeof procs - 1);
        if (dir + sizeof "tasks" > sizeof tasks)
            continue;
        memcpy(tasks, p, dir);
        memcpy(tasks + dir, "tasks", sizeof "tasks");
        int fd = open(tasks, O_WRONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
            continue; /* cgroup v2: jail_enter() writes cgroup.procs */
        if (fd < 0)
            return -errno;
        int rc = write(fd, "0", 1) == 1 ? 0 : -errno;
        close(fd);
        if (rc)
            return rc;
        p[0] = '\0';
    }
    return 0;
}

/* Every context is a copy of one interpreter, so it inherits its hash secret. Of its 24
 * bytes, the str/bytes hash (siphash13, Py_HASH_CUTOFF 0) uses the first 16, and those
 * cannot change here: every string of the zygote caches its hash, and every dict, set
 * and C-level table (the interned strings, pandas' indexes) is laid out by those hashes
 * (measured, and why no reseed fits a 10 ms start: docs/security.md, class 10). The
 * last 8 are expat's salt only, read when a parser is created (pyexpat, _elementtree):
 * no parser exists before fork, so it is drawn afresh for each context. 0 or -errno. */
static int reseed_expat_salt(void)
{
    Py_hash_t salt;
    if (getrandom(&salt, sizeof salt, GRND_NONBLOCK) != (ssize_t)sizeof salt)
        return -(errno ? errno : EIO);
    _Py_HashSecret.expat.hashsalt = salt;
    return 0;
}

/* Build the Python list of "KEY=VALUE" strings (decoded like os.environ does). */
static PyObject *env_list(const struct zyg_req *r)
{
    PyObject *l = PyList_New((Py_ssize_t)r->nenv);
    for (size_t i = 0; l && i < r->nenv; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(r->env[i]);
        if (!s) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, s);
    }
    return l;
}

/* Step 1: the request's fds above the range jail_enter keeps, then the context's stdio
 * (0 = /dev/null, 1 and 2 its pipes) and its channel as fd 3. Returns the report pipe
 * (moved high too), or -1 on the direct way; any failure ends the child. */
static int setup_fds(const struct zyg_req *r, int report_pipe)
{
    chan_fd = r->channel_fd;
    report_fd = report_pipe;
    int rp = report_pipe >= 0 ? move_high(report_pipe) : -1;
    if (report_pipe >= 0 && rp < 0)
        fail(-errno);
    if (rp >= 0)
        report_fd = rp;
    int ch = move_high(r->channel_fd), out = move_high(r->stdout_fd),
        errfd = move_high(r->stderr_fd);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (ch < 0 || out < 0 || errfd < 0 || null < 0)
        fail(-errno);
    chan_fd = ch;
    if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0 || dup2(ch, 3) < 0)
        fail(-errno);
    chan_fd = 3;
    return rp;
}

/* Step 2: into the sandbox: a fresh expat salt (not the zygote's, shared by every
 * context), its cgroups first (so the rest runs under its limits), then jail_enter
 * (namespaces, privileges, seccomp). Returns only in the context itself. */
static void enter_sandbox(const struct zyg_req *r, int rp, int pidfd,
                          const struct jail_sc_prog *prog)
{
    const int keep[] = { 0, 1, 2, 3, rp };
    struct jail_enter_opts o = {
        .cwd = r->cwd,
        .keep_fds = keep,
        .nkeep = sizeof keep / sizeof keep[0],
        .seccomp = prog,
        .report_fd = rp,
        .in_pidns = pidfd >= 0,
        .pidfd = pidfd,
    };
    struct jail_entry e = r->entry;
    int rc = reseed_expat_salt();
    if (!rc)
        rc = join_cgroups_fast(&e);
    if (rc)
        fail(rc);
    pid_t self = getpid();
    rc = jail_enter(&e, &o);
    if (rc && (o.in_pidns || getpid() == self))
        fail(rc); /* before the second fork (or there is none) */
    if (rc) {     /* the grandchild failed: its records are tagged */
        report(rp, ZYG_REPORT_INSIDE_ERR(rc < 0 && rc > -4096 ? -rc : EIO));
        _exit(127);
    }
}

/* Step 4: serve the context on fd 3 until it ends; its exit status. No Py_Finalize: the
 * shared interpreter state belongs to the zygote's image; exit without running its
 * teardown (like os._exit), after flushing what serve() may have left. */
static int serve_context(void)
{
    PyObject *res = PyObject_CallFunction((PyObject *)zyg_py.serve_fn, "i", 3);
    if (!res) {
        PyErr_Print();
        _exit(1);
    }
    long v = PyLong_Check(res) ? PyLong_AsLong(res) : 1;
    if (v == -1 && PyErr_Occurred())
        v = 1;
    PyObject *o_ = PySys_GetObject("stdout");
    if (o_)
        Py_XDECREF(PyObject_CallMethod(o_, "flush", NULL));
    o_ = PySys_GetObject("stderr");
    if (o_)
        Py_XDECREF(PyObject_CallMethod(o_, "flush", NULL));
    PyErr_Clear();
    return (int)(v & 0xff);
}

void zyg_child_main(const struct zyg_req *r, int report_pipe, int pidfd,
                    const struct jail_sc_prog *prog)
{
    int rp = setup_fds(r, report_pipe);
    enter_sandbox(r, rp, pidfd, prog);

    /* The context (the grandchild on the double-fork way): in the sandbox, unprivileged,
     * filtered. Its pid inside goes to the zygote only on the double-fork way; on the
     * direct way the zygote read it from the clone's pidfd. */
    if (rp >= 0) {
        report(rp, ZYG_REPORT_INSIDE_PID(getpid()));
        close(rp);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    if (clearenv() != 0)
        _exit(127);

    /* Step 3: the request's environment into os.environ, then forget the request. */
    PyObject *env = env_list(r);
    zyg_forget_request(); /* r is gone: its pages would stay private to this process */
    PyObject *res = env ? PyObject_CallFunction((PyObject *)zyg_py.enter_fn, "O", env) : NULL;
    Py_XDECREF(env);
    if (!res) {
        PyErr_Print(); /* to the context's stderr pipe */
        _exit(127);
    }
    Py_DECREF(res);
    _exit(serve_context());
}
