/*
 * jail_proto.h — the control protocol between the daemon (jail.c) and a sandbox's init
 * (src/init/), over a SOCK_SEQPACKET socket that init holds as fd 3.
 *
 * One datagram = one message: a fixed header, then `len` payload bytes, plus up to
 * JP_MAX_FDS file descriptors as SCM_RIGHTS. Message boundaries come from the socket, so
 * a short or oversized datagram is a protocol error, never a partial read. Both sides
 * are ours, but init treats every request as untrusted-by-construction: lengths are
 * checked, strings must be NUL-terminated inside the payload, counts are capped.
 */
#ifndef SANDBOXD_JAIL_PROTO_H
#define SANDBOXD_JAIL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define JP_MSG_MAX (128 * 1024) /* whole datagram; caps argv + envp + cwd of a spawn */
#define JP_MAX_FDS 4
#define JP_MAX_ARGS 4096 /* argc + envc */

enum jp_type {
    JP_HELLO = 1, /* outer → daemon: a = inner's host pid */
    JP_READY,     /* init → daemon: the root is built, requests may come */
    JP_FAIL,      /* init → daemon: setup failed; a = -errno, payload = sentence */
    JP_SPAWN,     /* daemon → init: id; a = argc, b = envc; payload "cwd\0argv…\0envp…\0";
                       fds: stdin, stdout, stderr[, extra] (c = number of fds) */
    JP_SPAWNED,   /* init → daemon: id; a = pid inside (> 0) or -errno */
    JP_EXIT,      /* init → daemon: a = pid inside, b = wait status */
    JP_KILL,      /* daemon → init: a = pid (its process group is signalled), b = signal,
                       c = 1 when the pid is an adopted (zygote) process */
    JP_ADOPT,     /* daemon → init: id; a = pid inside */
    JP_ADOPTED,   /* init → daemon: id; a = 0 or -errno; fd: a pidfd of the process */
};

struct jp_hdr {
    uint32_t type;
    uint32_t id;
    int32_t a, b, c;
    uint32_t len;
};

/* Send one message. 0 or -errno. Retries EINTR; blocks if the socket is blocking. */
int jp_send(int fd, const struct jp_hdr *h, const void *payload, const int *fds, int nfds);

/* Receive one message: header into h, payload into buf (cap bytes), fds into fds (up to
 * JP_MAX_FDS, O_CLOEXEC). Returns 1 for a message, 0 at EOF, -EAGAIN when nothing is
 * waiting on a non-blocking socket, -EBADMSG for a malformed one (its fds closed). */
int jp_recv(int fd, struct jp_hdr *h, void *buf, size_t cap, int *fds, int *nfds);

#endif
