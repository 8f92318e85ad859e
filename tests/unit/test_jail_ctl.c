/* Unit tests for jail_ctl.c, the daemon's end of the control channel to a sandbox's init,
 * with a socketpair standing in for init: a spawn request is queued and sent with its fds;
 * requests are capped (--max-pending-spawns); each is answered exactly once — by init's
 * answer, by its deadline (-ETIMEDOUT), or by jail__reqs_fail_all — and a late answer to a
 * request nobody waits for any more kills the process it started; a request cancelled
 * before it was sent never reaches init. The jail is built by hand (no namespaces, no
 * timer, no poll: the tests call the handlers the loop would call). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "jail_int.h"
#include "jail_proto.h"

static jail *J;
static int peer; /* init's end */
static int devnull;

struct answer {
    jail_proc *p;
    int rc;
    char msg[200];
    int who;
};
static struct answer answers[8];
static unsigned nanswers;

static void on_started(jail_proc *p, int rc, const char *msg, void *arg)
{
    assert_true(nanswers < 8);
    struct answer *a = &answers[nanswers++];
    a->p = p;
    a->rc = rc;
    snprintf(a->msg, sizeof a->msg, "%s", msg ? msg : "");
    a->who = (int)(intptr_t)arg;
}

static int setup(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
    J = calloc(1, sizeof *J);
    assert_non_null(J);
    J->loop = uv_default_loop();
    J->ctl = sv[0];
    peer = sv[1];
    J->reply_timeout_ms = 10000;
    J->max_pending = 2;
    nanswers = 0;
    memset(answers, 0, sizeof answers);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    jail__reqs_fail_all(J, -ECANCELED, "test teardown");
    while (J->procs) {
        jail_proc *p = J->procs;
        J->procs = p->next;
        free(p);
    }
    close(J->ctl);
    close(peer);
    free(J);
    return 0;
}

static int spawn(const char *prog, int who, jail_req **req, char *err, size_t errlen)
{
    const char *argv[] = { prog, "-c", "true", NULL };
    const char *envp[] = { "A=1", NULL };
    struct jail_spawn_opts o = {
        .argv = argv,
        .envp = envp,
        .stdin_fd = devnull,
        .stdout_fd = devnull,
        .stderr_fd = devnull,
        .extra_fd = -1,
    };
    return jail_spawn(J, &o, on_started, NULL, (void *)(intptr_t)who, req, err, errlen);
}

/* What init received: one message, its fds closed. 1, or 0 when nothing is waiting. */
static int init_reads(struct jp_hdr *h, char *payload, size_t cap)
{
    int fds[JP_MAX_FDS], nfds = 0;
    int rc = jp_recv(peer, h, payload, cap, fds, &nfds);
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    if (rc == -EAGAIN)
        return 0;
    assert_int_equal(rc, 1);
    return nfds;
}

static void answer(uint32_t id, int32_t a)
{
    struct jp_hdr h = { .type = JP_SPAWNED, .id = id, .a = a };
    jail__on_spawned(J, &h);
}

static void spawn_is_sent_with_its_fds(void **state)
{
    (void)state;
    char err[256], payload[JP_MSG_MAX];
    assert_int_equal(spawn("/bin/sh", 1, NULL, err, sizeof err), 0);
    struct jp_hdr h;
    assert_int_equal(init_reads(&h, payload, sizeof payload), 3); /* stdin, stdout, stderr */
    assert_int_equal(h.type, JP_SPAWN);
    assert_int_equal(h.a, 3);                   /* argc */
    assert_int_equal(h.b, 1);                   /* envc */
    assert_string_equal(payload, "/workspace"); /* the default cwd */
    assert_string_equal(payload + strlen("/workspace") + 1, "/bin/sh");
    assert_int_equal(J->nreqs, 1);
    assert_null(J->out); /* nothing left queued */
    assert_int_equal(nanswers, 0);
    answer(h.id, 42);
    assert_int_equal(nanswers, 1);
    assert_int_equal(answers[0].rc, 0);
    assert_non_null(answers[0].p);
    assert_int_equal(jail_proc_pid(answers[0].p), 42);
    assert_int_equal(J->nreqs, 0);
    answer(h.id, 43); /* a second answer: ignored */
    assert_int_equal(nanswers, 1);
}

static void refused_spawn_says_why(void **state)
{
    (void)state;
    char err[256], payload[JP_MSG_MAX];
    assert_int_equal(spawn("/nope", 1, NULL, err, sizeof err), 0);
    struct jp_hdr h;
    init_reads(&h, payload, sizeof payload);
    answer(h.id, -ENOENT);
    assert_int_equal(nanswers, 1);
    assert_null(answers[0].p);
    assert_int_equal(answers[0].rc, -ENOENT);
    assert_string_equal(answers[0].msg, "could not start /nope: No such file or directory");
    assert_null(J->procs);
}

static void bad_requests_fail_at_once(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(spawn("sh", 1, NULL, err, sizeof err), -EINVAL);
    assert_string_equal(err, "argv[0] must be an absolute path");
    J->dead = true;
    assert_int_equal(spawn("/bin/sh", 1, NULL, err, sizeof err), -ESRCH);
    J->dead = false;
    assert_int_equal(J->nreqs, 0);
    assert_int_equal(nanswers, 0);
}

static void requests_are_capped(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(spawn("/bin/sh", 1, NULL, err, sizeof err), 0);
    assert_int_equal(spawn("/bin/sh", 2, NULL, err, sizeof err), 0);
    assert_int_equal(spawn("/bin/sh", 3, NULL, err, sizeof err), -EBUSY);
    assert_non_null(strstr(err, "--max-pending-spawns"));
    assert_int_equal(J->nreqs, 2);
}

/* Past its deadline a request is answered -ETIMEDOUT once; init's late answer then starts
 * a process nobody waits for: it is killed, and nobody is called again. */
static void deadline_then_late_answer(void **state)
{
    (void)state;
    char err[256], payload[JP_MSG_MAX];
    J->reply_timeout_ms = 0; /* the deadline is now */
    assert_int_equal(spawn("/bin/sh", 1, NULL, err, sizeof err), 0);
    struct jp_hdr h;
    init_reads(&h, payload, sizeof payload);
    uint32_t id = h.id;
    usleep(2000);
    jail__reqs_expire(J);
    assert_int_equal(nanswers, 1);
    assert_int_equal(answers[0].rc, -ETIMEDOUT);
    assert_non_null(strstr(answers[0].msg, "--init-reply-timeout-ms"));
    assert_int_equal(J->nreqs, 0); /* nobody waits: a new one is admitted */
    assert_non_null(J->reqs);      /* but it stays listed until init answers */
    jail__reqs_expire(J);          /* answered once only */
    assert_int_equal(nanswers, 1);
    answer(id, 77);
    assert_int_equal(nanswers, 1);
    assert_null(J->reqs);
    assert_int_equal(init_reads(&h, payload, sizeof payload), 0);
    assert_int_equal(h.type, JP_KILL); /* the late process is ended */
    assert_int_equal(h.a, 77);
    assert_int_equal(h.b, SIGKILL);
}

/* While the sandbox is suspended (frozen, lifecycle.h), its init cannot answer: the time it
 * was frozen does not count against a request's deadline. */
static void frozen_time_does_not_count(void **state)
{
    (void)state;
    char err[256];
    J->reply_timeout_ms = 50;
    assert_int_equal(spawn("/bin/sh", 1, NULL, err, sizeof err), 0);
    jail__reqs_pause(J, true);
    assert_true(J->frozen);
    J->frozen_at -= 5000; /* as if it had been frozen for five seconds */
    usleep(60000);        /* past the 50 ms deadline */
    jail__reqs_pause(J, false);
    assert_false(J->frozen);
    jail__reqs_expire(J);
    assert_int_equal(nanswers, 0); /* pushed back by the frozen time */
}

/* Cancelled while still queued (init cannot take it): dropped, init never sees it. */
static void cancel_before_send_drops_it(void **state)
{
    (void)state;
    char err[256], payload[JP_MSG_MAX];
    int ctl = J->ctl;
    J->ctl = -1; /* nothing can be sent now */
    jail_req *r = NULL;
    assert_int_equal(spawn("/bin/sh", 1, &r, err, sizeof err), 0);
    assert_non_null(r);
    assert_non_null(J->out);
    jail_cancel(r);
    assert_null(J->out);
    assert_null(J->reqs);
    assert_int_equal(J->nreqs, 0);
    J->ctl = ctl;
    jail__ctl_flush(J);
    struct jp_hdr h;
    assert_int_equal(init_reads(&h, payload, sizeof payload), 0);
    assert_int_equal(nanswers, 0);
}

/* init gone: every request someone waits for is answered once, sent or not. */
static void fail_all_answers_each_once(void **state)
{
    (void)state;
    char err[256];
    J->max_pending = 4;
    assert_int_equal(spawn("/bin/sh", 1, NULL, err, sizeof err), 0);
    int ctl = J->ctl;
    J->ctl = -1;
    assert_int_equal(spawn("/bin/sh", 2, NULL, err, sizeof err), 0); /* still queued */
    jail_req *r = NULL;
    assert_int_equal(spawn("/bin/sh", 3, &r, err, sizeof err), 0);
    jail_cancel(r); /* given up */
    J->ctl = ctl;
    jail__reqs_fail_all(J, -ESRCH, "init is gone");
    assert_int_equal(nanswers, 2);
    assert_int_equal(answers[0].who, 1);
    assert_int_equal(answers[1].who, 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(answers[i].rc, -ESRCH);
        assert_string_equal(answers[i].msg, "init is gone");
    }
    assert_null(J->reqs);
    assert_null(J->out);
    assert_int_equal(J->nreqs, 0);
}

int main(void)
{
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(spawn_is_sent_with_its_fds, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_spawn_says_why, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_requests_fail_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(requests_are_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(deadline_then_late_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(frozen_time_does_not_count, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_before_send_drops_it, setup, teardown),
        cmocka_unit_test_setup_teardown(fail_all_answers_each_once, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    close(devnull);
    return rc;
}
