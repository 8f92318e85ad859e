/*
 * jail_seccomp.h — (named so, not seccomp.h, to avoid shadowing libseccomp's <seccomp.h>)
 * the sandbox's system call filter: a static table of denied calls (see
 * seccomp.c, one commented row per rule), compiled once to classic BPF with libseccomp
 * and installed, as the very last step before exec, by every process that enters a
 * sandbox. Compile in a parent (init, zygote) and install in each child: installing a
 * compiled program is one system call and allocates nothing.
 */
#ifndef SANDBOXD_JAIL_SECCOMP_H
#define SANDBOXD_JAIL_SECCOMP_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

#define JAIL_SC_MAX_INSNS 1024

struct jail_sc_prog {
    unsigned short len;
    struct sock_filter insns[JAIL_SC_MAX_INSNS];
};

/* One row of the policy table, exposed for the unit tests. */
enum jail_sc_match {
    SC_ALWAYS,     /* every call of the syscall */
    SC_ARG_MASKED, /* (arg & mask) == value, low 32 bits only (mask < 2^32) */
    SC_ARG_GT,     /* arg > value, all 64 bits (garbage in the high half also matches) */
    SC_ARG_EQ,     /* arg == value, all 64 bits */
    SC_ARG_ANYBIT, /* any bit of mask set in arg: expanded to one rule per bit */
    SC_PERSONA,    /* personality(): any bit of mask set, or any value other than the
                        0xffffffff query when bit 31 is set: expanded */
};

struct jail_sc_rule {
    const char *syscall; /* name as libseccomp knows it */
    int err;             /* errno returned; JAIL_SC_KILL kills the process */
    enum jail_sc_match match;
    unsigned arg; /* argument index for the SC_ARG_* kinds */
    unsigned long long mask, value;
    const char *reason; /* the attack this row stops */
    /* Optional second condition on another argument, for the SC_ARG_MASKED, SC_ARG_GT
     * and SC_ARG_EQ kinds: the row matches only when also the low 32 bits of argument
     * and_arg equal and_value (e.g. "protocol ... and family == AF_INET"). */
    bool and_cond;
    unsigned and_arg;
    unsigned long long and_value;
};
#define JAIL_SC_KILL (-1)

extern const struct jail_sc_rule jail_sc_rules[];
extern const size_t jail_sc_nrules;

/* What the filter deliberately leaves allowed although it may look surprising in a
 * sandbox, each with the reason it is needed (documentation as data: the unit test
 * checks every entry names a known syscall that no row denies outright). */
struct jail_sc_allowance {
    const char *syscall;
    const char *reason;
};
extern const struct jail_sc_allowance jail_sc_allowances[];
extern const size_t jail_sc_nallowances;

/* Build the filter from the table. 0 or -errno (-EINVAL names a bad row). */
int jail_seccomp_compile(struct jail_sc_prog *out);

/* Install a compiled filter on the calling thread. Needs no_new_privs (or CAP_SYS_ADMIN).
 * Safe between fork and exec: no allocation. */
int jail_seccomp_install(const struct jail_sc_prog *p);

#endif
