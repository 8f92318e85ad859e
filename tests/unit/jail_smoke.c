/*
 * jail_smoke.c — standalone driver for the jail layer: creates a sandbox through jail.h
 * on a libuv loop, shows what a process inside sees (ids, capabilities, no_new_privs,
 * seccomp, the root directory), checks exit statuses, errno propagation, limits and
 * cleanup, then measures creation and spawn+exit times (medians over --runs).
 *
 * Needs root (or unprivileged user namespaces). Exits 77 (skip) when sandboxes cannot
 * be created here, 1 on a failed check, 0 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jail.h"
#include "jail_enter.h"
#include "jail_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_failures;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                  \
            fputc('\n', stderr);                           \
            g_failures++;                                  \
        }                                                  \
    } while (0)

struct waiter {
    bool done;
    int status;
};

static void on_exit_cb(jail_proc *p, int status, void *arg)
{
    (void)p;
    struct waiter *w = arg;
    w->done = true;
    w->status = status;
}

static void on_destroyed(void *arg)
{
    *(bool *)arg = true;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n ? v[n / 2] : 0;
}

static double pct(double *v, int n, double p)
{
    return n ? v[(int)((n - 1) * p)] : 0;   /* v already sorted by median() */
}

/* Spawn argv in j with the given output fd and wait for its exit. Returns the spawn rc. */
static int run(uv_loop_t *loop, jail *j, const char *const *argv, int outfd, int *status)
{
    static const char *const envp[] = { "PATH=/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8", NULL };
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    struct jail_spawn_opts o = {
        .argv = argv, .envp = envp, .cwd = "/workspace",
        .stdin_fd = devnull, .stdout_fd = outfd, .stderr_fd = outfd, .extra_fd = -1,
    };
    struct waiter w = { 0 };
    jail_proc *p;
    char err[256] = "";
    int rc = jail_spawn_wait(loop, j, &o, on_exit_cb, &w, &p, err, sizeof err);
    close(devnull);
    if (rc) {
        *status = -1;
        return rc;
    }
    while (!w.done)
        uv_run(loop, UV_RUN_ONCE);
    *status = w.status;
    return 0;
}

/* Run a shell command in the sandbox and capture its output (capped). */
static int capture(uv_loop_t *loop, jail *j, const char *cmd, char *out, size_t cap, int *status)
{
    char path[] = "/tmp/jail-smoke-out-XXXXXX";
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return -errno;
    unlink(path);
    const char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
    int rc = run(loop, j, argv, fd, status);
    ssize_t n = pread(fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    return rc;
}

/* The zygote path: a forked child of this process (host namespaces, root) enters the
 * sandbox with jail_enter(); the grandchild reports its pid inside and exits 5; the
 * daemon side adopts it and must see the real status. We are the subreaper (set by
 * jail_global_init), so the grandchild becomes our child when its parent exits. */
static void check_adopt(uv_loop_t *loop, jail *j)
{
    struct jail_entry e;
    int rc = jail_entry_info(j, &e);
    CHECK(rc == 0, "jail_entry_info: %d", rc);
    static struct jail_sc_prog prog;
    CHECK(jail_seccomp_compile(&prog) == 0, "seccomp compile");
    int pp[2];
    if (pipe2(pp, O_CLOEXEC) < 0)
        return;
    pid_t c = fork();
    if (c == 0) {
        int keep[] = { 1, 2, pp[1] };
        struct jail_enter_opts eo = { .cwd = "/workspace", .keep_fds = keep, .nkeep = 3,
                                      .seccomp = &prog, .report_fd = -1 };
        rc = jail_enter(&e, &eo);
        if (rc < 0) {
            fprintf(stderr, "jail_enter: %s\n", strerror(-rc));
            _exit(100);
        }
        /* grandchild: inside, unprivileged, seccomp'd; no exec */
        int32_t me = (int32_t)getpid();
        (void)!write(pp[1], &me, sizeof me);
        char buf[64] = "";
        int fd = open("/proc/self/status", O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, buf, 0) : -1;
        (void)n;
        usleep(50000);
        _exit(getuid() == 1000 && access("/workspace", W_OK) == 0 ? 5 : 6);
    }
    close(pp[1]);
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "intermediate: st=%x", (unsigned)st);
    int32_t nspid = 0;
    ssize_t n = read(pp[0], &nspid, sizeof nspid);
    close(pp[0]);
    CHECK(n == sizeof nspid && nspid > 1, "no pid from the grandchild");
    struct waiter w = { 0 };
    jail_proc *p;
    rc = jail_adopt_wait(loop, j, nspid, on_exit_cb, &w, &p);
    CHECK(rc == 0, "jail_adopt: %s", strerror(-rc));
    while (rc == 0 && !w.done)
        uv_run(loop, UV_RUN_ONCE);
    printf("adopted zygote-style child: ns pid %d, status 0x%x\n", (int)nspid, (unsigned)w.status);
    CHECK(WIFEXITED(w.status) && WEXITSTATUS(w.status) == 5, "adopted status 0x%x", (unsigned)w.status);
}

struct started {
    int calls;
    int rc;
};

static void on_started_count(jail_proc *p, int rc, const char *msg, void *arg)
{
    struct started *st = arg;
    (void)p;
    (void)msg;
    st->calls++;
    st->rc = rc;
}

/* The asynchronous contract of jail_spawn (jail.h): no callback from inside the call, at
 * most max_pending (4 here) requests wait, a cancelled one is never answered, and a
 * sandbox destroyed with a request still waiting answers it exactly once, -ECANCELED. */
static void check_async(uv_loop_t *loop, jail *j)
{
    static const char *const a_true[] = { "/bin/true", NULL };
    static const char *const a_sleep[] = { "/bin/sleep", "5", NULL };
    static const char *const envp[] = { NULL };
    struct jail_spawn_opts o = { .argv = a_true, .envp = envp, .cwd = "/workspace",
                                 .stdin_fd = 0, .stdout_fd = 2, .stderr_fd = 2, .extra_fd = -1 };
    struct started st[5];
    jail_req *req[5];
    char err[256];
    memset(st, 0, sizeof st);
    for (int i = 0; i < 5; i++) {
        int rc = jail_spawn(j, &o, on_started_count, NULL, &st[i], &req[i], err, sizeof err);
        CHECK(rc == (i < 4 ? 0 : -EBUSY), "spawn #%d: rc=%d (%s)", i, rc, err);
        CHECK(st[i].calls == 0, "spawn #%d answered from inside the call", i);
    }
    jail_cancel(req[1]);
    double until = now_ms() + 10000;
    while ((!st[0].calls || !st[2].calls || !st[3].calls) && now_ms() < until)
        uv_run(loop, UV_RUN_ONCE);
    for (double t = now_ms() + 100; now_ms() < t;)
        uv_run(loop, UV_RUN_NOWAIT);
    CHECK(st[0].calls == 1 && st[2].calls == 1 && st[3].calls == 1 && st[0].rc == 0,
          "answers: %d %d %d rc=%d", st[0].calls, st[2].calls, st[3].calls, st[0].rc);
    CHECK(st[1].calls == 0, "a cancelled spawn was answered");
    CHECK(st[4].calls == 0, "a refused spawn was answered");

    struct jail_opts jo = { .id = "smoke-async",
                            .limits = { .pids = 16, .tmp_bytes = 1 << 20 } };
    jail *k;
    if (jail_create_wait(loop, &jo, &k, err, sizeof err)) {
        CHECK(0, "jail_create smoke-async: %s", err);
        return;
    }
    struct started pending = { 0 };
    o.argv = a_sleep;
    int rc = jail_spawn(k, &o, on_started_count, NULL, &pending, NULL, err, sizeof err);
    CHECK(rc == 0, "spawn before destroy: %s", err);
    bool gone = false;
    jail_destroy(k, on_destroyed, &gone);
    while (!gone)
        uv_run(loop, UV_RUN_ONCE);
    CHECK(pending.calls == 1 && pending.rc == -ECANCELED,
          "spawn pending at destroy: calls=%d rc=%d", pending.calls, pending.rc);
    printf("async: cap, cancel and destroy-while-pending behave\n");
}

/* Copy the static probe into the workspace and run every attack it knows. */
static void run_probes(uv_loop_t *loop, jail *j, const char *probe)
{
    char dst[600], cmd[256], out[65536];
    int st;
    snprintf(dst, sizeof dst, "%s/probe", jail_workspace(j));
    int in = open(probe, O_RDONLY | O_CLOEXEC), o = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (in < 0 || o < 0) {
        fprintf(stderr, "cannot copy probe %s\n", probe);
        return;
    }
    static char buf[1 << 16];
    ssize_t r;
    while ((r = read(in, buf, sizeof buf)) > 0)
        (void)!write(o, buf, (size_t)r);
    close(in);
    close(o);
    (void)!chown(dst, 300001, 300001);
    snprintf(cmd, sizeof cmd, "for a in $(/workspace/probe list); do /workspace/probe $a; done");
    capture(loop, j, cmd, out, sizeof out, &st);
    printf("---- hostile probes ----\n%s----\n", out);
    CHECK(!strstr(out, "ALLOWED"), "an attack was allowed");
}

static void destroy_wait(uv_loop_t *loop, jail *j)
{
    bool gone = false;
    jail_destroy(j, on_destroyed, &gone);
    while (!gone)
        uv_run(loop, UV_RUN_ONCE);
}

int main(int argc, char **argv)
{
    const char *init = "./sandboxd-init", *runtimes = NULL, *probe = NULL, *state_arg = NULL;
    bool crash = false;
    int runs = 200;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--init"))
            init = argv[i + 1];
        else if (!strcmp(argv[i], "--runs"))
            runs = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--runtimes"))
            runtimes = argv[i + 1];
        else if (!strcmp(argv[i], "--probe"))
            probe = argv[i + 1];
        else if (!strcmp(argv[i], "--state"))
            state_arg = argv[i + 1];
        else if (!strcmp(argv[i], "--crash"))   /* "--crash yes": leave a sandbox behind */
            crash = true;
    }
    if (runs < 1 || runs > 100000)
        runs = 200;
    char state[64];
    snprintf(state, sizeof state, "/tmp/jail-smoke-%d", (int)getpid());
    if (state_arg)
        snprintf(state, sizeof state, "%s", state_arg);
    uv_loop_t *loop = uv_default_loop();
    struct jail_global g = {
        .state_dir = state, .init_path = init, .runtimes_dir = runtimes,
        .host_uid_base = 300000, .max_sandboxes = 16, .max_pending = 4,
    };
    char err[512] = "";
    int rc = jail_global_init(loop, &g, err, sizeof err);
    if (rc) {
        fprintf(stderr, "jail_global_init: %s\n", err);
        return 77;
    }
    const struct jail_features *f = jail_features();
    printf("features: root=%d userns=%d cgroup=v%d memory=%d pids=%d cpu=%d disk=%d seccomp=%d\n",
           f->root, f->userns, f->cgroup_version, f->memory_limit, f->pids_limit, f->cpu_limit,
           f->disk_limit, f->seccomp);

    struct jail_opts o = {
        .id = "smoke",
        .limits = { .memory_bytes = 256 << 20, .pids = 64, .cpu_millis = 1000,
                    .tmp_bytes = 64 << 20, .disk_bytes = 64 << 20 },
    };
    jail *j;
    rc = jail_create_wait(loop, &o, &j, err, sizeof err);
    if (rc) {
        fprintf(stderr, "jail_create: %s (%s)\n", err, strerror(-rc));
        return 77;
    }
    char out[8192];
    int st;
    if (crash) {
        /* Simulate a daemon crash: a process left running, no destroy. */
        const char *const a_sleep[] = { "/bin/sleep", "1000", NULL };
        static const char *const envp[] = { NULL };
        struct jail_spawn_opts so = { .argv = a_sleep, .envp = envp, .cwd = "/workspace",
                                      .stdin_fd = 0, .stdout_fd = 1, .stderr_fd = 2, .extra_fd = -1 };
        jail_proc *p;
        rc = jail_spawn_wait(loop, j, &so, NULL, NULL, &p, err, sizeof err);
        printf("crash: left %s running in %s\n", rc ? err : "sleep", jail_workspace(j));
        _exit(0);
    }
    rc = capture(loop, j, "id; grep -E 'Cap|NoNewPrivs|Seccomp' /proc/self/status; ls /; "
                 "hostname; cat /proc/1/cmdline | tr '\\0' ' '; echo; ls /dev; "
                 "touch /workspace/f && echo ws-writable; touch /usr/x 2>&1; touch /x 2>&1; "
                 "ps -e -o pid,user,args 2>/dev/null || ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '",
                 out, sizeof out, &st);
    printf("---- inside the sandbox (status 0x%x) ----\n%s----\n", (unsigned)st, out);
    CHECK(rc == 0 && WIFEXITED(st), "shell failed rc=%d st=%x", rc, (unsigned)st);
    CHECK(strstr(out, "uid=1000(sandbox) gid=1000(sandbox) groups=1000(sandbox)"), "wrong ids");
    CHECK(strstr(out, "CapEff:\t0000000000000000") && strstr(out, "CapBnd:\t0000000000000000") &&
          strstr(out, "CapPrm:\t0000000000000000") && strstr(out, "CapAmb:\t0000000000000000"),
          "capabilities left");
    CHECK(strstr(out, "NoNewPrivs:\t1"), "no_new_privs not set");
    CHECK(strstr(out, "Seccomp:\t2"), "seccomp not in filter mode");
    CHECK(strstr(out, "ws-writable"), "workspace not writable");
    CHECK(strstr(out, "Read-only file system"), "root or /usr writable");

    const char *const a_exit7[] = { "/bin/sh", "-c", "exit 7", NULL };
    rc = run(loop, j, a_exit7, 2, &st);
    CHECK(rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 7, "exit 7: rc=%d st=%x", rc, (unsigned)st);
    const char *const a_kill[] = { "/bin/sh", "-c", "kill -9 $$", NULL };
    rc = run(loop, j, a_kill, 2, &st);
    CHECK(rc == 0 && WIFSIGNALED(st) && WTERMSIG(st) == 9, "kill -9: rc=%d st=%x", rc, (unsigned)st);
    const char *const a_missing[] = { "/no/such/program", NULL };
    rc = run(loop, j, a_missing, 2, &st);
    CHECK(rc == -ENOENT, "missing program: rc=%d", rc);
    rc = capture(loop, j, "cd /workspace && i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done 2>&1 | "
                 "grep -c 'fork\\|Resource' ; kill $(jobs -p) 2>/dev/null; true", out, sizeof out, &st);
    printf("pids limit (64): sh reported %s", out);
    struct jail_usage u;
    jail_usage(j, &u);
    printf("usage: memory=%" PRIu64 " processes=%u oom_kills=%" PRIu64 "\n", u.memory_bytes,
           u.processes, jail_oom_kills(j));
    if (f->memory_limit) {
        rc = capture(loop, j, "python3 -c 'a = bytearray(400 << 20); a[::4096] = b\"x\" * len(a[::4096])'; echo rc=$?",
                     out, sizeof out, &st);
        printf("memory limit (256 MiB), 400 MiB python: %s", out);
        CHECK(jail_oom_kills(j) >= 1, "oom kill not counted");
        printf("oom_kills=%" PRIu64 "\n", jail_oom_kills(j));
    }
    check_adopt(loop, j);
    check_async(loop, j);
    if (probe)
        run_probes(loop, j, probe);
    char wsdir[512];
    snprintf(wsdir, sizeof wsdir, "%s", jail_workspace(j));
    destroy_wait(loop, j);
    struct stat sb;
    CHECK(stat(wsdir, &sb) < 0 && errno == ENOENT, "workspace left behind");
    CHECK(access("/sys/fs/cgroup/pids/sandboxd/smoke", F_OK) < 0, "cgroup left behind");

    /* Timing: creation (+ destroy, not timed) and spawn+exit of /bin/true. */
    double *tc = calloc((size_t)runs, sizeof *tc), *ts = calloc((size_t)runs, sizeof *ts);
    o.id = "bench";
    for (int i = 0; i < runs; i++) {
        double t0 = now_ms();
        rc = jail_create_wait(loop, &o, &j, err, sizeof err);
        tc[i] = now_ms() - t0;
        if (rc) {
            fprintf(stderr, "jail_create #%d: %s\n", i, err);
            return 1;
        }
        destroy_wait(loop, j);
    }
    o.id = "spawn";
    rc = jail_create_wait(loop, &o, &j, err, sizeof err);
    const char *const a_true[] = { "/bin/true", NULL };
    for (int i = 0; i < runs && rc == 0; i++) {
        double t0 = now_ms();
        int r2 = run(loop, j, a_true, 2, &st);
        ts[i] = now_ms() - t0;
        CHECK(r2 == 0 && st == 0, "true: rc=%d st=%x", r2, (unsigned)st);
    }
    destroy_wait(loop, j);
    double mc = median(tc, runs), ms = median(ts, runs);
    printf("create: median %.2f ms, p90 %.2f ms (n=%d)\n", mc, pct(tc, runs, 0.9), runs);
    printf("spawn+exit /bin/true: median %.2f ms, p90 %.2f ms (n=%d)\n", ms, pct(ts, runs, 0.9), runs);
    free(tc);
    free(ts);
    jail_global_shutdown();
    char sbdir[128];
    snprintf(sbdir, sizeof sbdir, "%s/sandboxes", state);
    rmdir(sbdir);
    rmdir(state);
    printf("%s\n", g_failures ? "SOME CHECKS FAILED" : "all checks passed");
    return g_failures ? 1 : 0;
}
