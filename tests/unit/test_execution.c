/* Unit tests for execution.c (the log, its followers, the cap, back-pressure, the grace and
 * the retention) on a fake context layer defined here: ctx_run_queue records the sink the
 * execution gives, and each test plays the context by calling that sink directly, so the
 * order of events is the test's. The loop runs only to fire the execution's timers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "budget.h"
#include "config.h"
#include "context.h"
#include "execution.h"
#include "sandbox.h"

/* ---- the fake context layer ---- */

struct ctx_run {
    const struct ctx_sink *sink;
    void *arg;
    char id[40];
    int cancels, resumes;
    bool ended;
};

static struct ctx_run fake_run;
static int fake_ctx; /* the context: only its address is used */
static void (*destroy_hook)(sandbox *s);

struct ctx_run *ctx_run_queue(struct context *c, json_t *code, json_t *env, uint64_t timeout_ms,
                              const struct ctx_sink *sink, void *arg)
{
    (void)c, (void)code, (void)env, (void)timeout_ms;
    memset(&fake_run, 0, sizeof fake_run);
    fake_run.sink = sink;
    fake_run.arg = arg;
    snprintf(fake_run.id, sizeof fake_run.id, "exe-test");
    return &fake_run;
}

const char *ctx_run_id(const struct ctx_run *r)
{
    return r->id;
}

void ctx_run_resume(struct ctx_run *r)
{
    r->resumes++;
}

int ctx_run_cancel(struct ctx_run *r, const char *why)
{
    (void)why;
    r->cancels++;
    return 2;
}

static char failed_with[64];

/* As the engine does: the run ends now with that error. */
void ctx_run_fail(struct ctx_run *r, const char *name, const char *why)
{
    snprintf(failed_with, sizeof failed_with, "%s: %s", name, why);
    json_t *err = json_pack("{s:s, s:s, s:[]}", "name", name, "message", why, "traceback");
    struct ctx_run_end x = { .run_id = r->id,
                             .context_id = "ctx-test",
                             .error = err,
                             .cpu_ms = -1,
                             .peak_memory_bytes = -1 };
    r->sink->end(r->arg, &x);
    json_decref(err);
}

void ctx_get_info(const struct context *c, struct ctx_info *out)
{
    (void)c;
    memset(out, 0, sizeof *out);
    out->id = "ctx-test";
}

int sbx_on_destroy(void (*hook)(sandbox *s))
{
    destroy_hook = hook;
    return 0;
}

static sandbox *first_sandbox;

sandbox *sbx_first(void)
{
    return first_sandbox;
}

/* ---- a follower that records what it is sent ---- */

struct rec {
    uint64_t ids[64];
    char types[64][16];
    unsigned n;
    bool full; /* answer 1 (receiver full) to every event */
    bool done;
};

static int rec_event(void *arg, uint64_t id, const char *type, const char *json, size_t len)
{
    struct rec *r = arg;
    (void)json, (void)len;
    if (r->n < 64) {
        r->ids[r->n] = id;
        snprintf(r->types[r->n], sizeof r->types[0], "%s", type);
        r->n++;
    }
    return r->full;
}

static void rec_done(void *arg)
{
    ((struct rec *)arg)->done = true;
}

static const struct exe_follower_ops REC = { .event = rec_event, .done = rec_done };

/* ---- fixtures ---- */

static struct config cfg;
static sandbox sb;
static json_t *code;

static int setup(void **state)
{
    (void)state;
    memset(&cfg, 0, sizeof cfg);
    cfg.reattach_grace_ms = 0;
    cfg.execution_retention_ms = 0;
    cfg.execution_log_bytes = 1 << 20;
    cfg.max_executions = 4;
    exe_init(uv_default_loop(), &cfg);
    memset(&sb, 0, sizeof sb);
    snprintf(sb.id, sizeof sb.id, "sb");
    sb.budget = budget_new(64 << 20);
    code = json_string("print(1)");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    destroy_hook(&sb);
    uv_run(uv_default_loop(), UV_RUN_NOWAIT);    /* the timers' close callbacks free them */
    assert_int_equal(budget_used(sb.budget), 0); /* everything held was given back */
    budget_unref(sb.budget);
    json_decref(code);
    return 0;
}

static execution *start(void)
{
    char err[256];
    execution *e = NULL;
    assert_int_equal(
        exe_start(&sb, (struct context *)&fake_ctx, code, NULL, 0, 0, &e, err, sizeof err), 0);
    return e;
}

static void out(const char *s)
{
    fake_run.sink->output(fake_run.arg, false, s, strlen(s));
}

static void end_run(void)
{
    struct ctx_run_end x = { .run_id = fake_run.id,
                             .context_id = "ctx-test",
                             .exec_count = 1,
                             .state_preserved = true,
                             .cpu_ms = 12,
                             .peak_memory_bytes = 4096 };
    fake_run.sink->end(fake_run.arg, &x);
}

/* ---- tests ---- */

/* Events are numbered 1, 2, 3 …; a follower from the start gets them all, one from after
 * an id the rest; both end after `end`; a finished run's document has the output. */
static void test_ids_and_replay(void **state)
{
    (void)state;
    execution *e = start();
    struct rec live = { 0 }, late = { 0 };
    exe_follower *f = exe_follow(e, true, 0, &REC, &live);
    exe_follower_start(f);
    fake_run.sink->start(fake_run.arg);
    assert_int_equal(exe_state(e), EXE_RUNNING);
    out("a");
    out("b");
    exe_follower_start(exe_follow(e, true, 1, &REC, &late));
    assert_int_equal(late.n, 1);
    assert_int_equal(late.ids[0], 2);
    end_run();
    assert_int_equal(exe_state(e), EXE_DONE);
    assert_true(live.done && late.done);
    assert_int_equal(live.n, 3);
    assert_string_equal(live.types[2], "end");
    assert_int_equal(live.ids[2], 3);
    assert_int_equal(late.n, 2);
    buf b;
    assert_int_equal(exe_document(e, 1 << 20, &b), 0);
    assert_non_null(strstr(b.data, "\"stdout\":[\"a\",\"b\"]"));
    assert_non_null(strstr(b.data, "\"usage\":{\"cpuMs\":12,\"peakMemoryBytes\":4096}"));
    buf_free(&b);
}

/* Nobody follows: past the cap the oldest events go, counted; a replay gets a `dropped`
 * notice first, and the document says execution-log-bytes. */
static void test_cap_drops_the_oldest(void **state)
{
    (void)state;
    cfg.execution_log_bytes = 1 << 20;
    execution *e = start();
    exe_follower_detach(exe_follow(e, true, 0, &REC, &(struct rec){ 0 })); /* grace starts */
    static char chunk[65536];
    memset(chunk, 'x', sizeof chunk - 1);
    for (int i = 0; i < 40; i++)
        assert_int_equal(fake_run.sink->output(fake_run.arg, false, chunk, sizeof chunk - 1), 0);
    assert_true(budget_used(sb.budget) <= (1 << 20));
    struct rec r = { 0 };
    exe_follower_start(exe_follow(e, true, 0, &REC, &r));
    assert_string_equal(r.types[0], "dropped");
    assert_int_equal(r.ids[0], 0);
    assert_true(r.ids[1] > 1);
    end_run();
    buf b;
    assert_int_equal(exe_document(e, UINT64_MAX, &b), 0);
    assert_non_null(strstr(b.data, "\"truncatedBy\":\"execution-log-bytes\""));
    buf_free(&b);
}

/* A streamed follower that does not take its events holds them: once the log is full the
 * run is paused, and it resumes when the follower takes them. */
static void test_back_pressure(void **state)
{
    (void)state;
    cfg.execution_log_bytes = 1 << 20;
    execution *e = start();
    struct rec r = { .full = true };
    exe_follower *f = exe_follow(e, true, 0, &REC, &r);
    exe_follower_start(f);
    static char chunk[65536];
    memset(chunk, 'y', sizeof chunk - 1);
    int paused = 0;
    for (int i = 0; i < 40 && !paused; i++)
        paused = fake_run.sink->output(fake_run.arg, false, chunk, sizeof chunk - 1);
    assert_int_equal(paused, 1);
    assert_int_equal(fake_run.sink->allowance(fake_run.arg, 65536), 0);
    assert_int_equal(fake_run.resumes, 0);
    r.full = false;
    exe_follower_resume(f); /* takes everything: the log may drop it, reading resumes */
    assert_int_equal(fake_run.resumes, 1);
    assert_int_equal(fake_run.sink->allowance(fake_run.arg, 65536), 65536);
    end_run();
    assert_true(r.done);
}

/* The last follower leaves a running run: after the grace it is cancelled/interrupted. A
 * finished run is forgotten after the retention. */
static void test_grace_and_retention(void **state)
{
    (void)state;
    execution *e = start();
    struct rec r = { 0 };
    exe_follower *f = exe_follow(e, true, 0, &REC, &r);
    exe_follower_start(f);
    uv_run(uv_default_loop(), UV_RUN_NOWAIT);
    assert_int_equal(fake_run.cancels, 0); /* someone follows: no grace */
    exe_follower_detach(f);
    uv_run(uv_default_loop(), UV_RUN_ONCE);
    assert_int_equal(fake_run.cancels, 1);
    end_run();
    assert_non_null(exe_find(&sb, "exe-test"));
    uv_run(uv_default_loop(), UV_RUN_ONCE);
    assert_null(exe_find(&sb, "exe-test"));
}

/* --max-executions: finished ones nobody reads make room; running ones do not. */
static void test_max_executions(void **state)
{
    (void)state;
    char err[256];
    execution *e = NULL;
    cfg.execution_retention_ms = 600000;
    cfg.reattach_grace_ms = 600000;
    for (int i = 0; i < 4; i++)
        start(); /* each replaces fake_run: the earlier ones never end */
    assert_int_equal(
        exe_start(&sb, (struct context *)&fake_ctx, code, NULL, 0, 0, &e, err, sizeof err),
        1 /* EXE_FULL */);
    assert_non_null(strstr(err, "--max-executions"));
    end_run(); /* the newest ends: it may be forgotten for a new one */
    assert_int_equal(
        exe_start(&sb, (struct context *)&fake_ctx, code, NULL, 0, 0, &e, err, sizeof err), 0);
    end_run(); /* the others never end: the sandbox's destruction forgets them */
}

/* The hook for a daemon that shuts down: every run not over ends with the error given, its
 * followers get it and then end. */
static void test_fail_all(void **state)
{
    (void)state;
    execution *e = start();
    struct rec r = { 0 };
    exe_follower_start(exe_follow(e, true, 0, &REC, &r));
    out("x");
    first_sandbox = &sb;
    failed_with[0] = '\0';
    exe_fail_all("ContextDied", "the daemon is shutting down");
    first_sandbox = NULL;
    assert_string_equal(failed_with, "ContextDied: the daemon is shutting down");
    assert_true(r.done);
    assert_int_equal(r.n, 3);
    assert_string_equal(r.types[1], "error");
    assert_string_equal(r.types[2], "end");
    assert_int_equal(exe_state(e), EXE_DONE);
    exe_fail_all("ContextDied", "again"); /* nothing left to end */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ids_and_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_drops_the_oldest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_back_pressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace_and_retention, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_executions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_all, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
