/*
 * jail.c — the daemon side of sandboxes (jail.h), on the libuv loop: the global set-up,
 * the control socket's messages from init, the processes of a sandbox and their exits,
 * and the queries. Creation is jail_create.c, destruction jail_teardown.c, the control
 * channel's queue and requests jail_ctl.c; their shared objects are in jail_int.h.
 *
 *
 * Each sandbox: a directory state_dir/sandboxes/<id>/ holding workspace/ (a size-capped
 * tmpfs when disk_bytes > 0 and we are root; without root the init mounts the tmpfs in
 * its user namespace and sends us an fd of it with JP_READY), a cgroup below the
 * daemon's own, and a
 * sandboxd-init started with uv_spawn (the daemon never forks by itself), with the
 * workspace as its cwd and one end of a SOCK_SEQPACKET socketpair as fd 3. The protocol
 * (jail_proto.h) is request/answer for spawns and adoptions and one-way for exits and
 * kills. The daemon's end is non-blocking, watched with uv_poll (jail__on_ctl, here:
 * exits, creation's HELLO/READY/FAIL) and never waited on: sending and the requests
 * waiting for answers are jail_ctl.c. Creation waits for READY the same way, on the
 * loop, bounded by start_timeout_ms: only the daemon-side steps (directories, mounts,
 * cgroup files, uv_spawn of init) run inside jail_create.
 *
 * Exit statuses: init reports the wait status of every process it spawned. Processes
 * that entered by themselves (zygote children, jail_adopt) are not init's children: the
 * kernel reparents them to the nearest host-side subreaper, which is the daemon
 * (jail_global_init sets PR_SET_CHILD_SUBREAPER), so we wait for them through a pidfd.
 *
 * Ownership: a jail and its procs are freed only after their libuv handles are closed.
 * A jail_proc is freed right after its exit callback; a jail_req right after its
 * callback, or when it is dropped. jail_destroy() is asynchronous: it kills, waits
 * (timer) until nothing is left, answers the requests still waiting (-ECANCELED) and
 * reports the exits, removes cgroup, mounts and files (openat/unlinkat, never following
 * a link the sandbox planted), then calls done: until done, whatever the callbacks use
 * (the caller's objects, its sandbox) is still alive. A creation that failed is reported
 * the same way, once everything it made is gone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_int.h"
#include "cgroup.h"
#include "jail_proto.h"
#include "jail_runtimes.h"
#include "jail_seccomp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_START_TIMEOUT_MS 10000
#define DEFAULT_REPLY_TIMEOUT_MS 10000
#define DEFAULT_MAX_PENDING 64
#define ADOPT_RETRIES 100
#define SANDBOX_UID 1000
#define DEFAULT_UID_BASE 200000

struct jail_globals jail__g;

void jail__set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int jail__path_join(char *out, size_t n, const char *a, const char *b)
{
    int len = snprintf(out, n, "%s/%s", a, b);
    return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

int64_t jail__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- process bookkeeping --------------------------------------------------------- */

void jail__proc_link(jail *j, jail_proc *p)
{
    p->j = j;
    p->prev = NULL;
    p->next = j->procs;
    if (j->procs)
        j->procs->prev = p;
    j->procs = p;
}

static void proc_unlink(jail_proc *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else if (p->j->procs == p)
        p->j->procs = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
}

static void proc_handle_closed(uv_handle_t *h)
{
    jail_proc *p = h->data;
    if (--p->handles == 0) {
        if (p->pidfd >= 0)
            close(p->pidfd);
        free(p);
    }
}

/* Report the exit and free p (after its handles close, for adopted procs). */
void jail__proc_finish(jail_proc *p, int status)
{
    proc_unlink(p);
    if (p->cb)
        p->cb(p, status, p->arg);
    if (!p->adopted) {
        free(p);
        return;
    }
    uv_close((uv_handle_t *)&p->poll, proc_handle_closed);
    uv_close((uv_handle_t *)&p->retry, proc_handle_closed);
}

static void dispatch_exit(jail *j, pid_t pid, int status)
{
    for (jail_proc *p = j->procs; p; p = p->next) {
        if (!p->adopted && p->pid == pid) {
            jail__proc_finish(p, status);
            return;
        }
    }
}

void jail__flush_pending(jail *j)
{
    /* Callbacks may spawn (which may queue more): take the batch first. */
    while (j->npending) {
        struct exit_rec r = j->pending[0];
        memmove(j->pending, j->pending + 1, (j->npending - 1) * sizeof *j->pending);
        j->npending--;
        dispatch_exit(j, r.pid, r.status);
    }
}

/* waitid() status → wait(2) status. */
static int status_from_siginfo(const siginfo_t *si)
{
    switch (si->si_code) {
    case CLD_EXITED: return (si->si_status & 0xff) << 8;
    case CLD_KILLED: return si->si_status & 0x7f;
    case CLD_DUMPED: return (si->si_status & 0x7f) | 0x80;
    default: return 255 << 8;
    }
}

/* 1 when reaped (status set), 0 when not our child (yet), -errno otherwise. */
int jail__reap_pidfd(int pidfd, int *status)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG) < 0)
        return errno == ECHILD ? 0 : -errno;
    if (si.si_pid == 0)
        return 0;
    *status = status_from_siginfo(&si);
    return 1;
}

static void on_adopt_retry(uv_timer_t *t);

static void adopted_try(jail_proc *p)
{
    int status = 255 << 8;
    int rc = jail__reap_pidfd(p->pidfd, &status);
    if (rc == 0 && ++p->retries < ADOPT_RETRIES) {
        /* Exited but not (yet) our child: its intermediate parent may still be exiting. */
        uv_poll_stop(&p->poll);
        uv_timer_start(&p->retry, on_adopt_retry, 1, 0);
        return;
    }
    uv_poll_stop(&p->poll);
    jail__proc_finish(p, status); /* unknown status (not our child) is reported as exit 255 */
}

static void on_adopt_retry(uv_timer_t *t)
{
    adopted_try(t->data);
}

static void on_adopt_poll(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    adopted_try(h->data);
}

/* ---- loop callbacks ---------------------------------------------------------------- */

void jail__ctl_dead(jail *j)
{
    if (j->dead)
        return;
    j->dead = true;
    if (j->poll_init && uv_is_active((uv_handle_t *)&j->poll))
        uv_poll_stop(&j->poll);
    if (j->creating) {
        jail__create_failed(j, -EPIPE, "sandbox init exited before it was ready");
        return;
    }
    jail__flush_pending(j);
    /* Init is gone, so is its pid namespace: spawned processes were killed. */
    for (jail_proc *p = j->procs, *n; p; p = n) {
        n = p->next;
        if (!p->adopted)
            jail__proc_finish(p, SIGKILL);
    }
    jail__reqs_fail_all(j, -EPIPE, "the sandbox's init is gone");
}

/* One message from init. fds are taken over. */
static void ctl_handle(jail *j, const struct jp_hdr *m, const char *payload, int *fds, int nfds)
{
    int fd0 = -1;
    switch (m->type) {
    case JP_HELLO:
        if (j->creating)
            j->inner = m->a;
        break;
    case JP_READY:
        /* Without root, the init mounted the workspace tmpfs in its user namespace and
         * sends it with READY: we reach it through this fd only. */
        if (j->creating && nfds > 0 && !jail__g.feat.root && j->ws_fd < 0) {
            j->ws_fd = fds[0];
            fds[0] = -1;
            snprintf(j->ws_fdpath, sizeof j->ws_fdpath, "/proc/self/fd/%d", j->ws_fd);
        }
        if (j->creating)
            jail__create_ready(j);
        break;
    case JP_FAIL:
        if (j->creating) {
            char msg[sizeof j->create_msg];
            size_t n = m->len < sizeof msg ? m->len : sizeof msg - 1;
            memcpy(msg, payload, n);
            msg[n] = '\0';
            jail__create_failed(j, m->a < 0 ? m->a : -EIO,
                                n && msg[0] ? msg : "sandbox init failed");
        }
        break;
    case JP_EXIT: dispatch_exit(j, m->a, m->b); break;
    case JP_SPAWNED: jail__on_spawned(j, m); break;
    case JP_ADOPTED:
        if (nfds > 0) {
            fd0 = fds[0];
            fds[0] = -1;
        }
        jail__on_adopted(j, m, fd0);
        break;
    default: break;
    }
    for (int i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

void jail__on_ctl(uv_poll_t *h, int status, int events)
{
    jail *j = h->data;
    if (status < 0) {
        jail__ctl_dead(j);
        return;
    }
    if (events & UV_WRITABLE)
        jail__ctl_flush(j);
    for (;;) {
        if (j->destroying || j->dead)
            return; /* a callback destroyed the sandbox: teardown takes over */
        struct jp_hdr m;
        char buf[JAIL_CTL_RECV_MAX];
        int fds[JP_MAX_FDS], nfds = 0;
        int rc = jp_recv(j->ctl, &m, buf, sizeof buf, fds, &nfds);
        if (rc == -EAGAIN)
            return;
        if (rc == -EBADMSG)
            continue;
        if (rc <= 0) {
            jail__ctl_dead(j);
            return;
        }
        ctl_handle(j, &m, buf, fds, nfds);
    }
}

void jail__on_outer_exit(uv_process_t *p, int64_t exit_status, int term_signal)
{
    jail *j = p->data;
    (void)exit_status;
    (void)term_signal;
    j->outer_running = false;
}

/* ---- queries ------------------------------------------------------------------------- */

const char *jail_workspace(const jail *j)
{
    return j->ws_fd >= 0 ? j->ws_fdpath : j->ws;
}

int jail_slot(const jail *j)
{
    return (int)j->slot;
}

bool jail_workspace_in_memory(const jail *j)
{
    return !j->ws_image;
}

uid_t jail_host_uid(const jail *j)
{
    /* same formula as jail_create: slot n → base+2n (its root), base+2n+1 (its user) */
    return jail__g.feat.root ? jail__g.uid_base + 2 * (uid_t)j->slot + 1 : geteuid();
}

gid_t jail_host_gid(const jail *j)
{
    return jail__g.feat.root ? (gid_t)(jail__g.uid_base + 2 * (uid_t)j->slot + 1) : getegid();
}

int jail_usage(const jail *j, struct jail_usage *u)
{
    memset(u, 0, sizeof *u);
    if (!j->has_cg) {
        for (const jail_proc *p = j->procs; p; p = p->next)
            u->processes++;
        return 0;
    }
    (void)cg_memory_usage(&j->cg, &u->memory_bytes);
    uint32_t n = 0;
    int rc = cg_process_count(&j->cg, &n);
    u->processes = n > 2 ? n - 2 : 0; /* minus the init's two processes */
    return rc;
}

uint64_t jail_oom_kills(const jail *j)
{
    return j->has_cg ? cg_oom_kills(&j->cg) : 0;
}

int jail_memory_headroom(const jail *j, uint64_t *bytes)
{
    *bytes = UINT64_MAX;
    return j->has_cg ? cg_memory_headroom(&j->cg, bytes) : -ENOTSUP;
}

int jail_freeze(jail *j)
{
    if (!j->has_cg || j->destroying || j->dead)
        return j->has_cg ? -ESRCH : -ENOTSUP;
    int rc = cg_freeze(&j->cg, true);
    if (rc == 0)
        jail__reqs_pause(j, true);
    return rc;
}

int jail_thaw(jail *j)
{
    if (!j->has_cg)
        return -ENOTSUP;
    int rc = cg_freeze(&j->cg, false);
    jail__reqs_pause(j, false);
    return rc;
}

int jail_refreeze(jail *j, bool kick)
{
    if (!j->has_cg || j->destroying || j->dead)
        return j->has_cg ? -ESRCH : -ENOTSUP;
    int rc = kick ? cg_freeze(&j->cg, false) : 0;
    return rc ? rc : cg_freeze(&j->cg, true);
}

int jail_frozen(const jail *j)
{
    return j->has_cg ? cg_frozen(&j->cg) : -ENOTSUP;
}

unsigned jail_waiting(const jail *j)
{
    return j->nreqs;
}

int jail_entry_info(const jail *j, struct jail_entry *e)
{
    memset(e, 0, sizeof *e);
    if (j->destroying || j->dead)
        return -ESRCH;
    e->ns_pid = j->inner;
    if (j->has_cg)
        cg_procs_paths(&j->cg, e->cgroup_procs, 4);
    e->uid = SANDBOX_UID;
    e->gid = SANDBOX_UID;
    e->network_host = j->network_host;
    e->userns_ino = j->userns_ino;
    if (!jail__g.feat.root) {
        if (!j->outer_running || !j->userns_ino)
            return -ESRCH; /* no way in without the outer's descriptors (and a check) */
        e->anchor_pid = j->outer.pid;
    }
    return 0;
}

/* ---- processes (spawning and kills: jail_ctl.c) -------------------------------------- */

pid_t jail_proc_pid(const jail_proc *p)
{
    return p->pid;
}

/* Track a process of the sandbox through a pidfd we hold (taken over: fd). */
int jail__adopt_pidfd(jail *j, pid_t ns_pid, int fd, jail_exit_cb cb, void *arg, jail_proc **out)
{
    jail_proc *p = calloc(1, sizeof *p);
    if (!p) {
        close(fd);
        return -ENOMEM;
    }
    p->pid = ns_pid;
    p->adopted = true;
    p->pidfd = fd;
    p->cb = cb;
    p->arg = arg;
    uv_poll_init(j->loop, &p->poll, fd);
    uv_timer_init(j->loop, &p->retry);
    p->poll.data = p->retry.data = p;
    p->handles = 2;
    jail__proc_link(j, p);
    uv_poll_start(&p->poll, UV_READABLE, on_adopt_poll);
    *out = p;
    return 0;
}

int jail_adopt_child(jail *j, pid_t host_pid, pid_t ns_pid, jail_exit_cb cb, void *arg,
                     jail_proc **out)
{
    *out = NULL;
    if (j->destroying || j->dead)
        return -ESRCH;
    /* Our own child: its pid cannot be reused before we reap it, so no race here. */
    int fd = (int)syscall(SYS_pidfd_open, host_pid, 0);
    if (fd < 0)
        return -errno;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    int rc = jail__adopt_pidfd(j, ns_pid, fd, cb, arg, out);
    if (!rc)
        (*out)->host_pid = host_pid;
    return rc;
}

int jail_for_each_owned(void (*fn)(pid_t host_pid, void *arg), void *arg)
{
    int rc = 0;
    for (jail *j = jail__g.jails; j; j = j->next) {
        /* the inner init: our child if its outer half died first (jail__finish reaps it) */
        if (j->inner_pidfd >= 0 && j->inner > 0)
            fn(j->inner, arg);
        for (jail_proc *p = j->procs; p; p = p->next) {
            if (!p->adopted)
                continue;
            if (p->host_pid <= 0) {
                pid_t hp = jail_pidfd_pid(p->pidfd, "Pid:", false);
                if (hp > 0)
                    p->host_pid = hp;
                else if (hp != -ESRCH)
                    rc = hp; /* cannot tell: the caller must not treat it as a stranger */
            }
            if (p->host_pid > 0)
                fn(p->host_pid, arg);
        }
    }
    return rc;
}

/* ---- global ------------------------------------------------------------------------- */

/* Unmount a workspace a killed daemon left mounted. Its processes are dead by now
 * (cg_cleanup_stale), so a plain unmount succeeds unless something still holds it: then
 * a few tries, and a lazy detach at last (a kept image must never be mounted twice). */
static void unmount_stale(const char *ws)
{
    for (int tries = 0; tries < 200; tries++) {
        if (umount2(ws, UMOUNT_NOFOLLOW) == 0)
            continue; /* another layer may sit below */
        if (errno != EBUSY)
            return;
        usleep(10000);
    }
    while (umount2(ws, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
        ;
}

/* What a previous daemon left: every sandbox dir is removed, but those holding keep_file
 * (durable sandboxes, restored later), which are only unmounted. */
static void cleanup_stale_dirs(void)
{
    DIR *d = opendir(jail__g.sbx_dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[JAIL_PATH_MAX], ws[JAIL_PATH_MAX], keep[JAIL_PATH_MAX];
        if (jail__path_join(p, sizeof p, jail__g.sbx_dir, de->d_name) ||
            jail__path_join(ws, sizeof ws, p, "workspace"))
            continue;
        unmount_stale(ws);
        struct stat st;
        if (jail__g.keep_file[0] && jail__path_join(keep, sizeof keep, p, jail__g.keep_file) == 0 &&
            lstat(keep, &st) == 0 && S_ISREG(st.st_mode))
            continue;
        (void)jail__rm_tree(p);
    }
    closedir(d);
}

/* Step 1: the paths, checked: the state dir's sandboxes/ and the init, made absolute
 * (uv_spawn runs it from the workspace) and executable. */
static int global_paths(const struct jail_global *g, char *err, size_t errlen)
{
    if (!g->state_dir || !g->init_path ||
        snprintf(jail__g.init_path, sizeof jail__g.init_path, "%s", g->init_path) >=
            (int)sizeof jail__g.init_path ||
        jail__path_join(jail__g.sbx_dir, sizeof jail__g.sbx_dir, g->state_dir, "sandboxes")) {
        jail__set_err(err, errlen, "state_dir or init_path missing or too long");
        return -EINVAL;
    }
    if (g->runtimes_dir)
        snprintf(jail__g.runtimes_dir, sizeof jail__g.runtimes_dir, "%s", g->runtimes_dir);
    /* uv_spawn runs it from the workspace: make the path absolute. */
    char abs[PATH_MAX];
    if (!realpath(g->init_path, abs) || strlen(abs) >= sizeof jail__g.init_path) {
        jail__set_err(err, errlen, "sandbox init %s: %s", g->init_path,
                      strerror(errno ? errno : ENAMETOOLONG));
        return -ENOENT;
    }
    memcpy(jail__g.init_path, abs, strlen(abs) + 1);
    if (access(jail__g.init_path, X_OK) < 0) {
        jail__set_err(err, errlen, "sandbox init %s is not executable: %s", jail__g.init_path,
                      strerror(errno));
        return -errno;
    }
    return 0;
}

/* Step 2: the settings, defaults for those left 0, and the slot table. */
static int global_settings(const struct jail_global *g)
{
    jail__g.uid_base = g->host_uid_base ? g->host_uid_base : DEFAULT_UID_BASE;
    jail__g.start_timeout_ms = g->start_timeout_ms ? g->start_timeout_ms : DEFAULT_START_TIMEOUT_MS;
    jail__g.reply_timeout_ms = g->reply_timeout_ms ? g->reply_timeout_ms : DEFAULT_REPLY_TIMEOUT_MS;
    jail__g.max_pending = g->max_pending ? g->max_pending : DEFAULT_MAX_PENDING;
    jail__g.spawn_reserve = g->spawn_reserve;
    if (g->keep_file)
        snprintf(jail__g.keep_file, sizeof jail__g.keep_file, "%s", g->keep_file);
    if (g->site_dirs)
        snprintf(jail__g.site_dirs, sizeof jail__g.site_dirs, "%s", g->site_dirs);
    jail__g.max = g->max_sandboxes ? g->max_sandboxes : 64;
    jail__g.slots = calloc(jail__g.max, 1);
    return jail__g.slots ? 0 : -ENOMEM;
}

/* Step 3: what this host offers (user namespaces, seccomp, cgroup controllers); the
 * child subreaper flag, which must be set before the zygote is spawned. */
static int global_features(const struct jail_global *g, char *err, size_t errlen)
{
    jail__g.feat.root = geteuid() == 0;
    /* Zygote children that entered a sandbox are reparented to us when their
     * intermediate parent exits (see jail_enter.h): we reap them through pidfds. Must be
     * set before the zygote is spawned (the flag is inherited as "has a subreaper"). */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        jail__set_err(err, errlen, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
        return -errno;
    }
    char buf[32] = "";
    int fd = open("/proc/sys/user/max_user_namespaces", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, buf, sizeof buf - 1);
        buf[r > 0 ? r : 0] = '\0';
        close(fd);
    }
    jail__g.feat.userns = strtoul(buf, NULL, 10) > 0;
    static struct jail_sc_prog prog;
    jail__g.feat.seccomp = jail_seccomp_compile(&prog) == 0;
    /* Our cgroups live below our own, in a group named after the state dir: a daemon
     * cleans up after its own crashed predecessor (same state dir), never after another
     * daemon running beside it with a different state dir (tests start several). */
    char cgsub[32];
    uint32_t h = 2166136261u;
    for (const char *c = g->state_dir; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    snprintf(cgsub, sizeof cgsub, "sandboxd-%08x", h);
    if (cg_sys_probe(&jail__g.cg, "/sys/fs/cgroup", cgsub) == 0 && jail__g.cg.version) {
        jail__g.feat.cgroup_version = jail__g.cg.version;
        jail__g.feat.memory_limit = jail__g.cg.have[CG_MEMORY];
        jail__g.feat.pids_limit = jail__g.cg.have[CG_PIDS];
        jail__g.feat.cpu_limit = jail__g.cg.have[CG_CPU];
    }
    /* root: a tmpfs we mount; otherwise one the init mounts in its user namespace */
    jail__g.feat.disk_limit = jail__g.feat.root || jail__g.feat.userns;
    return 0;
}

/* Step 5: the private copy of the runtimes. A bind of the runtimes dir would show its
 * host path in every sandbox's mountinfo; a private copy shows none. Without one, the
 * bind still works (a warning). */
static void global_runtimes(uv_loop_t *loop, const struct jail_global *g)
{
    char why[512];
    int mfd =
        jail_runtimes_make(loop, jail__g.init_path, jail__g.runtimes_dir, g->mpl_cache_dir,
                           g->runtimes_bytes ? g->runtimes_bytes : 256ULL << 20, why, sizeof why);
    if (mfd >= 0)
        jail__g.runtimes_mnt = mfd;
    else
        fprintf(stderr,
                "sandboxd: warning: /opt/sandboxd is a bind of %s (its path shows "
                "in sandboxes' mountinfo): %s\n",
                jail__g.runtimes_dir, why);
}

int jail_global_init(uv_loop_t *loop, const struct jail_global *g, char *err, size_t errlen)
{
    int rc;
    memset(&jail__g, 0, sizeof jail__g);
    jail__g.loop = loop;
    jail__g.runtimes_mnt = -1;
    if ((rc = global_paths(g, err, errlen)) || (rc = global_settings(g)) ||
        (rc = global_features(g, err, errlen)))
        return rc;
    /* Step 4: the state dirs; then what a crashed daemon left: its inits died with it
     * (PDEATHSIG), which ended their pid namespaces; kill whatever still sits in our
     * cgroups, then remove it all. */
    if ((mkdir(g->state_dir, 0711) < 0 && errno != EEXIST) ||
        (mkdir(jail__g.sbx_dir, 0711) < 0 && errno != EEXIST)) {
        jail__set_err(err, errlen, "could not create %s: %s", jail__g.sbx_dir, strerror(errno));
        return -errno;
    }
    if (jail__g.cg.version)
        (void)cg_cleanup_stale(&jail__g.cg);
    cleanup_stale_dirs();
    if (jail__g.runtimes_dir[0])
        global_runtimes(loop, g);
    jail__g.inited = true;
    return 0;
}

const struct jail_features *jail_features(void)
{
    return &jail__g.feat;
}

void jail_global_shutdown(void)
{
    if (!jail__g.inited)
        return;
    for (jail *j = jail__g.jails; j; j = j->next)
        jail_release(j, NULL, NULL); /* their files stay for the next daemon */
    int64_t deadline = jail__now_ms() + 5000;
    while (jail__g.jails && jail__now_ms() < deadline)
        uv_run(jail__g.loop, UV_RUN_ONCE);
    free(jail__g.slots);
    jail__g.slots = NULL;
    if (jail__g.runtimes_mnt >= 0)
        close(jail__g.runtimes_mnt);
    jail__g.runtimes_mnt = -1;
    jail__g.inited = false;
}

/* The NSpid of host pid hp, innermost: 0 when unknown. */
static pid_t inner_pid_of(pid_t hp)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)hp);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    pid_t v = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        char *l = line + 6, *end;
        for (;;) { /* host pid first, the innermost last */
            long x = strtol(l, &end, 10);
            if (end == l)
                break;
            v = (pid_t)x;
            l = end;
        }
        break;
    }
    fclose(f);
    return v;
}

pid_t jail_proc_host_pid(const jail_proc *p)
{
    if (p->adopted)
        return p->host_pid > 0 ? p->host_pid : jail_pidfd_pid(p->pidfd, "Pid:", false);
    const jail *j = p->j;
    pid_t init = j && j->inner_pidfd >= 0 ? jail_pidfd_pid(j->inner_pidfd, "Pid:", false) : -ESRCH;
    if (init <= 0)
        return init < 0 ? init : -ESRCH;
    char path[80];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)init, (int)init);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    pid_t found = -ESRCH;
    long hp;
    /* the init's children, bounded by the sandbox's pids limit */
    while (found < 0 && fscanf(f, "%ld", &hp) == 1)
        if (inner_pid_of((pid_t)hp) == p->pid)
            found = (pid_t)hp;
    fclose(f);
    return found;
}
