/*
 * fake_jail.h — a stand-in for the jail layer (jail.h) in unit tests of the engine: no
 * namespaces, no init, no loop. jail_create records the request; the test decides when
 * and how it ends (fake_jail_ready). jail_destroy records done; fake_jail_destroyed runs
 * it. jail_spawn records the request with dups of its fds (the test writes to the
 * child's stdout through them, or closes them for EOF); fake_jail_started ends it and
 * fake_jail_exit reports the exit of a fake process. Linked into a test executable
 * instead of libjail (the linker then never pulls the real jail.o out of the archive).
 */
#ifndef SANDBOXD_FAKE_JAIL_H
#define SANDBOXD_FAKE_JAIL_H

#include "jail.h"

#define FAKE_JAIL_MAX 16

struct fake_jail_state {
    int create_rc;              /* what the next jail_create returns at once (0: under way) */
    unsigned creates;           /* jail_create calls that went under way */
    unsigned destroys;          /* jail_destroy calls */
    struct jail_opts last_opts; /* of the last jail_create (id not kept) */
    int spawn_rc;               /* what the next jail_spawn returns at once (0: under way) */
    int adopt_rc;               /* what the next jail_adopt_child returns (0: watched) */
    unsigned spawns, cancels, adopts, kills; /* calls (kills: jail_proc_kill) */
    int last_signal;                         /* of the last jail_proc_kill */
};
extern struct fake_jail_state fake_jail;

void fake_jail_reset(void);
/* End the n-th creation under way (0 = oldest still pending) with rc (0: a jail). */
void fake_jail_ready(unsigned n, int rc, const char *msg);
/* Creations under way, destructions whose done has not run. */
unsigned fake_jail_pending_creates(void);
unsigned fake_jail_pending_destroys(void);
/* Run every pending destruction's done, oldest first. */
void fake_jail_destroyed(void);

/* A spawn under way (not answered, not cancelled): its fds as the child got them (dups,
 * -1 where none; the test may close them, then sets them to -1). */
struct fake_spawn {
    int fds[4]; /* stdin, stdout, stderr, extra */
};
unsigned fake_jail_pending_spawns(void);
struct fake_spawn *fake_jail_spawn(unsigned n);
/* Answer the n-th spawn under way: rc 0 (a fake process with pid, returned) or -errno.
 * Its fds still open are closed. */
jail_proc *fake_jail_started(unsigned n, int rc, const char *msg, pid_t pid);
/* The process exited with a wait status; its exit callback runs, then it is freed. */
void fake_jail_exit(jail_proc *p, int status);
/* The last process jail_adopt_child watched (NULL: none). */
jail_proc *fake_jail_adopted(void);

#endif
