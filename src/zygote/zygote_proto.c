/*
 * zygote_proto.c — framing for the daemon ↔ zygote control socket (see zygote_proto.h).
 * Allocation-free; used by the zygote's blocking loop and by the daemon's libuv loop
 * (non-blocking). Received descriptors are always O_CLOEXEC, and a malformed datagram
 * never leaks the descriptors it carried.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "zygote_proto.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int zyg_send(int fd, const struct zyg_hdr *h, const void *payload, const int *fds, int nfds)
{
    struct iovec iov[2] = {
        { .iov_base = (void *)h, .iov_len = sizeof *h },
        { .iov_base = (void *)payload, .iov_len = h->len },
    };
    union {
        char buf[CMSG_SPACE(sizeof(int) * ZYG_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = h->len ? 2 : 1 };
    if (sizeof *h + h->len > ZYG_MSG_MAX || nfds < 0 || nfds > ZYG_MAX_FDS)
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
        if (sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
            return 0;
        if (errno == EWOULDBLOCK)
            return -EAGAIN;
        if (errno != EINTR)
            return -errno;
    }
}

int zyg_recv(int fd, struct zyg_hdr *h, void *buf, size_t cap, int *fds, int *nfds,
             int dontwait)
{
    struct iovec iov[2] = {
        { .iov_base = h, .iov_len = sizeof *h },
        { .iov_base = buf, .iov_len = cap },
    };
    union {
        char buf[CMSG_SPACE(sizeof(int) * ZYG_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf,
                        .msg_controllen = sizeof u.buf };
    ssize_t r;
    *nfds = 0;
    memset(h, 0, sizeof *h);
    do
        r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0));
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    if (r == 0)
        return 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + sizeof(int) * i, sizeof f);
            if (*nfds < ZYG_MAX_FDS)
                fds[(*nfds)++] = f;
            else
                close(f);
        }
    }
    if ((size_t)r < sizeof *h || h->magic != ZYG_MAGIC ||
        (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)r != sizeof *h + h->len) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        *nfds = 0;
        return -EBADMSG;
    }
    return 1;
}
