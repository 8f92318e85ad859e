/*
 * state_lock.c — the state dir's lock and generation (see state_lock.h). An flock on an
 * open file description: the kernel drops it when the last descriptor of it closes, which
 * is when the daemon exits however it exits. The descriptor is close-on-exec, so no
 * helper the daemon starts (inits, the zygote) ever holds the lock after its exec.
 */
#include "state_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define HOLDER_MAX 512 /* what the lock file says about its holder */

static int lock_fd = -1;

int slock_acquire(const char *state_dir, char *err, size_t errlen)
{
    char path[600];
    if (snprintf(path, sizeof path, "%s/daemon.lock", state_dir) >= (int)sizeof path) {
        snprintf(err, errlen, "state dir path too long");
        return -ENAMETOOLONG;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
        return -e;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        lock_fd = fd;
        return 0;
    }
    int e = errno;
    if (e != EWOULDBLOCK) {
        close(fd);
        snprintf(err, errlen, "cannot lock %s: %s", path, strerror(e));
        return -e;
    }
    char who[HOLDER_MAX];
    ssize_t n = pread(fd, who, sizeof who - 1, 0);
    close(fd);
    who[n > 0 ? n : 0] = '\0';
    who[strcspn(who, "\n")] = '\0';
    snprintf(err, errlen,
             "the state dir %s is in use by another sandboxd (%s); stop it first, or give "
             "this one another --state-dir",
             state_dir, who[0] ? who : "still starting: it has not said where it listens");
    return -EWOULDBLOCK;
}

int slock_publish(const char *url)
{
    if (lock_fd < 0)
        return -EBADF;
    char line[HOLDER_MAX];
    int n = snprintf(line, sizeof line, "pid %d, listening on %s\n", (int)getpid(), url);
    if (n < 0 || n >= (int)sizeof line)
        return -ENAMETOOLONG;
    if (ftruncate(lock_fd, 0) < 0 || pwrite(lock_fd, line, (size_t)n, 0) != n)
        return -errno;
    return 0;
}

int slock_write_atomic(const char *dir, const char *name, const char *data, size_t len)
{
    char tmp[700], dst[700];
    if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name) >= (int)sizeof tmp ||
        snprintf(dst, sizeof dst, "%s/%s", dir, name) >= (int)sizeof dst)
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    int rc = 0;
    for (size_t off = 0; off < len && !rc;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno != EINTR)
            rc = -errno;
        else if (w > 0)
            off += (size_t)w;
    }
    if (!rc && fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (!rc && rename(tmp, dst) < 0)
        rc = -errno;
    if (rc) {
        (void)unlink(tmp);
        return rc;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd); /* the rename itself survives a crash */
        close(dfd);
    }
    return 0;
}

int64_t slock_next_generation(const char *state_dir)
{
    char path[600], buf[32] = "";
    if (snprintf(path, sizeof path, "%s/generation", state_dir) >= (int)sizeof path)
        return -ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        buf[n > 0 ? n : 0] = '\0';
        close(fd);
    } else if (errno != ENOENT) {
        return -errno;
    }
    int64_t gen = (int64_t)strtoll(buf, NULL, 10) + 1;
    if (gen < 1)
        gen = 1;
    int n = snprintf(buf, sizeof buf, "%" PRId64 "\n", gen);
    int rc = slock_write_atomic(state_dir, "generation", buf, (size_t)n);
    return rc ? rc : gen;
}
