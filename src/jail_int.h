/*
 * jail_int.h — internal to the jail layer (jail.c, jail_create.c, jail_teardown.c,
 * jail_ctl.c): the objects behind the opaque types of jail.h, the layer's global state,
 * and the functions the files call in each other. Nothing else includes it. Everything
 * here runs on the loop thread.
 *
 *   jail.c           global set-up, init's messages, processes and their exits, queries
 *   jail_create.c    creating a sandbox: slot, directories, cgroup, starting the init
 *   jail_teardown.c  destroying one: kill, wait, report, remove, free; the jail's timer
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
#define JAIL_CTL_RECV_MAX 1024 /* answers from init: a header and a sentence at most */

/* The layer's settings and state, set by jail_global_init (jail.c). */
struct jail_globals {
    bool inited;
    uv_loop_t *loop;
    struct jail_features feat;
    struct cg_sys cg;
    char sbx_dir[JAIL_PATH_MAX];
    char init_path[JAIL_PATH_MAX];
    char runtimes_dir[JAIL_PATH_MAX];
    int runtimes_mnt; /* private tmpfs copy of the runtimes (detached), or -1 */
    uid_t uid_base;
    unsigned max;
    unsigned start_timeout_ms, reply_timeout_ms, max_pending;
    uint64_t spawn_reserve;
    unsigned char *slots; /* max bytes: 1 = slot in use (its uid range taken) */
    char keep_file[64];   /* see struct jail_global */
    char site_dirs[1024]; /* see struct jail_global */
    jail *jails;          /* every jail not yet freed */
};
extern struct jail_globals jail__g;

struct exit_rec {
    pid_t pid;
    int status;
};

struct jail_proc {
    jail *j;
    pid_t pid; /* inside the sandbox */
    bool adopted;
    pid_t host_pid;   /* adopted only: 0 until known (jail_for_each_owned) */
    int pidfd;        /* adopted only */
    uv_poll_t poll;   /* adopted only: pidfd readable = exited */
    uv_timer_t retry; /* adopted only: waitid said ECHILD, try again */
    int retries;
    int handles; /* open handles; freed when 0 after close */
    jail_exit_cb cb;
    void *arg;
    jail_proc *prev, *next;
};

/* A message for init, not sent yet (the socket was full). */
struct ctl_msg {
    struct ctl_msg *next;
    struct jp_hdr h;
    int fds[JP_MAX_FDS]; /* our own dups, closed once sent or dropped */
    int nfds;
    jail_req *req;  /* the request it carries, or NULL (a kill) */
    char payload[]; /* h.len bytes */
};

struct jail_req {
    jail *j;
    uint32_t id;
    uint32_t type;       /* JP_SPAWN or JP_ADOPT */
    pid_t ns_pid;        /* JP_ADOPT: the process to adopt */
    bool abandoned;      /* timed out or cancelled after it was sent: the answer is
                                  consumed by the jail, nobody is called */
    int64_t deadline;    /* now_ms() value; unused once abandoned */
    struct ctl_msg *msg; /* its message while unsent, else NULL */
    jail_started_cb on_started;
    jail_exit_cb on_exit;
    void *arg;
    char what[64];         /* argv[0], for error sentences */
    jail_req *prev, *next; /* j->reqs, oldest first */
};

struct jail {
    uv_loop_t *loop;
    char id[64];
    unsigned slot;
    char dir[JAIL_PATH_MAX], ws[JAIL_PATH_MAX];
    struct cg cg;
    bool has_cg, ws_tmpfs, network_host;
    bool ws_image;      /* root: the workspace is an ext4 image the init mounts at ws */
    bool keep;          /* the directory stays on disk (jail_release; a failed restore) */
    bool restore;       /* made from a kept directory (jail_opts.restore) */
    int ws_fd;          /* non-root: the workspace tmpfs made by the init, or -1 */
    char ws_fdpath[32]; /* /proc/self/fd/<ws_fd> */
    bool want_ws_fd;    /* non-root with a disk limit: READY must bring ws_fd */
    uv_process_t outer;
    bool outer_spawned, outer_running;
    int ctl;
    uv_poll_t poll;
    bool poll_init;
    int poll_events;  /* what the poll watches now */
    uv_timer_t timer; /* creation deadline, request deadlines, destroy ticks */
    bool timer_init;
    pid_t inner;
    int inner_pidfd;
    unsigned long long userns_ino;
    uint32_t next_id;
    jail_proc *procs;
    unsigned reply_timeout_ms; /* copies of the global settings, for jail_ctl.c */
    unsigned max_pending;
    jail_req *reqs, *reqs_tail;
    unsigned nreqs; /* requests someone waits for (not abandoned) */
    struct ctl_msg *out, *out_tail;
    int send_err;             /* a send failed for good: init is treated as gone */
    struct exit_rec *pending; /* exits read while tearing down */
    size_t npending, cap_pending;
    bool creating;          /* waiting for init's READY */
    jail_ready_cb on_ready; /* until it is called */
    void *ready_arg;
    int create_rc; /* why creation failed (reported once the jail is gone) */
    char create_msg[256];
    bool destroying, dead;
    bool frozen;       /* suspended (jail_freeze): request deadlines paused */
    int64_t frozen_at; /* jail__now_ms() when it was frozen */
    int ticks;
    int handles; /* open handles of the jail itself */
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
int jail__adopt_pidfd(jail *j, pid_t ns_pid, int fd, jail_exit_cb cb, void *arg, jail_proc **out);
void jail__on_timer(uv_timer_t *t); /* j->timer: creation, request deadlines, destroy */
void jail__on_ctl(uv_poll_t *h, int status, int events); /* j->poll: the control socket */

/* a + "/" + b into out (n bytes); -ENAMETOOLONG when it does not fit. */
int jail__path_join(char *out, size_t n, const char *a, const char *b);
/* Report p's exit (status: a wait status) to its owner, then free p once its handles are
 * closed. */
void jail__proc_finish(jail_proc *p, int status);
/* Report the exits read while tearing down (jail__pending_push). */
void jail__flush_pending(jail *j);
/* Reap the process pidfd names: 1 when reaped (*status set), 0 when it is not our child
 * (yet), -errno otherwise. */
int jail__reap_pidfd(int pidfd, int *status);
/* Init is gone (EOF or a send that failed for good): fail what waits for it. */
void jail__ctl_dead(jail *j);
void jail__on_outer_exit(uv_process_t *p, int64_t exit_status, int term_signal);

/* jail_create.c */
/* Init said READY / creation failed after init started: ends the creation wait, once. */
void jail__create_ready(jail *j);
void jail__create_failed(jail *j, int rc, const char *msg);

/* jail_teardown.c */
/* Start tearing down (jail_destroy, a failed creation); done is called once all is gone. */
void jail__teardown_start(jail *j);
/* Everything is dead (or we gave up waiting): report, remove, close. */
void jail__finish(jail *j);
/* Free j if its last handle is closed (then on_ready of a failed creation, and done). */
void jail__free_if_closed(jail *j);
/* Remember an exit read while tearing down, reported by jail__flush_pending. */
void jail__pending_push(jail *j, pid_t pid, int status);
/* Remove a directory tree without following links. 0 or -errno. */
int jail__rm_tree(const char *path);

/* jail_ctl.c */
/* Watch the socket for what is needed now (writable only while something is queued). */
void jail__poll_update(jail *j);
/* Send what the socket takes now; called when it is writable. */
void jail__ctl_flush(jail *j);
/* Answer every request with rc and drop the queue: no answer can come any more. */
void jail__reqs_fail_all(jail *j, int rc, const char *why);
/* Answer the requests whose deadline passed (-ETIMEDOUT), then re-arm the timer. */
void jail__reqs_expire(jail *j);
/* The sandbox was frozen (pause): stop the deadlines; thawed: push every deadline back by
 * the time it was frozen and re-arm. */
void jail__reqs_pause(jail *j, bool pause);
/* Init's answers: JP_SPAWNED, and JP_ADOPTED with its pidfd (fd taken over, or -1). */
void jail__on_spawned(jail *j, const struct jp_hdr *m);
void jail__on_adopted(jail *j, const struct jp_hdr *m, int fd);

#endif
