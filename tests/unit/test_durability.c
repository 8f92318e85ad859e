/* Unit tests for the durability helpers: state_lock.c (a second lock on the same state dir
 * fails and names the holder; generations count up), uid_range.c (disjoint ranges for two
 * state dirs, the same range again for one, dead lines dropped), stamp.c's epochs and
 * sandbox_store.c's test of ids from before a restart (with 16-bit wrap-around). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox_store.h"
#include "stamp.h"
#include "state_lock.h"
#include "uid_range.h"

static char top[] = "/tmp/sbx-unit-dur-XXXXXX";

static void path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", top, name);
}

static void lock_and_generation(void **state)
{
    (void)state;
    char dir[128], err[512];
    path(dir, sizeof dir, "state");
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(slock_acquire(dir, err, sizeof err), 0);
    assert_int_equal(slock_publish("http://127.0.0.1:1234"), 0);
    /* a second open file description of the lock file: the lock is taken */
    assert_int_equal(slock_acquire(dir, err, sizeof err), -EWOULDBLOCK);
    char want[64];
    snprintf(want, sizeof want, "pid %d, listening on http://127.0.0.1:1234", (int)getpid());
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "in use by another sandboxd"));
    assert_int_equal(slock_next_generation(dir), 1);
    assert_int_equal(slock_next_generation(dir), 2);
    assert_int_equal(slock_next_generation(dir), 3);
}

static void uid_ranges(void **state)
{
    (void)state;
    char reg[128], a[128], b[128], c[128], err[512];
    path(reg, sizeof reg, "registry");
    path(a, sizeof a, "a");
    path(b, sizeof b, "b");
    path(c, sizeof c, "c");
    assert_int_equal(mkdir(a, 0700), 0);
    assert_int_equal(mkdir(b, 0700), 0);
    assert_int_equal(mkdir(c, 0700), 0);
    uint64_t ba = 0, bb = 0, bc = 0, again = 0;
    assert_int_equal(uidr_reserve(reg, a, 1000000, 512, &ba, err, sizeof err), 0);
    assert_int_equal(uidr_reserve(reg, b, 1000000, 512, &bb, err, sizeof err), 0);
    assert_int_equal(ba, 1000000);
    assert_int_equal(bb, 1000512); /* the next free range */
    assert_int_equal(uidr_reserve(reg, a, 1000000, 512, &again, err, sizeof err), 0);
    assert_int_equal(again, ba); /* a restart gets its range back */
    /* a's dir is gone: its range is free for the next state dir */
    char mark[160];
    snprintf(mark, sizeof mark, "%s/uid-range", a);
    assert_int_equal(unlink(mark), 0);
    assert_int_equal(rmdir(a), 0);
    assert_int_equal(uidr_reserve(reg, c, 1000000, 512, &bc, err, sizeof err), 0);
    assert_int_equal(bc, 1000000);
    /* b asks for more uids than it had: grown in place (nothing above it) */
    assert_int_equal(uidr_reserve(reg, b, 1000000, 1024, &again, err, sizeof err), 0);
    assert_int_equal(again, bb);
    /* c cannot grow into b's range */
    assert_int_equal(uidr_reserve(reg, c, 1000000, 1024, &again, err, sizeof err), -EADDRINUSE);
    assert_non_null(strstr(err, "fewer than"));
}

static void epochs_and_restarts(void **state)
{
    (void)state;
    char id[40];
    stamp_set_epoch(0x0102);
    assert_int_equal(stamp_id(id, sizeof id, "ctx-"), 0);
    assert_memory_equal(id, "ctx-0102", 8);
    assert_int_equal(stamp_id_epoch(id, "ctx-"), 0x0102);
    assert_int_equal(stamp_id_epoch(id, "proc-"), -1);
    assert_int_equal(stamp_id_epoch("ctx-0102", "ctx-"), -1);
    assert_int_equal(stamp_id_epoch("ctx-zz02000000000000", "ctx-"), -1);

    sandbox s;
    memset(&s, 0, sizeof s);
    store_init(top, 5); /* generation 5 now */
    s.born_gen = 3;
    assert_true(store_ended_by_restart(&s, "ctx-0003000000000000", "ctx-"));
    assert_true(store_ended_by_restart(&s, "ctx-0004abcdef012345", "ctx-"));
    assert_false(store_ended_by_restart(&s, "ctx-0005abcdef012345", "ctx-")); /* this run */
    assert_false(store_ended_by_restart(&s, "ctx-0002abcdef012345", "ctx-")); /* before birth */
    assert_false(store_ended_by_restart(&s, "ctx-0006abcdef012345", "ctx-")); /* the future */
    assert_false(store_ended_by_restart(&s, "nonsense", "ctx-"));
    /* across the 16-bit wrap: born at 0xfffe, now 1 */
    store_init(top, 0x10001);
    s.born_gen = 0xfffe;
    assert_true(store_ended_by_restart(&s, "proc-ffff000000000000", "proc-"));
    assert_true(store_ended_by_restart(&s, "proc-0000000000000000", "proc-"));
    assert_false(store_ended_by_restart(&s, "proc-fffd000000000000", "proc-"));
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

int main(void)
{
    if (!mkdtemp(top))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lock_and_generation),
        cmocka_unit_test(uid_ranges),
        cmocka_unit_test(epochs_and_restarts),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    (void)nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
