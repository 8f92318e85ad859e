/*
 * jail_runtimes.c — see jail_runtimes.h. The helper is started with uv_spawn (the daemon
 * never forks by itself), its arguments in the environment as for every init, and the
 * daemon's end of a SOCK_SEQPACKET pair as its fd 3. We wait for its one message with a
 * deadline; its exit is reaped by libuv later, and its handle closes itself.
 */
#include "jail_runtimes.h"
#include "jail_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAKE_TIMEOUT_MS 60000 /* a copy of a few MiB; generous for a loaded host */
#define ARG_MAX_BYTES 1100

static uv_process_t helper;

static void helper_closed(uv_handle_t *h)
{
    (void)h;
}

static void helper_exited(uv_process_t *p, int64_t status, int sig)
{
    (void)status;
    (void)sig;
    uv_close((uv_handle_t *)p, helper_closed);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The helper's one message (READY with the mount's fd, or FAIL), waited for at start-up,
 * before the daemon serves anyone: jp_recv's result, or -ETIMEDOUT / -errno. */
static int wait_answer(int fd, struct jp_hdr *h, char *msg, size_t msglen, int *fds, int *nfds)
{
    int64_t deadline = now_ms() + MAKE_TIMEOUT_MS;
    for (;;) {
        struct pollfd p = { fd, POLLIN, 0 };
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return -errno;
        if (p.revents & (POLLIN | POLLHUP))
            return jp_recv(fd, h, msg, msglen, fds, nfds);
    }
}

int jail_runtimes_make(uv_loop_t *loop, const char *init_path, const char *runtimes_dir,
                       const char *mpl_dir, uint64_t max_bytes, char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        return -errno;
    }
    char e_dir[ARG_MAX_BYTES], e_mpl[ARG_MAX_BYTES], e_size[64];
    char *envp[4];
    int n = 0;
    if (snprintf(e_dir, sizeof e_dir, "SANDBOXD_INIT_ARG=--make-runtimes=%s", runtimes_dir) >=
            (int)sizeof e_dir ||
        (mpl_dir && snprintf(e_mpl, sizeof e_mpl, "SANDBOXD_INIT_ARG=--mpl-cache=%s", mpl_dir) >=
                        (int)sizeof e_mpl)) {
        close(sv[0]);
        close(sv[1]);
        snprintf(err, errlen, "the runtimes dir's path is too long");
        return -ENAMETOOLONG;
    }
    snprintf(e_size, sizeof e_size, "SANDBOXD_INIT_ARG=--runtimes-bytes=%" PRIu64, max_bytes);
    envp[n++] = e_dir;
    if (mpl_dir)
        envp[n++] = e_mpl;
    envp[n++] = e_size;
    envp[n] = NULL;
    char *args[] = { (char *)init_path, NULL };
    uv_stdio_container_t stdio[4] = {
        { .flags = UV_IGNORE },
        { .flags = UV_IGNORE },
        { .flags = UV_INHERIT_FD, .data.fd = 2 },
        { .flags = UV_INHERIT_FD, .data.fd = sv[1] },
    };
    uv_process_options_t po = {
        .exit_cb = helper_exited,
        .file = init_path,
        .args = args,
        .env = envp,
        .cwd = "/",
        .stdio_count = 4,
        .stdio = stdio,
    };
    int rc = uv_spawn(loop, &helper, &po);
    close(sv[1]);
    if (rc) {
        close(sv[0]);
        snprintf(err, errlen, "could not start %s: %s", init_path, uv_strerror(rc));
        return rc;
    }
    struct jp_hdr h;
    char msg[512];
    int fds[JP_MAX_FDS], nfds = 0;
    rc = wait_answer(sv[0], &h, msg, sizeof msg - 1, fds, &nfds);
    close(sv[0]);
    if (rc == 1 && h.type == JP_READY && nfds == 1)
        return fds[0];
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    if (rc == 1 && h.type == JP_FAIL) {
        msg[h.len < sizeof msg ? h.len : sizeof msg - 1] = '\0';
        snprintf(err, errlen, "%s", msg);
        return h.a < 0 ? h.a : -EIO;
    }
    (void)uv_process_kill(&helper, SIGKILL);
    snprintf(err, errlen, "the runtimes helper did not answer: %s",
             rc < 0 ? strerror(-rc) : "it exited");
    return rc < 0 ? rc : -EPROTO;
}
