/* Unit tests for sandbox.c's registry and its creation/join logic, on a fake jail layer
 * (fake_jail.c): a sandbox is found only once its jail is ready; a get-or-create of an id
 * being created joins it and gets the same outcome after the creator; a failed creation
 * frees the id; --max-sandboxes counts creations under way; destroy unregisters at once,
 * runs the destroy hooks first and reports done only once the jail is gone. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"
#include "fake_jail.h"
#include "sandbox.h"

static struct config cfg;

/* One call of a creation callback, in arrival order. */
struct outcome {
    sandbox *s;
    char id[SBX_ID_MAX + 1];
    int rc;
    char err[128];
    int who;
};
static struct outcome outcomes[16];
static unsigned noutcomes;

static void on_created(sandbox *s, const char *id, int rc, const char *err, void *arg)
{
    assert_true(noutcomes < 16);
    struct outcome *o = &outcomes[noutcomes++];
    o->s = s;
    snprintf(o->id, sizeof o->id, "%s", id);
    o->rc = rc;
    snprintf(o->err, sizeof o->err, "%s", err ? err : "");
    o->who = (int)(intptr_t)arg;
}

static unsigned hook_calls, hook_found_during;
static sandbox *hook_last;

static void destroy_hook(sandbox *s)
{
    hook_calls++;
    hook_last = s;
    if (sbx_find(s->id))
        hook_found_during++;
}

static unsigned done_calls;

static void on_done(void *arg)
{
    (void)arg;
    done_calls++;
}

static int setup(void **state)
{
    (void)state;
    fake_jail_reset();
    noutcomes = 0;
    hook_calls = hook_found_during = done_calls = 0;
    hook_last = NULL;
    memset(outcomes, 0, sizeof outcomes);
    return 0;
}

/* Destroy what a test left, so the next one starts from an empty registry. */
static int teardown(void **state)
{
    (void)state;
    while (fake_jail_pending_creates())
        fake_jail_ready(0, -ECANCELED, "test teardown");
    sbx_destroy_all(NULL, NULL);
    fake_jail_destroyed();
    assert_int_equal(sbx_count(), 0);
    return 0;
}

static int create(const char *id, int who)
{
    struct sbx_limits lim;
    char err[256];
    assert_int_equal(sbx_parse_limits(NULL, &lim, err, sizeof err), 0);
    return sbx_create(id, &lim, false, NULL, NULL, on_created, (void *)(intptr_t)who, err,
                      sizeof err);
}

static void found_only_when_ready(void **state)
{
    (void)state;
    assert_int_equal(create("a1", 1), 0);
    assert_null(sbx_find("a1"));
    assert_int_equal(sbx_count(), 0);
    assert_int_equal(noutcomes, 0); /* never from inside sbx_create */
    fake_jail_ready(0, 0, NULL);
    assert_int_equal(noutcomes, 1);
    assert_int_equal(outcomes[0].rc, 0);
    assert_non_null(outcomes[0].s);
    assert_string_equal(outcomes[0].id, "a1");
    assert_ptr_equal(sbx_find("a1"), outcomes[0].s);
    assert_ptr_equal(sbx_first(), outcomes[0].s);
    assert_int_equal(sbx_count(), 1);
    assert_int_equal(create("a1", 2), -EEXIST); /* live */
}

static void limits_reach_the_jail(void **state)
{
    (void)state;
    struct sbx_limits lim;
    char err[256];
    json_t *l = json_pack("{s:i, s:i, s:f}", "memoryMb", 256, "pids", 64, "cpus", 0.5);
    assert_int_equal(sbx_parse_limits(l, &lim, err, sizeof err), 0);
    json_decref(l);
    assert_int_equal(sbx_create("lim", &lim, true, NULL, NULL, on_created, NULL, err, sizeof err),
                     0);
    assert_int_equal(fake_jail.last_opts.limits.memory_bytes, 256ull << 20);
    assert_int_equal(fake_jail.last_opts.limits.pids, 64);
    assert_int_equal(fake_jail.last_opts.limits.cpu_millis, 500);
    assert_true(fake_jail.last_opts.network_host);
}

static void joiners_get_the_creators_outcome_in_order(void **state)
{
    (void)state;
    assert_int_equal(create("j1", 1), 0);
    assert_int_equal(create("j1", 9), -EEXIST); /* being created */
    assert_int_equal(sbx_join("j1", on_created, (void *)2), 0);
    assert_int_equal(sbx_join("j1", on_created, (void *)3), 0);
    assert_int_equal(sbx_join("nope", on_created, (void *)4), -ENOENT);
    assert_int_equal(fake_jail.creates, 1); /* created once */
    fake_jail_ready(0, 0, NULL);
    assert_int_equal(noutcomes, 3);
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(outcomes[i].who, (int)i + 1); /* creator, then arrival order */
        assert_int_equal(outcomes[i].rc, 0);
        assert_ptr_equal(outcomes[i].s, outcomes[0].s);
    }
    assert_int_equal(sbx_join("j1", on_created, (void *)5), -ENOENT); /* ready: no creation */
}

static void join_is_capped(void **state)
{
    (void)state;
    assert_int_equal(create("cap", 1), 0);
    for (uint64_t i = 0; i < cfg.max_pending_spawns; i++)
        assert_int_equal(sbx_join("cap", on_created, (void *)2), 0);
    assert_int_equal(sbx_join("cap", on_created, (void *)3), -EBUSY);
    fake_jail_ready(0, 0, NULL);
    assert_int_equal(noutcomes, 1 + cfg.max_pending_spawns);
}

static void failed_creation_frees_the_id(void **state)
{
    (void)state;
    assert_int_equal(create("f1", 1), 0);
    assert_int_equal(sbx_join("f1", on_created, (void *)2), 0);
    fake_jail_ready(0, -ETIMEDOUT, "init did not start");
    assert_int_equal(noutcomes, 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_null(outcomes[i].s);
        assert_int_equal(outcomes[i].rc, -ETIMEDOUT);
        assert_string_equal(outcomes[i].err, "init did not start");
        assert_string_equal(outcomes[i].id, "f1");
    }
    assert_null(sbx_find("f1"));
    assert_int_equal(sbx_count(), 0);
    assert_int_equal(create("f1", 3), 0); /* the id is free again */
}

static void jail_refusal_is_returned_not_called_back(void **state)
{
    (void)state;
    fake_jail.create_rc = -EPERM;
    assert_int_equal(create("r1", 1), -EPERM);
    fake_jail.create_rc = 0;
    assert_int_equal(noutcomes, 0);
    assert_int_equal(fake_jail_pending_creates(), 0);
    assert_int_equal(create("r1", 2), 0); /* nothing was reserved */
}

static void max_sandboxes_counts_creations(void **state)
{
    (void)state;
    /* cfg has --max-sandboxes 3: one live, two being created, the fourth is refused */
    assert_int_equal(create("m1", 1), 0);
    fake_jail_ready(0, 0, NULL);
    assert_int_equal(create("m2", 2), 0);
    assert_int_equal(create("m3", 3), 0);
    assert_int_equal(create("m4", 4), -EMFILE);
    fake_jail_ready(0, -EIO, "failed"); /* m2 fails: room for one again */
    assert_int_equal(create("m4", 4), 0);
}

static void destroy_unregisters_at_once_done_later(void **state)
{
    (void)state;
    assert_int_equal(create("d1", 1), 0);
    assert_int_equal(create("d2", 2), 0);
    fake_jail_ready(0, 0, NULL);
    fake_jail_ready(0, 0, NULL);
    sandbox *d1 = sbx_find("d1");
    assert_non_null(d1);
    hook_calls = 0;
    sbx_destroy(d1, on_done, NULL);
    assert_int_equal(hook_calls, 1); /* the hook ran, before anything else */
    assert_ptr_equal(hook_last, d1);
    assert_int_equal(hook_found_during, 0); /* already unregistered */
    assert_null(sbx_find("d1"));
    assert_int_equal(sbx_count(), 1);
    assert_string_equal(sbx_first()->id, "d2");
    sbx_destroy(d1, on_done, NULL); /* a second destroy is ignored */
    assert_int_equal(fake_jail.destroys, 1);
    assert_int_equal(done_calls, 0);
    fake_jail_destroyed();
    assert_int_equal(done_calls, 1);
    assert_int_equal(create("d1", 3), 0); /* the id is free */
}

static void destroy_all_reports_once(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof id, "x%d", i);
        assert_int_equal(create(id, i), 0);
        fake_jail_ready(0, 0, NULL);
    }
    assert_int_equal(sbx_count(), 3);
    sbx_destroy_all(on_done, NULL);
    assert_int_equal(sbx_count(), 0);
    assert_null(sbx_first());
    assert_int_equal(done_calls, 0);
    fake_jail_destroyed();
    assert_int_equal(done_calls, 1);
    sbx_destroy_all(on_done, NULL); /* nothing left: done at once */
    assert_int_equal(done_calls, 2);
}

static void list_keeps_creation_order(void **state)
{
    (void)state;
    const char *ids[] = { "o1", "o2", "o3" };
    for (int i = 0; i < 3; i++)
        assert_int_equal(create(ids[i], i), 0);
    fake_jail_ready(2, 0, NULL); /* ready out of order: o3, o1, o2 */
    fake_jail_ready(0, 0, NULL);
    fake_jail_ready(0, 0, NULL);
    const char *want[] = { "o3", "o1", "o2" }; /* the list is in order of readiness */
    unsigned i = 0;
    for (sandbox *s = sbx_first(); s; s = s->lnext, i++)
        assert_string_equal(s->id, want[i]);
    assert_int_equal(i, 3);
    sbx_destroy(sbx_find("o1"), NULL, NULL); /* unlink from the middle */
    assert_string_equal(sbx_first()->id, "o3");
    assert_string_equal(sbx_first()->lnext->id, "o2");
    assert_null(sbx_first()->lnext->lnext);
    assert_ptr_equal(sbx_first()->lnext->lprev, sbx_first());
}

/* The hook table is fixed: one too many is refused, not dropped silently (in builds
 * without NDEBUG the assertion fires instead, which this test cannot observe). */
static void too_many_hooks_are_refused(void **state)
{
    (void)state;
#ifdef NDEBUG
    int rc = 0;
    for (int i = 0; i < 16 && rc == 0; i++)
        rc = sbx_on_destroy(destroy_hook);
    assert_int_equal(rc, -ENOSPC);
#else
    skip();
#endif
}

int main(void)
{
    const char *argv[] = { "sandboxd", "--max-sandboxes", "3", "--max-pending-spawns", "4" };
    char err[256];
    bool exit_now;
    if (config_load(&cfg, 5, (char **)argv, &exit_now, err, sizeof err)) {
        fprintf(stderr, "config: %s\n", err);
        return 1;
    }
    sbx_init(&cfg);
    if (sbx_on_destroy(destroy_hook))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(found_only_when_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(limits_reach_the_jail, setup, teardown),
        cmocka_unit_test_setup_teardown(joiners_get_the_creators_outcome_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(join_is_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_creation_frees_the_id, setup, teardown),
        cmocka_unit_test_setup_teardown(jail_refusal_is_returned_not_called_back, setup, teardown),
        cmocka_unit_test_setup_teardown(max_sandboxes_counts_creations, setup, teardown),
        cmocka_unit_test_setup_teardown(destroy_unregisters_at_once_done_later, setup, teardown),
        cmocka_unit_test_setup_teardown(destroy_all_reports_once, setup, teardown),
        cmocka_unit_test_setup_teardown(list_keeps_creation_order, setup, teardown),
        cmocka_unit_test_setup_teardown(too_many_hooks_are_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
