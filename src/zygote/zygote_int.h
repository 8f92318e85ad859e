/*
 * zygote_int.h — internal to sandboxd-zygote (zygote.c, zygote_start.c, zygote_spawn.c):
 * the functions the three files call in each other. Nothing else includes it. The zygote
 * is single-threaded; everything here runs on its one thread.
 *
 *   zygote.c        main(), the request loop, replies, the request buffer
 *   zygote_start.c  start-up, before `ready`
 *   zygote_spawn.c  creating a context (direct clone3 or double fork) and the slots of
 *                   double-fork requests still waiting for their reports
 */
#ifndef SANDBOXD_ZYGOTE_INT_H
#define SANDBOXD_ZYGOTE_INT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "zygote.h"

/* At most this many double-fork requests wait for their reports at once. */
#define ZYG_MAX_WAITING 256

/* zygote.c */
/* Reply to request id: a = result, b = inside pid, msg optional. Waits while the socket
 * is full (the daemon is behind). */
void zyg_reply(uint32_t id, int32_t a, int32_t b, const char *msg);
long long zyg_now_ms(void); /* CLOCK_MONOTONIC */
/* Close the zygote's copies of the request's channel, stdout and stderr fds. */
void zyg_close_request_fds(struct zyg_req *r);

/* zygote_start.c */
/* Parse the command line and clear argv; non-zero after a message: exit 2. */
int zyg_start_args(int argc, char **argv);
/* Everything from the environment to the drained heap, in its order (see the file's
 * top); the Python version ("3.11.2") into version. 0, or -errno with err set. */
int zyg_start_up(char *version, size_t vcap, char *err, size_t errlen);
/* Call module.fn(); 0, or -EINVAL with the Python error described in err. */
int zyg_call_noargs(const char *module, const char *fn, char *err, size_t errlen);

/* zygote_spawn.c */
/* Probe the direct way and compile the seccomp filter (before the heap is drained).
 * 0, or -errno with err set. */
int zyg_spawn_init(char *err, size_t errlen);
/* Create the context r asks for, the direct way when possible. Replies (now, or when its
 * slot is done), closes r's fds and forgets r on every path. */
void zyg_spawn(struct zyg_req *r);
/* Fill p with the report pipes of the waiting slots, lower *timeout (-1: none) to the
 * nearest deadline, and to 20 ms while an intermediate is unreaped. Returns how many. */
unsigned zyg_waiting_pollfds(struct pollfd *p, long long now, long long *timeout);
/* After poll() returned pr: reap exited intermediates, read the slots p (n of them, as
 * zyg_waiting_pollfds filled them) shows readable, fail those past their deadline. */
void zyg_waiting_events(const struct pollfd *p, unsigned n, int pr);

#endif
