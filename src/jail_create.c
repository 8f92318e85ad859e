/*
 * jail_create.c — creating a sandbox (jail_create), in steps: the jail object and its
 * slot, the directory and workspace, the cgroup with the limits, then sandboxd-init
 * started with uv_spawn on a control socketpair. The steps after the first undo nothing
 * themselves: what a failing step made is recorded in the jail, and the one teardown path
 * (jail_teardown.c) removes it, synchronously since nothing of the sandbox runs yet, so
 * the id is free again when jail_create returns its error.
 *
 * From the init's start on, creation waits on the loop: the init joins the cgroup and
 * builds the sandbox under the sandbox's own limits, says HELLO (its inner pid) and then
 * READY or FAIL on the control socket (jail.c), bounded by start_timeout_ms (the jail's
 * timer); jail__create_ready or jail__create_failed ends that wait. The
 * init's arguments travel in its environment, never argv: /proc/1/cmdline is readable
 * inside the sandbox, /proc/1/environ is not (the init is non-dumpable).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_int.h"
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JAIL_RUNTIMES_FD 4 /* the init's fd for the private runtimes mount */

/* A free slot, or with want >= 0 that one (a restored sandbox keeps its host uids). */
static int slot_alloc(int want)
{
    if (want >= 0) {
        if ((unsigned)want >= jail__g.max || jail__g.slots[want])
            return -EADDRINUSE;
        jail__g.slots[want] = 1;
        return want;
    }
    for (unsigned i = 0; i < jail__g.max; i++) {
        if (!jail__g.slots[i]) {
            jail__g.slots[i] = 1;
            return (int)i;
        }
    }
    return -EAGAIN;
}

/* Step 1: the jail object, its slot and its place in jail__g.jails. */
static int create_alloc(uv_loop_t *loop, const struct jail_opts *o, jail **out, char *err,
                        size_t errlen)
{
    size_t idlen = strlen(o->id);
    if (idlen == 0 || idlen >= sizeof((jail *)0)->id || strchr(o->id, '/') || o->id[0] == '.') {
        jail__set_err(err, errlen, "invalid sandbox id");
        return -EINVAL;
    }
    int slot = slot_alloc(o->restore ? o->slot : -1);
    if (slot == -EADDRINUSE) {
        jail__set_err(err, errlen, "slot %d (its host uids) is taken or past --max-sandboxes %u",
                      o->slot, jail__g.max);
        return slot;
    }
    if (slot < 0) {
        jail__set_err(err, errlen, "all %u sandbox slots are in use", jail__g.max);
        return slot;
    }
    jail *j = calloc(1, sizeof *j);
    if (!j) {
        jail__g.slots[slot] = 0;
        jail__set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    j->loop = loop;
    j->slot = (unsigned)slot;
    j->ctl = -1;
    j->ws_fd = -1;
    j->want_ws_fd = !jail__g.feat.root && o->limits.disk_bytes;
    j->inner_pidfd = -1;
    j->network_host = o->network_host;
    j->restore = j->keep = o->restore; /* a failed restore removes nothing */
    j->reply_timeout_ms = jail__g.reply_timeout_ms;
    j->max_pending = jail__g.max_pending;
    memcpy(j->id, o->id, idlen + 1);
    j->next = jail__g.jails;
    if (jail__g.jails)
        jail__g.jails->prev = j;
    jail__g.jails = j;
    *out = j;
    return 0;
}

/* Step 2: the sandbox's directory and its workspace dir, owned by the sandbox's user.
 * When root with a disk limit, the workspace is an ext4 file system in
 * dir/workspace.img that the sandbox's init makes (a new sandbox) and mounts on the
 * workspace dir under the sandbox's own limits (init_workspace.c); the daemon only
 * unmounts it. A restored sandbox finds both as they were. */
static int create_dirs(jail *j, const struct jail_opts *o, uid_t uuid, char *err, size_t errlen)
{
    char dir[JAIL_PATH_MAX];
    if (jail__path_join(dir, sizeof dir, jail__g.sbx_dir, o->id) ||
        jail__path_join(j->ws, sizeof j->ws, dir, "workspace")) {
        jail__set_err(err, errlen, "sandbox path too long");
        return -ENAMETOOLONG;
    }
    /* An existing dir means a live sandbox with this id: fail without touching it. */
    if (mkdir(dir, 0711) < 0 && !(o->restore && errno == EEXIST)) {
        jail__set_err(err, errlen, "could not create %s: %s", dir, strerror(errno));
        return -errno;
    }
    memcpy(j->dir, dir, sizeof dir); /* from here on, teardown removes it */
    if (mkdir(j->ws, 0700) < 0 && !(o->restore && errno == EEXIST)) {
        jail__set_err(err, errlen, "could not create %s: %s", j->ws, strerror(errno));
        return -errno;
    }
    if (jail__g.feat.root && o->limits.disk_bytes) {
        char img[JAIL_PATH_MAX];
        struct stat st;
        if (o->restore &&
            (jail__path_join(img, sizeof img, dir, "workspace.img") || stat(img, &st) < 0)) {
            jail__set_err(err, errlen, "the workspace image of sandbox %s is missing", o->id);
            return -ENOENT;
        }
        j->ws_image = true;
        j->ws_tmpfs = true; /* mounted on j->ws by the init: teardown unmounts it */
    }
    if (jail__g.feat.root && chown(j->ws, uuid, uuid) < 0) {
        jail__set_err(err, errlen, "could not chown the workspace: %s", strerror(errno));
        return -errno;
    }
    return 0;
}

/* Step 3: the cgroup with the sandbox's limits, before any of its processes exists. */
static int create_cgroup(jail *j, const struct jail_opts *o, char *err, size_t errlen)
{
    if (!jail__g.cg.version)
        return 0;
    int rc = cg_create(&jail__g.cg, o->id, &j->cg);
    if (rc == -EEXIST) { /* left over: empty it and try again */
        struct cg old;
        if (cg_lookup(&jail__g.cg, o->id, &old) == 0) {
            for (int i = 0; i < 100 && cg_kill_all(&old) == 0; i++)
                usleep(1000);
            (void)cg_remove(&old);
        }
        rc = cg_create(&jail__g.cg, o->id, &j->cg);
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

/* The init's command line and environment, with the buffers they point into (on the
 * creating caller's stack: about 40 KiB, used once). */
struct init_args {
    char *argv[18];
    int n;
    char *envp[19];
    char a_uid[64], a_gid[64], a_tmp[48], a_ws[48], a_rt[JAIL_PATH_MAX + 16], a_res[48];
    char a_img[48], a_site[1040];
    char a_cg[4][4 * CG_PATH_MAX + 8], procs[4][CG_PATH_MAX];
    char envbuf[18][4 * CG_PATH_MAX + 32];
};

/* Step 4a: the control socket. Ours is non-blocking (watched with uv_poll, never waited
 * on); the init's end must be blocking: it uses poll() and blocking sends. */
static int create_ctl_socket(jail *j, int *init_end, char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) {
        jail__set_err(err, errlen, "socketpair: %s", strerror(errno));
        return -errno;
    }
    j->ctl = sv[0];
    int fl = fcntl(sv[1], F_GETFL);
    (void)fcntl(sv[1], F_SETFL, fl & ~O_NONBLOCK);
    *init_end = sv[1];
    return 0;
}

/* Step 4b: the init's options: identity (uids, or rootless), the cgroups it joins first
 * thing, network, /tmp and workspace sizes, where the runtimes come from. */
static void init_args_build(const jail *j, const struct jail_opts *o, uid_t ruid, uid_t uuid,
                            struct init_args *a)
{
    static char a_rootless[] = "--rootless", a_nethost[] = "--net=host";
    static char a_format[] = "--ws-format";
    int n = 0;
    a->argv[n++] = jail__g.init_path;
    if (jail__g.feat.root) {
        snprintf(a->a_uid, sizeof a->a_uid, "--uid=%u:%u", (unsigned)ruid, (unsigned)uuid);
        snprintf(a->a_gid, sizeof a->a_gid, "--gid=%u:%u", (unsigned)ruid, (unsigned)uuid);
        a->argv[n++] = a->a_uid;
        a->argv[n++] = a->a_gid;
    } else {
        a->argv[n++] = a_rootless;
    }
    if (j->has_cg) {
        cg_procs_paths(&j->cg, a->procs, 4);
        for (int i = 0; i < 4 && a->procs[i][0]; i++) {
            snprintf(a->a_cg[i], sizeof a->a_cg[i], "--cg=%s", a->procs[i]);
            a->argv[n++] = a->a_cg[i];
        }
        if (jail__g.spawn_reserve) { /* checked against the memory cgroup among those */
            snprintf(a->a_res, sizeof a->a_res, "--spawn-reserve=%" PRIu64, jail__g.spawn_reserve);
            a->argv[n++] = a->a_res;
        }
    }
    if (o->network_host)
        a->argv[n++] = a_nethost;
    snprintf(a->a_tmp, sizeof a->a_tmp, "--tmp=%" PRIu64, o->limits.tmp_bytes);
    a->argv[n++] = a->a_tmp;
    if (j->ws_image) {
        /* Root: the init makes (--ws-format) and mounts the workspace image. */
        snprintf(a->a_img, sizeof a->a_img, "--ws-image=%" PRIu64, o->limits.disk_bytes);
        a->argv[n++] = a->a_img;
        if (!o->restore)
            a->argv[n++] = a_format;
    }
    if (!jail__g.feat.root && o->limits.disk_bytes) {
        /* No root: the init mounts the workspace tmpfs in its own user namespace (a bind
         * of our host dir would show its path in mountinfo) and sends us its fd. */
        snprintf(a->a_ws, sizeof a->a_ws, "--ws-bytes=%" PRIu64, o->limits.disk_bytes);
        a->argv[n++] = a->a_ws;
    }
    if (jail__g.runtimes_mnt >= 0) {
        snprintf(a->a_rt, sizeof a->a_rt, "--runtimes-fd=%d", JAIL_RUNTIMES_FD);
        a->argv[n++] = a->a_rt;
    } else if (jail__g.runtimes_dir[0]) {
        snprintf(a->a_rt, sizeof a->a_rt, "--runtimes=%s", jail__g.runtimes_dir);
        a->argv[n++] = a->a_rt;
    }
    if (jail__g.site_dirs[0]) { /* bound read-only at /opt/python-site/N (init_root.c) */
        snprintf(a->a_site, sizeof a->a_site, "--site-dirs=%s", jail__g.site_dirs);
        a->argv[n++] = a->a_site;
    }
    a->argv[n] = NULL;
    a->n = n;
}

/* Step 4c: move the options into the environment, leaving argv the program alone.
 * Arguments travel in the environment, not argv: /proc/1/cmdline is readable inside the
 * sandbox, /proc/1/environ is not (init is non-dumpable). */
static void init_args_to_env(struct init_args *a)
{
    int ne = 0;
    for (int i = 1; i < a->n && ne < 18; i++, ne++) {
        snprintf(a->envbuf[ne], sizeof a->envbuf[ne], "SANDBOXD_INIT_ARG=%s", a->argv[i]);
        a->envp[ne] = a->envbuf[ne];
    }
    a->envp[ne] = NULL;
    a->argv[1] = NULL;
}

/* Step 4: start sandboxd-init with the control socket as fd 3. It joins the cgroup and
 * builds the sandbox by itself, under the sandbox's limits; we only listen. */
static int create_start_init(jail *j, const struct jail_opts *o, uid_t ruid, uid_t uuid, char *err,
                             size_t errlen)
{
    int init_end = -1;
    int rc = create_ctl_socket(j, &init_end, err, errlen);
    if (rc)
        return rc;
    struct init_args a;
    init_args_build(j, o, ruid, uuid, &a);
    init_args_to_env(&a);
    uv_stdio_container_t stdio[JAIL_RUNTIMES_FD + 1] = {
        { .flags = UV_IGNORE },
        { .flags = UV_IGNORE },
        { .flags = UV_INHERIT_FD, .data.fd = 2 },
        { .flags = UV_INHERIT_FD, .data.fd = init_end },
        { .flags = UV_INHERIT_FD, .data.fd = jail__g.runtimes_mnt },
    };
    uv_process_options_t po = {
        .exit_cb = jail__on_outer_exit,
        .file = jail__g.init_path,
        .args = a.argv,
        .env = a.envp,
        .cwd = j->ws_image ? j->dir : j->ws, /* image: the init mounts it, then enters it */
        .stdio_count = jail__g.runtimes_mnt >= 0 ? JAIL_RUNTIMES_FD + 1 : 4,
        .stdio = stdio,
    };
    j->outer.data = j;
    rc = uv_spawn(j->loop, &j->outer, &po);
    close(init_end);
    if (rc) {
        jail__set_err(err, errlen, "could not start %s: %s", jail__g.init_path, uv_strerror(rc));
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
    if (!jail__g.inited) {
        jail__set_err(err, errlen, "jail_global_init() was not called");
        return -EINVAL;
    }
    int rc = create_alloc(loop, o, &j, err, errlen);
    if (rc)
        return rc;
    uid_t ruid = jail__g.uid_base + 2 * (uid_t)j->slot, uuid = ruid + 1;
    if ((rc = create_dirs(j, o, uuid, err, errlen)) || (rc = create_cgroup(j, o, err, errlen)) ||
        (rc = create_start_init(j, o, ruid, uuid, err, errlen))) {
        /* Nothing of the sandbox runs yet: teardown is immediate and synchronous, so the
         * id is free again when we return. */
        j->done = NULL;
        jail__teardown_start(j);
        return rc;
    }
    /* From here on, everything waits on the loop: init builds the sandbox under its own
     * limits and says HELLO (its inner pid), then READY or FAIL (jail__create_ready/failed). */
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
    uv_timer_start(&j->timer, jail__on_timer, jail__g.start_timeout_ms, 0);
    return 0;
}

/* READY: the sandbox is built and init serves requests. */
void jail__create_ready(jail *j)
{
    if (j->inner <= 0) {
        jail__create_failed(j, -EPROTO, "sandbox init did not report its pid");
        return;
    }
    if (j->want_ws_fd && j->ws_fd < 0) {
        jail__create_failed(j, -EPROTO, "sandbox init did not send its workspace");
        return;
    }
    j->inner_pidfd = (int)syscall(SYS_pidfd_open, j->inner, 0);
    char nsp[64];
    struct stat st;
    /* Not root: the inner is non-dumpable and out of our reach; the outer keeps the same
     * namespace open for us (see jail_enter.h). */
    if (jail__g.feat.root)
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
 * (jail__free_if_closed), so that the caller may reuse the id at once. */
void jail__create_failed(jail *j, int rc, const char *msg)
{
    if (!j->create_rc) {
        j->create_rc = rc;
        snprintf(j->create_msg, sizeof j->create_msg, "%s", msg);
    }
    j->creating = false;
    if (j->destroying)
        return;
    j->done = NULL;
    jail__teardown_start(j);
}
