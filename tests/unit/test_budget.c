/* Unit tests for budget.c: charges never pass the cap, refusals leave it unchanged and are
 * counted, waiters wake in order once their need fits, callbacks may change the list, and
 * a buf charged to a budget gives everything back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "budget.h"
#include "buf.h"

static void charge_and_release(void **state)
{
    (void)state;
    uint64_t before = budget_total_used();
    budget *b = budget_new(100);
    assert_non_null(b);
    assert_int_equal(budget_charge(b, 60), 0);
    assert_int_equal(budget_charge(b, 41), -ENOBUFS);      /* would pass the cap */
    assert_int_equal(budget_used(b), 60);
    assert_int_equal(budget_refusals(b), 1);
    assert_int_equal(budget_charge(b, 40), 0);              /* exactly to the cap */
    assert_int_equal(budget_room(b), 0);
    assert_int_equal(budget_total_used(), before + 100);
    budget_release(b, 30);
    assert_int_equal(budget_room(b), 30);
    assert_int_equal(budget_peak(b), 100);
    budget_force(b, 50);                                    /* held already: past the cap */
    assert_int_equal(budget_used(b), 120);
    assert_int_equal(budget_room(b), 0);
    assert_int_equal(budget_charge(b, 1), -ENOBUFS);
    budget_release(b, 1000);                                /* never below zero */
    assert_int_equal(budget_used(b), 0);
    assert_int_equal(budget_total_used(), before);
    budget_unref(b);
}

static void null_is_unlimited(void **state)
{
    (void)state;
    assert_int_equal(budget_charge(NULL, SIZE_MAX), 0);
    budget_release(NULL, 5);
    budget_force(NULL, 5);
    assert_true(budget_room(NULL) == UINT64_MAX);
    assert_null(budget_ref(NULL));
    budget_unref(NULL);
}

static int order[8], norder;

static void record(budget_waiter *w)
{
    order[norder++] = (int)(intptr_t)w->arg;
}

static void waiters_wake_in_order_when_they_fit(void **state)
{
    (void)state;
    norder = 0;
    budget *b = budget_new(100);
    budget_charge(b, 100);
    budget_waiter w1 = { .need = 50, .cb = record, .arg = (void *)1 };
    budget_waiter w2 = { .need = 10, .cb = record, .arg = (void *)2 };
    budget_waiter w3 = { .need = 90, .cb = record, .arg = (void *)3 };
    budget_wait(b, &w1);
    budget_wait(b, &w2);
    budget_wait(b, &w3);
    budget_wait(b, &w2);                       /* already queued: stays where it is */
    budget_release(b, 20);                     /* room 20: only w2 fits */
    assert_int_equal(norder, 1);
    assert_int_equal(order[0], 2);
    assert_false(w2.queued);
    budget_release(b, 40);                     /* room 60: w1 */
    assert_int_equal(norder, 2);
    assert_int_equal(order[1], 1);
    budget_cancel(b, &w3);
    budget_release(b, 40);                     /* w3 cancelled: nobody */
    assert_int_equal(norder, 2);
    budget_unref(b);
}

/* A callback that charges again and re-queues itself must not be called twice per pass,
 * and one that cancels another waiter must not leave a stale pointer behind. */
static budget_waiter *victim;
static budget *shared;
static int calls;

static void greedy(budget_waiter *w)
{
    calls++;
    budget_cancel(shared, victim);
    budget_wait(shared, w);
}

static void callbacks_may_change_the_list(void **state)
{
    (void)state;
    shared = budget_new(10);
    budget_charge(shared, 10);
    budget_waiter g = { .need = 1, .cb = greedy };
    budget_waiter v = { .need = 1, .cb = record };
    victim = &v;
    norder = 0;
    calls = 0;
    budget_wait(shared, &g);
    budget_wait(shared, &v);
    budget_release(shared, 5);
    assert_int_equal(calls, 1);                /* re-queued: waits for the next release */
    assert_int_equal(norder, 0);               /* cancelled by g before its turn */
    assert_true(g.queued);
    assert_false(v.queued);
    budget_release(shared, 1);
    assert_int_equal(calls, 2);
    budget_unref(shared);                      /* drops g, still queued */
}

static void refs_keep_it_alive(void **state)
{
    (void)state;
    budget *b = budget_new(10);
    budget_ref(b);
    budget_unref(b);
    assert_int_equal(budget_charge(b, 5), 0);  /* still alive: one reference left */
    budget_unref(b);
}

static void buf_charges_its_allocations(void **state)
{
    (void)state;
    budget *b = budget_new(1000);
    buf x;
    buf_init(&x, 10000);
    buf_set_budget(&x, b);
    char chunk[300];
    memset(chunk, 'a', sizeof chunk);
    assert_int_equal(buf_append(&x, chunk, 300), 0);
    assert_int_equal(budget_used(b), x.alloc);
    assert_int_equal(buf_append(&x, chunk, 300), 0);
    assert_int_equal(buf_append(&x, chunk, 300), 0);   /* doubling refused: exact growth */
    assert_int_equal(budget_used(b), x.alloc);
    assert_true(x.alloc <= 1000);
    size_t len = x.len;
    assert_int_equal(buf_append(&x, chunk, 300), -ENOBUFS);
    assert_int_equal(x.len, len);                        /* unchanged */
    assert_int_equal(budget_used(b), x.alloc);
    buf_set_budget(&x, NULL);                            /* the charge moves away */
    assert_int_equal(budget_used(b), 0);
    buf_set_budget(&x, b);
    char *p = buf_steal(&x);                             /* the caller owns it now */
    assert_int_equal(budget_used(b), 0);
    free(p);
    assert_int_equal(buf_append(&x, chunk, 10), 0);
    buf_free(&x);
    assert_int_equal(budget_used(b), 0);
    budget_unref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(charge_and_release),
        cmocka_unit_test(null_is_unlimited),
        cmocka_unit_test(waiters_wake_in_order_when_they_fit),
        cmocka_unit_test(callbacks_may_change_the_list),
        cmocka_unit_test(refs_keep_it_alive),
        cmocka_unit_test(buf_charges_its_allocations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
