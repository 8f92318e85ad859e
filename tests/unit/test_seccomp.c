/*
 * test_seccomp.c — sanity of the seccomp policy table and its compilation: every row
 * names a syscall libseccomp knows and gives a reason; the filter builds and fits; a
 * child with the filter installed gets the exact errnos the table promises.
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
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail_seccomp.h"

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
        cmocka_unit_test(test_x32_killed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
