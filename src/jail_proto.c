/*
 * jail_proto.c — framing for the daemon ↔ init control socket (see jail_proto.h).
 * Allocation-free; safe to use in init's pid-1 loop and on the daemon's loop thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_proto.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int jp_send(int fd, const struct jp_hdr *h, const void *payload, const int *fds, int nfds)
{
    struct iovec iov[2] = {
        { .iov_base = (void *)h, .iov_len = sizeof *h },
        { .iov_base = (void *)payload, .iov_len = h->len },
    };
    union {
        char buf[CMSG_SPACE(sizeof(int) * JP_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = h->len ? 2 : 1 };
    if (sizeof *h + h->len > JP_MSG_MAX || nfds < 0 || nfds > JP_MAX_FDS)
        return -EMSGSIZE;
    if (nfds > 0) {
        memset(&u, 0, sizeof u);
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    for (;;) {
        ssize_t r = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (r >= 0)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

int jp_recv(int fd, struct jp_hdr *h, void *buf, size_t cap, int *fds, int *nfds)
{
    struct iovec iov[2] = {
        { .iov_base = h, .iov_len = sizeof *h },
        { .iov_base = buf, .iov_len = cap },
    };
    union {
        char buf[CMSG_SPACE(sizeof(int) * JP_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf,
                        .msg_controllen = sizeof u.buf };
    *nfds = 0;
    ssize_t r;
    do
        r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
    if (r == 0)
        return 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof f);
            if (*nfds < JP_MAX_FDS)
                fds[(*nfds)++] = f;
            else
                close(f);
        }
    }
    if ((size_t)r < sizeof *h || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        (size_t)r != sizeof *h + h->len) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        *nfds = 0;
        return -EBADMSG;
    }
    return 1;
}
