/* Unit tests for zygote_client.c's request bookkeeping, against tests/unit/fake_zygote.c
 * (the zygote protocol without Python or forks): each accepted request's callback runs
 * exactly once, never from inside zyg_fork; replies are matched by id, in whatever order
 * they come; the cap on requests in flight is -EAGAIN; when the zygote dies every request
 * in flight fails with -EPIPE and the zygote comes back after its backoff; zyg_stop fails
 * the rest with -ECANCELED. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "zygote_client.h"

#define FAKE_PID 999999

static uv_loop_t *loop;
static int devnull;

struct reply {
    pid_t pid, ns_pid;
    char msg[128];
    int who;
};
static struct reply replies[16];
static unsigned nreplies;
static bool in_fork;

static void on_forked(pid_t pid, pid_t ns_pid, const char *msg, void *arg)
{
    assert_false(in_fork); /* never from inside zyg_fork */
    assert_true(nreplies < 16);
    struct reply *r = &replies[nreplies++];
    r->pid = pid;
    r->ns_pid = ns_pid;
    snprintf(r->msg, sizeof r->msg, "%s", msg ? msg : "");
    r->who = (int)(intptr_t)arg;
}

static int fork_in(const char *cwd, int who)
{
    static const struct jail_entry e;
    const char *envp[] = { "A=1", NULL };
    in_fork = true;
    int rc = zyg_fork(&e, cwd, envp, devnull, devnull, devnull, on_forked, (void *)(intptr_t)who);
    in_fork = false;
    return rc;
}

/* Run the loop until n replies have come (or 5 s). */
static void wait_replies(unsigned n)
{
    uint64_t t0 = uv_hrtime();
    while (nreplies < n && uv_hrtime() - t0 < 5000000000ull)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(nreplies, n);
}

static int setup(void **state)
{
    (void)state;
    nreplies = 0;
    memset(replies, 0, sizeof replies);
    uint64_t t0 = uv_hrtime(); /* a previous test's zygote may be restarting */
    while (!zyg_available() && uv_hrtime() - t0 < 5000000000ull)
        uv_run(loop, UV_RUN_ONCE);
    assert_true(zyg_available());
    return 0;
}

static void answered_once_each(void **state)
{
    (void)state;
    assert_string_equal(zyg_version(), "0.0-fake");
    assert_int_equal(fork_in("/ok", 1), 0);
    assert_int_equal(fork_in("/ok", 2), 0);
    assert_int_equal(zyg_forks_in_flight(), 2);
    assert_int_equal(nreplies, 0);
    wait_replies(2);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(replies[i].who, (int)i + 1);
        assert_int_equal(replies[i].pid, FAKE_PID);
        assert_int_equal(replies[i].ns_pid, 2);
        assert_string_equal(replies[i].msg, "");
    }
    assert_int_equal(zyg_forks_in_flight(), 0);
}

static void replies_match_by_id(void **state)
{
    (void)state;
    assert_int_equal(fork_in("/hold", 1), 0);
    assert_int_equal(fork_in("/ok", 2), 0);
    wait_replies(2);
    assert_int_equal(replies[0].who, 2); /* the later request was answered first */
    assert_int_equal(replies[0].ns_pid, 2);
    assert_int_equal(replies[1].who, 1);
    assert_int_equal(replies[1].ns_pid, 3);
    assert_int_equal(zyg_forks_in_flight(), 0);
}

static void failure_carries_its_sentence(void **state)
{
    (void)state;
    assert_int_equal(fork_in("/fail", 1), 0);
    wait_replies(1);
    assert_int_equal(replies[0].pid, -ENOSPC);
    assert_string_equal(replies[0].msg, "no room for a context");
}

static void bad_arguments_are_refused_at_once(void **state)
{
    (void)state;
    assert_int_equal(fork_in("relative", 1), -EINVAL);
    const char *bad_env[] = { "NOEQUALS", NULL };
    static const struct jail_entry e;
    assert_int_equal(zyg_fork(&e, "/ok", bad_env, devnull, devnull, devnull, on_forked, NULL),
                     -EINVAL);
    assert_int_equal(zyg_forks_in_flight(), 0);
    assert_int_equal(nreplies, 0);
}

static void in_flight_is_capped(void **state)
{
    (void)state;
    /* max_pending is 3: one held, two whose replies the loop has not read yet; a fourth
     * is refused at once */
    assert_int_equal(fork_in("/hold", 1), 0);
    assert_int_equal(fork_in("/ok", 2), 0);
    assert_int_equal(fork_in("/ok", 3), 0);
    assert_int_equal(fork_in("/ok", 4), -EAGAIN); /* cb never called for it */
    wait_replies(3);
    assert_int_equal(zyg_forks_in_flight(), 0);
    for (unsigned i = 0; i < 3; i++)
        assert_true(replies[i].who != 4);
}

static void death_fails_in_flight_then_restarts(void **state)
{
    (void)state;
    pid_t before = zyg_pid();
    assert_int_equal(fork_in("/hold", 1), 0);
    assert_int_equal(fork_in("/die", 2), 0);
    wait_replies(2);
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(replies[i].pid, -EPIPE);
    assert_int_equal(zyg_forks_in_flight(), 0);
    assert_false(zyg_available());
    assert_true(zyg_restarting()); /* transient: contexts wait for it */
    assert_int_equal(fork_in("/ok", 3), -EAGAIN);
    uint64_t t0 = uv_hrtime(); /* the first backoff is 100 ms */
    while (!zyg_available() && uv_hrtime() - t0 < 5000000000ull)
        uv_run(loop, UV_RUN_ONCE);
    assert_true(zyg_available());
    assert_false(zyg_restarting());
    assert_true(zyg_pid() != before);
    assert_int_equal(fork_in("/ok", 4), 0);
    wait_replies(3);
    assert_int_equal(replies[2].who, 4);
    assert_int_equal(replies[2].pid, FAKE_PID);
}

static void stop_cancels_what_is_left(void **state)
{
    (void)state;
    assert_int_equal(fork_in("/hold", 1), 0);
    zyg_stop();
    assert_int_equal(nreplies, 1);
    assert_int_equal(replies[0].pid, -ECANCELED);
    assert_int_equal(zyg_forks_in_flight(), 0);
    assert_false(zyg_available());
    assert_false(zyg_restarting()); /* stopped for good */
    zyg_stop(); /* a second stop: nothing more */
    assert_int_equal(nreplies, 1);
}

int main(void)
{
    loop = uv_default_loop();
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    char err[256];
    struct zyg_config zc = {
        .zygote_path = FAKE_ZYGOTE,
        .runtimes_dir = "/nonexistent",
        .max_pending = 3,
        .ready_timeout_ms = 5000,
    };
    if (devnull < 0 || zyg_start(loop, &zc, err, sizeof err)) {
        fprintf(stderr, "cannot start the fake zygote: %s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(answered_once_each, setup),
        cmocka_unit_test_setup(replies_match_by_id, setup),
        cmocka_unit_test_setup(failure_carries_its_sentence, setup),
        cmocka_unit_test_setup(bad_arguments_are_refused_at_once, setup),
        cmocka_unit_test_setup(in_flight_is_capped, setup),
        cmocka_unit_test_setup(death_fails_in_flight_then_restarts, setup),
        cmocka_unit_test_setup(stop_cancels_what_is_left, setup),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    zyg_stop();
    uv_run(loop, UV_RUN_DEFAULT); /* the handles close */
    close(devnull);
    return rc;
}
