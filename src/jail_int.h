/*
 * jail_int.h — internal to the jail layer (jail.c, jail_ctl.c): the objects behind the
 * opaque types of jail.h and the functions the two files call in each other. Nothing else
 * includes it. Everything here runs on the loop thread.
 *
 *   jail.c      sandboxes: creation, processes and their exits, destruction, queries
 *   jail_ctl.c  the control channel to a sandbox's init: the queue of messages for it,
 *               the requests waiting for its answers (spawn, adopt), kills
 */
#ifndef SANDBOXD_JAIL_INT_H
#define SANDBOXD_JAIL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "cgroup.h"
#include "jail.h"
#include "jail_proto.h"

#define JAIL_PATH_MAX 512

struct exit_rec {
    pid_t pid;
    int status;
};

struct jail_proc {
    jail *j;
    pid_t pid;                 /* inside the sandbox */
    bool adopted;
    pid_t host_pid;            /* adopted only: 0 until known (jail_for_each_owned) */
    int pidfd;                 /* adopted only */
    uv_poll_t poll;            /* adopted only: pidfd readable = exited */
    uv_timer_t retry;          /* adopted only: waitid said ECHILD, try again */
    int retries;
    int handles;               /* open handles; freed when 0 after close */
    jail_exit_cb cb;
    void *arg;
    jail_proc *prev, *next;
};

/* A message for init, not sent yet (the socket was full). */
struct ctl_msg {
    struct ctl_msg *next;
    struct jp_hdr h;
    int fds[JP_MAX_FDS];       /* our own dups, closed once sent or dropped */
    int nfds;
    jail_req *req;             /* the request it carries, or NULL (a kill) */
    char payload[];            /* h.len bytes */
};

struct jail_req {
    jail *j;
    uint32_t id;
    uint32_t type;             /* JP_SPAWN or JP_ADOPT */
    pid_t ns_pid;              /* JP_ADOPT: the process to adopt */
    bool abandoned;            /* timed out or cancelled after it was sent: the answer is
                                  consumed by the jail, nobody is called */
    int64_t deadline;          /* now_ms() value; unused once abandoned */
    struct ctl_msg *msg;       /* its message while unsent, else NULL */
    jail_started_cb on_started;
    jail_exit_cb on_exit;
    void *arg;
    char what[64];             /* argv[0], for error sentences */
    jail_req *prev, *next;     /* j->reqs, oldest first */
};

struct jail {
    uv_loop_t *loop;
    char id[64];
    unsigned slot;
    char dir[JAIL_PATH_MAX], ws[JAIL_PATH_MAX];
    struct cg cg;
    bool has_cg, ws_tmpfs, network_host;
    int ws_fd;                 /* non-root: the workspace tmpfs made by the init, or -1 */
    char ws_fdpath[32];        /* /proc/self/fd/<ws_fd> */
    bool want_ws_fd;           /* non-root with a disk limit: READY must bring ws_fd */
    uv_process_t outer;
    bool outer_spawned, outer_running;
    int ctl;
    uv_poll_t poll;
    bool poll_init;
    int poll_events;           /* what the poll watches now */
    uv_timer_t timer;          /* creation deadline, request deadlines, destroy ticks */
    bool timer_init;
    pid_t inner;
    int inner_pidfd;
    unsigned long long userns_ino;
    uint32_t next_id;
    jail_proc *procs;
    unsigned reply_timeout_ms; /* copies of the global settings, for jail_ctl.c */
    unsigned max_pending;
    jail_req *reqs, *reqs_tail;
    unsigned nreqs;            /* requests someone waits for (not abandoned) */
    struct ctl_msg *out, *out_tail;
    int send_err;              /* a send failed for good: init is treated as gone */
    struct exit_rec *pending;  /* exits read while tearing down */
    size_t npending, cap_pending;
    bool creating;             /* waiting for init's READY */
    jail_ready_cb on_ready;    /* until it is called */
    void *ready_arg;
    int create_rc;             /* why creation failed (reported once the jail is gone) */
    char create_msg[256];
    bool destroying, dead;
    int ticks;
    int handles;               /* open handles of the jail itself */
    void (*done)(void *);
    void *done_arg;
    jail *prev, *next;
};

/* jail.c */
void jail__set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int64_t jail__now_ms(void);
/* Track p as one of j's processes (its exit is reported through j's procs list). */
void jail__proc_link(jail *j, jail_proc *p);
/* Track a process through a pidfd (taken over, closed on failure too). */
int jail__adopt_pidfd(jail *j, pid_t ns_pid, int fd, jail_exit_cb cb, void *arg,
                      jail_proc **out);
void jail__on_timer(uv_timer_t *t);   /* j->timer: creation, request deadlines, destroy */
void jail__on_ctl(uv_poll_t *h, int status, int events);   /* j->poll: the control socket */

/* jail_ctl.c */
/* Watch the socket for what is needed now (writable only while something is queued). */
void jail__poll_update(jail *j);
/* Send what the socket takes now; called when it is writable. */
void jail__ctl_flush(jail *j);
/* Answer every request with rc and drop the queue: no answer can come any more. */
void jail__reqs_fail_all(jail *j, int rc, const char *why);
/* Answer the requests whose deadline passed (-ETIMEDOUT), then re-arm the timer. */
void jail__reqs_expire(jail *j);
/* Init's answers: JP_SPAWNED, and JP_ADOPTED with its pidfd (fd taken over, or -1). */
void jail__on_spawned(jail *j, const struct jp_hdr *m);
void jail__on_adopted(jail *j, const struct jp_hdr *m, int fd);

#endif
