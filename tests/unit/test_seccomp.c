/*
 * test_seccomp.c — sanity of the seccomp policy table and its compilation: every row
 * names a syscall libseccomp knows and gives a reason; the filter builds and fits; the
 * compiled program, run by a small classic-BPF interpreter over every socket family,
 * type and protocol, allows exactly the documented set for socket() and socketpair()
 * alike; a child with the filter installed gets the exact errnos the table promises
 * while threads, fork and AF_UNIX pairs still work.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seccomp.h>   /* libseccomp: syscall names */

#include "jail_seccomp.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void test_rows_have_reasons(void **state)
{
    (void)state;
    assert_true(jail_sc_nrules > 40);
    for (size_t i = 0; i < jail_sc_nrules; i++) {
        const struct jail_sc_rule *r = &jail_sc_rules[i];
        assert_non_null(r->syscall);
        assert_non_null(r->reason);
        assert_true(strlen(r->reason) >= 10);
        assert_true(r->err == JAIL_SC_KILL || (r->err > 0 && r->err < 4096));
        if (r->match == SC_ARG_MASKED)
            assert_true(r->mask <= 0xffffffffULL);
        if (r->match != SC_ALWAYS && r->match != SC_PERSONA)
            assert_true(r->arg < 6);
    }
}

static void test_compiles(void **state)
{
    (void)state;
    static struct jail_sc_prog p;
    assert_int_equal(jail_seccomp_compile(&p), 0);
    assert_true(p.len > 10);
    assert_true(p.len < JAIL_SC_MAX_INSNS);
    print_message("filter: %u instructions\n", p.len);
}

static void *thread_fn(void *arg)
{
    return arg;
}

/* Install in a child and check errnos; exit code = number of mismatches. */
static void test_installed(void **state)
{
    (void)state;
    static struct jail_sc_prog p;
    assert_int_equal(jail_seccomp_compile(&p), 0);
    pid_t c = fork();
    if (c == 0) {
        int bad = 0;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || jail_seccomp_install(&p))
            _exit(100);
        bad += !(syscall(SYS_ptrace, 0, 0, 0, 0) < 0 && errno == EPERM);
        bad += !(syscall(SYS_io_uring_setup, 1, NULL) < 0 && errno == ENOSYS);
        bad += !(syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS);
        bad += !(unshare(CLONE_NEWUSER) < 0 && errno == EPERM);
        bad += !(socket(AF_NETLINK, SOCK_RAW, 0) < 0 && errno == EAFNOSUPPORT);
        bad += !(socket(5, SOCK_DGRAM, 0) < 0 && errno == EAFNOSUPPORT);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        bad += s < 0;
        int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
        bad += s6 < 0;
        bad += !(syscall(SYS_ioctl, 0, 0xffffffff00000000UL | TIOCSTI, "x") < 0 && errno == EPERM);
        int sv[2];
        bad += !(socketpair(AF_NETLINK, SOCK_RAW, 0, sv) < 0 && errno == EAFNOSUPPORT);
        bad += !(socketpair(AF_PACKET, SOCK_RAW, 0, sv) < 0 && errno == EAFNOSUPPORT);
        bad += !(socketpair(AF_VSOCK, SOCK_STREAM, 0, sv) < 0 && errno == EAFNOSUPPORT);
        bad += !(socketpair(AF_INET, SOCK_STREAM, IPPROTO_SCTP, sv) < 0 && errno == EPROTONOSUPPORT);
        bad += !(socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) < 0 && errno == EPROTONOSUPPORT);
        bad += !(socket(AF_INET6, SOCK_SEQPACKET, 0) < 0 && errno == ESOCKTNOSUPPORT);
        bad += !(socket(AF_INET, 6 /* SOCK_DCCP */, 0) < 0 && errno == ESOCKTNOSUPPORT);
        bad += !(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) < 0 && errno == EPERM);   /* we are root */
        bad += socket(AF_INET, SOCK_STREAM, IPPROTO_TCP) < 0;
        bad += socket(AF_INET6, SOCK_DGRAM, IPPROTO_UDP) < 0;
        bad += socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0;
        char ldt[16] = { 0 };
        bad += !(syscall(SYS_modify_ldt, 1, ldt, sizeof ldt) < 0 && errno == EPERM);
        long cp = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
        if (cp == 0)
            _exit(0);   /* the filter failed: do not run the rest twice */
        bad += !(cp < 0 && errno == EPERM);
        pthread_t th;
        void *ret = NULL;
        bad += pthread_create(&th, NULL, thread_fn, (void *)42) != 0;   /* clone3 → clone */
        bad += pthread_join(th, &ret) != 0 || ret != (void *)42;
        pid_t f = fork();
        if (f == 0)
            _exit(7);
        int fst = 0;
        bad += !(f > 0 && waitpid(f, &fst, 0) == f && WIFEXITED(fst) && WEXITSTATUS(fst) == 7);
        bad += !(syscall(SYS_personality, 0x0040000UL) < 0 && errno == EPERM);
        bad += !(syscall(SYS_personality, 0x80040000UL) < 0 && errno == EPERM);
        bad += syscall(SYS_personality, 0xffffffffUL) < 0;   /* the query stays allowed */
        bad += getpid() <= 0;                                 /* ordinary calls work */
        _exit(bad);
    }
    int st;
    waitpid(c, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- the compiled program, interpreted ------------------------------------------------
 * A classic BPF interpreter for the instructions libseccomp emits, over struct
 * seccomp_data, so that the policy can be checked exhaustively without a syscall per
 * case (and for argument values a real call could not carry). Unknown opcodes fail. */

static struct jail_sc_prog prog_c;

static uint32_t bpf_run(int nr, const uint64_t args[6])
{
    struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
    for (int i = 0; i < 6; i++)
        d.args[i] = args[i];
    const unsigned char *data = (const unsigned char *)&d;
    uint32_t A = 0, X = 0, M[16] = { 0 };
    for (unsigned pc = 0; pc < prog_c.len; pc++) {
        const struct sock_filter *f = &prog_c.insns[pc];
        uint32_t src = BPF_SRC(f->code) == BPF_X ? X : f->k;
        switch (BPF_CLASS(f->code)) {
        case BPF_LD:
            if (BPF_MODE(f->code) == BPF_ABS && BPF_SIZE(f->code) == BPF_W) {
                assert_true(f->k + 4 <= sizeof d);
                memcpy(&A, data + f->k, 4);
            } else if (BPF_MODE(f->code) == BPF_IMM) {
                A = f->k;
            } else if (BPF_MODE(f->code) == BPF_MEM) {
                A = M[f->k & 15];
            } else {
                fail_msg("unexpected load 0x%x", f->code);
            }
            break;
        case BPF_LDX:
            X = BPF_MODE(f->code) == BPF_MEM ? M[f->k & 15] : f->k;
            break;
        case BPF_ST:
            M[f->k & 15] = A;
            break;
        case BPF_STX:
            M[f->k & 15] = X;
            break;
        case BPF_ALU:
            switch (BPF_OP(f->code)) {
            case BPF_AND: A &= src; break;
            case BPF_OR: A |= src; break;
            case BPF_XOR: A ^= src; break;
            case BPF_ADD: A += src; break;
            case BPF_SUB: A -= src; break;
            case BPF_LSH: A <<= src; break;
            case BPF_RSH: A >>= src; break;
            default: fail_msg("unexpected alu 0x%x", f->code);
            }
            break;
        case BPF_JMP:
            if (BPF_OP(f->code) == BPF_JA) {
                pc += f->k;
                break;
            }
            bool t;
            switch (BPF_OP(f->code)) {
            case BPF_JEQ: t = A == src; break;
            case BPF_JGT: t = A > src; break;
            case BPF_JGE: t = A >= src; break;
            case BPF_JSET: t = (A & src) != 0; break;
            default: fail_msg("unexpected jump 0x%x", f->code); return 0;
            }
            pc += t ? f->jt : f->jf;
            break;
        case BPF_RET:
            return BPF_RVAL(f->code) == BPF_A ? A : f->k;
        case BPF_MISC:
            if (BPF_MISCOP(f->code) == BPF_TAX)
                X = A;
            else
                A = X;
            break;
        default:
            fail_msg("unexpected class 0x%x", f->code);
        }
    }
    fail_msg("fell off the end of the program");
    return 0;
}

/* 0 allowed, an errno, or -1 for any other action (kill). */
static int verdict(int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
    const uint64_t args[6] = { a0, a1, a2, 0, 0, 0 };
    uint32_t r = bpf_run(nr, args);
    if ((r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ALLOW)
        return 0;
    if ((r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
        return (int)(r & SECCOMP_RET_DATA);
    return -1;
}

static bool inet_proto_ok(uint64_t p)
{
    return p == 0 || p == IPPROTO_ICMP || p == IPPROTO_TCP || p == IPPROTO_UDP ||
           p == IPPROTO_ICMPV6;
}

/* What the policy promises for socket(fam, type, proto), or -2 for "some denial". */
static int expected_socket(uint64_t fam, uint64_t type, uint64_t proto)
{
    if (fam != AF_UNIX && fam != AF_INET && fam != AF_INET6)
        return EAFNOSUPPORT;
    if (fam == AF_UNIX)
        return 0;
    unsigned t = (unsigned)(type & 0xf);
    bool type_ok = t == SOCK_STREAM || t == SOCK_DGRAM;
    if (type_ok)
        return inet_proto_ok(proto) ? 0 : EPROTONOSUPPORT;
    if (inet_proto_ok(proto))
        return t == SOCK_RAW ? EPERM : ESOCKTNOSUPPORT;
    return -2;   /* both wrong: either row may answer */
}

static void test_socket_policy_exhaustive(void **state)
{
    (void)state;
    assert_int_equal(jail_seccomp_compile(&prog_c), 0);
    static const uint64_t extra_protos[] = { 255, 256, 262, 0x100000006ULL, 0xffffffffULL,
                                             0xffffffff00000000ULL };
    long checked = 0;
    for (uint64_t fam = 0; fam <= 50; fam++) {
        for (uint64_t type = 0; type < 16; type++) {
            for (unsigned pi = 0; pi < 300 + sizeof extra_protos / sizeof extra_protos[0]; pi++) {
                uint64_t proto = pi < 300 ? pi : extra_protos[pi - 300];
                uint64_t ty = type | (pi & 1 ? SOCK_CLOEXEC : 0) | (pi & 2 ? SOCK_NONBLOCK : 0);
                int want = expected_socket(fam, type, proto);
                if (proto > 0xffffffffULL && want == 0)
                    want = fam == AF_UNIX ? 0 : EPROTONOSUPPORT;   /* high-half garbage */
                int a = verdict(SYS_socket, fam, ty, proto);
                int b = verdict(SYS_socketpair, fam, ty, proto);
                if (a != b)
                    fail_msg("socket and socketpair differ for (%llu, %llu, %llu): %d vs %d",
                             (unsigned long long)fam, (unsigned long long)ty,
                             (unsigned long long)proto, a, b);
                bool ok = want == -2 ? (a == EPERM || a == ESOCKTNOSUPPORT || a == EPROTONOSUPPORT)
                                     : a == want;
                if (!ok)
                    fail_msg("socket(%llu, %llu, %llu): got %d, want %d",
                             (unsigned long long)fam, (unsigned long long)ty,
                             (unsigned long long)proto, a, want);
                checked++;
            }
        }
    }
    assert_true(checked > 200000);
    /* high-half garbage in the family cannot smuggle netlink or inet past the rows */
    assert_int_equal(verdict(SYS_socket, 0x100000000ULL | AF_NETLINK, SOCK_RAW, 0), EAFNOSUPPORT);
    int v = verdict(SYS_socketpair, 0x100000000ULL | AF_INET, SOCK_STREAM, 132);
    assert_true(v == EAFNOSUPPORT || v == EPROTONOSUPPORT);   /* two rows match: either */
    assert_int_equal(verdict(SYS_socket, 0x100000000ULL | AF_UNIX, SOCK_STREAM, 0), EAFNOSUPPORT);
}

static void test_clone_policy(void **state)
{
    (void)state;
    assert_int_equal(jail_seccomp_compile(&prog_c), 0);
    const uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                            CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                            CLONE_CHILD_CLEARTID;
    const uint64_t forkf = CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD;
    assert_int_equal(verdict(SYS_clone, thread, 0, 0), 0);              /* pthread_create */
    assert_int_equal(verdict(SYS_clone, forkf, 0, 0), 0);               /* fork() */
    assert_int_equal(verdict(SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0), 0);  /* spawn */
    assert_int_equal(verdict(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0), EPERM);
    assert_int_equal(verdict(SYS_clone, thread | CLONE_PARENT, 0, 0), EPERM);
    assert_int_equal(verdict(SYS_clone, 0xffff000000000000ULL | CLONE_PARENT, 0, 0), EPERM);
    assert_int_equal(verdict(SYS_clone, forkf | CLONE_NEWUSER, 0, 0), EPERM);
    assert_int_equal(verdict(SYS_clone3, 0, 0, 0), ENOSYS);
    assert_int_equal(verdict(SYS_modify_ldt, 1, 0, 16), EPERM);
    assert_int_equal(verdict(SYS_pidfd_getfd, 3, 0, 0), EPERM);
    assert_int_equal(verdict(SYS_getpid, 0, 0, 0), 0);
}

/* Every documented allowance names a syscall libseccomp knows and no row denies outright. */
static void test_allowances_documented(void **state)
{
    (void)state;
    assert_true(jail_sc_nallowances >= 10);
    for (size_t i = 0; i < jail_sc_nallowances; i++) {
        const struct jail_sc_allowance *a = &jail_sc_allowances[i];
        assert_true(seccomp_syscall_resolve_name(a->syscall) != __NR_SCMP_ERROR);
        assert_true(strlen(a->reason) >= 20);
        for (size_t k = 0; k < jail_sc_nrules; k++)
            if (!strcmp(jail_sc_rules[k].syscall, a->syscall))
                assert_int_not_equal(jail_sc_rules[k].match, SC_ALWAYS);
    }
    /* every socket row has its socketpair twin right after it */
    for (size_t k = 0; k < jail_sc_nrules; k++) {
        if (strcmp(jail_sc_rules[k].syscall, "socket"))
            continue;
        assert_true(k + 1 < jail_sc_nrules);
        assert_string_equal(jail_sc_rules[k + 1].syscall, "socketpair");
        assert_int_equal(jail_sc_rules[k + 1].value, jail_sc_rules[k].value);
    }
}

static void test_x32_killed(void **state)
{
    (void)state;
    static struct jail_sc_prog p;
    assert_int_equal(jail_seccomp_compile(&p), 0);
    pid_t c = fork();
    if (c == 0) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || jail_seccomp_install(&p))
            _exit(100);
        syscall(0x40000000L | SYS_getpid);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_have_reasons),
        cmocka_unit_test(test_compiles),
        cmocka_unit_test(test_installed),
        cmocka_unit_test(test_socket_policy_exhaustive),
        cmocka_unit_test(test_clone_policy),
        cmocka_unit_test(test_allowances_documented),
        cmocka_unit_test(test_x32_killed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
