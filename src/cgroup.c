/*
 * cgroup.c — sandbox cgroups on v1 (one hierarchy per controller) and v2 (one unified
 * hierarchy), behind the interface in cgroup.h.
 *
 * Layout: for each controller the daemon's own group is read from /proc/self/cgroup; the
 * sandbox parent is "<fsroot>/<controller>/<own path>/<subdir>" on v1 and
 * "<fsroot>/<own path>/<subdir>" on v2, and each sandbox gets "<parent>/<name>".
 * Every path is capped at CG_PATH_MAX; a path that does not fit is -ENAMETOOLONG, never
 * truncated. Writes open with O_CREAT so the same code runs against a plain directory
 * in the unit tests (cgroupfs ignores it for existing files). The kill path freezes a v1
 * group first (frozen tasks cannot exit, so the pids read from cgroup.procs cannot be
 * reused while we signal them), and uses cgroup.kill on v2. Suspending a sandbox is the
 * same freezer: freezer.state on v1 (FREEZING until every task stopped, then FROZEN),
 * cgroup.freeze on v2 (cgroup.events says "frozen 1" once done).
 * Nothing here trusts the contents of files a sandbox could write: sandboxes cannot
 * write to these files (they are owned by host root), and parsing is bounded anyway.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const ctrl_name[CG_NCTRL] = { "memory", "pids", "cpu", "freezer" };

/* snprintf into a capped buffer; -ENAMETOOLONG instead of truncating. */
static int path_fmt(char *out, size_t n, const char *a, const char *b, const char *c)
{
    int len = snprintf(out, n, "%s%s%s%s%s", a, b && *b ? "/" : "", b ? b : "", c && *c ? "/" : "",
                       c ? c : "");
    if (len < 0 || (size_t)len >= n)
        return -ENAMETOOLONG;
    return 0;
}

static int write_str(const char *dir, const char *file, const char *s)
{
    char p[CG_PATH_MAX];
    int rc = path_fmt(p, sizeof p, dir, file, NULL);
    if (rc)
        return rc;
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    size_t len = strlen(s);
    ssize_t w = write(fd, s, len);
    rc = w < 0 ? -errno : ((size_t)w == len ? 0 : -EIO);
    close(fd);
    return rc;
}

/* Read a small file into buf (NUL-terminated). Returns length or -errno. */
static ssize_t read_str(const char *dir, const char *file, char *buf, size_t n)
{
    char p[CG_PATH_MAX];
    int rc = path_fmt(p, sizeof p, dir, file, NULL);
    if (rc)
        return rc;
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = read(fd, buf + got, n - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return rc ? rc : (ssize_t)got;
}

static int read_u64(const char *dir, const char *file, uint64_t *v)
{
    char buf[64];
    ssize_t r = read_str(dir, file, buf, sizeof buf);
    if (r < 0)
        return (int)r;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno || end == buf)
        return -EINVAL;
    *v = x;
    return 0;
}

/* Find "key <n>" at a line start in a "key value" file. */
static uint64_t keyed_value(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *l = text; l && *l;) {
        if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
            return strtoull(l + kl + 1, NULL, 10);
        l = strchr(l, '\n');
        if (l)
            l++;
    }
    return 0;
}

static bool file_exists(const char *dir, const char *file)
{
    char p[CG_PATH_MAX];
    if (path_fmt(p, sizeof p, dir, file, NULL))
        return false;
    return access(p, F_OK) == 0;
}

static int mkdir_ok(const char *p)
{
    if (mkdir(p, 0755) == 0 || errno == EEXIST)
        return 0;
    return -errno;
}

/* Does the comma-separated list contain name? */
static bool list_has(const char *list, size_t len, const char *name)
{
    size_t nl = strlen(name);
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t tl = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (tl == nl && memcmp(p, name, nl) == 0)
            return true;
        p += tl + 1;
    }
    return false;
}

/* Does the space-separated word list (cgroup.controllers) contain name? */
static bool words_have(const char *text, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\n')
            p++;
        size_t tl = strcspn(p, " \n");
        const char *w = p;
        size_t wl = tl;
        if (wl && *w == '+') { /* "+memory" as written to subtree_control */
            w++;
            wl--;
        }
        if (wl == nl && memcmp(w, name, nl) == 0)
            return true;
        p += tl;
    }
    return false;
}

static int init_v1(struct cg_sys *s, const char *fsroot, const char *self, const char *subdir)
{
    for (const char *l = self; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        /* "<id>:<controller list>:<path>" */
        const char *c1 = memchr(l, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l)) : NULL;
        if (c1 && c2 && c2 > c1 + 1) {
            char path[CG_PATH_MAX];
            size_t pl = len - (size_t)(c2 + 1 - l);
            if (pl >= sizeof path)
                return -ENAMETOOLONG;
            memcpy(path, c2 + 1, pl);
            path[pl] = '\0';
            for (int c = 0; c < CG_NCTRL; c++) {
                if (s->have[c] || !list_has(c1 + 1, (size_t)(c2 - c1 - 1), ctrl_name[c]))
                    continue;
                char base[CG_PATH_MAX], own[CG_PATH_MAX];
                if (path_fmt(base, sizeof base, fsroot, ctrl_name[c], NULL) ||
                    path_fmt(own, sizeof own, base, strcmp(path, "/") ? path + 1 : "", NULL))
                    return -ENAMETOOLONG;
                if (!file_exists(own, "cgroup.procs"))
                    continue;
                if (path_fmt(s->parent[c], CG_PATH_MAX, own, subdir, NULL))
                    return -ENAMETOOLONG;
                if (mkdir_ok(s->parent[c]) == 0)
                    s->have[c] = true;
                else
                    s->parent[c][0] = '\0';
            }
        }
        l = nl ? nl + 1 : l + len;
    }
    return 0;
}

static int init_v2(struct cg_sys *s, const char *fsroot, const char *self, const char *subdir)
{
    const char *l = strstr(self, "0::");
    if (!l || (l != self && l[-1] != '\n'))
        return 0;
    char ctrls[512];
    if (read_str(fsroot, "cgroup.controllers", ctrls, sizeof ctrls) < 0)
        return 0;
    size_t pl = strcspn(l + 3, "\n");
    char path[CG_PATH_MAX], own[CG_PATH_MAX], leaf[CG_PATH_MAX], parent[CG_PATH_MAX];
    if (pl >= sizeof path)
        return -ENAMETOOLONG;
    memcpy(path, l + 3, pl);
    path[pl] = '\0';
    if (path_fmt(own, sizeof own, fsroot, strcmp(path, "/") ? path + 1 : "", NULL) ||
        path_fmt(parent, sizeof parent, own, subdir, NULL))
        return -ENAMETOOLONG;
    int len = snprintf(leaf, sizeof leaf, "%s/%s-daemon", own, subdir);
    if (len < 0 || (size_t)len >= sizeof leaf)
        return -ENAMETOOLONG;
    /* Enabling controllers for children is refused while our own group holds processes
     * (the "no internal processes" rule), so move ourselves to a leaf first. */
    char procs[4096];
    if (strcmp(path, "/") != 0 && read_str(own, "cgroup.procs", procs, sizeof procs) > 0) {
        if (mkdir_ok(leaf) == 0)
            (void)write_str(leaf, "cgroup.procs", "0");
    }
    static const char *const v2name[CG_NCTRL] = { "memory", "pids", "cpu", NULL };
    char want[64] = "";
    for (int c = 0; c < CG_NCTRL; c++) {
        if (v2name[c] && words_have(ctrls, v2name[c])) {
            size_t wl = strlen(want);
            snprintf(want + wl, sizeof want - wl, "%s+%s", wl ? " " : "", v2name[c]);
        }
    }
    if (!*want || mkdir_ok(parent))
        return 0;
    (void)write_str(own, "cgroup.subtree_control", want);
    (void)write_str(parent, "cgroup.subtree_control", want);
    char enabled[512];
    if (read_str(parent, "cgroup.subtree_control", enabled, sizeof enabled) < 0)
        return 0;
    for (int c = 0; c < CG_NCTRL; c++) {
        bool ok = c == CG_FREEZER ? file_exists(own, "cgroup.kill") || words_have(enabled, "memory")
                                  : v2name[c] && words_have(enabled, v2name[c]);
        if (ok) {
            s->have[c] = true;
            memcpy(s->parent[c], parent, sizeof parent);
        }
    }
    return 0;
}

int cg_sys_init(struct cg_sys *s, const char *fsroot, const char *self_cgroup, const char *subdir)
{
    memset(s, 0, sizeof *s);
    int rc = init_v1(s, fsroot, self_cgroup, subdir);
    if (rc)
        return rc;
    if (s->have[CG_MEMORY] || s->have[CG_PIDS] || s->have[CG_CPU]) {
        s->version = 1;
        return 0;
    }
    memset(s, 0, sizeof *s);
    rc = init_v2(s, fsroot, self_cgroup, subdir);
    if (rc)
        return rc;
    if (s->have[CG_MEMORY] || s->have[CG_PIDS] || s->have[CG_CPU])
        s->version = 2;
    else
        memset(s, 0, sizeof *s);
    return 0;
}

int cg_sys_probe(struct cg_sys *s, const char *fsroot, const char *subdir)
{
    char self[4096];
    ssize_t r = read_str("/proc/self", "cgroup", self, sizeof self);
    if (r < 0) {
        memset(s, 0, sizeof *s);
        return (int)r;
    }
    return cg_sys_init(s, fsroot, self, subdir);
}

int cg_lookup(const struct cg_sys *s, const char *name, struct cg *out)
{
    memset(out, 0, sizeof *out);
    out->version = s->version;
    for (int c = 0; c < CG_NCTRL; c++) {
        if (!s->have[c])
            continue;
        /* On v2 every controller shares one dir; record it once (the memory slot, or the
         * first one present) so that joins and removals happen once. */
        if (s->version == 2) {
            bool dup = false;
            for (int d = 0; d < c; d++)
                dup = dup || out->dir[d][0];
            if (dup)
                continue;
        }
        int rc = path_fmt(out->dir[c], CG_PATH_MAX, s->parent[c], name, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

/* The dir that carries a controller's files (on v2 the single shared dir). */
static const char *ctrl_dir(const struct cg *g, enum cg_ctrl c)
{
    if (g->version == 2) {
        for (int d = 0; d < CG_NCTRL; d++)
            if (g->dir[d][0])
                return g->dir[d];
        return NULL;
    }
    return g->dir[c][0] ? g->dir[c] : NULL;
}

/* Any dir of the group, for reading cgroup.procs (every process is in all of them). */
static const char *any_dir(const struct cg *g)
{
    static const enum cg_ctrl pref[] = { CG_FREEZER, CG_PIDS, CG_MEMORY, CG_CPU };
    for (size_t i = 0; i < sizeof pref / sizeof pref[0]; i++)
        if (g->dir[pref[i]][0])
            return g->dir[pref[i]];
    return NULL;
}

int cg_create(const struct cg_sys *s, const char *name, struct cg *out)
{
    int rc = cg_lookup(s, name, out);
    if (rc)
        return rc;
    for (int c = 0; c < CG_NCTRL; c++) {
        if (!out->dir[c][0])
            continue;
        if (mkdir(out->dir[c], 0755) < 0) {
            rc = -errno;
            for (int d = 0; d < c; d++)
                if (out->dir[d][0])
                    (void)rmdir(out->dir[d]);
            return rc;
        }
    }
    return 0;
}

int cg_set_limits(const struct cg *g, uint64_t memory_bytes, uint32_t pids, uint32_t cpu_millis)
{
    char v[64];
    int rc = 0;
    const char *d;
    bool v2 = g->version == 2;
    if (memory_bytes && (d = ctrl_dir(g, CG_MEMORY))) {
        snprintf(v, sizeof v, "%" PRIu64, memory_bytes);
        rc = write_str(d, v2 ? "memory.max" : "memory.limit_in_bytes", v);
        if (rc)
            return rc;
        /* No swap for sandboxes: memory+swap capped at the same value (v1, when the
         * kernel accounts swap) or swap.max 0 (v2). Absent files are fine. */
        if (v2)
            (void)write_str(d, "memory.swap.max", "0");
        else if (file_exists(d, "memory.memsw.limit_in_bytes"))
            (void)write_str(d, "memory.memsw.limit_in_bytes", v);
    }
    if (pids && (d = ctrl_dir(g, CG_PIDS))) {
        snprintf(v, sizeof v, "%" PRIu32, pids);
        rc = write_str(d, "pids.max", v);
        if (rc)
            return rc;
    }
    if (cpu_millis && (d = ctrl_dir(g, CG_CPU))) {
        uint64_t quota = (uint64_t)cpu_millis * 100; /* period 100 ms = 100000 us */
        if (v2) {
            snprintf(v, sizeof v, "%" PRIu64 " 100000", quota);
            rc = write_str(d, "cpu.max", v);
        } else {
            rc = write_str(d, "cpu.cfs_period_us", "100000");
            snprintf(v, sizeof v, "%" PRIu64, quota);
            if (!rc)
                rc = write_str(d, "cpu.cfs_quota_us", v);
        }
    }
    return rc;
}

int cg_join(const struct cg *g, pid_t pid)
{
    char v[32];
    snprintf(v, sizeof v, "%d", (int)pid);
    for (int c = 0; c < CG_NCTRL; c++) {
        if (!g->dir[c][0])
            continue;
        int rc = write_str(g->dir[c], "cgroup.procs", v);
        if (rc)
            return rc;
    }
    return 0;
}

void cg_procs_paths(const struct cg *g, char out[][CG_PATH_MAX], size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        out[i][0] = '\0';
    for (int c = 0; c < CG_NCTRL && k < n; c++)
        if (g->dir[c][0] && path_fmt(out[k], CG_PATH_MAX, g->dir[c], "cgroup.procs", NULL) == 0)
            k++;
}

int cg_memory_usage(const struct cg *g, uint64_t *bytes)
{
    const char *d = ctrl_dir(g, CG_MEMORY);
    *bytes = 0;
    if (!d || (g->version == 1 && !g->dir[CG_MEMORY][0]))
        return -ENOTSUP;
    return read_u64(d, g->version == 2 ? "memory.current" : "memory.usage_in_bytes", bytes);
}

int cg_process_count(const struct cg *g, uint32_t *n)
{
    const char *d = ctrl_dir(g, CG_PIDS);
    uint64_t v = 0;
    *n = 0;
    if (d && (g->version == 2 || g->dir[CG_PIDS][0]) && read_u64(d, "pids.current", &v) == 0) {
        *n = (uint32_t)v;
        return 0;
    }
    /* No pids controller: count lines of cgroup.procs. */
    char buf[16384];
    d = any_dir(g);
    if (!d)
        return -ENOTSUP;
    ssize_t r = read_str(d, "cgroup.procs", buf, sizeof buf);
    if (r < 0)
        return (int)r;
    for (ssize_t i = 0; i < r; i++)
        *n += buf[i] == '\n';
    return 0;
}

int cg_memory_headroom(const struct cg *g, uint64_t *bytes)
{
    const char *d = ctrl_dir(g, CG_MEMORY);
    char buf[8192], lim[64];
    uint64_t usage = 0, limit;
    *bytes = UINT64_MAX;
    if (!d || (g->version == 1 && !g->dir[CG_MEMORY][0]))
        return -ENOTSUP;
    ssize_t r =
        read_str(d, g->version == 2 ? "memory.max" : "memory.limit_in_bytes", lim, sizeof lim);
    if (r < 0)
        return (int)r;
    if (strncmp(lim, "max", 3) == 0)
        return 0; /* v2 without a limit */
    limit = strtoull(lim, NULL, 10);
    int rc = cg_memory_usage(g, &usage);
    if (rc)
        return rc;
    /* Clean file pages are reclaimed before the limit bites; tmpfs and anonymous pages
     * are not (no swap), so they alone use up the room. v1 prefixes hierarchical
     * totals with "total_". */
    uint64_t file = 0;
    if (read_str(d, "memory.stat", buf, sizeof buf) >= 0) {
        const char *pre = g->version == 2 ? "" : "total_";
        char k1[32], k2[32];
        snprintf(k1, sizeof k1, "%sactive_file", pre);
        snprintf(k2, sizeof k2, "%sinactive_file", pre);
        file = keyed_value(buf, k1) + keyed_value(buf, k2);
    }
    uint64_t held = usage > file ? usage - file : 0;
    *bytes = limit > held ? limit - held : 0;
    return 0;
}

uint64_t cg_oom_kills(const struct cg *g)
{
    const char *d = ctrl_dir(g, CG_MEMORY);
    char buf[1024];
    if (!d || (g->version == 1 && !g->dir[CG_MEMORY][0]))
        return 0;
    if (read_str(d, g->version == 2 ? "memory.events" : "memory.oom_control", buf, sizeof buf) < 0)
        return 0;
    return keyed_value(buf, "oom_kill");
}

/* SIGKILL every pid listed in dir/cgroup.procs. Returns how many were listed. */
static int kill_listed(const char *dir)
{
    char p[CG_PATH_MAX];
    if (path_fmt(p, sizeof p, dir, "cgroup.procs", NULL))
        return -ENAMETOOLONG;
    FILE *f = fopen(p, "re");
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    int n = 0;
    char line[32];
    while (fgets(line, sizeof line, f)) {
        char *end;
        long pid = strtol(line, &end, 10);
        if (end != line && pid > 1) {
            (void)kill((pid_t)pid, SIGKILL);
            n++;
        }
    }
    fclose(f);
    return n;
}

static void sleep_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

int cg_kill_all(const struct cg *g)
{
    const char *d = any_dir(g);
    if (!d)
        return 1;
    if (g->version == 2 && file_exists(d, "cgroup.kill")) {
        (void)write_str(d, "cgroup.kill", "1");
    } else if (g->version == 1 && g->dir[CG_FREEZER][0]) {
        const char *fz = g->dir[CG_FREEZER];
        char st[32] = "";
        if (write_str(fz, "freezer.state", "FROZEN") == 0) {
            /* FREEZING becomes FROZEN within a few ms; we kill either way. */
            for (int i = 0; i < 50; i++) {
                if (read_str(fz, "freezer.state", st, sizeof st) < 0 ||
                    strncmp(st, "FROZEN", 6) == 0)
                    break;
                sleep_us(200);
            }
        }
        (void)kill_listed(fz);
        (void)write_str(fz, "freezer.state", "THAWED");
    } else {
        (void)kill_listed(d);
    }
    char buf[64];
    ssize_t r = read_str(d, "cgroup.procs", buf, sizeof buf);
    if (r < 0)
        return r == -ENOENT ? 1 : (int)r;
    return r == 0 ? 1 : 0;
}

int cg_freeze(const struct cg *g, bool frozen)
{
    if (g->version == 1) {
        if (!g->dir[CG_FREEZER][0])
            return -ENOTSUP;
        return write_str(g->dir[CG_FREEZER], "freezer.state", frozen ? "FROZEN" : "THAWED");
    }
    const char *d = any_dir(g);
    if (g->version != 2 || !d || !file_exists(d, "cgroup.freeze"))
        return -ENOTSUP;
    return write_str(d, "cgroup.freeze", frozen ? "1" : "0");
}

int cg_frozen(const struct cg *g)
{
    char st[256];
    ssize_t r;
    if (g->version == 1) {
        if (!g->dir[CG_FREEZER][0])
            return -ENOTSUP;
        r = read_str(g->dir[CG_FREEZER], "freezer.state", st, sizeof st);
        return r < 0 ? (int)r : strncmp(st, "FROZEN", 6) == 0;
    }
    const char *d = any_dir(g);
    if (g->version != 2 || !d)
        return -ENOTSUP;
    r = read_str(d, "cgroup.events", st, sizeof st);
    return r < 0 ? (int)r : keyed_value(st, "frozen") == 1;
}

int cg_remove(const struct cg *g)
{
    int rc = 0;
    for (int c = 0; c < CG_NCTRL; c++) {
        if (g->dir[c][0] && rmdir(g->dir[c]) < 0 && errno != ENOENT && !rc)
            rc = -errno;
    }
    return rc;
}

int cg_cleanup_stale(const struct cg_sys *s)
{
    int removed = 0;
    for (int c = 0; c < CG_NCTRL; c++) {
        if (!s->have[c])
            continue;
        DIR *dir = opendir(s->parent[c]);
        if (!dir)
            continue;
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_type != DT_DIR || de->d_name[0] == '.')
                continue;
            struct cg g;
            if (cg_lookup(s, de->d_name, &g))
                continue;
            for (int i = 0; i < 200 && cg_kill_all(&g) == 0; i++)
                sleep_us(1000);
            if (cg_remove(&g) == 0)
                removed++;
        }
        closedir(dir);
    }
    return removed;
}
