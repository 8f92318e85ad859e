/*
 * jail_teardown.c — destroying a sandbox (jail_destroy, and a creation that failed): kill
 * everything in it (the init's processes, adopted processes, the cgroup), wait on the
 * jail's timer until all is gone (or DESTROY_MAX_TICKS ticks have passed), then answer
 * the requests still waiting (-ECANCELED), report every exit (those read while tearing
 * down first: they are real statuses), remove the cgroup, the workspace mount and the
 * sandbox's directory, close the handles and free the jail from their close callbacks.
 *
 * Guarantees: done (or the creation's on_ready, with its error) is called exactly once,
 * after everything the sandbox made is gone, so the caller may reuse the id at once; the
 * directory tree is removed with openat/unlinkat and never follows a link the sandbox
 * planted, with bounded depth and fd use. A teardown started before the jail has a timer
 * (a failed jail_create) waits synchronously, bounded by our own work: nothing of the
 * sandbox runs yet. The jail's timer callback (jail__on_timer) lives here too: its ticks
 * drive destruction; it also ends a creation that timed out and expires requests.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_int.h"
#include "cgroup.h"
#include "jail_proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define DESTROY_TICK_MS 1
#define DESTROY_MAX_TICKS 3000
#define RM_MAX_DEPTH 64

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

int jail__rm_tree(const char *path)
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

void jail__pending_push(jail *j, pid_t pid, int status)
{
    if (j->npending == j->cap_pending) {
        size_t n = j->cap_pending ? j->cap_pending * 2 : 16;
        struct exit_rec *p = realloc(j->pending, n * sizeof *p);
        if (!p)
            return; /* out of memory: the exit is lost; destroy still reports it */
        j->pending = p;
        j->cap_pending = n;
    }
    j->pending[j->npending++] = (struct exit_rec){ pid, status };
}

/* ---- destruction --------------------------------------------------------------------- */

void jail__free_if_closed(jail *j)
{
    if (j->handles > 0)
        return;
    if (j->prev)
        j->prev->next = j->next;
    else if (jail__g.jails == j)
        jail__g.jails = j->next;
    if (j->next)
        j->next->prev = j->prev;
    void (*done)(void *) = j->done;
    void *arg = j->done_arg;
    jail_ready_cb ready = j->on_ready; /* creation that never got ready */
    void *ready_arg = j->ready_arg;
    int rc = j->create_rc ? j->create_rc : -ECANCELED;
    char msg[sizeof j->create_msg];
    snprintf(msg, sizeof msg, "%s",
             j->create_msg[0] ? j->create_msg : "the sandbox was destroyed before it was ready");
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
    jail__free_if_closed(j);
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
void jail__finish(jail *j)
{
    int st;
    if (j->inner_pidfd >= 0) {
        (void)jail__reap_pidfd(j->inner_pidfd, &st); /* ours only if the outer died first */
        close(j->inner_pidfd);
        j->inner_pidfd = -1;
    }
    jail__reqs_fail_all(j, -ECANCELED, "the sandbox was deleted before it answered");
    jail__flush_pending(j);
    while (j->procs) {
        jail_proc *p = j->procs;
        st = SIGKILL;
        if (p->adopted) {
            uv_poll_stop(&p->poll);
            uv_timer_stop(&p->retry);
            (void)jail__reap_pidfd(p->pidfd, &st);
        }
        jail__proc_finish(p, st);
    }
    if (j->has_cg)
        (void)cg_remove(&j->cg);
    if (j->ws_tmpfs && (!j->keep || umount2(j->ws, UMOUNT_NOFOLLOW) < 0))
        (void)umount2(j->ws, MNT_DETACH); /* kept: a plain unmount first, so it is done */
    if (j->ws_fd >= 0)
        close(j->ws_fd); /* the last reference once the sandbox's mounts are gone */
    j->ws_fd = -1;
    if (j->dir[0] && !j->keep)
        (void)jail__rm_tree(j->dir);
    jail__g.slots[j->slot] = 0;
    if (j->poll_init)
        uv_close((uv_handle_t *)&j->poll, on_jail_handle_closed);
    if (j->ctl >= 0) {
        close(j->ctl); /* after uv_close: libuv stopped watching it */
        j->ctl = -1;
    }
    if (j->timer_init)
        uv_close((uv_handle_t *)&j->timer, on_jail_handle_closed);
    if (j->outer_spawned)
        uv_close((uv_handle_t *)&j->outer, on_jail_handle_closed);
    jail__free_if_closed(j);
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
            jail__finish(j);
            return;
        }
        if (j->ticks % 50 == 0)
            kill_everything(j);
        return;
    }
    if (j->creating) {
        char msg[96];
        snprintf(msg, sizeof msg,
                 "sandbox init did not get ready within %u ms "
                 "(--sandbox-start-timeout-ms)",
                 jail__g.start_timeout_ms);
        jail__create_failed(j, -ETIMEDOUT, msg);
        return;
    }
    if (j->send_err) {
        jail__ctl_dead(j);
        return;
    }
    jail__reqs_expire(j);
}

/* Start tearing down: also used by a failed jail_create (no timer/poll yet, and then
 * nothing of the sandbox runs, so waiting here is bounded by our own work). */
void jail__teardown_start(jail *j)
{
    j->destroying = true;
    if (j->ctl >= 0 && !j->dead) {
        /* Exits already reported are real statuses: deliver them first. */
        for (;;) {
            struct jp_hdr m;
            char buf[JAIL_CTL_RECV_MAX];
            int fds[JP_MAX_FDS], nfds = 0;
            int rc = jp_recv(j->ctl, &m, buf, sizeof buf, fds, &nfds);
            if (rc == -EBADMSG)
                continue;
            if (rc != 1)
                break;
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
            if (m.type == JP_EXIT)
                jail__pending_push(j, m.a, m.b);
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
                    j->outer_running = false; /* reaped here; libuv will not see it */
            }
            usleep(1000);
        }
        j->outer_running = false;
        jail__finish(j);
        return;
    }
    uv_timer_start(&j->timer, jail__on_timer, 0, DESTROY_TICK_MS);
}

static void teardown(jail *j, bool keep, void (*done)(void *arg), void *arg)
{
    if (!j)
        return;
    if (j->destroying)
        return;
    j->keep = keep;
    j->done = done;
    j->done_arg = arg;
    if (j->creating) {
        j->creating = false;
        j->create_rc = -ECANCELED;
        snprintf(j->create_msg, sizeof j->create_msg, "the daemon is shutting down");
    }
    jail__teardown_start(j);
}

void jail_release(jail *j, void (*done)(void *arg), void *arg)
{
    /* a new sandbox whose creation is cut short leaves nothing worth keeping */
    teardown(j, j && (!j->creating || j->restore), done, arg);
}

void jail_destroy(jail *j, void (*done)(void *arg), void *arg)
{
    teardown(j, false, done, arg);
}
