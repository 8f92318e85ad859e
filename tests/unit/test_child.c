/* Unit tests for child.c on a fake jail layer (fake_jail.c) and a real libuv loop: a
 * child started through the jail delivers its output and its exit to its owner, in
 * whatever order the exit and the pipes' EOF come; an owner that lets go early (a start
 * still waiting, a process still running, a zygote fork not answered) gets no more calls;
 * a start refused at once or failing later leaves nothing behind. In every path the
 * child is freed (ops->freed) exactly once, never inside the owner's own calls, and no fd
 * stays open. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "child.h"
#include "fake_jail.h"

/* What the owner was told. */
struct owner {
    child *ch;
    unsigned started, exited, timers, freed, eofs[CHILD_NPIPES];
    int start_rc, status;
    char out[256];
    size_t outlen;
    bool release_on_exit; /* let go from inside the exit call */
};

static void o_read(void *arg, int i, ssize_t n, const char *data)
{
    struct owner *o = arg;
    assert_false(o->freed);
    if (n < 0) {
        assert_false(child_is_open(o->ch, i)); /* closed before the owner hears of EOF */
        o->eofs[i]++;
        return;
    }
    assert_true(o->outlen + (size_t)n <= sizeof o->out);
    memcpy(o->out + o->outlen, data, (size_t)n);
    o->outlen += (size_t)n;
}

static void o_started(void *arg, int rc, const char *msg)
{
    struct owner *o = arg;
    (void)msg;
    o->started++;
    o->start_rc = rc;
}

static void o_exited(void *arg, int status)
{
    struct owner *o = arg;
    o->exited++;
    o->status = status;
    if (o->release_on_exit) {
        child_release(o->ch);
        assert_int_equal(o->freed, 0); /* never inside the owner's own call */
    }
}

static void o_timer(void *arg)
{
    struct owner *o = arg;
    o->timers++;
}

static void o_freed(void *arg)
{
    struct owner *o = arg;
    o->freed++;
}

static const struct child_ops OPS = {
    .read = o_read,
    .started = o_started,
    .exited = o_exited,
    .timer = o_timer,
    .freed = o_freed,
};

static const char *const ARGV[] = { "/bin/true", NULL };
static const char *const ENVP[] = { NULL };
static jail *const J = NULL; /* the fake jail never looks at it */
static const unsigned OUT_ERR = CHILD_BIT(CHILD_OUT) | CHILD_BIT(CHILD_ERR);

static uv_loop_t loop;
static int fds_before;

static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            n++;
    return n;
}

/* Run the loop until nothing is left to do on it (or give up: a test that needs more
 * than a few rounds is broken). */
static void spin(void)
{
    for (int i = 0; i < 100 && uv_run(&loop, UV_RUN_NOWAIT); i++)
        ;
}

static int setup(void **state)
{
    (void)state;
    fake_jail_reset();
    fds_before = count_fds();
    assert_int_equal(uv_loop_init(&loop), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    spin();
    fake_jail_reset();
    assert_int_equal(uv_loop_close(&loop), 0); /* every handle closed */
    assert_int_equal(count_fds(), fds_before); /* and every fd */
    return 0;
}

/* Write to the child's end of pipe fd slot k of spawn 0, or close it (data NULL). */
static void child_writes(unsigned k, const char *data)
{
    struct fake_spawn *s = fake_jail_spawn(0);
    if (data) {
        assert_int_equal(write(s->fds[k], data, strlen(data)), (ssize_t)strlen(data));
    } else {
        close(s->fds[k]);
        s->fds[k] = -1;
    }
}

static void spawn_and_start(struct owner *o, unsigned mask)
{
    char err[128];
    assert_int_equal(child_new(&loop, mask, &OPS, o, &o->ch), 0);
    assert_int_equal(child_spawn(o->ch, J, ARGV, ENVP, "/", err, sizeof err), 0);
    assert_true(child_starting(o->ch));
    child_reading(o->ch, true);
}

/* Output, then EOF on both pipes, then the exit: the owner sees all, then lets go. */
static void output_then_exit(void **state)
{
    (void)state;
    struct owner o = { 0 };
    spawn_and_start(&o, OUT_ERR);
    child_reading(o.ch, true); /* again: already reading, nothing changes */
    assert_true(child_is_open(o.ch, CHILD_OUT) && child_is_open(o.ch, CHILD_ERR));
    child_writes(1, "hello ");
    child_writes(2, "world");
    spin();
    assert_int_equal(o.outlen, 11);
    /* the started answer closes the fake's dups: keep stdout open through it */
    struct fake_spawn *s = fake_jail_spawn(0);
    int out = dup(s->fds[1]);
    jail_proc *p = fake_jail_started(0, 0, NULL, 42);
    assert_int_equal(o.started, 1);
    assert_int_equal(o.start_rc, 0);
    assert_int_equal(child_pid(o.ch), 42);
    assert_true(child_watched(o.ch));
    assert_int_equal(write(out, "!", 1), 1);
    close(out);
    spin();
    assert_int_equal(o.outlen, 12);
    assert_int_equal(o.eofs[CHILD_OUT], 1);
    assert_int_equal(o.eofs[CHILD_ERR], 1);
    fake_jail_exit(p, 3 << 8);
    assert_int_equal(o.exited, 1);
    assert_int_equal(o.status, 3 << 8);
    assert_false(child_watched(o.ch));
    child_release(o.ch);
    child_release(o.ch); /* idempotent */
    assert_int_equal(o.freed, 0);
    spin();
    assert_int_equal(o.freed, 1);
}

/* The exit first, with the pipes still open (an orphan holds them): the owner's drain
 * timer runs, the owner closes the pipes and lets go. */
static void exit_before_pipes_close(void **state)
{
    (void)state;
    struct owner o = { 0 };
    spawn_and_start(&o, OUT_ERR);
    struct fake_spawn *s = fake_jail_spawn(0);
    int out = dup(s->fds[1]), err = dup(s->fds[2]);
    jail_proc *p = fake_jail_started(0, 0, NULL, 7);
    fake_jail_exit(p, 0);
    assert_int_equal(o.exited, 1);
    assert_true(child_is_open(o.ch, CHILD_OUT));
    child_timer_start(o.ch, NULL, 1);
    /* NOWAIT, not ONCE: a ONCE run that fires the timer first then sleeps in poll on
     * the open pipes, which never wake it */
    for (int i = 0; i < 5000 && !o.timers; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (!o.timers)
            usleep(1000);
    }
    assert_int_equal(o.timers, 1);
    child_close(o.ch, CHILD_OUT);
    child_close(o.ch, CHILD_ERR);
    assert_int_equal(child_fd(o.ch, CHILD_OUT), -1);
    child_release(o.ch);
    spin();
    assert_int_equal(o.freed, 1);
    assert_int_equal(o.eofs[CHILD_OUT], 0); /* closed by the owner: no EOF call */
    close(out);
    close(err);
}

/* EOF on both pipes first, the exit later; the owner lets go from inside the exit. */
static void exit_after_pipes_close(void **state)
{
    (void)state;
    struct owner o = { .release_on_exit = true };
    spawn_and_start(&o, OUT_ERR);
    jail_proc *p = fake_jail_started(0, 0, NULL, 9); /* closes the child's ends: EOF */
    spin();
    assert_int_equal(o.eofs[CHILD_OUT], 1);
    assert_int_equal(o.eofs[CHILD_ERR], 1);
    assert_int_equal(o.freed, 0); /* its exit is not known yet */
    fake_jail_exit(p, SIGKILL);
    assert_int_equal(o.exited, 1);
    spin();
    assert_int_equal(o.freed, 1);
}

/* The owner lets go while init has not answered: the request is cancelled, no call
 * comes, and the child is freed once its handles are closed. */
static void release_while_starting(void **state)
{
    (void)state;
    struct owner o = { 0 };
    spawn_and_start(&o, OUT_ERR | CHILD_BIT(CHILD_IN));
    child_release(o.ch);
    assert_int_equal(fake_jail.cancels, 1);
    assert_int_equal(fake_jail_pending_spawns(), 0);
    assert_int_equal(o.freed, 0);
    spin();
    assert_int_equal(o.freed, 1);
    assert_int_equal(o.started, 0);
}

/* The owner lets go while the process runs: killed by the owner, the child waits for the
 * exit (reported to nobody) before it is freed. */
static void release_while_running(void **state)
{
    (void)state;
    struct owner o = { 0 };
    spawn_and_start(&o, OUT_ERR);
    jail_proc *p = fake_jail_started(0, 0, NULL, 5);
    child_kill(o.ch);
    assert_int_equal(fake_jail.kills, 1);
    assert_int_equal(fake_jail.last_signal, SIGKILL);
    child_release(o.ch);
    spin();
    assert_int_equal(o.freed, 0); /* the exit is still to come */
    fake_jail_exit(p, SIGKILL);
    assert_int_equal(o.exited, 0); /* let go of: not told */
    assert_int_equal(o.freed, 1);
}

/* A start refused at once: -errno, nothing started; the child is discarded, nothing is
 * called and no fd is left (teardown counts them). */
static void spawn_refused(void **state)
{
    (void)state;
    struct owner o = { 0 };
    char err[128];
    fake_jail.spawn_rc = -E2BIG;
    assert_int_equal(child_new(&loop, OUT_ERR | CHILD_BIT(CHILD_CHAN), &OPS, &o, &o.ch), 0);
    assert_int_equal(child_spawn(o.ch, J, ARGV, ENVP, "/", err, sizeof err), -E2BIG);
    assert_string_equal(err, "fake jail_spawn refusal");
    child_discard(o.ch);
    assert_int_equal(o.freed + o.started + o.exited, 0);
}

/* A start that fails later (the program is missing): started says so, no exit comes. */
static void spawn_fails_later(void **state)
{
    (void)state;
    struct owner o = { 0 };
    spawn_and_start(&o, OUT_ERR);
    assert_null(fake_jail_started(0, -ENOENT, "no such program", 0));
    assert_int_equal(o.started, 1);
    assert_int_equal(o.start_rc, -ENOENT);
    assert_false(child_watched(o.ch));
    child_release(o.ch);
    spin();
    assert_int_equal(o.freed, 1);
    assert_int_equal(o.exited, 0);
}

/* The zygote path: the owner passes the far ends on, holds the child while the fork is
 * not answered, lets go meanwhile; the answer then kills the process instead of
 * watching it, and the unhold frees the child. */
static void hold_outlives_release(void **state)
{
    (void)state;
    struct owner o = { 0 };
    int fds[CHILD_NPIPES];
    assert_int_equal(child_new(&loop, OUT_ERR | CHILD_BIT(CHILD_CHAN), &OPS, &o, &o.ch), 0);
    child_far_fds(o.ch, fds);
    assert_true(fds[CHILD_CHAN] >= 0 && fds[CHILD_OUT] >= 0 && fds[CHILD_ERR] >= 0);
    assert_int_equal(fds[CHILD_IN], -1);
    child_hold(o.ch);
    child_open(o.ch); /* the far ends were passed on: closed */
    child_release(o.ch);
    spin();
    assert_int_equal(o.freed, 0); /* held */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pause();
        _exit(0);
    }
    assert_int_equal(child_adopt(o.ch, J, pid, 2), 0);
    assert_int_equal(fake_jail.adopts, 0); /* let go of: killed, not watched */
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    child_unhold(o.ch);
    assert_int_equal(o.freed, 1);
}

/* The zygote path while the owner still holds on: the adopted process's exit comes
 * through the jail. */
static void adopt_watches_exit(void **state)
{
    (void)state;
    struct owner o = { 0 };
    assert_int_equal(child_new(&loop, OUT_ERR | CHILD_BIT(CHILD_CHAN), &OPS, &o, &o.ch), 0);
    child_hold(o.ch);
    child_open(o.ch);
    assert_int_equal(child_adopt(o.ch, J, 12345, 3), 0);
    child_unhold(o.ch);
    assert_true(child_watched(o.ch));
    assert_int_equal(child_pid(o.ch), 3);
    child_signal(o.ch, SIGINT);
    assert_int_equal(fake_jail.last_signal, SIGINT);
    fake_jail_exit(fake_jail_adopted(), 0);
    assert_int_equal(o.exited, 1);
    child_release(o.ch);
    spin();
    assert_int_equal(o.freed, 1);
}

/* The channel is a socketpair the owner writes on and reads from. */
static void channel_both_ways(void **state)
{
    (void)state;
    struct owner o = { 0 };
    spawn_and_start(&o, OUT_ERR | CHILD_BIT(CHILD_CHAN));
    struct fake_spawn *s = fake_jail_spawn(0);
    uv_write_t w;
    uv_buf_t b = uv_buf_init((char *)"ping\n", 5);
    assert_int_equal(uv_write(&w, child_stream(o.ch, CHILD_CHAN), &b, 1, NULL), 0);
    spin();
    char got[8] = { 0 };
    assert_int_equal(read(s->fds[3], got, sizeof got), 5);
    assert_string_equal(got, "ping\n");
    child_writes(3, "pong");
    spin();
    assert_int_equal(o.outlen, 4);
    assert_null(child_stream(o.ch, CHILD_IN)); /* it has no stdin pipe */
    jail_proc *p = fake_jail_started(0, 0, NULL, 1);
    fake_jail_exit(p, 0);
    child_release(o.ch);
    spin();
    assert_int_equal(o.freed, 1);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    /* libuv makes its process-wide fds (the signal lock) on the first loop: before the
     * tests count theirs */
    uv_loop_init(&loop);
    uv_loop_close(&loop);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(output_then_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(exit_before_pipes_close, setup, teardown),
        cmocka_unit_test_setup_teardown(exit_after_pipes_close, setup, teardown),
        cmocka_unit_test_setup_teardown(release_while_starting, setup, teardown),
        cmocka_unit_test_setup_teardown(release_while_running, setup, teardown),
        cmocka_unit_test_setup_teardown(spawn_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(spawn_fails_later, setup, teardown),
        cmocka_unit_test_setup_teardown(hold_outlives_release, setup, teardown),
        cmocka_unit_test_setup_teardown(adopt_watches_exit, setup, teardown),
        cmocka_unit_test_setup_teardown(channel_both_ways, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
