/* Unit tests for reaper.c: children of this process that nobody owns are killed and
 * reaped; owned ones (the hook's list, libuv's uv_spawn processes) keep their status for
 * their owner; while the settling hook says so, strays are left alone. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "reaper.h"

static uv_loop_t loop;
static pid_t owned_pid;
static bool settling_flag;
static int spawn_status = -1;

static int known_hook(reap_add_fn add, void *set)
{
    add(owned_pid, set);
    return 0;
}

static bool settling_hook(void)
{
    return settling_flag;
}

/* 1 while pid is our child (running or zombie), 0 once it is gone (reaped). */
static int is_child(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0;
}

static int is_zombie(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 &&
           si.si_pid == pid;
}

static pid_t fork_exit(int code)
{
    pid_t p = fork();
    if (p == 0)
        _exit(code);
    return p;
}

static pid_t fork_sleeper(void)
{
    pid_t p = fork();
    if (p == 0) {
        for (;;)
            pause();
    }
    return p;
}

/* Run the loop until cond() holds or ms pass; returns whether it held. */
static int (*wait_cond)(void);
static void poll_cb(uv_timer_t *t)
{
    if (wait_cond())
        uv_stop(t->loop);
}
static void deadline_cb(uv_timer_t *t)
{
    uv_stop(t->loop);
}
static int run_until(int (*cond)(void), uint64_t ms)
{
    uv_timer_t poll, deadline;
    wait_cond = cond;
    uv_timer_init(&loop, &poll);
    uv_timer_init(&loop, &deadline);
    uv_timer_start(&poll, poll_cb, 10, 10);
    uv_timer_start(&deadline, deadline_cb, ms, 0);
    if (!cond())
        uv_run(&loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&poll, NULL);
    uv_close((uv_handle_t *)&deadline, NULL);
    uv_run(&loop, UV_RUN_NOWAIT);
    return cond();
}

static pid_t stray_dead, stray_running;
static int strays_gone(void)
{
    return !is_child(stray_dead) && !is_child(stray_running) && spawn_status >= 0;
}

static void spawn_exit(uv_process_t *p, int64_t status, int sig)
{
    (void)sig;
    spawn_status = (int)status;
    uv_close((uv_handle_t *)p, NULL);
}

static void test_strays_reaped_owned_kept(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    const struct reap_hooks h = { .known = known_hook, .settling = settling_hook };
    assert_int_equal(reap_start(&loop, &h), 0);
    owned_pid = fork_exit(4);
    stray_dead = fork_exit(3);
    stray_running = fork_sleeper();
    /* a libuv child that exits later than the strays are dealt with: its status must
     * reach libuv's exit callback */
    static uv_process_t proc;
    static char sh[] = "/bin/sh", c[] = "-c", script[] = "sleep 1.5; exit 5";
    char *args[] = { sh, c, script, NULL };
    uv_process_options_t o = { .file = args[0], .args = args, .exit_cb = spawn_exit };
    assert_int_equal(uv_spawn(&loop, &proc, &o), 0);
    assert_true(run_until(strays_gone, 20000));
    assert_int_equal(spawn_status, 5);                /* libuv got its child's status */
    assert_true(is_zombie(owned_pid));                /* the owner's status is kept */
    assert_int_equal(reap_strays_total(), 2);
    int st = 0;
    assert_int_equal(waitpid(owned_pid, &st, 0), owned_pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 4);
    reap_stop();
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static pid_t settled;
static int settled_gone(void)
{
    return !is_child(settled);
}

static void test_settling_defers(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    const struct reap_hooks h = { .known = known_hook, .settling = settling_hook };
    assert_int_equal(reap_start(&loop, &h), 0);
    owned_pid = 0;
    settling_flag = true;
    settled = fork_exit(0);
    assert_false(run_until(settled_gone, 2000));      /* past the grace: still left alone */
    assert_true(is_zombie(settled));
    settling_flag = false;
    assert_true(run_until(settled_gone, 20000));
    reap_stop();
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strays_reaped_owned_kept),
        cmocka_unit_test(test_settling_defers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
