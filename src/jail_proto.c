/*
 * jail_proto.c — framing for the daemon ↔ init control socket (see jail_proto.h).
 * Allocation-free; safe to use in init's pid-1 loop and on the daemon's loop thread.
 * The datagram framing itself is fdmsg.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_proto.h"

#include <errno.h>
#include <sys/socket.h>

#include "fdmsg.h"

int jp_send(int fd, const struct jp_hdr *h, const void *payload, const int *fds, int nfds)
{
    if (sizeof *h + h->len > JP_MSG_MAX || nfds > JP_MAX_FDS)
        return -EMSGSIZE;
    return fdmsg_send(fd, h, sizeof *h, payload, h->len, fds, nfds, 0);
}

int jp_recv(int fd, struct jp_hdr *h, void *buf, size_t cap, int *fds, int *nfds)
{
    ssize_t r = fdmsg_recv(fd, h, sizeof *h, buf, cap, fds, JP_MAX_FDS, nfds, MSG_DONTWAIT);
    if (r <= 0)
        return (int)r;
    if ((size_t)r < sizeof *h || (size_t)r != sizeof *h + h->len) {
        fdmsg_close(fds, nfds);
        return -EBADMSG;
    }
    return 1;
}
