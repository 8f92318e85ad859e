/*
 * init_runtimes.c — sandboxd-init's second mode (--make-runtimes=DIR): a private,
 * read-only tmpfs holding a copy of the runtimes dir, handed to the daemon as a detached
 * mount.
 *
 * Why: /opt/sandboxd used to be a bind of the host's runtimes dir, and a bind shows its
 * host path in the sandbox's /proc/self/mountinfo (the mount's "root" field, e.g.
 * /home/me/sandboxd/runtimes). A tmpfs made with fsopen/fsmount is never attached to any
 * path of the host: its root field is "/" and its source is "sandboxd". The daemon keeps
 * its descriptor and passes it to every sandbox's init (--runtimes-fd), which attaches a
 * clone of it (open_tree(OPEN_TREE_CLONE) + move_mount, init_root.c) in the sandbox's own
 * mount namespace. The kernel lets a process that owns its mount namespace attach a clone
 * of a detached mount made in another one.
 *
 * Runs once, at daemon start, with the control socket as fd 3. As root it makes the
 * tmpfs in the host's namespaces; without root it first enters a user and mount namespace
 * of its own (mapping only the daemon's uid), which is enough to own a tmpfs. The sources
 * are daemon-chosen (trusted) but copied defensively: no symlink is followed (symlinks are
 * copied as symlinks, node_modules/.bin has some), regular files by content, directories
 * to COPY_DEPTH_MAX levels, anything else skipped. The tmpfs has a size cap
 * (--runtimes-bytes); going past it fails the copy with ENOSPC. Reply: JP_READY with the
 * mount's descriptor, or JP_FAIL with a sentence (the daemon then falls back to a bind).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "init.h"
#include "../jail_proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/mount.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define COPY_DEPTH_MAX 32

/* Not root: a user namespace of our own, where we are root, and a mount namespace owned
 * by it (fsopen needs CAP_SYS_ADMIN over the mount namespace's owner). */
static int own_namespaces(void)
{
    char map[64];
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
        return -errno;
    int rc = init_write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
    if (!rc)
        rc = init_write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
    if (!rc)
        rc = init_write_file("/proc/self/gid_map", map);
    return rc;
}

static int copy_file(int sdir, const char *name, int ddir, mode_t mode)
{
    static char buf[1 << 16];
    int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out = -1, rc = 0;
    if (in < 0)
        return -errno;
    out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (out < 0) {
        rc = -errno;
        goto out;
    }
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : 0;
            break;
        }
        for (ssize_t off = 0; off < r;) {
            ssize_t w = write(out, buf + off, (size_t)(r - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rc = w < 0 ? -errno : -EIO; /* ENOSPC past --runtimes-bytes */
                goto out;
            }
            off += w;
        }
    }
out:
    close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* Copy what is inside sdir into ddir (both directory fds; neither is consumed). */
static int copy_tree(int sdir, int ddir, int depth, char *what, size_t whatlen)
{
    int dfd = openat(sdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -errno;
    }
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        const char *n = de->d_name;
        struct stat st;
        if (!strcmp(n, ".") || !strcmp(n, ".."))
            continue;
        snprintf(what, whatlen, "%s", n);
        if (fstatat(sdir, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = -errno;
        } else if (S_ISDIR(st.st_mode)) {
            if (depth >= COPY_DEPTH_MAX) {
                rc = -ELOOP;
                break;
            }
            if (mkdirat(ddir, n, 0755) < 0) {
                rc = -errno;
                break;
            }
            int s2 = openat(sdir, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int d2 = openat(ddir, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = s2 < 0 || d2 < 0 ? -errno : copy_tree(s2, d2, depth + 1, what, whatlen);
            if (s2 >= 0)
                close(s2);
            if (d2 >= 0)
                close(d2);
        } else if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlinkat(sdir, n, target, sizeof target - 1);
            if (len < 0) {
                rc = -errno;
                break;
            }
            target[len] = '\0';
            rc = symlinkat(target, ddir, n) < 0 ? -errno : 0;
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(sdir, n, ddir, (st.st_mode & 0111) ? 0755 : 0644);
        }
        /* sockets, FIFOs, devices: not runtimes; skipped */
    }
    closedir(d);
    return rc;
}

static void reply_fail(int rc, const char *step, const char *what)
{
    char msg[512];
    bool w = what && what[0];
    snprintf(msg, sizeof msg, "init: making the private runtimes tmpfs failed at %s%s%s%s: %s",
             step, w ? " (" : "", w ? what : "", w ? ")" : "", strerror(-rc));
    struct jp_hdr h = { .type = JP_FAIL, .a = rc, .len = (uint32_t)strlen(msg) + 1 };
    (void)jp_send(INIT_CTL_FD, &h, msg, NULL, 0);
}

/* Copy the dir at path into a new directory name of mnt ("" = mnt itself). */
static int copy_dir(int mnt, const char *path, const char *name, char *what, size_t whatlen)
{
    int src = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (src < 0)
        return -errno;
    int dst = -1, rc = 0;
    if (name[0] && mkdirat(mnt, name, 0755) < 0)
        rc = -errno;
    if (!rc && (dst = openat(mnt, name[0] ? name : ".",
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        rc = -errno;
    if (!rc)
        rc = copy_tree(src, dst, 0, what, whatlen);
    close(src);
    if (dst >= 0)
        close(dst);
    return rc;
}

int init_make_runtimes(const struct init_cfg *cfg)
{
    char what[NAME_MAX + 1] = "";
    char size[32];
    int rc = 0, fs = -1, mnt = -1;
    const char *step = "";
    if (geteuid() != 0 && (rc = own_namespaces())) {
        step = "a user namespace of its own";
        goto fail;
    }
    snprintf(size, sizeof size, "%" PRIu64,
             cfg->runtimes_bytes ? cfg->runtimes_bytes : (uint64_t)256 << 20);
    step = "fsopen(tmpfs)";
    fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0 || syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", "sandboxd", 0) < 0 ||
        syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
        syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
        syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
        rc = -errno;
        goto fail;
    }
    step = "fsmount";
    mnt = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (mnt < 0) {
        rc = -errno;
        goto fail;
    }
    step = cfg->make_runtimes;
    if ((rc = copy_dir(mnt, cfg->make_runtimes, "", what, sizeof what)))
        goto fail;
    what[0] = '\0';
    /* the pre-built matplotlib font cache, at /opt/sandboxd/mpl-cache */
    if (cfg->mpl_cache && access(cfg->mpl_cache, R_OK) == 0) {
        step = cfg->mpl_cache;
        if ((rc = copy_dir(mnt, cfg->mpl_cache, "mpl-cache", what, sizeof what)))
            goto fail;
    }
    what[0] = '\0';
    step = "making it read-only";
    struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
    if (syscall(SYS_mount_setattr, mnt, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0) {
        rc = -errno;
        goto fail;
    }
    struct jp_hdr h = { .type = JP_READY };
    rc = jp_send(INIT_CTL_FD, &h, NULL, &mnt, 1);
    close(mnt);
    close(fs);
    return rc ? 1 : 0;
fail:
    reply_fail(rc, step, what);
    if (mnt >= 0)
        close(mnt);
    if (fs >= 0)
        close(fs);
    return 1;
}
