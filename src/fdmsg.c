/*
 * fdmsg.c — datagrams with descriptors (see fdmsg.h).
 */
#include "fdmsg.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

union fdmsg_cmsg {
    char buf[CMSG_SPACE(sizeof(int) * FDMSG_MAX_FDS)];
    struct cmsghdr align;
};

int fdmsg_send(int fd, const void *hdr, size_t hlen, const void *payload, size_t plen,
               const int *fds, int nfds, int flags)
{
    struct iovec iov[2] = {
        { .iov_base = (void *)hdr, .iov_len = hlen },
        { .iov_base = (void *)payload, .iov_len = plen },
    };
    union fdmsg_cmsg u;
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = plen ? 2 : 1 };
    if (nfds < 0 || nfds > FDMSG_MAX_FDS)
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
        if (sendmsg(fd, &m, MSG_NOSIGNAL | flags) >= 0)
            return 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return -EAGAIN;
        if (errno != EINTR)
            return -errno;
    }
}

void fdmsg_close(int *fds, int *nfds)
{
    for (int i = 0; i < *nfds; i++)
        close(fds[i]);
    *nfds = 0;
}

ssize_t fdmsg_recv(int fd, void *hdr, size_t hlen, void *buf, size_t cap, int *fds, int maxfds,
                   int *nfds, int flags)
{
    struct iovec iov[2] = {
        { .iov_base = hdr, .iov_len = hlen },
        { .iov_base = buf, .iov_len = cap },
    };
    union fdmsg_cmsg u;
    struct msghdr m = {
        .msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf, .msg_controllen = sizeof u.buf
    };
    ssize_t r;
    *nfds = 0;
    do
        r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | flags);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
    if (r == 0)
        return 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + sizeof(int) * i, sizeof f);
            if (*nfds < maxfds)
                fds[(*nfds)++] = f;
            else
                close(f);
        }
    }
    if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        fdmsg_close(fds, nfds);
        return -EBADMSG;
    }
    return r;
}
