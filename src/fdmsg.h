/*
 * fdmsg.h — one datagram (a fixed header, a payload, up to FDMSG_MAX_FDS descriptors as
 * SCM_RIGHTS) on a SOCK_SEQPACKET socket: the framing under both control protocols
 * (daemon ↔ sandbox init in jail_proto.c, daemon ↔ zygote in zygote/zygote_proto.c).
 * Allocation-free; received descriptors are always O_CLOEXEC, and a datagram that was cut
 * or carries the wrong size never leaks the descriptors it brought.
 */
#ifndef SANDBOXD_FDMSG_H
#define SANDBOXD_FDMSG_H

#include <stddef.h>
#include <sys/types.h>

#define FDMSG_MAX_FDS 4

/* Send hdr (hlen bytes) then payload (plen bytes) as one datagram. flags: 0 or
 * MSG_DONTWAIT. Returns 0, -EAGAIN (would block) or -errno; retries EINTR. */
int fdmsg_send(int fd, const void *hdr, size_t hlen, const void *payload, size_t plen,
               const int *fds, int nfds, int flags);

/* Receive one datagram: the first hlen bytes into hdr, the rest (at most cap) into buf;
 * descriptors into fds (room for maxfds; extras are closed). Returns the datagram's size,
 * 0 at EOF, -EAGAIN, -EBADMSG when it was cut (its fds closed, *nfds = 0) or -errno. */
ssize_t fdmsg_recv(int fd, void *hdr, size_t hlen, void *buf, size_t cap, int *fds, int maxfds,
                   int *nfds, int flags);

/* Close the descriptors of a datagram that is refused. */
void fdmsg_close(int *fds, int *nfds);

#endif
