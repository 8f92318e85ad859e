/*
 * init_root.c — builds the sandbox's root filesystem from a static table, then pivots.
 *
 * Runs in the inner process (pid 1 of the sandbox, root of its user namespace, in a new
 * mount namespace that is still a copy of the host's). The new root is a tmpfs; host
 * directories are bound read-only into it; /etc is a small synthesized subset (accounts
 * are ours, host accounts stay invisible); /workspace is the only writable place the
 * daemon shares (its tmpfs bound when root, a tmpfs of our own without root);
 * /tmp and /dev/shm are size-capped tmpfs; /dev holds five device binds;
 * /proc is fresh for the sandbox's pid namespace. Then pivot_root(".", ".") and a lazy
 * unmount of the old root leave no path back to the host tree, and the root tmpfs and
 * /dev are made read-only.
 *
 * Inputs are the host filesystem (trusted: root-owned system dirs) and two host dirs
 * chosen by the daemon: the workspace (our current directory, set by the daemon) and
 * the runtimes dir. Nothing the sandbox writes is read here: the root is built before
 * any sandbox code runs. Every path buffer is capped; an overlong path is an error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NEWROOT "/tmp"     /* mount point of the new root inside our private mount ns */
#define COPY_MAX (4 << 20) /* cap for files copied into the root tmpfs */

/* clang-format off */
enum mkind {
    R_BIND_RO,       /* host dir/file → read-only, nosuid, nodev bind; must exist */
    R_BIND_RO_OPT,   /* same, skipped when the host has no such path */
    R_LINK_OR_BIND,  /* host symlink → same symlink (merged-usr); dir → R_BIND_RO; else skip */
    R_COPY,          /* copy a small host file (following links); skipped when missing */
    R_WRITE,         /* write src as the file's content */
    R_DIR,           /* empty directory */
    R_SYMLINK,       /* symlink dst → src */
    R_TMPFS,         /* tmpfs with options src */
    R_TMPFS_SIZED,   /* tmpfs with options src plus size= from the sandbox's tmp limit */
    R_DEV,           /* bind of a host device node */
    R_PROC,          /* fresh proc for the sandbox's pid namespace */
    R_WORKSPACE,     /* our current dir (the sandbox's host workspace), writable */
    R_RUNTIMES,      /* the runtimes dir, read-only */
};

struct mrow {
    enum mkind kind;
    const char *src;
    const char *dst;       /* relative to the new root */
    unsigned long flags;   /* for tmpfs/proc */
    const char *why;
};

#define PASSWD_TEXT                                                   \
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"                       \
    "sandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n"              \
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
#define GROUP_TEXT "root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"
#define HOSTS_TEXT "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"

#define TMPFS_FLAGS (MS_NOSUID | MS_NODEV)

static const struct mrow root_table[] = {
    { R_BIND_RO, "/usr", "usr", 0, "programs and libraries; read-only: no trojans for later processes" },
    { R_LINK_OR_BIND, "/bin", "bin", 0, "merged-usr symlink, or a read-only bind" },
    { R_LINK_OR_BIND, "/sbin", "sbin", 0, "merged-usr symlink, or a read-only bind" },
    { R_LINK_OR_BIND, "/lib", "lib", 0, "merged-usr symlink, or a read-only bind" },
    { R_LINK_OR_BIND, "/lib64", "lib64", 0, "the dynamic loader's path" },
    { R_LINK_OR_BIND, "/lib32", "lib32", 0, "multilib, when present" },
    { R_DIR, NULL, "etc", 0, "a synthesized subset: host config and accounts stay hidden" },
    { R_WRITE, PASSWD_TEXT, "etc/passwd", 0, "only root, the sandbox user and nobody" },
    { R_WRITE, GROUP_TEXT, "etc/group", 0, "only root, the sandbox group and nogroup" },
    { R_WRITE, "sandbox\n", "etc/hostname", 0, "the sandbox's name, not the host's" },
    { R_WRITE, HOSTS_TEXT, "etc/hosts", 0, "localhost only; host's entries hidden" },
    { R_COPY, "/etc/resolv.conf", "etc/resolv.conf", 0, "DNS for network: host sandboxes" },
    { R_COPY, "/etc/nsswitch.conf", "etc/nsswitch.conf", 0, "name service order for glibc" },
    { R_COPY, "/etc/host.conf", "etc/host.conf", 0, "resolver options" },
    { R_COPY, "/etc/gai.conf", "etc/gai.conf", 0, "getaddrinfo preferences" },
    { R_COPY, "/etc/services", "etc/services", 0, "getservbyname (Python socket, curl)" },
    { R_COPY, "/etc/protocols", "etc/protocols", 0, "getprotobyname" },
    { R_COPY, "/etc/ld.so.cache", "etc/ld.so.cache", 0, "fast shared library lookup" },
    { R_COPY, "/etc/ld.so.conf", "etc/ld.so.conf", 0, "library paths (ldconfig -p)" },
    { R_BIND_RO_OPT, "/etc/ld.so.conf.d", "etc/ld.so.conf.d", 0, "library paths" },
    { R_COPY, "/etc/localtime", "etc/localtime", 0, "time zone (a copy of the link's target)" },
    { R_COPY, "/etc/timezone", "etc/timezone", 0, "time zone name" },
    { R_COPY, "/etc/os-release", "etc/os-release", 0, "platform identification" },
    { R_COPY, "/etc/debian_version", "etc/debian_version", 0, "platform identification" },
    { R_COPY, "/etc/mime.types", "etc/mime.types", 0, "Python mimetypes" },
    { R_COPY, "/etc/matplotlibrc", "etc/matplotlibrc", 0, "matplotlib's Debian defaults" },
    { R_COPY, "/etc/pip.conf", "etc/pip.conf", 0, "pip's index (world-readable system config)" },
    { R_COPY, "/etc/npmrc", "etc/npmrc", 0, "npm's registry (world-readable system config)" },
    { R_COPY, "/etc/bash.bashrc", "etc/bash.bashrc", 0, "interactive shell defaults" },
    { R_COPY, "/etc/profile", "etc/profile", 0, "login shell defaults" },
    { R_COPY, "/etc/inputrc", "etc/inputrc", 0, "readline defaults" },
    { R_COPY, "/etc/magic", "etc/magic", 0, "file(1)" },
    { R_BIND_RO_OPT, "/etc/alternatives", "etc/alternatives", 0, "Debian's alternatives links" },
    { R_DIR, NULL, "etc/ssl", 0, "only the public certificates, not /etc/ssl/private" },
    { R_BIND_RO_OPT, "/etc/ssl/certs", "etc/ssl/certs", 0, "CA certificates for pip/https" },
    { R_COPY, "/etc/ssl/openssl.cnf", "etc/ssl/openssl.cnf", 0, "OpenSSL defaults" },
    { R_BIND_RO_OPT, "/etc/ca-certificates", "etc/ca-certificates", 0, "CA update hooks (read-only)" },
    { R_BIND_RO_OPT, "/etc/fonts", "etc/fonts", 0, "fontconfig for matplotlib/PIL" },
    { R_BIND_RO_OPT, "/etc/python3", "etc/python3", 0, "Debian Python config" },
    { R_BIND_RO_OPT, "/etc/python3.11", "etc/python3.11", 0, "Debian's sitecustomize" },
    { R_BIND_RO_OPT, "/etc/terminfo", "etc/terminfo", 0, "terminal descriptions" },
    { R_DIR, NULL, "root", 0, "inside root's home (empty, read-only)" },
    { R_DIR, NULL, "run", 0, "expected by some tools (read-only, empty)" },
    { R_DIR, NULL, "var", 0, "for var/tmp" },
    { R_SYMLINK, "/tmp", "var/tmp", 0, "var/tmp shares the capped /tmp" },
    { R_DIR, NULL, "opt", 0, "for opt/sandboxd" },
    { R_WORKSPACE, NULL, "workspace", MS_NOSUID | MS_NODEV,
      "the only writable dir the daemon shares; a tmpfs in both modes: no host path shows" },
    { R_RUNTIMES, NULL, "opt/sandboxd", 0,
      "our Python/Node runtimes, read-only; a private tmpfs copy: no host path shows" },
    { R_TMPFS_SIZED, "mode=1777", "tmp", TMPFS_FLAGS, "private, size-capped /tmp" },
    { R_TMPFS, "mode=0755,size=64k,nr_inodes=64", "dev", TMPFS_FLAGS | MS_NOEXEC,
      "no host devices: only the five below" },
    { R_DEV, "/dev/null", "dev/null", 0, "harmless device" },
    { R_DEV, "/dev/zero", "dev/zero", 0, "harmless device" },
    { R_DEV, "/dev/full", "dev/full", 0, "harmless device" },
    { R_DEV, "/dev/random", "dev/random", 0, "randomness" },
    { R_DEV, "/dev/urandom", "dev/urandom", 0, "randomness" },
    { R_SYMLINK, "/proc/self/fd", "dev/fd", 0, "bash process substitution" },
    { R_SYMLINK, "/proc/self/fd/0", "dev/stdin", 0, "conventional" },
    { R_SYMLINK, "/proc/self/fd/1", "dev/stdout", 0, "conventional" },
    { R_SYMLINK, "/proc/self/fd/2", "dev/stderr", 0, "conventional" },
    { R_TMPFS_SIZED, "mode=1777", "dev/shm", TMPFS_FLAGS | MS_NOEXEC,
      "POSIX shm/semaphores (multiprocessing), capped" },
    { R_PROC, NULL, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
      "shows only the sandbox's pid namespace" },
};
/* clang-format on */

static int rpath(char *out, size_t n, const char *rel)
{
    int len = snprintf(out, n, "%s/%s", NEWROOT, rel);
    return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

static int set_ro(const char *path, bool recursive, unsigned long long extra)
{
    struct mount_attr a = { .attr_set = MOUNT_ATTR_RDONLY | extra };
    if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &a, sizeof a) < 0)
        return -errno;
    return 0;
}

static int make_file(const char *path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

static int bind_ro(const char *src, const char *dst, bool optional)
{
    struct stat st;
    if (stat(src, &st) < 0)
        return optional && errno == ENOENT ? 0 : -errno;
    int rc = S_ISDIR(st.st_mode) ? (mkdir(dst, 0755) < 0 ? -errno : 0) : make_file(dst, 0644);
    if (rc)
        return rc;
    if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
        return -errno;
    return set_ro(dst, true, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

static int copy_file(const char *src, const char *dst)
{
    static char buf[65536];
    int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
    if (in < 0)
        return errno == ENOENT ? 0 : -errno;
    out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out < 0) {
        rc = -errno;
        goto out;
    }
    size_t total = 0;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r == 0)
            break;
        total += (size_t)r;
        if (total > COPY_MAX) {
            rc = -EFBIG;
            break;
        }
        if (write(out, buf, (size_t)r) != r) {
            rc = -EIO;
            break;
        }
    }
out:
    close(in);
    if (out >= 0)
        close(out);
    return rc;
}

static int write_text(const char *dst, const char *text)
{
    int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -errno;
    size_t len = strlen(text);
    int rc = write(fd, text, len) == (ssize_t)len ? 0 : -EIO;
    close(fd);
    return rc;
}

static int link_or_bind(const char *src, const char *dst)
{
    struct stat st;
    if (lstat(src, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (S_ISLNK(st.st_mode)) {
        char target[512];
        ssize_t n = readlink(src, target, sizeof target - 1);
        if (n < 0)
            return -errno;
        target[n] = '\0';
        return symlink(target, dst) < 0 ? -errno : 0;
    }
    if (S_ISDIR(st.st_mode))
        return bind_ro(src, dst, false);
    return 0;
}

static int tmpfs(const char *dst, const char *opts, unsigned long flags, uint64_t size)
{
    char data[128];
    int len = size ? snprintf(data, sizeof data, "%s,size=%" PRIu64, opts, size)
                   : snprintf(data, sizeof data, "%s", opts);
    if (len < 0 || (size_t)len >= sizeof data)
        return -ENAMETOOLONG;
    if (mkdir(dst, 0755) < 0 && errno != EEXIST)
        return -errno;
    return mount("tmpfs", dst, "tmpfs", flags, data) < 0 ? -errno : 0;
}

/* Attach a clone of the detached mount mnt (the daemon's private runtimes tmpfs, see
 * init_runtimes.c) at dst: its root field is "/", its source "sandboxd", so nothing of
 * the host's paths shows in /proc/self/mountinfo. Read-only, nosuid, nodev. */
static int attach_clone(int mnt, const char *dst)
{
    if (mkdir(dst, 0755) < 0)
        return -errno;
    int c = (int)syscall(SYS_open_tree, mnt, "",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    if (c < 0)
        return -errno;
    int rc =
        syscall(SYS_move_mount, c, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0 ? -errno : 0;
    close(c);
    return rc ? rc : set_ro(dst, true, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

static int do_row(const struct mrow *r, const struct init_cfg *cfg, int rt_fd)
{
    char dst[512];
    int rc = rpath(dst, sizeof dst, r->dst);
    if (rc)
        return rc;
    switch (r->kind) {
    case R_BIND_RO: return bind_ro(r->src, dst, false);
    case R_BIND_RO_OPT: return bind_ro(r->src, dst, true);
    case R_LINK_OR_BIND: return link_or_bind(r->src, dst);
    case R_COPY: return copy_file(r->src, dst);
    case R_WRITE: return write_text(dst, r->src);
    case R_DIR: return mkdir(dst, 0755) < 0 ? -errno : 0;
    case R_SYMLINK: return symlink(r->src, dst) < 0 ? -errno : 0;
    case R_TMPFS: return tmpfs(dst, r->src, r->flags, 0);
    case R_TMPFS_SIZED:
        return tmpfs(dst, r->src, r->flags, cfg->tmp_bytes ? cfg->tmp_bytes : (64ULL << 20));
    case R_DEV:
        if ((rc = make_file(dst, 0666)))
            return rc;
        return mount(r->src, dst, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
    case R_PROC:
        if (mkdir(dst, 0555) < 0)
            return -errno;
        return mount("proc", dst, "proc", r->flags, NULL) < 0 ? -errno : 0;
    case R_WORKSPACE:
        if (cfg->ws_bytes) {
            /* Rootless: a size-capped tmpfs of this user namespace, not a bind of the host
             * dir (whose path mountinfo would show, and whose size nothing would cap). */
            char data[64];
            snprintf(data, sizeof data, "mode=0700,size=%" PRIu64, cfg->ws_bytes);
            if (mkdir(dst, 0755) < 0)
                return -errno;
            return mount("sandboxd-ws", dst, "tmpfs", r->flags, data) < 0 ? -errno : 0;
        }
        /* "." is the workspace: the daemon started us there, and the mount namespace
         * copy carried our cwd along, so no host path is resolved with our (unprivileged
         * on the host) credentials. */
        if (mkdir(dst, 0755) < 0)
            return -errno;
        if (mount(".", dst, NULL, MS_BIND | MS_REC, NULL) < 0)
            return -errno;
        {
            struct mount_attr a = { .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
            if (syscall(SYS_mount_setattr, AT_FDCWD, dst, AT_RECURSIVE, &a, sizeof a) < 0)
                return -errno;
        }
        return 0;
    case R_RUNTIMES: {
        if (cfg->runtimes_fd >= 0)
            return attach_clone(cfg->runtimes_fd, dst);
        if (rt_fd < 0)
            return 0;
        char src[64];
        snprintf(src, sizeof src, "/proc/self/fd/%d", rt_fd);
        return bind_ro(src, dst, false);
    }
    }
    return -EINVAL;
}

/* The operator's Python site dirs (--site-dirs): each opened before NEWROOT is covered (a
 * dir may live below it), then bound read-only, nosuid, nodev at opt/python-site/<i>; not
 * noexec: extension modules are mapped executable. At most SITE_MAX. */
#define SITE_MAX 8
#define SITE_DIR "opt/python-site"

static int site_open(const struct init_cfg *cfg, int fds[SITE_MAX], int *n, const char **what)
{
    char path[512];
    *n = 0;
    for (const char *p = cfg->site_dirs; p && *p;) {
        size_t len = strcspn(p, ":");
        if (*n == SITE_MAX || len >= sizeof path)
            return -E2BIG;
        memcpy(path, p, len);
        path[len] = '\0';
        if ((fds[*n] = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
            *what = "an operator's Python site dir";
            return -errno;
        }
        (*n)++;
        p += len + (p[len] == ':');
    }
    return 0;
}

static int site_bind(const int fds[SITE_MAX], int n)
{
    char src[64], dst[128];
    if (n && mkdir(NEWROOT "/" SITE_DIR, 0755) < 0)
        return -errno;
    for (int i = 0; i < n; i++) {
        snprintf(src, sizeof src, "/proc/self/fd/%d", fds[i]);
        snprintf(dst, sizeof dst, "%s/%s/%d", NEWROOT, SITE_DIR, i);
        int rc = bind_ro(src, dst, false);
        if (rc)
            return rc;
    }
    return 0;
}

int init_setup_root(const struct init_cfg *cfg, char *err, size_t errlen)
{
    int site_fds[SITE_MAX], nsite = 0;
    int rc = 0, rt_fd = -1;
    const char *what = "";
    /* Nothing we mount may propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
        rc = -errno;
        what = "making / a slave";
        goto out;
    }
    /* Open the runtimes dir before NEWROOT is covered (it could live below it). */
    if (cfg->runtimes_fd < 0 && cfg->runtimes_dir &&
        (rt_fd = open(cfg->runtimes_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = -errno;
        what = cfg->runtimes_dir;
        goto out;
    }
    what = "the operator's Python site dirs";
    if ((rc = site_open(cfg, site_fds, &nsite, &what)))
        goto out;
    if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") < 0) {
        rc = -errno;
        what = "the root tmpfs";
        goto out;
    }
    for (size_t i = 0; i < sizeof root_table / sizeof root_table[0]; i++) {
        rc = do_row(&root_table[i], cfg, rt_fd);
        if (rc) {
            what = root_table[i].dst;
            goto out;
        }
    }
    if ((rc = site_bind(site_fds, nsite))) {
        what = SITE_DIR;
        goto out;
    }
    /* The workspace mount holds our old cwd; pivot from the new root itself. */
    if (chdir(NEWROOT) < 0 || syscall(SYS_pivot_root, ".", ".") < 0) {
        rc = -errno;
        what = "pivot_root";
        goto out;
    }
    /* The old root is now stacked under the new one at "/": detach it. */
    if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
        rc = -errno;
        what = "detaching the old root";
        goto out;
    }
    if ((rc = set_ro("/", false, 0))) {
        what = "read-only /";
        goto out;
    }
    if ((rc = set_ro("/dev", false, 0))) {
        what = "read-only /dev";
        goto out;
    }
out:
    if (rt_fd >= 0)
        close(rt_fd);
    for (int i = 0; i < nsite; i++)
        close(site_fds[i]);
    if (rc)
        snprintf(err, errlen, "init: building the sandbox root failed at %s: %s", what,
                 strerror(-rc));
    return rc;
}
