/*
 * zygote_proto.h — the control protocol between the daemon (zygote_client.c) and the
 * Python zygote (src/zygote/), over a SOCK_SEQPACKET unix socket the zygote holds as fd 3.
 *
 * One datagram = one message: a fixed header (struct zyg_hdr), then exactly `len` payload
 * bytes, plus at most ZYG_MAX_FDS descriptors as SCM_RIGHTS. Message boundaries come from
 * the socket, so a short, oversized or truncated datagram is a protocol error, never a
 * partial read. Both sides are built from the same tree (struct jail_entry travels as raw
 * bytes), and `magic` catches a daemon talking to a zygote of another build.
 *
 * Messages:
 *   ZYG_READY   zygote → daemon, once, after preload.  a = 0, payload = Python version
 *               ("3.11.2", NUL-terminated); or a = -errno and payload = a sentence when
 *               start-up failed (the zygote then exits).
 *   ZYG_FORK    daemon → zygote.  id = request id (chosen by the daemon, echoed back);
 *               a = number of environment strings; payload =
 *                 struct jail_entry | cwd "\0" | "KEY=VALUE\0" × a
 *               fds (exactly 3): channel socket (→ fd 3), stdout (→ fd 1), stderr (→ fd 2).
 *   ZYG_FORKED  zygote → daemon.  id = the request's; a = host pid of the context (> 0)
 *               or -errno; b = the context's pid inside the sandbox (when a > 0); when
 *               a < 0, b > 0 is the host pid of a killed process the daemon must reap
 *               (the context is created as the daemon's child, see zygote_spawn.c);
 *               payload = a NUL-terminated sentence when a < 0 (else empty).
 *               a > 0 means the process exists, not that it entered its sandbox: on
 *               the direct way the reply leaves at clone time, and the context then
 *               sends "ready" or "failed" on its own channel (docs/protocol.md).
 * Replies may come out of request order (a double-fork request waits for its
 * intermediate's report while later requests are served): the daemon matches them by id.
 *
 * Caps: a whole datagram is at most ZYG_MSG_MAX bytes; at most ZYG_MAX_ENV environment
 * strings; cwd at most ZYG_CWD_MAX bytes. The zygote checks all of it and answers a
 * malformed request with -EINVAL (or -EBADMSG when even the id is unreadable).
 */
#ifndef SANDBOXD_ZYGOTE_PROTO_H
#define SANDBOXD_ZYGOTE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define ZYG_MAGIC 0x5a594731u   /* "ZYG1" */
#define ZYG_MSG_MAX (64 * 1024) /* whole datagram */
#define ZYG_MAX_FDS 3
#define ZYG_MAX_ENV 1024
#define ZYG_CWD_MAX 4096
#define ZYG_CTL_FD 3 /* the zygote's end of the control socket */

enum zyg_type {
    ZYG_READY = 1,
    ZYG_FORK,
    ZYG_FORKED,
};

struct zyg_hdr {
    uint32_t magic;
    uint32_t type;
    uint32_t id;
    int32_t a, b;
    uint32_t len; /* payload bytes after the header */
};

/* Send one message with up to ZYG_MAX_FDS fds. 0 or -errno (-EAGAIN on a full
 * non-blocking socket, -EMSGSIZE past the caps). Retries EINTR. */
int zyg_send(int fd, const struct zyg_hdr *h, const void *payload, const int *fds, int nfds);

/* Receive one message: header into h, payload into buf (cap bytes), fds (O_CLOEXEC) into
 * fds (room for ZYG_MAX_FDS). dontwait: MSG_DONTWAIT. Returns 1 for a message, 0 at EOF,
 * -EAGAIN when nothing is waiting, -EBADMSG for a malformed datagram (its fds closed;
 * h->id is still set when the header was complete), or another -errno. */
int zyg_recv(int fd, struct zyg_hdr *h, void *buf, size_t cap, int *fds, int *nfds, int dontwait);

#endif
