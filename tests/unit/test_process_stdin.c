/* Unit tests for process_stdin.c on a real pipe and libuv loop: bytes arrive in the order
 * they were accepted and EOF after them; a reader that never reads makes writes past the cap
 * refused whole while the memory charged stays within twice the cap; a budget with no room
 * refuses without accepting anything; closing with writes pending, or a reader that goes
 * away (EPIPE), gives every byte back. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "budget.h"
#include "process_stdin.h"

struct fixture {
    uv_loop_t loop;
    uv_pipe_t w; /* the daemon's end */
    int rfd;     /* the process's end, read here without blocking */
    bool closed, handle_closed;
    struct pstdin in;
    budget *bg;
};

static void handle_closed(uv_handle_t *h)
{
    struct fixture *f = h->data;
    f->handle_closed = true;
}

static void closer(void *arg)
{
    struct fixture *f = arg;
    f->closed = true;
    uv_close((uv_handle_t *)&f->w, handle_closed);
}

static struct fixture *setup(size_t cap, uint64_t budget_cap)
{
    struct fixture *f = calloc(1, sizeof *f);
    int fd[2];
    assert_int_equal(pipe2(fd, O_CLOEXEC), 0);
    fcntl(fd[1], F_SETPIPE_SZ, 4096); /* the smallest pipe: it fills at once */
    fcntl(fd[0], F_SETFL, O_NONBLOCK);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(uv_pipe_init(&f->loop, &f->w, 0), 0);
    assert_int_equal(uv_pipe_open(&f->w, fd[1]), 0);
    f->w.data = f;
    f->rfd = fd[0];
    f->bg = budget_new(budget_cap);
    pstdin_init(&f->in, (uv_stream_t *)&f->w, closer, f, f->bg, cap);
    return f;
}

static void spin(struct fixture *f)
{
    for (int i = 0; i < 20; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
}

/* Read what the pipe has (up to max) into out; returns the count, -1 at EOF. */
static ssize_t drain(struct fixture *f, char *out, size_t max)
{
    size_t got = 0;
    for (;;) {
        spin(f);
        ssize_t n = read(f->rfd, out + got, max - got);
        if (n == 0)
            return got ? (ssize_t)got : -1;
        if (n < 0)
            return (ssize_t)got; /* EAGAIN: nothing more now */
        got += (size_t)n;
        if (got == max)
            return (ssize_t)got;
    }
}

static void teardown(struct fixture *f)
{
    if (!f->closed)
        pstdin_close(&f->in);
    spin(f);
    assert_true(f->handle_closed);
    pstdin_free(&f->in);
    assert_int_equal(budget_used(f->bg), 0); /* every byte given back */
    close(f->rfd);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    budget_unref(f->bg);
    free(f);
}

static void order_then_eof(void **state)
{
    (void)state;
    struct fixture *f = setup(1 << 16, 1 << 20);
    assert_int_equal(pstdin_write(&f->in, "abc", 3, false), 0);
    assert_int_equal(pstdin_write(&f->in, "def", 3, false), 0);
    assert_int_equal(pstdin_write(&f->in, "gh", 2, true), 0);
    assert_false(pstdin_open(&f->in)); /* EOF asked: nothing more is accepted */
    assert_int_equal(pstdin_write(&f->in, "x", 1, false), PSTDIN_CLOSED);
    char buf[64];
    ssize_t n = drain(f, buf, sizeof buf);
    assert_int_equal(n, 8);
    assert_memory_equal(buf, "abcdefgh", 8);
    assert_int_equal(drain(f, buf, sizeof buf), -1); /* EOF after the bytes */
    assert_true(f->closed);
    teardown(f);
}

static void never_read_is_capped(void **state)
{
    (void)state;
    const size_t cap = 8192;
    struct fixture *f = setup(cap, 1 << 20);
    size_t accepted = 0;
    unsigned char seq = 0;
    int rc;
    /* one byte at a time: no per-write overhead is held, whatever the count */
    while ((rc = pstdin_write(&f->in, &seq, 1, false)) == 0) {
        accepted++;
        seq++;
        if (accepted % 512 == 0)
            spin(f);
        assert_true(budget_used(f->bg) <= 2 * cap);
    }
    assert_int_equal(rc, PSTDIN_FULL);
    assert_int_equal(pstdin_held(&f->in), cap);
    assert_true(accepted <= cap + (64 << 10)); /* the pipe's buffer, then the cap */
    assert_int_equal(pstdin_write(&f->in, "y", 1, false), PSTDIN_FULL); /* refused whole */
    assert_int_equal(pstdin_write(&f->in, NULL, 0, false), 0);
    char *big = calloc(1, cap + 1);
    assert_int_equal(pstdin_write(&f->in, big, cap + 1, false), PSTDIN_TOO_BIG);
    /* the reader catches up: everything accepted arrives, in order */
    size_t got = 0;
    char *out = calloc(1, accepted + 1);
    while (got < accepted) {
        ssize_t n = drain(f, out + got, accepted - got);
        assert_true(n >= 0);
        got += (size_t)n;
    }
    for (size_t i = 0; i < accepted; i++)
        assert_int_equal((unsigned char)out[i], (unsigned char)i);
    assert_int_equal(pstdin_held(&f->in), 0);
    assert_int_equal(pstdin_write(&f->in, "z", 1, false), 0); /* room again */
    free(big);
    free(out);
    teardown(f);
}

static void budget_refusal_accepts_nothing(void **state)
{
    (void)state;
    struct fixture *f = setup(1 << 16, 1000); /* room for less than the queue's 4 KiB */
    char chunk[1024] = { 0 };
    int rc;
    size_t accepted = 0;
    while ((rc = pstdin_write(&f->in, chunk, sizeof chunk, false)) == 0) {
        accepted += sizeof chunk;
        assert_true(accepted < (1 << 20));
    }
    assert_int_equal(rc, -ENOBUFS);
    size_t held = pstdin_held(&f->in);
    assert_int_equal(pstdin_write(&f->in, chunk, sizeof chunk, false), -ENOBUFS);
    assert_int_equal(pstdin_held(&f->in), held);
    assert_true(budget_refusals(f->bg) >= 2);
    teardown(f);
}

static void close_with_writes_pending(void **state)
{
    (void)state;
    struct fixture *f = setup(1 << 16, 1 << 20);
    char chunk[4096] = { 0 };
    while (pstdin_held(&f->in) < 16384)
        assert_int_equal(pstdin_write(&f->in, chunk, sizeof chunk, false), 0);
    assert_true(budget_used(f->bg) > 0);
    pstdin_close(&f->in);
    assert_true(f->closed);
    assert_int_equal(pstdin_write(&f->in, "x", 1, false), PSTDIN_CLOSED);
    teardown(f); /* the cancelled write gave its bytes back */
}

static void reader_gone_is_epipe(void **state)
{
    (void)state;
    struct fixture *f = setup(1 << 16, 1 << 20);
    close(f->rfd);
    f->rfd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* for teardown's close */
    char chunk[4096] = { 0 };
    for (int i = 0; i < 100 && pstdin_open(&f->in); i++) {
        int rc = pstdin_write(&f->in, chunk, sizeof chunk, false);
        assert_true(rc == 0 || rc == PSTDIN_CLOSED);
        spin(f);
    }
    assert_false(pstdin_open(&f->in));
    assert_true(f->closed);
    teardown(f);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the daemon does: EPIPE instead */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(order_then_eof),
        cmocka_unit_test(never_read_is_capped),
        cmocka_unit_test(budget_refusal_accepts_nothing),
        cmocka_unit_test(close_with_writes_pending),
        cmocka_unit_test(reader_gone_is_epipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
