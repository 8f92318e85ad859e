/*
 * test_cgroup.c — cgroup.c's path and file-format logic against a fake cgroupfs: a temp
 * directory laid out like /sys/fs/cgroup (v1 hybrid, as on our hosts, and pure v2).
 * No real cgroup is touched; writes land in plain files the test reads back.
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
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"

static char root[64];

static void mkdirs(const char *rel)
{
    char p[512], *s;
    snprintf(p, sizeof p, "%s/%s", root, rel);
    for (s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    mkdir(p, 0755);
}

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void get(const char *rel, char *buf, size_t n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t r = fread(buf, 1, n - 1, f);
    buf[r] = '\0';
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/test-cgroup-XXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) < 0 ? 0 : 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char v1_self[] =
    "9:name=systemd:/\n8:pids:/\n6:freezer:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n";

static void layout_v1(void)
{
    mkdirs("memory/process_api/abc");
    put("memory/process_api/abc/cgroup.procs", "");
    mkdirs("pids");
    put("pids/cgroup.procs", "");
    mkdirs("freezer");
    put("freezer/cgroup.procs", "");
    mkdirs("cpu");
    put("cpu/cgroup.procs", "");
    mkdirs("unified");
}

static void test_v1_paths(void **state)
{
    (void)state;
    layout_v1();
    struct cg_sys s;
    assert_int_equal(cg_sys_init(&s, root, v1_self, "sandboxd"), 0);
    assert_int_equal(s.version, 1);
    assert_true(s.have[CG_MEMORY] && s.have[CG_PIDS] && s.have[CG_CPU] && s.have[CG_FREEZER]);
    char want[256];
    snprintf(want, sizeof want, "%s/memory/process_api/abc/sandboxd", root);
    assert_string_equal(s.parent[CG_MEMORY], want);
    snprintf(want, sizeof want, "%s/pids/sandboxd", root);
    assert_string_equal(s.parent[CG_PIDS], want);
    /* "cpu,cpuacct" line: found through the cpu dir */
    snprintf(want, sizeof want, "%s/cpu/sandboxd", root);
    assert_string_equal(s.parent[CG_CPU], want);

    struct cg g;
    assert_int_equal(cg_create(&s, "box1", &g), 0);
    assert_int_equal(cg_create(&s, "box1", &g), -EEXIST);
    assert_int_equal(cg_set_limits(&g, 268435456, 64, 1500), 0);
    char buf[128];
    get("memory/process_api/abc/sandboxd/box1/memory.limit_in_bytes", buf, sizeof buf);
    assert_string_equal(buf, "268435456");
    get("pids/sandboxd/box1/pids.max", buf, sizeof buf);
    assert_string_equal(buf, "64");
    get("cpu/sandboxd/box1/cpu.cfs_period_us", buf, sizeof buf);
    assert_string_equal(buf, "100000");
    get("cpu/sandboxd/box1/cpu.cfs_quota_us", buf, sizeof buf);
    assert_string_equal(buf, "150000");

    put("memory/process_api/abc/sandboxd/box1/memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    assert_int_equal(cg_oom_kills(&g), 3);
    put("memory/process_api/abc/sandboxd/box1/memory.usage_in_bytes", "12345\n");
    uint64_t mem;
    assert_int_equal(cg_memory_usage(&g, &mem), 0);
    assert_int_equal(mem, 12345);
    put("pids/sandboxd/box1/pids.current", "7\n");
    uint32_t n;
    assert_int_equal(cg_process_count(&g, &n), 0);
    assert_int_equal(n, 7);

    char procs[4][CG_PATH_MAX];
    cg_procs_paths(&g, procs, 4);
    snprintf(want, sizeof want, "%s/memory/process_api/abc/sandboxd/box1/cgroup.procs", root);
    assert_string_equal(procs[0], want);
    assert_true(procs[3][0] != '\0');

    assert_int_equal(cg_join(&g, 4242), 0);
    get("pids/sandboxd/box1/cgroup.procs", buf, sizeof buf);
    assert_string_equal(buf, "4242");
}

static void test_v1_missing_controller(void **state)
{
    (void)state;
    mkdirs("memory/x");
    put("memory/x/cgroup.procs", "");
    struct cg_sys s;
    /* pids listed but its dir absent: skipped, memory still usable */
    assert_int_equal(cg_sys_init(&s, root, "8:pids:/\n4:memory:/x\n", "sbx"), 0);
    assert_int_equal(s.version, 1);
    assert_true(s.have[CG_MEMORY]);
    assert_false(s.have[CG_PIDS]);
}

static void test_nothing_usable(void **state)
{
    (void)state;
    struct cg_sys s;
    assert_int_equal(cg_sys_init(&s, root, "0::/\n", "sbx"), 0);
    assert_int_equal(s.version, 0);
}

static void test_overlong(void **state)
{
    (void)state;
    char self[600];
    char longp[400];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    snprintf(self, sizeof self, "4:memory:/%s\n", longp);
    struct cg_sys s;
    assert_int_equal(cg_sys_init(&s, root, self, "sbx"), -ENAMETOOLONG);
}

static void test_v2(void **state)
{
    (void)state;
    mkdirs("user.slice/svc");
    put("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    put("user.slice/svc/cgroup.procs", "123\n");
    struct cg_sys s;
    assert_int_equal(cg_sys_init(&s, root, "0::/user.slice/svc\n", "sandboxd"), 0);
    assert_int_equal(s.version, 2);
    char buf[256], want[256];
    /* we moved ourselves to a leaf and enabled the controllers for the parent */
    get("user.slice/svc/sandboxd-daemon/cgroup.procs", buf, sizeof buf);
    assert_string_equal(buf, "0");
    get("user.slice/svc/cgroup.subtree_control", buf, sizeof buf);
    assert_string_equal(buf, "+memory +pids +cpu");
    snprintf(want, sizeof want, "%s/user.slice/svc/sandboxd", root);
    assert_string_equal(s.parent[CG_MEMORY], want);

    struct cg g;
    assert_int_equal(cg_create(&s, "b", &g), 0);
    assert_int_equal(cg_set_limits(&g, 1048576, 10, 500), 0);
    get("user.slice/svc/sandboxd/b/memory.max", buf, sizeof buf);
    assert_string_equal(buf, "1048576");
    get("user.slice/svc/sandboxd/b/memory.swap.max", buf, sizeof buf);
    assert_string_equal(buf, "0");
    get("user.slice/svc/sandboxd/b/pids.max", buf, sizeof buf);
    assert_string_equal(buf, "10");
    get("user.slice/svc/sandboxd/b/cpu.max", buf, sizeof buf);
    assert_string_equal(buf, "50000 100000");
    put("user.slice/svc/sandboxd/b/memory.events", "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n");
    assert_int_equal(cg_oom_kills(&g), 2);
    /* one dir on v2: one cgroup.procs to join */
    char procs[4][CG_PATH_MAX];
    cg_procs_paths(&g, procs, 4);
    assert_true(procs[0][0] != '\0');
    assert_true(procs[1][0] == '\0');
    /* kill with cgroup.kill present and an empty group: done in one pass */
    put("user.slice/svc/sandboxd/b/cgroup.kill", "");
    put("user.slice/svc/sandboxd/b/cgroup.procs", "");
    assert_int_equal(cg_kill_all(&g), 1);
    get("user.slice/svc/sandboxd/b/cgroup.kill", buf, sizeof buf);
    assert_string_equal(buf, "1");
}

static void test_remove_and_stale(void **state)
{
    (void)state;
    layout_v1();
    struct cg_sys s;
    assert_int_equal(cg_sys_init(&s, root, v1_self, "sandboxd"), 0);
    struct cg g;
    assert_int_equal(cg_create(&s, "old", &g), 0);
    /* The kill pass writes freezer.state into the fake freezer dir, so only the other
     * controllers' (empty) dirs can be removed here; on cgroupfs all of them go. */
    assert_true(cg_cleanup_stale(&s) >= 0);
    char p[512];
    snprintf(p, sizeof p, "%s/pids/sandboxd/old", root);
    assert_int_equal(access(p, F_OK), -1);
}

/* Suspend: freezer.state on v1 (FREEZING until done), cgroup.freeze / cgroup.events on v2,
 * -ENOTSUP without either. */
static void test_freeze(void **state)
{
    (void)state;
    layout_v1();
    struct cg_sys s;
    assert_int_equal(cg_sys_init(&s, root, v1_self, "sandboxd"), 0);
    struct cg g;
    assert_int_equal(cg_create(&s, "fz", &g), 0);
    char buf[64];
    assert_int_equal(cg_freeze(&g, true), 0);
    get("freezer/sandboxd/fz/freezer.state", buf, sizeof buf);
    assert_string_equal(buf, "FROZEN");
    put("freezer/sandboxd/fz/freezer.state", "FREEZING\n");
    assert_int_equal(cg_frozen(&g), 0);
    put("freezer/sandboxd/fz/freezer.state", "FROZEN\n");
    assert_int_equal(cg_frozen(&g), 1);
    assert_int_equal(cg_freeze(&g, false), 0);
    get("freezer/sandboxd/fz/freezer.state", buf, sizeof buf);
    assert_string_equal(buf, "THAWED");
    assert_int_equal(cg_frozen(&g), 0);
    g.dir[CG_FREEZER][0] = '\0'; /* no freezer hierarchy */
    assert_int_equal(cg_freeze(&g, true), -ENOTSUP);
    assert_int_equal(cg_frozen(&g), -ENOTSUP);

    struct cg g2 = { .version = 2 };
    snprintf(g2.dir[CG_MEMORY], CG_PATH_MAX, "%s/v2box", root);
    mkdirs("v2box");
    assert_int_equal(cg_freeze(&g2, true), -ENOTSUP); /* kernel without cgroup.freeze */
    put("v2box/cgroup.freeze", "0\n");
    assert_int_equal(cg_freeze(&g2, true), 0);
    get("v2box/cgroup.freeze", buf, sizeof buf);
    assert_string_equal(buf, "1");
    put("v2box/cgroup.events", "populated 1\nfrozen 0\n");
    assert_int_equal(cg_frozen(&g2), 0);
    put("v2box/cgroup.events", "populated 1\nfrozen 1\n");
    assert_int_equal(cg_frozen(&g2), 1);
    assert_int_equal(cg_freeze(&g2, false), 0);
    get("v2box/cgroup.freeze", buf, sizeof buf);
    assert_string_equal(buf, "0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v1_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_missing_controller, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overlong, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_and_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freeze, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
