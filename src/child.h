/*
 * child.h — one sandboxed child as its owner (a context's incarnation, a background
 * process, an exec run) sees it: started through the jail, the daemon's ends of its pipes
 * as libuv handles, its exit, and when the memory behind it may go.
 *
 * Life: child_new makes the pipes (raw fds, nothing on the loop yet). Then either
 * child_spawn asks the sandbox's init to start a program with the child's ends as its
 * fds (ops->started tells the outcome later), or the owner hands child_far_fds to someone
 * else (the Python zygote), calls child_open, and later child_adopt with the pid it got.
 * From child_spawn's success or child_open on the child is live: its pipes and a timer
 * are libuv handles. A child that never became live is given up with child_discard.
 *
 * Ownership: the owner gets ops calls until it lets go with child_release (idempotent),
 * which cancels a start still waiting for init and closes every handle; nothing but
 * ops->freed is called after it. The child frees itself, and then calls ops->freed so the
 * owner frees what it kept, once all of these hold: the owner let go, no hold is left
 * (child_hold), every handle is closed, and its exit is known (or it never started).
 * freed never runs inside child_release or any other child_* call but child_unhold; so
 * an owner may use its own memory after releasing, until freed.
 *
 * Reading: nothing is read until child_reading(ch, true). ops->read gets the bytes, or
 * UV_ENOBUFS (the owner's alloc gave no room; the pipe stays open), or another negative
 * code for EOF or an error, after which the pipe is already closed. Nothing here charges
 * budgets: what the owner keeps of the bytes is the owner's to count (budget.h).
 */
#ifndef SANDBOXD_CHILD_H
#define SANDBOXD_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "jail.h"

struct sandbox;

typedef struct child child;

/* The pipes a child may have, by index; child_new takes a mask of CHILD_BIT(index). */
enum child_pipe {
    CHILD_OUT = 0,  /* its stdout, read by the daemon */
    CHILD_ERR = 1,  /* its stderr, read */
    CHILD_CHAN = 2, /* a socketpair, its fd 3 (the context channel), read and written */
    CHILD_IN = 3,   /* its stdin, written by the daemon */
    CHILD_NPIPES = 4,
};
#define CHILD_BIT(i) (1u << (i))

struct child_ops {
    /* Room for the next read of pipe i (NULL: a shared 64 KiB chunk); a 0-length buffer
     * makes libuv report UV_ENOBUFS. */
    void (*alloc)(void *owner, int i, uv_buf_t *b);
    /* n > 0 bytes of pipe i; UV_ENOBUFS; or EOF/an error (n < 0; the pipe is closed). */
    void (*read)(void *owner, int i, ssize_t n, const char *data);
    /* child_spawn's outcome: rc 0 it runs (its exit comes later), or -errno and msg (a
     * sentence, may be NULL): it never ran. */
    void (*started)(void *owner, int rc, const char *msg);
    /* It exited and was reaped: a wait(2) status. */
    void (*exited)(void *owner, int status);
    /* The child's timer (child_timer_start) fired. */
    void (*timer)(void *owner);
    /* The child is gone (see the top): the owner frees its own part. */
    void (*freed)(void *owner);
};

/* A child with the pipes of mask (CHILD_BIT of each) made, all O_CLOEXEC. 0, or -errno
 * with nothing left open. */
int child_new(uv_loop_t *loop, unsigned mask, const struct child_ops *ops, void *owner,
              child **out);
/* The child's ends of its pipes, by index (-1 for a pipe it does not have). */
void child_far_fds(const child *ch, int fds[CHILD_NPIPES]);
/* Give up a child that never became live: every fd closed, freed, no ops called. */
void child_discard(child *ch);

/* Start argv in the sandbox (jail_spawn) with CHILD_IN or /dev/null as stdin, CHILD_OUT
 * and CHILD_ERR (both needed) as stdout and stderr, CHILD_CHAN (or nothing) as fd 3.
 * 0: live, ops->started comes later. -errno with err set: refused at once, nothing
 * started; the child is as before (child_discard it). */
int child_spawn(child *ch, jail *j, const char *const *argv, const char *const *envp,
                const char *cwd, char *err, size_t errlen);
/* Live without child_spawn: someone else starts the process on child_far_fds (which are
 * closed here: they have been passed on). */
void child_open(child *ch);
/* The process someone else started (a zygote child, the daemon's own child) is host_pid
 * (ns_pid inside): its exit is watched from now on (jail_adopt_child). After
 * child_release it is killed instead. 0, or -errno when it could not be watched (then
 * it is not; child_kill still reaches host_pid). */
int child_adopt(child *ch, jail *j, pid_t host_pid, pid_t ns_pid);

/* Keep the child's memory (and so the owner's) while something outside, holding the
 * owner as its argument, has not answered yet (the zygote's fork). child_unhold may free
 * it (ops->freed) when it was the last thing to wait for. */
void child_hold(child *ch);
void child_unhold(child *ch);

/* Start or stop reading every open read pipe (out, err, chan); either may be repeated.
 * A pipe libuv refuses to read is closed (no output from it; no read call says so). */
void child_reading(child *ch, bool on);
bool child_is_open(const child *ch, int i);
/* The daemon's end of pipe i while it is open, else -1 (to read it without waiting). */
int child_fd(const child *ch, int i);
/* Pipe i as a stream to write on while it is open, else NULL. */
uv_stream_t *child_stream(child *ch, int i);
void child_close(child *ch, int i);
/* stdout or stderr is still open (an orphan may hold it after the exit); close both. */
bool child_output_open(const child *ch);
void child_close_output(child *ch);

/* The timer: ops->timer after ms, counting only the time sandbox sb was not suspended
 * (sb NULL: wall time). Stopped by child_timer_stop and child_release. */
void child_timer_start(child *ch, const struct sandbox *sb, uint64_t ms);
void child_timer_stop(child *ch);

/* SIGKILL to its process group (SIGCONT first); before it is watched, to host_pid; a
 * start still waiting for init is cancelled (the jail ends it if it starts). Nothing once
 * it has exited. */
void child_kill(child *ch);
/* sig to its process group, when it runs and is watched. */
void child_signal(child *ch, int sig);
/* Its pid on the host while it runs (0 when unknown or gone): the zygote's answer, or
 * for a spawned child looked up once among the init's children (jail_proc_host_pid). */
pid_t child_host_pid(child *ch);
/* Its pid inside the sandbox, once started (0 before). */
pid_t child_pid(const child *ch);
/* child_spawn's request still waits for init's answer. */
bool child_starting(const child *ch);
/* Its exit is watched and has not come yet. */
bool child_watched(const child *ch);

/* The owner lets go (see the top). */
void child_release(child *ch);

/* "exitCode" for a wait status (128+signal when killed, as shells report it) and the
 * signal's name, or NULL. */
int child_exit_code(int status, const char **signame);

#endif
