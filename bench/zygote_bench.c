/*
 * zygote_bench.c — how fast and how small a Python context from the zygote is.
 *
 * Against a real sandbox (jail.h) and the real sandboxd-zygote (zygote_client.h):
 *   1. fork→ready: from zyg_fork() to the context's `ready` line on its channel, over
 *      --runs contexts (default 200) forked one after another (each closed after ready);
 *      also the part until the zygote's reply (the process exists: the zygote replies at
 *      clone time, before the context has entered its sandbox);
 *   2. `1+1` round trip on one context (execute → end);
 *   3. private memory (Private_Clean + Private_Dirty from /proc/PID/smaps_rollup) of
 *      --idle idle contexts (default 10), right after ready and after `import pandas`;
 *   4. the baseline: a cold `/usr/bin/python3 -c 'import numpy, pandas, matplotlib'`.
 * Prints medians and p99 and the ratio to the cold start. Needs root; exits 77 otherwise.
 * --smaps also prints, for the first idle context, the mappings holding the most private
 * memory (heap, Python's arenas, libpython's data...), after ready and after the import;
 * --hold S pauses S seconds at both points (printing the pids) for outside inspection.
 * Targets (docs): ready ≤ 10 ms p50; ≤ 5 MiB private per idle context after import pandas.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail.h"
#include "../tests/unit/jail_wait.h"
#include "zygote_client.h"

#define MAX_IDLE 64

static uv_loop_t *loop;
static jail *sbx;

struct ctx {
    int chan, out, err;
    pid_t pid, ns_pid;
    bool forked, exited;
    int rc;
    jail_proc *proc;
    char buf[8192];
    size_t len;
};

static void on_forked(pid_t pid, pid_t ns_pid, const char *msg, void *arg)
{
    struct ctx *c = arg;
    c->forked = true;
    c->rc = pid > 0 ? 0 : pid;
    c->pid = pid;
    c->ns_pid = ns_pid;
    if (pid < 0)
        fprintf(stderr, "fork failed: %s\n", msg ? msg : "?");
}

static void on_exit_cb(jail_proc *p, int status, void *arg)
{
    (void)p;
    (void)status;
    struct ctx *c = arg;
    c->exited = true;
}

static void on_destroyed(void *arg)
{
    *(bool *)arg = true;
}

static double now_ms(void)
{
    return (double)uv_hrtime() / 1e6;
}

static void on_tick(uv_timer_t *t)
{
    (void)t;
}

/* Run the loop (blocking in epoll, like the daemon: no busy wait that would steal one of
 * the two vCPUs from the zygote) until *flag or timeout. */
static void run_until(bool *flag, double timeout_ms)
{
    static uv_timer_t tick;
    static bool tick_init;
    if (!tick_init) {
        uv_timer_init(loop, &tick);
        uv_timer_start(&tick, on_tick, 20, 20);
        uv_unref((uv_handle_t *)&tick);
        tick_init = true;
    }
    double end = now_ms() + timeout_ms;
    while (!*flag && now_ms() < end)
        uv_run(loop, UV_RUN_ONCE);
}

/* Wait for a line containing needle on the channel. 0 or -1. */
static int wait_line(struct ctx *c, const char *needle, int timeout_ms)
{
    for (;;) {
        char *nl;
        while ((nl = memchr(c->buf, '\n', c->len))) {
            *nl = '\0';
            bool hit = strstr(c->buf, needle) != NULL;
            size_t n = (size_t)(nl - c->buf) + 1;
            memmove(c->buf, nl + 1, c->len - n);
            c->len -= n;
            if (hit)
                return 0;
        }
        struct pollfd p = { .fd = c->chan, .events = POLLIN };
        if (poll(&p, 1, timeout_ms) <= 0)
            return -1;
        ssize_t r = read(c->chan, c->buf + c->len, sizeof c->buf - c->len - 1);
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
    }
}

static const char *const env[] = { "PATH=/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8",
                                   "SANDBOXD_LANGUAGE=python", NULL };

/* Fork a context; *t_reply and *t_ready get the times from the request. 0 or -1. */
static int ctx_open(struct ctx *c, double *t_reply, double *t_ready)
{
    memset(c, 0, sizeof *c);
    int sv[2], po[2], pe[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || pipe2(po, O_CLOEXEC) ||
        pipe2(pe, O_CLOEXEC))
        return -1;
    struct jail_entry e;
    double t0 = now_ms();
    if (jail_entry_info(sbx, &e) ||
        zyg_fork(&e, "/workspace", env, sv[1], po[1], pe[1], on_forked, c))
        return -1;
    close(sv[1]);
    close(po[1]);
    close(pe[1]);
    c->chan = sv[0];
    c->out = po[0];
    c->err = pe[0];
    run_until(&c->forked, 10000);
    if (!c->forked || c->rc)
        return -1;
    if (t_reply)
        *t_reply = now_ms() - t0;
    if (wait_line(c, "\"ready\"", 10000))
        return -1;
    if (t_ready)
        *t_ready = now_ms() - t0;
    return jail_adopt_wait(loop, sbx, c->ns_pid, on_exit_cb, c, &c->proc) ? -1 : 0;
}

static void ctx_close(struct ctx *c)
{
    close(c->chan);
    close(c->out);
    close(c->err);
    run_until(&c->exited, 10000);
}

static int ctx_exec(struct ctx *c, const char *code_json)
{
    char line[512];
    int n = snprintf(line, sizeof line, "{\"type\":\"execute\",\"id\":\"b\",\"code\":%s}\n",
                     code_json);
    if (n < 0 || (size_t)n >= sizeof line || write(c->chan, line, (size_t)n) != n)
        return -1;
    return wait_line(c, "\"end\"", 30000);
}

/* Private_Clean + Private_Dirty in KiB, or -1. */
static long private_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long total = 0, v;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Private_Clean: %ld kB", &v) == 1 ||
            sscanf(line, "Private_Dirty: %ld kB", &v) == 1)
            total += v;
    fclose(f);
    return total;
}

static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* --smaps: print the mappings of pid that hold the most private memory (KiB), so the
 * pages a context copied from the zygote can be traced to their owner (heap, Python's
 * arenas, a library's data). */
static void print_smaps(pid_t pid, const char *when)
{
    char path[64], line[512], name[256] = "";
    snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    struct { char name[256]; long kib; } top[256];
    int n = 0;
    long cur = 0, v;
    char range[64] = "";
    for (;;) {
        bool eof = !fgets(line, sizeof line, f);
        unsigned long a, b;
        if (eof || sscanf(line, "%lx-%lx", &a, &b) == 2) {
            if (range[0] && cur > 0 && n < 256) {
                snprintf(top[n].name, sizeof top[n].name, "%s %s", range, name);
                top[n++].kib = cur;
            }
            if (eof)
                break;
            cur = 0;
            name[0] = '\0';
            snprintf(range, sizeof range, "%lx", a);
            char *sp = line;
            for (int k = 0; k < 5 && sp; k++)
                sp = strchr(sp + 1, ' ');
            if (sp) {
                while (*sp == ' ')
                    sp++;
                snprintf(name, sizeof name, "%s", sp);
                name[strcspn(name, "\n")] = '\0';
            }
        } else if (sscanf(line, "Private_Clean: %ld kB", &v) == 1 ||
                   sscanf(line, "Private_Dirty: %ld kB", &v) == 1) {
            cur += v;
        }
    }
    fclose(f);
    printf("private memory of context %d by mapping, %s (KiB):\n", (int)pid, when);
    for (int k = 0; k < 20; k++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (top[i].kib > 0 && (best < 0 || top[i].kib > top[best].kib))
                best = i;
        if (best < 0)
            break;
        printf("  %6ld  %s\n", top[best].kib, top[best].name);
        top[best].kib = 0;
    }
}

/* --hold S: print the zygote's and a context's pids and sleep S seconds, so that their
 * memory can be inspected from outside (/proc/PID/smaps, pagemap). */
static void hold_for(int seconds, pid_t ctx, const char *when)
{
    printf("holding %d s %s: zygote %d, context %d\n", seconds, when, (int)zyg_pid(),
           (int)ctx);
    fflush(stdout);
    sleep((unsigned)seconds);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)(p * (n - 1) + 0.5);
    return n ? v[i] : 0;
}

static double cold_python_ms(void)
{
    double t0 = now_ms();
    pid_t p = fork();
    if (p == 0) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0)
            dup2(null, 2);
        execl("/usr/bin/python3", "python3", "-c", "import numpy, pandas, matplotlib",
              (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(p, &st, 0);
    return now_ms() - t0;
}

int main(int argc, char **argv)
{
    int runs = 200, idle = 10, hold = 0;
    bool smaps = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smaps")) {
            smaps = true;
            continue;
        }
        if (i + 1 >= argc)
            break;
        if (!strcmp(argv[i], "--runs"))
            runs = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--idle"))
            idle = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--hold"))
            hold = (int)strtol(argv[i + 1], NULL, 10);
        i++;
    }
    if (runs < 1 || runs > 100000 || idle < 1 || idle > MAX_IDLE) {
        fprintf(stderr, "usage: zygote-bench [--runs N] [--idle N<=%d] [--smaps] [--hold S]\n", MAX_IDLE);
        return 2;
    }
    if (geteuid() != 0) {
        fprintf(stderr, "zygote-bench: needs root\n");
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    loop = uv_default_loop();
    char state[] = "/tmp/sbx-zygbench-XXXXXX", err[512];
    if (!mkdtemp(state))
        return 1;
    char ipy[64];
    snprintf(ipy, sizeof ipy, "%s/ipython", state);
    struct jail_global g = { .state_dir = state, .init_path = ZYG_BUILD_DIR "/sandboxd-init",
                             .runtimes_dir = ZYG_SOURCE_DIR "/runtimes", .max_sandboxes = 2 };
    if (jail_global_init(loop, &g, err, sizeof err)) {
        fprintf(stderr, "jail_global_init: %s\n", err);
        return 77;
    }
    struct zyg_config zc = { .zygote_path = ZYG_BUILD_DIR "/sandboxd-zygote",
                             .runtimes_dir = ZYG_SOURCE_DIR "/runtimes",
                             .mpl_cache = ZYG_BUILD_DIR "/mpl-cache", .ipython_dir = ipy,
                             .preload = "IPython,numpy,pandas,matplotlib" };
    double t0 = now_ms();
    if (zyg_start(loop, &zc, err, sizeof err)) {
        fprintf(stderr, "zyg_start: %s\n", err);
        return 1;
    }
    double zstart = now_ms() - t0;
    struct jail_opts o = { .id = "zygbench", .limits = { .memory_bytes = 4ULL << 30,
                                                         .pids = 1024, .tmp_bytes = 64 << 20 } };
    if (jail_create_wait(loop, &o, &sbx, err, sizeof err)) {
        fprintf(stderr, "jail_create: %s\n", err);
        return 1;
    }
    printf("zygote start (imports IPython, numpy, pandas, matplotlib): %.0f ms, RSS %ld KiB, "
           "Python %s\n", zstart, rss_kib(zyg_pid()), zyg_version());

    /* 1. fork → ready */
    double *reply = calloc((size_t)runs, sizeof *reply), *ready = calloc((size_t)runs, sizeof *ready);
    int ok = 0;
    for (int i = 0; i < runs; i++) {
        struct ctx c;
        if (ctx_open(&c, &reply[ok], &ready[ok])) {
            fprintf(stderr, "context %d failed\n", i);
            continue;
        }
        ok++;
        ctx_close(&c);
    }
    double rp50 = pct(reply, ok, 0.5), rp99 = pct(reply, ok, 0.99);
    double p50 = pct(ready, ok, 0.5), p99 = pct(ready, ok, 0.99);
    printf("fork→zygote reply (process created), %d contexts: p50 %.2f ms  p99 %.2f ms\n", ok,
           rp50, rp99);
    printf("fork→ready (context sends ready),      %d contexts: p50 %.2f ms  p99 %.2f ms  "
           "(target p50 ≤ 10 ms)\n", ok, p50, p99);

    /* 2. 1+1 round trip */
    struct ctx c;
    double rt[200];
    if (ctx_open(&c, NULL, NULL) == 0) {
        ctx_exec(&c, "\"1+1\"");
        for (int i = 0; i < 200; i++) {
            double s = now_ms();
            ctx_exec(&c, "\"1+1\"");
            rt[i] = now_ms() - s;
        }
        printf("1+1 round trip (execute → end), 200 runs: p50 %.3f ms  p99 %.3f ms\n",
               pct(rt, 200, 0.5), pct(rt, 200, 0.99));
        ctx_close(&c);
    }

    /* 3. private memory of idle contexts */
    static struct ctx idle_c[MAX_IDLE];
    double fresh[MAX_IDLE], after[MAX_IDLE], plot[MAX_IDLE];
    int n = 0;
    for (int i = 0; i < idle; i++)
        if (ctx_open(&idle_c[n], NULL, NULL) == 0)
            n++;
    usleep(100000);
    for (int i = 0; i < n; i++)
        fresh[i] = (double)private_kib(idle_c[i].pid) / 1024.0;
    if (smaps && n)
        print_smaps(idle_c[0].pid, "after ready");
    if (hold > 0)
        hold_for(hold, n ? idle_c[0].pid : 0, "after ready");
    for (int i = 0; i < n; i++)
        ctx_exec(&idle_c[i], "\"import pandas\"");
    for (int i = 0; i < n; i++)
        after[i] = (double)private_kib(idle_c[i].pid) / 1024.0;
    if (smaps && n)
        print_smaps(idle_c[0].pid, "after `import pandas`");
    if (hold > 0)
        hold_for(hold, n ? idle_c[0].pid : 0, "after `import pandas`");
    for (int i = 0; i < n; i++)
        ctx_exec(&idle_c[i], "\"import pandas as pd, matplotlib.pyplot as plt\\n"
                 "df = pd.DataFrame({'x': range(100), 'y': range(100)})\\n"
                 "df.plot(x='x', y='y'); plt.show()\\ndf.describe()\"");
    for (int i = 0; i < n; i++)
        plot[i] = (double)private_kib(idle_c[i].pid) / 1024.0;
    printf("private memory per idle context (%d contexts): after ready %.2f MiB, after "
           "`import pandas` %.2f MiB (target ≤ 5 MiB), after a DataFrame + plot cell %.2f MiB\n",
           n, pct(fresh, n, 0.5), pct(after, n, 0.5), pct(plot, n, 0.5));
    for (int i = 0; i < n; i++)
        ctx_close(&idle_c[i]);

    /* 4. cold baseline */
    double cold[5];
    for (int i = 0; i < 5; i++)
        cold[i] = cold_python_ms();
    double cp50 = pct(cold, 5, 0.5);
    printf("cold /usr/bin/python3 -c 'import numpy, pandas, matplotlib', 5 runs: p50 %.0f ms\n",
           cp50);
    printf("ratio: cold start / zygote context ready = %.0fx\n", p50 > 0 ? cp50 / p50 : 0);

    bool gone = false;
    jail_destroy(sbx, on_destroyed, &gone);
    zyg_stop();
    double end = now_ms() + 5000;
    while (zyg_pid() && now_ms() < end)
        uv_run(loop, UV_RUN_NOWAIT);
    run_until(&gone, 10000);
    jail_global_shutdown();
    free(reply);
    free(ready);
    return 0;
}
