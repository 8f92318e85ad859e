/*
 * reaper.c — ends and reaps the daemon's children that no module owns (see reaper.h).
 *
 * A pass: list the children of every thread of ours (/proc/self/task/<tid>/children),
 * build the sorted set of owned pids (libuv's process handles, then the hook's list),
 * and look at each child outside it with waitid(WNOWAIT), which reads its state without
 * taking its status. A stray younger than REAP_GRACE_MS is left for a later pass (it
 * may be a context about to be adopted); an older one is SIGKILLed if it still runs and
 * reaped once it is a zombie. Killing by pid is safe: a child we have not reaped keeps
 * its pid, and nothing else reaps it while we run (one loop thread; owners reap only in
 * their own callbacks). __WALL: a child whose exit signal is not SIGCHLD is waited for
 * too, and since such a child sends no SIGCHLD, a pass that killed one (or met a young
 * stray, or the settling hook) schedules another one REAP_RETRY_MS later.
 *
 * Cost: one pass lists every child (contexts included) and makes one waitid per child
 * not owned; passes are spaced at least REAP_MIN_INTERVAL_MS apart whatever the rate of
 * SIGCHLD, so a churn of exits cannot make the loop spend its time here. The pid sets
 * are heap arrays sized by the number of children (bounded by the kernel's pid_max).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define REAP_MIN_INTERVAL_MS 100 /* passes at most this often */
#define REAP_RETRY_MS 200        /* next pass when a stray is pending */
#define REAP_GRACE_MS 1000       /* a child this young may still be about to be owned */

struct pidset {
    pid_t *v;
    size_t n, cap;
    bool oom;
};

static struct {
    uv_loop_t *loop;
    uv_signal_t sig;
    uv_timer_t timer;
    struct reap_hooks hooks;
    bool started;
    uint64_t last_ms;
    unsigned long long total;
} R;

static void set_add(pid_t pid, void *arg)
{
    struct pidset *s = arg;
    if (pid <= 0 || s->oom)
        return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        pid_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            s->oom = true;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = pid;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

static bool set_has(const struct pidset *s, pid_t pid)
{
    return s->n && bsearch(&pid, s->v, s->n, sizeof pid, cmp_pid) != NULL;
}

/* Append the pids listed in one children file ("12 34 56 "). */
static void read_children(int dirfd, const char *tid, struct pidset *out)
{
    char path[64];
    snprintf(path, sizeof path, "%s/children", tid);
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* the thread ended */
    char buf[4096];
    long cur = 0;
    bool digits = false;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] >= '0' && buf[i] <= '9' && cur < INT32_MAX / 10) {
                cur = cur * 10 + (buf[i] - '0');
                digits = true;
            } else if (digits) {
                set_add((pid_t)cur, out);
                cur = 0;
                digits = false;
            }
        }
    }
    if (digits)
        set_add((pid_t)cur, out);
    close(fd);
}

/* Children of every thread of this process. 0 or -errno. */
static int list_children(struct pidset *out)
{
    int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return -e;
    }
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            read_children(dirfd(d), de->d_name, out);
    closedir(d);
    return out->oom ? -ENOMEM : 0;
}

/* Milliseconds since pid started, or -1 when it cannot be told. */
static long long child_age_ms(pid_t pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    /* after the command name (which may hold spaces and parentheses): field 3 on;
     * starttime is field 22, in clock ticks since boot */
    char *p = strrchr(text, ')');
    if (!p)
        return -1;
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return -1;
    unsigned long long start = strtoull(p + 1, NULL, 10);
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec ts;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
        return -1;
    long long now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return now_ms - (long long)(start * 1000 / (unsigned long long)hz);
}

static void walk_cb(uv_handle_t *h, void *arg)
{
    if (h->type == UV_PROCESS)
        set_add(uv_process_get_pid((const uv_process_t *)h), arg);
}

static void on_timer(uv_timer_t *t);

static void schedule(uint64_t ms)
{
    if (R.started && !uv_is_active((uv_handle_t *)&R.timer))
        uv_timer_start(&R.timer, on_timer, ms, 0);
}

/* Collect the owned set: 0, or -errno when it is not complete (then treat none as a
 * stray). */
static int owned(struct pidset *known)
{
    if (R.loop)
        uv_walk(R.loop, walk_cb, known);
    int rc = R.hooks.known ? R.hooks.known(set_add, known) : 0;
    if (!rc && known->oom)
        rc = -ENOMEM;
    if (known->n)
        qsort(known->v, known->n, sizeof *known->v, cmp_pid);
    return rc;
}

int reap_sweep(void)
{
    if (R.hooks.settling && R.hooks.settling()) {
        schedule(REAP_RETRY_MS);
        return 0;
    }
    struct pidset kids = { 0 }, known = { 0 };
    int rc = list_children(&kids), reaped = 0;
    bool again = false;
    if (rc || kids.n == 0)
        goto out;
    rc = owned(&known);
    if (rc) {
        again = true;
        goto out;
    }
    for (size_t i = 0; i < kids.n; i++) {
        pid_t pid = kids.v[i];
        if (set_has(&known, pid))
            continue;
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0)
            continue; /* not our child any more */
        long long age = child_age_ms(pid);
        if (age >= 0 && age < REAP_GRACE_MS) {
            again = true;
            continue;
        }
        if (si.si_pid == 0) {
            log_warn("reaper: killing process %d, a child of the daemon that no sandbox owns",
                     (int)pid);
            (void)kill(pid, SIGKILL);
            again = true;
            continue;
        }
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | __WALL) == 0 && si.si_pid == pid) {
            reaped++;
            R.total++;
            log_warn("reaper: reaped process %d, a child of the daemon that no sandbox owned",
                     (int)pid);
        }
    }
out:
    free(kids.v);
    free(known.v);
    if (again)
        schedule(REAP_RETRY_MS);
    return rc ? rc : reaped;
}

static void run_pass(void)
{
    R.last_ms = uv_now(R.loop);
    (void)reap_sweep();
}

static void on_timer(uv_timer_t *t)
{
    (void)t;
    run_pass();
}

static void on_sigchld(uv_signal_t *h, int signum)
{
    (void)h;
    (void)signum;
    uint64_t since = uv_now(R.loop) - R.last_ms;
    if (since >= REAP_MIN_INTERVAL_MS)
        run_pass();
    else
        schedule(REAP_MIN_INTERVAL_MS - since);
}

int reap_start(uv_loop_t *loop, const struct reap_hooks *hooks)
{
    if (R.started)
        return -EALREADY;
    memset(&R, 0, sizeof R);
    R.loop = loop;
    if (hooks)
        R.hooks = *hooks;
    int rc = uv_signal_init(loop, &R.sig);
    if (rc)
        return rc;
    uv_timer_init(loop, &R.timer);
    rc = uv_signal_start(&R.sig, on_sigchld, SIGCHLD);
    if (rc) {
        uv_close((uv_handle_t *)&R.sig, NULL);
        uv_close((uv_handle_t *)&R.timer, NULL);
        return rc;
    }
    uv_unref((uv_handle_t *)&R.sig);
    uv_unref((uv_handle_t *)&R.timer);
    R.started = true;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)gettid());
    if (access(path, R_OK) < 0)
        log_warn("reaper: %s: %s; stray children of the daemon cannot be found "
                 "(kernel without CONFIG_PROC_CHILDREN?)",
                 path, strerror(errno));
    return 0;
}

void reap_stop(void)
{
    if (!R.started)
        return;
    R.started = false;
    uv_close((uv_handle_t *)&R.sig, NULL);
    uv_close((uv_handle_t *)&R.timer, NULL);
}

unsigned long long reap_strays_total(void)
{
    return R.total;
}
