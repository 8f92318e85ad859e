/*
 * fake_jail.h — a stand-in for the jail layer (jail.h) in unit tests of the engine: no
 * namespaces, no init, no loop. jail_create records the request; the test decides when
 * and how it ends (fake_jail_ready). jail_destroy records done; fake_jail_destroyed runs
 * it. Linked into a test executable instead of libjail (the linker then never pulls the
 * real jail.o out of the archive).
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

#endif
