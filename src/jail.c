/*
 * jail.c — the daemon side of sandboxes (jail.h), on the libuv loop.
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
#define CTL_RECV_MAX 1024      /* answers from init: a header and a sentence at most */
#define DESTROY_TICK_MS 1
#define DESTROY_MAX_TICKS 3000
#define ADOPT_RETRIES 100
#define SANDBOX_UID 1000
#define DEFAULT_UID_BASE 200000
#define RM_MAX_DEPTH 64
#define JAIL_RUNTIMES_FD 4   /* the init's fd for the private runtimes mount */

static struct {
    bool inited;
    uv_loop_t *loop;
    struct jail_features feat;
    struct cg_sys cg;
    char sbx_dir[JAIL_PATH_MAX];
    char init_path[JAIL_PATH_MAX];
    char runtimes_dir[JAIL_PATH_MAX];
    int runtimes_mnt;          /* private tmpfs copy of the runtimes (detached), or -1 */
    uid_t uid_base;
    unsigned max;
    unsigned start_timeout_ms, reply_timeout_ms, max_pending;
    uint64_t spawn_reserve;
    unsigned char *slots;
    jail *jails;
} G;

void jail__set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int path_join(char *out, size_t n, const char *a, const char *b)
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

/* ---- removing a directory tree without following links ------------------------- */

/* Remove everything inside dirfd. Directories deeper than RM_MAX_DEPTH are moved up to
 * topfd (renamed) so fd usage and recursion stay bounded; the caller loops until empty.
 * The sandbox is dead when this runs, so the tree cannot change under us; links are
 * never followed (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, unlinkat). */
static int rm_inside(int dirfd, int topfd, int depth, unsigned *moved)
{
    int dfd = dup(dirfd);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -errno;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (!S_ISDIR(st.st_mode)) {
            if (unlinkat(dirfd, de->d_name, 0) < 0 && !rc)
                rc = -errno;
            continue;
        }
        if (depth >= RM_MAX_DEPTH) {
            char nm[32];
            snprintf(nm, sizeof nm, ".rm-deep-%u", (*moved)++);
            (void)renameat(dirfd, de->d_name, topfd, nm);
            continue;
        }
        int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
            (void)rm_inside(sub, topfd, depth + 1, moved);
            close(sub);
        }
        if (unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT && !rc)
            rc = -errno;
    }
    closedir(d);
    return rc;
}

static int rm_tree(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    unsigned moved = 0, before;
    int rc;
    int passes = 0;
    do {
        before = moved;
        rc = rm_inside(fd, fd, 0, &moved);
    } while (moved != before && ++passes < 100000);
    close(fd);
    if (rmdir(path) < 0 && errno != ENOENT)
        return -errno;
    return rc;
}

/* ---- exits read while tearing down ---------------------------------------------- */

static void pending_push(jail *j, pid_t pid, int status)
{
    if (j->npending == j->cap_pending) {
        size_t n = j->cap_pending ? j->cap_pending * 2 : 16;
        struct exit_rec *p = realloc(j->pending, n * sizeof *p);
        if (!p)
            return;   /* out of memory: the exit is lost; destroy still reports it */
        j->pending = p;
        j->cap_pending = n;
    }
    j->pending[j->npending++] = (struct exit_rec){ pid, status };
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
static void proc_finish(jail_proc *p, int status)
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
            proc_finish(p, status);
            return;
        }
    }
}

static void flush_pending(jail *j)
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
    case CLD_EXITED:
        return (si->si_status & 0xff) << 8;
    case CLD_KILLED:
        return si->si_status & 0x7f;
    case CLD_DUMPED:
        return (si->si_status & 0x7f) | 0x80;
    default:
        return 255 << 8;
    }
}

/* 1 when reaped (status set), 0 when not our child (yet), -errno otherwise. */
static int reap_pidfd(int pidfd, int *status)
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
    int rc = reap_pidfd(p->pidfd, &status);
    if (rc == 0 && ++p->retries < ADOPT_RETRIES) {
        /* Exited but not (yet) our child: its intermediate parent may still be exiting. */
        uv_poll_stop(&p->poll);
        uv_timer_start(&p->retry, on_adopt_retry, 1, 0);
        return;
    }
    uv_poll_stop(&p->poll);
    proc_finish(p, status);   /* unknown status (not our child) is reported as exit 255 */
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

static void create_ready(jail *j);
static void create_failed(jail *j, int rc, const char *msg);

static void ctl_dead(jail *j)
{
    if (j->dead)
        return;
    j->dead = true;
    if (j->poll_init && uv_is_active((uv_handle_t *)&j->poll))
        uv_poll_stop(&j->poll);
    if (j->creating) {
        create_failed(j, -EPIPE, "sandbox init exited before it was ready");
        return;
    }
    flush_pending(j);
    /* Init is gone, so is its pid namespace: spawned processes were killed. */
    for (jail_proc *p = j->procs, *n; p; p = n) {
        n = p->next;
        if (!p->adopted)
            proc_finish(p, SIGKILL);
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
        if (j->creating && nfds > 0 && !G.feat.root && j->ws_fd < 0) {
            j->ws_fd = fds[0];
            fds[0] = -1;
            snprintf(j->ws_fdpath, sizeof j->ws_fdpath, "/proc/self/fd/%d", j->ws_fd);
        }
        if (j->creating)
            create_ready(j);
        break;
    case JP_FAIL:
        if (j->creating) {
            char msg[sizeof j->create_msg];
            size_t n = m->len < sizeof msg ? m->len : sizeof msg - 1;
            memcpy(msg, payload, n);
            msg[n] = '\0';
            create_failed(j, m->a < 0 ? m->a : -EIO, n && msg[0] ? msg : "sandbox init failed");
        }
        break;
    case JP_EXIT:
        dispatch_exit(j, m->a, m->b);
        break;
    case JP_SPAWNED:
        jail__on_spawned(j, m);
        break;
    case JP_ADOPTED:
        if (nfds > 0) {
            fd0 = fds[0];
            fds[0] = -1;
        }
        jail__on_adopted(j, m, fd0);
        break;
    default:
        break;
    }
    for (int i = 0; i < nfds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

void jail__on_ctl(uv_poll_t *h, int status, int events)
{
    jail *j = h->data;
    if (status < 0) {
        ctl_dead(j);
        return;
    }
    if (events & UV_WRITABLE)
        jail__ctl_flush(j);
    for (;;) {
        if (j->destroying || j->dead)
            return;   /* a callback destroyed the sandbox: teardown takes over */
        struct jp_hdr m;
        char buf[CTL_RECV_MAX];
        int fds[JP_MAX_FDS], nfds = 0;
        int rc = jp_recv(j->ctl, &m, buf, sizeof buf, fds, &nfds);
        if (rc == -EAGAIN)
            return;
        if (rc == -EBADMSG)
            continue;
        if (rc <= 0) {
            ctl_dead(j);
            return;
        }
        ctl_handle(j, &m, buf, fds, nfds);
    }
}

static void on_outer_exit(uv_process_t *p, int64_t exit_status, int term_signal)
{
    jail *j = p->data;
    (void)exit_status;
    (void)term_signal;
    j->outer_running = false;
}

/* ---- creation ------------------------------------------------------------------------ */

static int slot_alloc(void)
{
    for (unsigned i = 0; i < G.max; i++) {
        if (!G.slots[i]) {
            G.slots[i] = 1;
            return (int)i;
        }
    }
    return -EAGAIN;
}

static void jail_teardown_start(jail *j);

/* Step 1: the jail object, its slot and its place in G.jails. */
static int create_alloc(uv_loop_t *loop, const struct jail_opts *o, jail **out, char *err,
                        size_t errlen)
{
    size_t idlen = strlen(o->id);
    if (idlen == 0 || idlen >= sizeof ((jail *)0)->id || strchr(o->id, '/') || o->id[0] == '.') {
        jail__set_err(err, errlen, "invalid sandbox id");
        return -EINVAL;
    }
    int slot = slot_alloc();
    if (slot < 0) {
        jail__set_err(err, errlen, "all %u sandbox slots are in use", G.max);
        return slot;
    }
    jail *j = calloc(1, sizeof *j);
    if (!j) {
        G.slots[slot] = 0;
        jail__set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    j->loop = loop;
    j->slot = (unsigned)slot;
    j->ctl = -1;
    j->ws_fd = -1;
    j->want_ws_fd = !G.feat.root && o->limits.disk_bytes;
    j->inner_pidfd = -1;
    j->network_host = o->network_host;
    j->reply_timeout_ms = G.reply_timeout_ms;
    j->max_pending = G.max_pending;
    memcpy(j->id, o->id, idlen + 1);
    j->next = G.jails;
    if (G.jails)
        G.jails->prev = j;
    G.jails = j;
    *out = j;
    return 0;
}

/* Step 2: the sandbox's directory and its workspace (a size-capped tmpfs when root),
 * owned by the sandbox's user. */
static int create_dirs(jail *j, const struct jail_opts *o, uid_t uuid, char *err, size_t errlen)
{
    char dir[JAIL_PATH_MAX];
    if (path_join(dir, sizeof dir, G.sbx_dir, o->id) ||
        path_join(j->ws, sizeof j->ws, dir, "workspace")) {
        jail__set_err(err, errlen, "sandbox path too long");
        return -ENAMETOOLONG;
    }
    /* An existing dir means a live sandbox with this id: fail without touching it. */
    if (mkdir(dir, 0711) < 0) {
        jail__set_err(err, errlen, "could not create %s: %s", dir, strerror(errno));
        return -errno;
    }
    memcpy(j->dir, dir, sizeof dir);   /* from here on, teardown removes it */
    if (mkdir(j->ws, 0700) < 0) {
        jail__set_err(err, errlen, "could not create %s: %s", j->ws, strerror(errno));
        return -errno;
    }
    if (G.feat.root && o->limits.disk_bytes) {
        char data[128];
        snprintf(data, sizeof data, "size=%" PRIu64 ",mode=0700,uid=%u,gid=%u",
                 o->limits.disk_bytes, (unsigned)uuid, (unsigned)uuid);
        if (mount("sandboxd-ws", j->ws, "tmpfs", MS_NOSUID | MS_NODEV, data) < 0) {
            jail__set_err(err, errlen, "could not mount the workspace tmpfs: %s", strerror(errno));
            return -errno;
        }
        j->ws_tmpfs = true;
    }
    if (G.feat.root && chown(j->ws, uuid, uuid) < 0) {
        jail__set_err(err, errlen, "could not chown the workspace: %s", strerror(errno));
        return -errno;
    }
    return 0;
}

/* Step 3: the cgroup with the sandbox's limits, before any of its processes exists. */
static int create_cgroup(jail *j, const struct jail_opts *o, char *err, size_t errlen)
{
    if (!G.cg.version)
        return 0;
    int rc = cg_create(&G.cg, o->id, &j->cg);
    if (rc == -EEXIST) {   /* left over: empty it and try again */
        struct cg old;
        if (cg_lookup(&G.cg, o->id, &old) == 0) {
            for (int i = 0; i < 100 && cg_kill_all(&old) == 0; i++)
                usleep(1000);
            (void)cg_remove(&old);
        }
        rc = cg_create(&G.cg, o->id, &j->cg);
    }
    if (rc) {
        jail__set_err(err, errlen, "could not create the sandbox cgroup: %s", strerror(-rc));
        return rc;
    }
    j->has_cg = true;
    /* +2: the init's outer and inner processes live in the group too. */
    rc = cg_set_limits(&j->cg, o->limits.memory_bytes, o->limits.pids ? o->limits.pids + 2 : 0,
                       o->limits.cpu_millis);
    if (rc)
        jail__set_err(err, errlen, "could not set the sandbox limits: %s", strerror(-rc));
    return rc;
}

/* Step 4: start sandboxd-init with the control socket as fd 3. It joins the cgroup and
 * builds the sandbox by itself, under the sandbox's limits; we only listen. */
static int create_start_init(jail *j, const struct jail_opts *o, uid_t ruid, uid_t uuid,
                             char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
        jail__set_err(err, errlen, "socketpair: %s", strerror(errno));
        return -errno;
    }
    j->ctl = sv[0];
    /* The init's end must be blocking: it uses poll() and blocking sends. */
    int fl = fcntl(sv[1], F_GETFL);
    (void)fcntl(sv[1], F_SETFL, fl & ~O_NONBLOCK);

    static char a_rootless[] = "--rootless", a_nethost[] = "--net=host";
    char a_uid[64], a_gid[64], a_tmp[48], a_ws[48], a_rt[JAIL_PATH_MAX + 16], a_res[48];
    char a_cg[4][4 * CG_PATH_MAX + 8], procs[4][CG_PATH_MAX];
    char *args[16];
    int n = 0;
    args[n++] = G.init_path;
    if (G.feat.root) {
        snprintf(a_uid, sizeof a_uid, "--uid=%u:%u", (unsigned)ruid, (unsigned)uuid);
        snprintf(a_gid, sizeof a_gid, "--gid=%u:%u", (unsigned)ruid, (unsigned)uuid);
        args[n++] = a_uid;
        args[n++] = a_gid;
    } else {
        args[n++] = a_rootless;
    }
    if (j->has_cg) {
        cg_procs_paths(&j->cg, procs, 4);
        for (int i = 0; i < 4 && procs[i][0]; i++) {
            snprintf(a_cg[i], sizeof a_cg[i], "--cg=%s", procs[i]);
            args[n++] = a_cg[i];
        }
        if (G.spawn_reserve) {   /* checked against the memory cgroup among those */
            snprintf(a_res, sizeof a_res, "--spawn-reserve=%" PRIu64, G.spawn_reserve);
            args[n++] = a_res;
        }
    }
    if (o->network_host)
        args[n++] = a_nethost;
    snprintf(a_tmp, sizeof a_tmp, "--tmp=%" PRIu64, o->limits.tmp_bytes);
    args[n++] = a_tmp;
    if (!G.feat.root && o->limits.disk_bytes) {
        /* No root: the init mounts the workspace tmpfs in its own user namespace (a bind
         * of our host dir would show its path in mountinfo) and sends us its fd. */
        snprintf(a_ws, sizeof a_ws, "--ws-bytes=%" PRIu64, o->limits.disk_bytes);
        args[n++] = a_ws;
    }
    if (G.runtimes_mnt >= 0) {
        snprintf(a_rt, sizeof a_rt, "--runtimes-fd=%d", JAIL_RUNTIMES_FD);
        args[n++] = a_rt;
    } else if (G.runtimes_dir[0]) {
        snprintf(a_rt, sizeof a_rt, "--runtimes=%s", G.runtimes_dir);
        args[n++] = a_rt;
    }
    args[n] = NULL;
    /* Arguments travel in the environment, not argv: /proc/1/cmdline is readable inside
     * the sandbox, /proc/1/environ is not (init is non-dumpable). */
    char envbuf[16][4 * CG_PATH_MAX + 32];
    char *envp[17];
    int ne = 0;
    for (int i = 1; i < n && ne < 16; i++, ne++) {
        snprintf(envbuf[ne], sizeof envbuf[ne], "SANDBOXD_INIT_ARG=%s", args[i]);
        envp[ne] = envbuf[ne];
    }
    envp[ne] = NULL;
    args[1] = NULL;
    uv_stdio_container_t stdio[JAIL_RUNTIMES_FD + 1] = {
        { .flags = UV_IGNORE },
        { .flags = UV_IGNORE },
        { .flags = UV_INHERIT_FD, .data.fd = 2 },
        { .flags = UV_INHERIT_FD, .data.fd = sv[1] },
        { .flags = UV_INHERIT_FD, .data.fd = G.runtimes_mnt },
    };
    uv_process_options_t po = {
        .exit_cb = on_outer_exit, .file = G.init_path, .args = args, .env = envp,
        .cwd = j->ws, .stdio_count = G.runtimes_mnt >= 0 ? JAIL_RUNTIMES_FD + 1 : 4,
        .stdio = stdio,
    };
    j->outer.data = j;
    int rc = uv_spawn(j->loop, &j->outer, &po);
    close(sv[1]);
    if (rc) {
        jail__set_err(err, errlen, "could not start %s: %s", G.init_path, uv_strerror(rc));
        return rc;
    }
    j->outer_spawned = j->outer_running = true;
    j->handles++;
    return 0;
}

int jail_create(uv_loop_t *loop, const struct jail_opts *o, jail_ready_cb on_ready, void *arg,
                char *err, size_t errlen)
{
    jail *j = NULL;
    if (!G.inited) {
        jail__set_err(err, errlen, "jail_global_init() was not called");
        return -EINVAL;
    }
    int rc = create_alloc(loop, o, &j, err, errlen);
    if (rc)
        return rc;
    uid_t ruid = G.uid_base + 2 * (uid_t)j->slot, uuid = ruid + 1;
    if ((rc = create_dirs(j, o, uuid, err, errlen)) || (rc = create_cgroup(j, o, err, errlen)) ||
        (rc = create_start_init(j, o, ruid, uuid, err, errlen))) {
        /* Nothing of the sandbox runs yet: teardown is immediate and synchronous, so the
         * id is free again when we return. */
        j->done = NULL;
        jail_teardown_start(j);
        return rc;
    }
    /* From here on, everything waits on the loop: init builds the sandbox under its own
     * limits and says HELLO (its inner pid), then READY or FAIL (create_ready/failed). */
    uv_poll_init(loop, &j->poll, j->ctl);
    j->poll.data = j;
    j->poll_init = true;
    j->handles++;
    uv_timer_init(loop, &j->timer);
    j->timer.data = j;
    j->timer_init = true;
    j->handles++;
    j->creating = true;
    j->on_ready = on_ready;
    j->ready_arg = arg;
    jail__poll_update(j);
    uv_timer_start(&j->timer, jail__on_timer, G.start_timeout_ms, 0);
    return 0;
}

/* READY: the sandbox is built and init serves requests. */
static void create_ready(jail *j)
{
    if (j->inner <= 0) {
        create_failed(j, -EPROTO, "sandbox init did not report its pid");
        return;
    }
    if (j->want_ws_fd && j->ws_fd < 0) {
        create_failed(j, -EPROTO, "sandbox init did not send its workspace");
        return;
    }
    j->inner_pidfd = (int)syscall(SYS_pidfd_open, j->inner, 0);
    char nsp[64];
    struct stat st;
    /* Not root: the inner is non-dumpable and out of our reach; the outer keeps the same
     * namespace open for us (see jail_enter.h). */
    if (G.feat.root)
        snprintf(nsp, sizeof nsp, "/proc/%d/ns/user", (int)j->inner);
    else
        snprintf(nsp, sizeof nsp, "/proc/%d/fd/%d", (int)j->outer.pid,
                 JAIL_ANCHOR_FD + JAIL_NS_USER);
    if (stat(nsp, &st) == 0)
        j->userns_ino = (unsigned long long)st.st_ino;
    j->creating = false;
    uv_timer_stop(&j->timer);
    jail_ready_cb cb = j->on_ready;
    j->on_ready = NULL;
    if (cb)
        cb(j, 0, NULL, j->ready_arg);
}

/* Creation failed after init started: tear down; on_ready hears of it once all is gone
 * (jail_free_if_closed), so that the caller may reuse the id at once. */
static void create_failed(jail *j, int rc, const char *msg)
{
    if (!j->create_rc) {
        j->create_rc = rc;
        snprintf(j->create_msg, sizeof j->create_msg, "%s", msg);
    }
    j->creating = false;
    if (j->destroying)
        return;
    j->done = NULL;
    jail_teardown_start(j);
}

/* ---- destruction --------------------------------------------------------------------- */

static void jail_free_if_closed(jail *j)
{
    if (j->handles > 0)
        return;
    if (j->prev)
        j->prev->next = j->next;
    else if (G.jails == j)
        G.jails = j->next;
    if (j->next)
        j->next->prev = j->prev;
    void (*done)(void *) = j->done;
    void *arg = j->done_arg;
    jail_ready_cb ready = j->on_ready;   /* creation that never got ready */
    void *ready_arg = j->ready_arg;
    int rc = j->create_rc ? j->create_rc : -ECANCELED;
    char msg[sizeof j->create_msg];
    snprintf(msg, sizeof msg, "%s", j->create_msg[0] ? j->create_msg
                                                     : "the sandbox was destroyed before it was ready");
    free(j->pending);
    free(j);
    if (ready)
        ready(NULL, rc, msg, ready_arg);
    if (done)
        done(arg);
}

static void on_jail_handle_closed(uv_handle_t *h)
{
    jail *j = h->data;
    j->handles--;
    jail_free_if_closed(j);
}

static bool fd_readable(int fd)
{
    struct pollfd p = { fd, POLLIN, 0 };
    return fd < 0 || (poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP)));
}

static void kill_everything(jail *j)
{
    if (j->inner_pidfd >= 0)
        (void)syscall(SYS_pidfd_send_signal, j->inner_pidfd, SIGKILL, NULL, 0);
    if (j->outer_running)
        (void)uv_process_kill(&j->outer, SIGKILL);
    for (jail_proc *p = j->procs; p; p = p->next)
        if (p->adopted && p->pidfd >= 0)
            (void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
}

/* Everything is dead (or we gave up waiting): report, remove, close. */
static void jail_finish(jail *j)
{
    int st;
    if (j->inner_pidfd >= 0) {
        (void)reap_pidfd(j->inner_pidfd, &st);   /* ours only if the outer died first */
        close(j->inner_pidfd);
        j->inner_pidfd = -1;
    }
    jail__reqs_fail_all(j, -ECANCELED, "the sandbox was deleted before it answered");
    flush_pending(j);
    while (j->procs) {
        jail_proc *p = j->procs;
        st = SIGKILL;
        if (p->adopted) {
            uv_poll_stop(&p->poll);
            uv_timer_stop(&p->retry);
            (void)reap_pidfd(p->pidfd, &st);
        }
        proc_finish(p, st);
    }
    if (j->has_cg)
        (void)cg_remove(&j->cg);
    if (j->ws_tmpfs)
        (void)umount2(j->ws, MNT_DETACH);
    if (j->ws_fd >= 0)
        close(j->ws_fd);   /* the last reference once the sandbox's mounts are gone */
    j->ws_fd = -1;
    if (j->dir[0])
        (void)rm_tree(j->dir);
    G.slots[j->slot] = 0;
    if (j->poll_init)
        uv_close((uv_handle_t *)&j->poll, on_jail_handle_closed);
    if (j->ctl >= 0) {
        close(j->ctl);   /* after uv_close: libuv stopped watching it */
        j->ctl = -1;
    }
    if (j->timer_init)
        uv_close((uv_handle_t *)&j->timer, on_jail_handle_closed);
    if (j->outer_spawned)
        uv_close((uv_handle_t *)&j->outer, on_jail_handle_closed);
    jail_free_if_closed(j);
}

static bool all_gone(jail *j)
{
    if (j->outer_running)
        return false;
    if (!fd_readable(j->inner_pidfd))
        return false;
    if (j->has_cg && cg_kill_all(&j->cg) == 0)
        return false;
    for (jail_proc *p = j->procs; p; p = p->next)
        if (p->adopted && !fd_readable(p->pidfd))
            return false;
    return true;
}

void jail__on_timer(uv_timer_t *t)
{
    jail *j = t->data;
    if (j->destroying) {
        if (all_gone(j) || ++j->ticks > DESTROY_MAX_TICKS) {
            uv_timer_stop(&j->timer);
            jail_finish(j);
            return;
        }
        if (j->ticks % 50 == 0)
            kill_everything(j);
        return;
    }
    if (j->creating) {
        char msg[96];
        snprintf(msg, sizeof msg, "sandbox init did not get ready within %u ms "
                 "(--sandbox-start-timeout-ms)", G.start_timeout_ms);
        create_failed(j, -ETIMEDOUT, msg);
        return;
    }
    if (j->send_err) {
        ctl_dead(j);
        return;
    }
    jail__reqs_expire(j);
}

/* Start tearing down: also used by a failed jail_create (no timer/poll yet, and then
 * nothing of the sandbox runs, so waiting here is bounded by our own work). */
static void jail_teardown_start(jail *j)
{
    j->destroying = true;
    if (j->ctl >= 0 && !j->dead) {
        /* Exits already reported are real statuses: deliver them first. */
        for (;;) {
            struct jp_hdr m;
            char buf[CTL_RECV_MAX];
            int fds[JP_MAX_FDS], nfds = 0;
            int rc = jp_recv(j->ctl, &m, buf, sizeof buf, fds, &nfds);
            if (rc == -EBADMSG)
                continue;
            if (rc != 1)
                break;
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
            if (m.type == JP_EXIT)
                pending_push(j, m.a, m.b);
        }
    }
    if (j->poll_init)
        uv_poll_stop(&j->poll);
    if (j->has_cg)
        (void)cg_kill_all(&j->cg);
    kill_everything(j);
    if (!j->timer_init) {
        for (int i = 0; i < DESTROY_MAX_TICKS && !all_gone(j); i++) {
            if (j->outer_running) {
                int st;
                if (waitpid(j->outer.pid, &st, WNOHANG) == j->outer.pid)
                    j->outer_running = false;   /* reaped here; libuv will not see it */
            }
            usleep(1000);
        }
        j->outer_running = false;
        jail_finish(j);
        return;
    }
    uv_timer_start(&j->timer, jail__on_timer, 0, DESTROY_TICK_MS);
}

void jail_destroy(jail *j, void (*done)(void *arg), void *arg)
{
    if (!j)
        return;
    if (j->destroying)
        return;
    j->done = done;
    j->done_arg = arg;
    if (j->creating) {
        j->creating = false;
        j->create_rc = -ECANCELED;
        snprintf(j->create_msg, sizeof j->create_msg, "the daemon is shutting down");
    }
    jail_teardown_start(j);
}

/* ---- queries ------------------------------------------------------------------------- */

const char *jail_workspace(const jail *j)
{
    return j->ws_fd >= 0 ? j->ws_fdpath : j->ws;
}

uid_t jail_host_uid(const jail *j)
{
    /* same formula as jail_create: slot n → base+2n (its root), base+2n+1 (its user) */
    return G.feat.root ? G.uid_base + 2 * (uid_t)j->slot + 1 : geteuid();
}

gid_t jail_host_gid(const jail *j)
{
    return G.feat.root ? (gid_t)(G.uid_base + 2 * (uid_t)j->slot + 1) : getegid();
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
    u->processes = n > 2 ? n - 2 : 0;   /* minus the init's two processes */
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
    if (!G.feat.root) {
        if (!j->outer_running || !j->userns_ino)
            return -ESRCH;   /* no way in without the outer's descriptors (and a check) */
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

/* The host pid a pidfd refers to ("Pid:" in its fdinfo), or -errno. */
static pid_t pidfd_host_pid(int pidfd)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return -EIO;
    text[n] = '\0';
    const char *at = strstr(text, "\nPid:");
    long v = at ? strtol(at + 5, NULL, 10) : 0;
    return v > 0 ? (pid_t)v : -ESRCH;   /* -1: the process is gone (reaped) */
}

int jail_for_each_owned(void (*fn)(pid_t host_pid, void *arg), void *arg)
{
    int rc = 0;
    for (jail *j = G.jails; j; j = j->next) {
        /* the inner init: our child if its outer half died first (jail_finish reaps it) */
        if (j->inner_pidfd >= 0 && j->inner > 0)
            fn(j->inner, arg);
        for (jail_proc *p = j->procs; p; p = p->next) {
            if (!p->adopted)
                continue;
            if (p->host_pid <= 0) {
                pid_t hp = pidfd_host_pid(p->pidfd);
                if (hp > 0)
                    p->host_pid = hp;
                else if (hp != -ESRCH)
                    rc = hp;   /* cannot tell: the caller must not treat it as a stranger */
            }
            if (p->host_pid > 0)
                fn(p->host_pid, arg);
        }
    }
    return rc;
}

/* ---- global ------------------------------------------------------------------------- */

static void cleanup_stale_dirs(void)
{
    DIR *d = opendir(G.sbx_dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[JAIL_PATH_MAX], ws[JAIL_PATH_MAX];
        if (path_join(p, sizeof p, G.sbx_dir, de->d_name) || path_join(ws, sizeof ws, p, "workspace"))
            continue;
        while (umount2(ws, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
            ;
        (void)rm_tree(p);
    }
    closedir(d);
}

int jail_global_init(uv_loop_t *loop, const struct jail_global *g, char *err, size_t errlen)
{
    memset(&G, 0, sizeof G);
    G.loop = loop;
    G.runtimes_mnt = -1;
    if (!g->state_dir || !g->init_path || snprintf(G.init_path, sizeof G.init_path, "%s", g->init_path) >= (int)sizeof G.init_path ||
        path_join(G.sbx_dir, sizeof G.sbx_dir, g->state_dir, "sandboxes")) {
        jail__set_err(err, errlen, "state_dir or init_path missing or too long");
        return -EINVAL;
    }
    if (g->runtimes_dir)
        snprintf(G.runtimes_dir, sizeof G.runtimes_dir, "%s", g->runtimes_dir);
    /* uv_spawn runs it from the workspace: make the path absolute. */
    char abs[PATH_MAX];
    if (!realpath(g->init_path, abs) || strlen(abs) >= sizeof G.init_path) {
        jail__set_err(err, errlen, "sandbox init %s: %s", g->init_path, strerror(errno ? errno : ENAMETOOLONG));
        return -ENOENT;
    }
    memcpy(G.init_path, abs, strlen(abs) + 1);
    if (access(G.init_path, X_OK) < 0) {
        jail__set_err(err, errlen, "sandbox init %s is not executable: %s", G.init_path, strerror(errno));
        return -errno;
    }
    G.uid_base = g->host_uid_base ? g->host_uid_base : DEFAULT_UID_BASE;
    G.start_timeout_ms = g->start_timeout_ms ? g->start_timeout_ms : DEFAULT_START_TIMEOUT_MS;
    G.reply_timeout_ms = g->reply_timeout_ms ? g->reply_timeout_ms : DEFAULT_REPLY_TIMEOUT_MS;
    G.max_pending = g->max_pending ? g->max_pending : DEFAULT_MAX_PENDING;
    G.spawn_reserve = g->spawn_reserve;
    G.max = g->max_sandboxes ? g->max_sandboxes : 64;
    G.slots = calloc(G.max, 1);
    if (!G.slots)
        return -ENOMEM;
    G.feat.root = geteuid() == 0;
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
    G.feat.userns = strtoul(buf, NULL, 10) > 0;
    static struct jail_sc_prog prog;
    G.feat.seccomp = jail_seccomp_compile(&prog) == 0;
    /* Our cgroups live below our own, in a group named after the state dir: a daemon
     * cleans up after its own crashed predecessor (same state dir), never after another
     * daemon running beside it with a different state dir (tests start several). */
    char cgsub[32];
    uint32_t h = 2166136261u;
    for (const char *c = g->state_dir; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    snprintf(cgsub, sizeof cgsub, "sandboxd-%08x", h);
    if (cg_sys_probe(&G.cg, "/sys/fs/cgroup", cgsub) == 0 && G.cg.version) {
        G.feat.cgroup_version = G.cg.version;
        G.feat.memory_limit = G.cg.have[CG_MEMORY];
        G.feat.pids_limit = G.cg.have[CG_PIDS];
        G.feat.cpu_limit = G.cg.have[CG_CPU];
    }
    /* root: a tmpfs we mount; otherwise one the init mounts in its user namespace */
    G.feat.disk_limit = G.feat.root || G.feat.userns;
    if ((mkdir(g->state_dir, 0711) < 0 && errno != EEXIST) ||
        (mkdir(G.sbx_dir, 0711) < 0 && errno != EEXIST)) {
        jail__set_err(err, errlen, "could not create %s: %s", G.sbx_dir, strerror(errno));
        return -errno;
    }
    /* What a crashed daemon left: its inits died with it (PDEATHSIG), which ended their
     * pid namespaces; kill whatever still sits in our cgroups, then remove it all. */
    if (G.cg.version)
        (void)cg_cleanup_stale(&G.cg);
    cleanup_stale_dirs();
    if (G.runtimes_dir[0]) {
        /* A bind of the runtimes dir would show its host path in every sandbox's
         * mountinfo; a private copy shows none. Without one, the bind still works. */
        char why[512];
        int mfd = jail_runtimes_make(loop, G.init_path, G.runtimes_dir, g->mpl_cache_dir,
                                     g->runtimes_bytes ? g->runtimes_bytes : 256ULL << 20,
                                     why, sizeof why);
        if (mfd >= 0)
            G.runtimes_mnt = mfd;
        else
            fprintf(stderr, "sandboxd: warning: /opt/sandboxd is a bind of %s (its path shows "
                    "in sandboxes' mountinfo): %s\n", G.runtimes_dir, why);
    }
    G.inited = true;
    return 0;
}

const struct jail_features *jail_features(void)
{
    return &G.feat;
}

void jail_global_shutdown(void)
{
    if (!G.inited)
        return;
    for (jail *j = G.jails; j; j = j->next)
        jail_destroy(j, NULL, NULL);
    int64_t deadline = jail__now_ms() + 5000;
    while (G.jails && jail__now_ms() < deadline)
        uv_run(G.loop, UV_RUN_ONCE);
    free(G.slots);
    G.slots = NULL;
    if (G.runtimes_mnt >= 0)
        close(G.runtimes_mnt);
    G.runtimes_mnt = -1;
    G.inited = false;
}
