/*
 * init_workspace.c — root mode: the sandbox's /workspace as an ext4 file system in a
 * sparse image file, so that its files survive the daemon (a restart keeps every
 * sandbox) and its size stays capped (the file system's size is diskMb).
 *
 * Run by the outer init, in the host namespaces, after it joined the sandbox's cgroups:
 * making the file system (mke2fs, ~10 ms for any size: the image is sparse and the inode
 * tables and journal are initialised lazily) and mounting it are charged to the sandbox
 * and bounded by the daemon's --sandbox-start-timeout-ms, never done on the daemon's
 * loop. The current directory is the sandbox's directory (STATE_DIR/sandboxes/<id>);
 * ./workspace.img is attached to a free loop device (autoclear: the device goes with
 * the last unmount; direct I/O: the image's pages are not cached twice), mounted on
 * ./workspace (nosuid, nodev), and that mount becomes our current directory, which the
 * inner binds at /workspace as before. The daemon only ever unmounts it.
 *
 * The choice and its measured costs are in docs/lifecycle.md ("Durability").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "init.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOOP_TRIES 32 /* another process may take the free device we were told of */

/* Where mke2fs may be (Debian's e2fsprogs; /sbin before the /usr merge). */
static const char *const MKE2FS[] = { "/usr/sbin/mke2fs", "/sbin/mke2fs" };

/* mke2fs on the image: ext4, no blocks reserved for root (the sandbox gets all of
 * diskMb), lazily initialised inode tables and journal (a sparse image stays small),
 * the root directory owned by the sandbox's user. 0 or -errno. */
static int make_fs(const struct init_cfg *cfg, char *err, size_t errlen)
{
    char ext[96];
    snprintf(ext, sizeof ext, "lazy_itable_init=1,lazy_journal_init=1,root_owner=%u:%u",
             (unsigned)cfg->host_user_uid, (unsigned)cfg->host_user_gid);
    const char *prog = NULL;
    for (size_t i = 0; i < sizeof MKE2FS / sizeof MKE2FS[0] && !prog; i++)
        if (access(MKE2FS[i], X_OK) == 0)
            prog = MKE2FS[i];
    if (!prog) {
        snprintf(err, errlen, "init: mke2fs not found (install e2fsprogs)");
        return -ENOENT;
    }
    static char a_q[] = "-q", a_f[] = "-F", a_t[] = "-t", a_ext4[] = "ext4", a_m[] = "-m",
                a_0[] = "0", a_e[] = "-E", a_img[] = "workspace.img";
    static char e_path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin", e_lang[] = "LANG=C";
    char *const argv[] = { (char *)prog, a_q, a_f, a_t, a_ext4, a_m, a_0, a_e, ext, a_img, NULL };
    char *const envp[] = { e_path, e_lang, NULL };
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "init: fork for mke2fs: %s", strerror(errno));
        return -errno;
    }
    if (pid == 0) {
        (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0), dup2(null, 1), dup2(null, 2);
        }
        (void)syscall(SYS_close_range, 3U, ~0U, 0U);
        execve(prog, argv, envp);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(err, errlen, "init: mke2fs failed on the workspace image (status %d)", st);
        return -EIO;
    }
    return 0;
}

/* Is the image still attached to a loop device (a mount of it still alive somewhere, e.g.
 * in a mount namespace of a sandbox from before the daemon's restart)? Mounting it a second
 * time through another device would corrupt it. The device's name into dev, or "". */
static bool image_attached(char dev[32])
{
    char self[PATH_MAX];
    dev[0] = '\0';
    if (!realpath("workspace.img", self))
        return false;
    DIR *d = opendir("/sys/block");
    if (!d)
        return false;
    struct dirent *de;
    while (!dev[0] && (de = readdir(d))) {
        if (strncmp(de->d_name, "loop", 4) != 0 || strlen(de->d_name) > 16)
            continue;
        char path[64], back[PATH_MAX + 16];
        snprintf(path, sizeof path, "/sys/block/%s/loop/backing_file", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* not attached */
        ssize_t n = read(fd, back, sizeof back - 1);
        close(fd);
        back[n > 0 ? n : 0] = '\0';
        back[strcspn(back, "\n")] = '\0';
        if (strcmp(back, self) == 0)
            snprintf(dev, 32, "/dev/%s", de->d_name);
    }
    closedir(d);
    return dev[0] != '\0';
}

/* Attach the image (fd) to a free loop device (its path into dev); its fd, or -errno. */
static int attach_loop(int img, char dev[32])
{
    int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return -errno;
    int rc = -EBUSY;
    for (int i = 0; i < LOOP_TRIES && rc == -EBUSY; i++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0) {
            rc = -errno;
            break;
        }
        snprintf(dev, 32, "/dev/loop%d", n);
        int fd = open(dev, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            rc = errno == ENOENT ? -EBUSY : -errno; /* its node may not exist yet */
            continue;
        }
        struct loop_config lc;
        memset(&lc, 0, sizeof lc);
        lc.fd = (unsigned)img;
        lc.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
        int r = ioctl(fd, LOOP_CONFIGURE, &lc);
        if (r < 0 && errno == EINVAL) {
            lc.info.lo_flags = LO_FLAGS_AUTOCLEAR; /* no direct I/O on this file system */
            r = ioctl(fd, LOOP_CONFIGURE, &lc);
        }
        /* EBUSY: another process (another sandbox, another daemon) configured the device
         * GET_FREE gave both of us first; ask for the next free one */
        rc = r < 0 ? (errno == EBUSY ? -EBUSY : -errno) : 0;
        if (rc == 0) {
            close(ctl);
            return fd;
        }
        close(fd);
    }
    close(ctl);
    return rc;
}

int init_workspace_mount(const struct init_cfg *cfg, char *err, size_t errlen)
{
    int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (cfg->ws_format ? O_CREAT | O_EXCL : 0);
    int img = open("workspace.img", flags, 0600);
    if (img < 0) {
        snprintf(err, errlen, "init: cannot open the workspace image: %s", strerror(errno));
        return -errno;
    }
    int rc = 0;
    char dev[32];
    if (!cfg->ws_format && image_attached(dev)) {
        snprintf(err, errlen,
                 "init: the workspace image is still attached to %s (a mount of it from "
                 "before the restart is alive); not mounting it twice",
                 dev);
        close(img);
        return -EBUSY;
    }
    if (cfg->ws_format) {
        if (ftruncate(img, (off_t)cfg->ws_image_bytes) < 0) {
            snprintf(err, errlen, "init: cannot size the workspace image: %s", strerror(errno));
            rc = -errno;
        } else {
            rc = make_fs(cfg, err, errlen);
        }
    }
    int loop = rc ? rc : attach_loop(img, dev);
    close(img); /* the loop device holds it now */
    if (loop < 0) {
        if (!rc)
            snprintf(err, errlen, "init: no loop device for the workspace: %s", strerror(-loop));
        return loop;
    }
    if (mount(dev, "workspace", "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "") < 0) {
        rc = -errno;
        snprintf(err, errlen, "init: cannot mount the workspace image: %s", strerror(errno));
        close(loop); /* autoclear detaches it */
        return rc;
    }
    close(loop); /* the mount holds the device; autoclear detaches it at the last unmount */
    if (chdir("workspace") < 0) {
        snprintf(err, errlen, "init: cannot enter the workspace: %s", strerror(errno));
        return -errno;
    }
    if (cfg->ws_format) {
        (void)rmdir("lost+found"); /* e2fsck makes it again when it needs it */
        (void)chmod(".", 0700);
    }
    return 0;
}
