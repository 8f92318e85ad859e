/*
 * seccomp.c — the sandbox syscall policy as data, and its compilation to BPF.
 *
 * The policy is a deny list on top of "allow": the sandbox user already has no
 * capabilities, so most privileged calls fail anyway; this filter removes the kernel
 * attack surface that an unprivileged user can still reach (namespaces, the new mount
 * API, io_uring, bpf, keyrings, userfaultfd, perf) and the few calls that cross the
 * sandbox boundary without privilege (TIOCSTI on an inherited tty, ptrace of a sibling).
 * Foreign architectures (i386 through int 0x80) and x32 syscall numbers kill the process:
 * libseccomp's bad-arch action covers both (verified: an x32 getpid dies with SIGSYS).
 *
 * Arguments: libseccomp cannot compare one argument twice in one rule, so ranges and
 * "any of these bits" are written as several rows (or expanded, for personality). Int
 * arguments are compared on their low 32 bits (masked) where the kernel ignores the high
 * half, so garbage in the upper half cannot slip past a check.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail_seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>   /* libseccomp (our header is jail_seccomp.h: no clash) */
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Personality flags that change how memory is laid out or executed (ADDR_NO_RANDOMIZE,
 * MMAP_PAGE_ZERO, READ_IMPLIES_EXEC, ADDR_COMPAT_LAYOUT, ADDR_LIMIT_*, UNAME26,
 * FDPIC_FUNCPTRS, SHORT_INODE, WHOLE_SECONDS, STICKY_TIMEOUTS). PER_LINUX and
 * PER_LINUX32 (low byte) and the 0xffffffff query stay allowed. */
#define PERSONA_DANGEROUS 0x0FFE0000ULL

#define DENY(name, why) { name, EPERM, SC_ALWAYS, 0, 0, 0, why }
#define NOSYS(name, why) { name, ENOSYS, SC_ALWAYS, 0, 0, 0, why }
#define CLONE_DENY(flag, why) { "clone", EPERM, SC_ARG_MASKED, 0, flag, flag, why }
#define FAMILY_DENY(fam, why) { "socket", EAFNOSUPPORT, SC_ARG_EQ, 0, 0, fam, why }

const struct jail_sc_rule jail_sc_rules[] = {
    /* Reading or steering another process of the sandbox (and init, if it ever became
     * reachable); also a classic way around seccomp itself on old kernels. */
    DENY("ptrace", "tracing another process: read its memory, rewrite its syscalls"),
    DENY("process_vm_readv", "reading another process's memory without ptrace"),
    DENY("process_vm_writev", "writing another process's memory without ptrace"),
    /* Kernel keyrings are not namespaced: keys leak between sandboxes of one host uid. */
    DENY("keyctl", "kernel keyrings are shared across namespaces"),
    DENY("add_key", "kernel keyrings are shared across namespaces"),
    DENY("request_key", "kernel keyrings are shared across namespaces; upcalls to host helpers"),
    /* Mounts: the root view is fixed at creation; nothing may rearrange it. */
    DENY("mount", "remounting /usr or /workspace, covering files, mount-based attacks"),
    DENY("umount2", "uncovering what a mount hides (old root remnants)"),
    DENY("pivot_root", "changing the root of the mount namespace"),
    DENY("move_mount", "new mount API: attaching mounts"),
    DENY("open_tree", "new mount API: cloning mount trees"),
    DENY("fsopen", "new mount API: creating filesystems (large parser attack surface)"),
    DENY("fsconfig", "new mount API: configuring filesystems"),
    DENY("fsmount", "new mount API: creating mounts"),
    DENY("fspick", "new mount API: reconfiguring existing mounts"),
    DENY("mount_setattr", "new mount API: changing mount flags (e.g. dropping read-only)"),
    DENY("chroot", "chroot-based escapes and confusing path resolution"),
    /* New namespaces give the sandbox user full capabilities inside them, which opens
     * netfilter, mount and other kernel code to it: the most common kernel LPE path. */
    DENY("unshare", "new namespaces: capabilities over kernel subsystems (LPE surface)"),
    DENY("setns", "joining other namespaces through inherited or found ns fds"),
    CLONE_DENY(CLONE_NEWUSER, "clone into a new user namespace: full caps inside it"),
    CLONE_DENY(CLONE_NEWNS, "clone into a new mount namespace"),
    CLONE_DENY(CLONE_NEWPID, "clone into a new pid namespace"),
    CLONE_DENY(CLONE_NEWNET, "clone into a new net namespace: netfilter/nft attack surface"),
    CLONE_DENY(CLONE_NEWIPC, "clone into a new ipc namespace"),
    CLONE_DENY(CLONE_NEWUTS, "clone into a new uts namespace"),
    CLONE_DENY(CLONE_NEWCGROUP, "clone into a new cgroup namespace"),
    /* clone3 passes flags in memory, which seccomp cannot read: ENOSYS makes glibc fall
     * back to clone(), whose flags the rows above inspect. */
    NOSYS("clone3", "flags hidden in a struct; force the clone() fallback"),
    /* Large, bug-prone kernel interfaces with no use in a code sandbox. */
    DENY("bpf", "eBPF verifier and maps: frequent kernel LPE surface"),
    DENY("perf_event_open", "perf: kernel LPE surface and side channels"),
    DENY("userfaultfd", "stalling kernel page faults to win kernel races"),
    NOSYS("io_uring_setup", "io_uring: large LPE surface, bypasses seccomp per-op checks"),
    NOSYS("io_uring_enter", "io_uring: large LPE surface, bypasses seccomp per-op checks"),
    NOSYS("io_uring_register", "io_uring: large LPE surface, bypasses seccomp per-op checks"),
    /* Host-wide administration (also denied by missing capabilities: defence in depth). */
    DENY("kexec_load", "replacing the running kernel"),
    DENY("kexec_file_load", "replacing the running kernel"),
    DENY("init_module", "loading kernel code"),
    DENY("finit_module", "loading kernel code"),
    DENY("delete_module", "unloading kernel code"),
    DENY("reboot", "rebooting the host"),
    DENY("swapon", "host memory administration"),
    DENY("swapoff", "host memory administration"),
    DENY("acct", "host-wide process accounting to a sandbox-chosen file"),
    DENY("syslog", "reading the kernel log (addresses, other tenants' messages)"),
    DENY("open_by_handle_at", "opening files by handle outside the mount view (shocker)"),
    /* Sockets: only unix, inet and inet6. Netlink, packet, vsock, bluetooth, etc. reach
     * host kernel code a sandbox has no use for. One row per gap in the allowed set. */
    FAMILY_DENY(AF_UNSPEC, "AF_UNSPEC: no such family (kept explicit)"),
    FAMILY_DENY(3, "AF_AX25: obsolete radio protocol code"),
    FAMILY_DENY(4, "AF_IPX: obsolete protocol code"),
    FAMILY_DENY(5, "AF_APPLETALK: obsolete protocol code"),
    FAMILY_DENY(6, "AF_NETROM: obsolete radio protocol code"),
    FAMILY_DENY(7, "AF_BRIDGE: bridge control"),
    FAMILY_DENY(8, "AF_ATMPVC: ATM code"),
    FAMILY_DENY(9, "AF_X25: obsolete protocol code"),
    { "socket", EAFNOSUPPORT, SC_ARG_GT, 0, 0, AF_INET6,
      "families above AF_INET6: netlink, packet, vsock, alg, xdp... (and high-half garbage)" },
    /* Terminal injection: pushing characters into a tty's input queue (executed by the
     * shell that owns the tty) and console control. Compared on the low 32 bits, as the
     * kernel reads cmd as an unsigned int. */
    { "ioctl", EPERM, SC_ARG_MASKED, 1, 0xffffffffULL, TIOCSTI,
      "TIOCSTI: typing commands into a terminal outside the sandbox" },
    { "ioctl", EPERM, SC_ARG_MASKED, 1, 0xffffffffULL, TIOCLINUX,
      "TIOCLINUX: console selection/paste injection" },
    /* Personality flags weaken ASLR or make data executable for later execs. */
    { "personality", EPERM, SC_PERSONA, 0, PERSONA_DANGEROUS, 0,
      "ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO...: weakening exploit defences" },
};
const size_t jail_sc_nrules = sizeof jail_sc_rules / sizeof jail_sc_rules[0];

static int add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n, struct scmp_arg_cmp c)
{
    int rc = seccomp_rule_add_array(ctx, action, nr, n, n ? &c : NULL);
    return rc < 0 ? rc : 0;
}

static int add_row(scmp_filter_ctx ctx, const struct jail_sc_rule *r)
{
    int nr = seccomp_syscall_resolve_name(r->syscall);
    if (nr == __NR_SCMP_ERROR)
        return -EINVAL;
    uint32_t action = r->err == JAIL_SC_KILL ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_ERRNO((uint32_t)r->err);
    struct scmp_arg_cmp c = { .arg = r->arg };
    switch (r->match) {
    case SC_ALWAYS:
        return add(ctx, action, nr, 0, c);
    case SC_ARG_MASKED:
        if (r->mask > 0xffffffffULL)
            return -EINVAL;
        c.op = SCMP_CMP_MASKED_EQ;
        c.datum_a = r->mask;
        c.datum_b = r->value;
        return add(ctx, action, nr, 1, c);
    case SC_ARG_GT:
        c.op = SCMP_CMP_GT;
        c.datum_a = r->value;
        return add(ctx, action, nr, 1, c);
    case SC_ARG_EQ:
        c.op = SCMP_CMP_EQ;
        c.datum_a = r->value;
        return add(ctx, action, nr, 1, c);
    case SC_ARG_ANYBIT:
        c.op = SCMP_CMP_MASKED_EQ;
        for (int b = 0; b < 32; b++) {
            if (!(r->mask & (1ULL << b)))
                continue;
            c.datum_a = c.datum_b = 1ULL << b;
            int rc = add(ctx, action, nr, 1, c);
            if (rc)
                return rc;
        }
        return 0;
    case SC_PERSONA:
        /* bit 31 clear and a dangerous flag set → deny */
        c.op = SCMP_CMP_MASKED_EQ;
        for (int b = 0; b < 31; b++) {
            if (!(r->mask & (1ULL << b)))
                continue;
            c.datum_a = (1ULL << b) | 0x80000000ULL;
            c.datum_b = 1ULL << b;
            int rc = add(ctx, action, nr, 1, c);
            if (rc)
                return rc;
        }
        /* bit 31 set and any other bit clear (i.e. not the 0xffffffff query) → deny */
        for (int b = 0; b < 31; b++) {
            c.datum_a = (1ULL << b) | 0x80000000ULL;
            c.datum_b = 0x80000000ULL;
            int rc = add(ctx, action, nr, 1, c);
            if (rc)
                return rc;
        }
        return 0;
    }
    return -EINVAL;
}

int jail_seccomp_compile(struct jail_sc_prog *out)
{
    int rc = -ENOMEM, fd = -1;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        goto out;
    /* i386 (int 0x80) and x32 numbers on x86_64 take the bad-arch path: kill. */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc)
        goto out;
    /* We set no_new_privs ourselves, right before installing. */
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (rc)
        goto out;
    for (size_t i = 0; i < jail_sc_nrules; i++) {
        rc = add_row(ctx, &jail_sc_rules[i]);
        if (rc)
            goto out;
    }
    fd = memfd_create("sandboxd-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = seccomp_export_bpf(ctx, fd);
    if (rc)
        goto out;
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
        (size_t)size > sizeof out->insns) {
        rc = -E2BIG;
        goto out;
    }
    if (pread(fd, out->insns, (size_t)size, 0) != size) {
        rc = -EIO;
        goto out;
    }
    out->len = (unsigned short)((size_t)size / sizeof(struct sock_filter));
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (ctx)
        seccomp_release(ctx);
    return rc;
}

int jail_seccomp_install(const struct jail_sc_prog *p)
{
    struct sock_fprog fp = { .len = p->len, .filter = (struct sock_filter *)(uintptr_t)p->insns };
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
        return -errno;
    return 0;
}
