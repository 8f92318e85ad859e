/*
 * uid_range.c — the machine-wide registry of host uid ranges (see uid_range.h). The file
 * is small (one line per state dir in use) and read whole, at most REG_MAX_ENTRIES lines;
 * lines that do not parse are dropped. Runs once, at start-up, before the loop.
 */
#include "uid_range.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "state_lock.h"

#define REG_MAX_ENTRIES 4096
#define DIR_MAX 600 /* a state dir path: --state-dir holds at most 511 bytes */
#define UID_TOP ((uint64_t)UINT32_MAX - 1) /* (uid_t)-1 means "no change" to the kernel */

struct range {
    uint64_t base, count;
    char dir[DIR_MAX];
};

/* "BASE COUNT" from path; 0 or -1. */
static int read_marker(const char *path, uint64_t *base, uint64_t *count)
{
    char buf[64] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return sscanf(buf, "%" SCNu64 " %" SCNu64, base, count) == 2 ? 0 : -1;
}

/* Is this registry line still somebody's (its state dir holds the same range)? */
static int alive(const struct range *r)
{
    char path[PATH_MAX + 16];
    uint64_t b, c;
    snprintf(path, sizeof path, "%s/uid-range", r->dir);
    return read_marker(path, &b, &c) == 0 && b == r->base && c == r->count;
}

/* The live lines of other state dirs (at most REG_MAX_ENTRIES); their number. */
static size_t load(FILE *f, const char *self, struct range *out)
{
    size_t n = 0;
    char line[DIR_MAX + 64];
    while (n < REG_MAX_ENTRIES && fgets(line, sizeof line, f)) {
        struct range *r = &out[n];
        int off = 0;
        if (sscanf(line, "%" SCNu64 " %" SCNu64 " %n", &r->base, &r->count, &off) != 2 || !off)
            continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(r->dir, sizeof r->dir, "%s", line + off);
        if (strcmp(r->dir, self) != 0 && alive(r))
            n++;
    }
    return n;
}

/* The first live range overlapping [base, base+count), or NULL. */
static const struct range *overlap(const struct range *rs, size_t n, uint64_t base, uint64_t count)
{
    for (size_t i = 0; i < n; i++)
        if (base < rs[i].base + rs[i].count && rs[i].base < base + count)
            return &rs[i];
    return NULL;
}

/* Choose the range: the state dir's own (grown in place when possible), else the lowest
 * free one at or above lowest. 0 or -errno with err. */
static int choose(const struct range *rs, size_t n, const char *self, uint64_t lowest,
                  uint64_t count, uint64_t *base, uint64_t *have, char *err, size_t errlen)
{
    char mpath[PATH_MAX + 16];
    uint64_t ob, oc;
    snprintf(mpath, sizeof mpath, "%s/uid-range", self);
    if (read_marker(mpath, &ob, &oc) == 0) {
        const struct range *o = overlap(rs, n, ob, oc);
        if (o) {
            snprintf(err, errlen,
                     "the host uids %" PRIu64 "-%" PRIu64 " of this state dir's sandboxes are "
                     "now reserved by %s",
                     ob, ob + oc - 1, o->dir);
            return -EADDRINUSE;
        }
        *base = ob;
        *have = oc;
        if (count > oc && ob + count <= UID_TOP && !overlap(rs, n, ob, count))
            *have = count; /* grown in place: a larger --max-sandboxes */
        return 0;
    }
    uint64_t b = lowest;
    for (const struct range *o; (o = overlap(rs, n, b, count));)
        b = o->base + o->count;
    if (b + count > UID_TOP) {
        snprintf(err, errlen, "no free range of %" PRIu64 " host uids above %" PRIu64, count,
                 lowest);
        return -ENOSPC;
    }
    *base = b;
    *have = count;
    return 0;
}

/* Write the registry (the live lines and ours) and the state dir's marker. */
static int save(const char *registry, const struct range *rs, size_t n, const char *self,
                uint64_t base, uint64_t count)
{
    size_t cap = (n + 1) * (DIR_MAX + 48), len = 0;
    char *text = malloc(cap);
    if (!text)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "%" PRIu64 " %" PRIu64 " %s\n", rs[i].base,
                                rs[i].count, rs[i].dir);
    len +=
        (size_t)snprintf(text + len, cap - len, "%" PRIu64 " %" PRIu64 " %s\n", base, count, self);
    char dir[PATH_MAX], mark[64];
    snprintf(dir, sizeof dir, "%s", registry);
    char *slash = strrchr(dir, '/');
    const char *name = slash ? slash + 1 : registry;
    if (slash)
        *slash = '\0';
    int rc = slock_write_atomic(slash ? (dir[0] ? dir : "/") : ".", name, text, len);
    free(text);
    int ml = snprintf(mark, sizeof mark, "%" PRIu64 " %" PRIu64 "\n", base, count);
    return rc ? rc : slock_write_atomic(self, "uid-range", mark, (size_t)ml);
}

int uidr_reserve(const char *registry, const char *state_dir, uint64_t lowest, uint64_t count,
                 uint64_t *base, char *err, size_t errlen)
{
    char self[PATH_MAX], lockp[PATH_MAX + 8];
    if (!realpath(state_dir, self) ||
        snprintf(lockp, sizeof lockp, "%s.lock", registry) >= (int)sizeof lockp) {
        snprintf(err, errlen, "state dir %s: %s", state_dir, strerror(errno ? errno : EINVAL));
        return -EINVAL;
    }
    int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lk < 0 || flock(lk, LOCK_EX) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot lock the uid registry %s: %s", lockp, strerror(e));
        if (lk >= 0)
            close(lk);
        return -e;
    }
    struct range *rs = calloc(REG_MAX_ENTRIES, sizeof *rs);
    int rc = rs ? 0 : -ENOMEM;
    size_t n = 0;
    FILE *f = rs ? fopen(registry, "re") : NULL;
    if (f) {
        n = load(f, self, rs);
        fclose(f);
    }
    uint64_t have = 0;
    if (!rc)
        rc = choose(rs, n, self, lowest, count, base, &have, err, errlen);
    if (!rc && have < count) {
        snprintf(err, errlen,
                 "this state dir's uid range holds %" PRIu64 " uids, fewer than the %" PRIu64
                 " that --max-sandboxes needs, and the uids above it are taken",
                 have, count);
        rc = -EADDRINUSE;
    }
    if (!rc && (rc = save(registry, rs, n, self, *base, have)))
        snprintf(err, errlen, "cannot write the uid registry %s: %s", registry, strerror(-rc));
    free(rs);
    close(lk); /* drops the lock */
    return rc;
}
