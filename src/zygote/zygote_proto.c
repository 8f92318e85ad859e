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

#include "fdmsg.h"

int zyg_send(int fd, const struct zyg_hdr *h, const void *payload, const int *fds, int nfds)
{
    if (sizeof *h + h->len > ZYG_MSG_MAX || nfds > ZYG_MAX_FDS)
        return -EMSGSIZE;
    return fdmsg_send(fd, h, sizeof *h, payload, h->len, fds, nfds, MSG_DONTWAIT);
}

int zyg_recv(int fd, struct zyg_hdr *h, void *buf, size_t cap, int *fds, int *nfds, int dontwait)
{
    memset(h, 0, sizeof *h);
    ssize_t r =
        fdmsg_recv(fd, h, sizeof *h, buf, cap, fds, ZYG_MAX_FDS, nfds, dontwait ? MSG_DONTWAIT : 0);
    if (r <= 0)
        return (int)r;
    if ((size_t)r < sizeof *h || h->magic != ZYG_MAGIC || (size_t)r != sizeof *h + h->len) {
        fdmsg_close(fds, nfds);
        return -EBADMSG;
    }
    return 1;
}
