/*
 * seccomp.c — the sandbox syscall policy as data, and its compilation to BPF.
 *
 * The policy is a deny list on top of "allow": the sandbox user already has no
 * capabilities, so most privileged calls fail anyway; this filter removes the kernel
 * attack surface that an unprivileged user can still reach (namespaces, the new mount
 * API, io_uring, bpf, keyrings, userfaultfd, perf) and the few calls that cross the
 * sandbox boundary without privilege (TIOCSTI on an inherited tty, ptrace of a sibling,
 * a CLONE_PARENT child of the daemon). Sockets are confined to unix, inet and inet6, and
 * inet to stream/datagram sockets of TCP, UDP and ICMP, for socket() and socketpair()
 * alike (the only calls that take a family: bind, connect and sendto take an address
 * in memory, but only for a socket that already exists). What stays allowed although it
 * may look surprising is listed, with the reason, in jail_sc_allowances.
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
#include <seccomp.h> /* libseccomp (our header is jail_seccomp.h: no clash) */
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <netinet/in.h>
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

/* clang-format off */
#define DENY(name, why) { name, EPERM, SC_ALWAYS, 0, 0, 0, why, false, 0, 0 }
#define NOSYS(name, why) { name, ENOSYS, SC_ALWAYS, 0, 0, 0, why, false, 0, 0 }
#define CLONE_DENY(flag, why) { "clone", EPERM, SC_ARG_MASKED, 0, flag, flag, why, false, 0, 0 }

/* socket() and socketpair() take the same (family, type, protocol), and socketpair()
 * runs the family's socket creation code twice before it can fail with EOPNOTSUPP, so it
 * reaches the same kernel code: every socket row is installed for both. */
#define SOCK_ROW(err, match, arg, mask, value, why, and_c, and_a, and_v) \
    { "socket", err, match, arg, mask, value, why, and_c, and_a, and_v }, \
    { "socketpair", err, match, arg, mask, value, why, and_c, and_a, and_v }
#define FAMILY_DENY(fam, why) SOCK_ROW(EAFNOSUPPORT, SC_ARG_EQ, 0, 0, fam, why, false, 0, 0)
/* The type (low 4 bits of argument 1; the rest are SOCK_NONBLOCK/SOCK_CLOEXEC) and the
 * protocol (argument 2) of an inet or inet6 socket, for the family fam. */
#define INET_TYPE_DENY(fam, err, mask, val, why) \
    SOCK_ROW(err, SC_ARG_MASKED, 1, mask, val, why, true, 0, fam)
#define INET_PROTO_DENY(fam, mask, val, why) \
    SOCK_ROW(EPROTONOSUPPORT, SC_ARG_MASKED, 2, mask, val, why, true, 0, fam)
/* Allowed: types SOCK_STREAM (1) and SOCK_DGRAM (2); protocols 0 (the type's default),
 * IPPROTO_ICMP (1), IPPROTO_TCP (6), IPPROTO_UDP (17), IPPROTO_ICMPV6 (58). The rows
 * cover every other value with aligned blocks (mask clears the low bits of a block). */
#define INET_ROWS(fam, name)                                                                 \
    INET_TYPE_DENY(fam, ESOCKTNOSUPPORT, 0xf, 0, name ": socket type 0 (no such type)"),     \
    INET_TYPE_DENY(fam, EPERM, 0xf, SOCK_RAW, name ": SOCK_RAW, forging packets (needs CAP_NET_RAW)"), \
    INET_TYPE_DENY(fam, ESOCKTNOSUPPORT, 0xc, 4, name ": types 4-7, SOCK_RDM, SOCK_SEQPACKET (SCTP), SOCK_DCCP"), \
    INET_TYPE_DENY(fam, ESOCKTNOSUPPORT, 0x8, 8, name ": types 8-15, SOCK_PACKET (obsolete packet capture)"), \
    INET_PROTO_DENY(fam, 0xfffffffe, 2, name ": protocols 2-3 (IGMP, GGP)"),                 \
    INET_PROTO_DENY(fam, 0xfffffffe, 4, name ": protocols 4-5 (IP-in-IP, ST)"),              \
    INET_PROTO_DENY(fam, 0xffffffff, 7, name ": protocol 7 (CBT)"),                          \
    INET_PROTO_DENY(fam, 0xfffffff8, 8, name ": protocols 8-15 (EGP, PUP...)"),              \
    INET_PROTO_DENY(fam, 0xffffffff, 16, name ": protocol 16 (CHAOS)"),                      \
    INET_PROTO_DENY(fam, 0xfffffffe, 18, name ": protocols 18-19"),                          \
    INET_PROTO_DENY(fam, 0xfffffffc, 20, name ": protocols 20-23"),                          \
    INET_PROTO_DENY(fam, 0xfffffff8, 24, name ": protocols 24-31"),                          \
    INET_PROTO_DENY(fam, 0xfffffff0, 32, name ": protocols 32-47 (DCCP, RSVP, GRE...)"),     \
    INET_PROTO_DENY(fam, 0xfffffff8, 48, name ": protocols 48-55 (ESP, AH...)"),             \
    INET_PROTO_DENY(fam, 0xfffffffe, 56, name ": protocols 56-57"),                          \
    SOCK_ROW(EPROTONOSUPPORT, SC_ARG_GT, 2, 0, IPPROTO_ICMPV6,                                 \
             name ": protocols above 58: SCTP, UDP-Lite, MPTCP, raw... (and high-half garbage)", \
             true, 0, fam)

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
    /* A Python context's parent is the daemon (the zygote creates it with CLONE_PARENT):
     * its CLONE_PARENT children would be the daemon's, outside the sandbox's reaper, and
     * their zombies would outlive the sandbox holding its pids. CLONE_THREAD gives a
     * thread the same parent but threads are reaped by the kernel, and it needs CLONE_VM,
     * so it cannot make a process (the daemon also reaps strays: see reaper.c). */
    CLONE_DENY(CLONE_PARENT, "a child of our parent (the daemon): escapes the sandbox's reaper"),
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
    /* Reaching into another process of the sandbox as ptrace would, without ptrace. */
    DENY("pidfd_getfd", "stealing another process's open files (e.g. a context's channel)"),
    DENY("process_madvise", "steering another process's memory management"),
    /* x86 legacy interfaces with no use in a sandbox and a history of kernel bugs. */
    DENY("modify_ldt", "16-bit segments: kernel entry-code bugs, nothing modern needs it"),
    DENY("iopl", "I/O port access (also needs CAP_SYS_RAWIO)"),
    DENY("ioperm", "I/O port access (also needs CAP_SYS_RAWIO)"),
    DENY("uselib", "a.out library loading: obsolete kernel loader code"),
    /* Sockets: only unix, inet and inet6. Netlink, packet, vsock, bluetooth, etc. reach
     * host kernel code a sandbox has no use for. One row per gap in the allowed set;
     * every row is installed for socket() and socketpair() (see SOCK_ROW). */
    FAMILY_DENY(AF_UNSPEC, "AF_UNSPEC: no such family (kept explicit)"),
    FAMILY_DENY(3, "AF_AX25: obsolete radio protocol code"),
    FAMILY_DENY(4, "AF_IPX: obsolete protocol code"),
    FAMILY_DENY(5, "AF_APPLETALK: obsolete protocol code"),
    FAMILY_DENY(6, "AF_NETROM: obsolete radio protocol code"),
    FAMILY_DENY(7, "AF_BRIDGE: bridge control"),
    FAMILY_DENY(8, "AF_ATMPVC: ATM code"),
    FAMILY_DENY(9, "AF_X25: obsolete protocol code"),
    SOCK_ROW(EAFNOSUPPORT, SC_ARG_GT, 0, 0, AF_INET6,
             "families above AF_INET6: netlink, packet, vsock, alg, xdp... (and high-half garbage)",
             false, 0, 0),
    /* inet and inet6: stream and datagram sockets with their default protocol, TCP, UDP,
     * or ICMP/ICMPv6 (unprivileged ping sockets) only. Any other type or protocol
     * number makes the kernel look up, and autoload as a module, rarely used protocol
     * code (SCTP, DCCP, L2TP, RDS...), a classic source of local privilege escalations;
     * raw sockets need CAP_NET_RAW, which the sandbox lacks (denied here as well). */
    INET_ROWS(AF_INET, "AF_INET"),
    INET_ROWS(AF_INET6, "AF_INET6"),
    /* Terminal injection: pushing characters into a tty's input queue (executed by the
     * shell that owns the tty) and console control. Compared on the low 32 bits, as the
     * kernel reads cmd as an unsigned int. */
    { "ioctl", EPERM, SC_ARG_MASKED, 1, 0xffffffffULL, TIOCSTI,
      "TIOCSTI: typing commands into a terminal outside the sandbox", false, 0, 0 },
    { "ioctl", EPERM, SC_ARG_MASKED, 1, 0xffffffffULL, TIOCLINUX,
      "TIOCLINUX: console selection/paste injection", false, 0, 0 },
    /* Personality flags weaken ASLR or make data executable for later execs. */
    { "personality", EPERM, SC_PERSONA, 0, PERSONA_DANGEROUS, 0,
      "ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO...: weakening exploit defences",
      false, 0, 0 },
};
/* clang-format on */
const size_t jail_sc_nrules = sizeof jail_sc_rules / sizeof jail_sc_rules[0];

/* Allowed on purpose, although a reader may expect them denied. */
const struct jail_sc_allowance jail_sc_allowances[] = {
    { "socket", "AF_UNIX/AF_INET/AF_INET6 TCP, UDP, ICMP: local servers, multiprocessing, "
                "asyncio; the network namespace has only loopback (no route out)" },
    { "socketpair", "AF_UNIX pairs: subprocess pipes, multiprocessing, asyncio self-pipes" },
    { "clone", "threads and fork() (glibc's fallback once clone3 says ENOSYS); namespace "
               "and CLONE_PARENT flags are denied by the rows above" },
    { "fork", "processes: they stay in the sandbox's pid namespace, cgroup and reaper" },
    { "vfork", "posix_spawn and subprocess: same as fork, without copying memory" },
    { "prctl", "thread names, PR_SET_PDEATHSIG, a child subreaper inside the sandbox; the "
               "privileged options need capabilities the sandbox lacks" },
    { "seccomp", "adding a stricter filter on top of ours only restricts the caller" },
    { "setuid", "only uids mapped in the sandbox's user namespace exist (one, 1000)" },
    { "ioctl", "terminals of background processes (ptys), FIONREAD and friends; only "
               "TIOCSTI and TIOCLINUX cross the sandbox boundary and are denied" },
    { "memfd_create", "anonymous files (V8, multiprocessing): charged to the sandbox's memory" },
    { "mknodat", "without CAP_MKNOD only FIFOs and sockets can be made" },
    { "name_to_handle_at", "harmless without open_by_handle_at, which is denied" },
    { "kill", "reaches only the sandbox's own pid namespace" },
    { "personality", "the 0xffffffff query and PER_LINUX/PER_LINUX32 (Python's platform "
                     "module queries it); the flags that weaken ASLR are denied" },
    { "sched_setaffinity", "CPU affinity within the sandbox's own cpuset" },
    { "landlock_create_ruleset", "self-sandboxing: only restricts the caller" },
};
const size_t jail_sc_nallowances = sizeof jail_sc_allowances / sizeof jail_sc_allowances[0];

/* One libseccomp rule: c when n is 1, plus the row's second condition if it has one. */
static int add(scmp_filter_ctx ctx, const struct jail_sc_rule *r, uint32_t action, int nr,
               unsigned n, struct scmp_arg_cmp c)
{
    struct scmp_arg_cmp cs[2] = { c };
    if (n && r->and_cond) {
        cs[n++] = (struct scmp_arg_cmp){ .arg = r->and_arg,
                                         .op = SCMP_CMP_MASKED_EQ,
                                         .datum_a = 0xffffffffULL,
                                         .datum_b = r->and_value };
    }
    int rc = seccomp_rule_add_array(ctx, action, nr, n, n ? cs : NULL);
    return rc < 0 ? rc : 0;
}

static int add_row(scmp_filter_ctx ctx, const struct jail_sc_rule *r)
{
    int nr = seccomp_syscall_resolve_name(r->syscall);
    if (nr == __NR_SCMP_ERROR)
        return -EINVAL;
    uint32_t action =
        r->err == JAIL_SC_KILL ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_ERRNO((uint32_t)r->err);
    struct scmp_arg_cmp c = { .arg = r->arg };
    if (r->and_cond &&
        (r->and_arg == r->arg || r->and_arg > 5 || r->and_value > 0xffffffffULL ||
         (r->match != SC_ARG_MASKED && r->match != SC_ARG_GT && r->match != SC_ARG_EQ)))
        return -EINVAL;
    switch (r->match) {
    case SC_ALWAYS: return add(ctx, r, action, nr, 0, c);
    case SC_ARG_MASKED:
        if (r->mask > 0xffffffffULL)
            return -EINVAL;
        c.op = SCMP_CMP_MASKED_EQ;
        c.datum_a = r->mask;
        c.datum_b = r->value;
        return add(ctx, r, action, nr, 1, c);
    case SC_ARG_GT:
        c.op = SCMP_CMP_GT;
        c.datum_a = r->value;
        return add(ctx, r, action, nr, 1, c);
    case SC_ARG_EQ:
        c.op = SCMP_CMP_EQ;
        c.datum_a = r->value;
        return add(ctx, r, action, nr, 1, c);
    case SC_ARG_ANYBIT:
        c.op = SCMP_CMP_MASKED_EQ;
        for (int b = 0; b < 32; b++) {
            if (!(r->mask & (1ULL << b)))
                continue;
            c.datum_a = c.datum_b = 1ULL << b;
            int rc = add(ctx, r, action, nr, 1, c);
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
            int rc = add(ctx, r, action, nr, 1, c);
            if (rc)
                return rc;
        }
        /* bit 31 set and any other bit clear (i.e. not the 0xffffffff query) → deny */
        for (int b = 0; b < 31; b++) {
            c.datum_a = (1ULL << b) | 0x80000000ULL;
            c.datum_b = 0x80000000ULL;
            int rc = add(ctx, r, action, nr, 1, c);
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
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) || (size_t)size > sizeof out->insns) {
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
