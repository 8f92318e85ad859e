/*
 * zygote.h — shared between the parts of sandboxd-zygote (one program, started once by
 * the daemon):
 *
 *   zygote.c        main() and the request loop: receive, validate, reply
 *   zygote_start.c  start-up (environment, embedded Python, preload, heap trimming)
 *   zygote_spawn.c  creating a context, never waiting for a child (serve_direct,
 *                   serve_forked); these three share zygote_int.h
 *   zygote_child.c  what a forked child does: fds, jail_enter(), environment, serve()
 *   zygote_proto.c  framing of the control socket (zygote_proto.h)
 */
#ifndef SANDBOXD_ZYGOTE_H
#define SANDBOXD_ZYGOTE_H

#include <stddef.h>
#include <stdint.h>

#include "../jail_enter.h"
#include "zygote_proto.h"

/* A validated fork request. Strings point into the received datagram. */
struct zyg_req {
    uint32_t id;
    struct jail_entry entry;
    const char *cwd;
    const char *env[ZYG_MAX_ENV + 1]; /* NULL-terminated */
    size_t nenv;
    int channel_fd, stdout_fd, stderr_fd;
};

/* Records on the report pipe are int32 in native order. The intermediate writes either
 * -errno (-4095..-1: it failed before the second fork) or the grandchild's host pid (> 0,
 * written by jail_enter()); the grandchild writes one tagged record, so the two writers
 * can race without ambiguity (pid_max is at most 2^22). */
#define ZYG_REPORT_INSIDE_PID(pid) ((int32_t)(0x40000000 | (int32_t)(pid)))
#define ZYG_REPORT_INSIDE_ERR(e) ((int32_t)(-0x40000000 - (int32_t)(e)))
#define ZYG_REPORT_IS_INSIDE(v) ((v) >= 0x40000000 || (v) <= -0x40000000)

/* Runs in the freshly forked child (PyOS_AfterFork_Child already called) and never
 * returns: the context runs sandboxd_runtime.serve(3) and _exit()s with its value; any
 * failure _exit(127)s.
 * pidfd >= 0 (the direct way): the child was created in the sandbox's pid namespace
 * already (pidfd names the sandbox process whose namespaces to join; no second fork);
 * report_fd is -1, and a failure is told on the context's channel as a "failed" message
 * (the zygote replied at clone time and waits for nothing).
 * pidfd -1 (the double-fork way): jail_enter() forks into the sandbox, and the records
 * above go to report_fd (the zygote's reply waits for them, without blocking). */
void zyg_child_main(const struct zyg_req *r, int report_fd, int pidfd,
                    const struct jail_sc_prog *prog) __attribute__((noreturn));

/* Drop the zygote's receive buffer and parsed request (zygote.c): the zygote right after
 * each fork, the child once it has built its environment (r is zeroed: not used after). */
void zyg_forget_request(void);

/* Prepared in the zygote before any fork (zygote_start.c), used by the child. */
struct zyg_python {
    void *enter_fn; /* PyObject *: _enter(env_list) */
    void *serve_fn; /* PyObject *: sandboxd_runtime.serve */
};
extern struct zyg_python zyg_py;

#endif
