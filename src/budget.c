/*
 * budget.c — per-sandbox byte budgets (see budget.h). A budget is a counter pair (used,
 * cap) and a FIFO of waiters; the daemon-wide totals are two counters updated with every
 * charge and release, so /metrics reads them in O(1).
 *
 * Waking is re-entrant safe: a waiter's callback may charge, release, wait again or cancel
 * any waiter (its own included). Each wake pass marks the waiters it has called, and looks
 * the list up again from its head after every callback instead of holding a pointer into
 * it, so a callback that changes the list cannot leave the pass with a stale pointer.
 */
#include "budget.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

struct budget {
    uint64_t cap, used, peak, refusals;
    unsigned refs;
    unsigned pass; /* the current wake pass, 0 when none runs */
    budget_waiter *waiters;
};

static uint64_t total_used, total_refusals;
static unsigned next_pass = 1;

budget *budget_new(uint64_t cap)
{
    budget *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->cap = cap;
    b->refs = 1;
    return b;
}

budget *budget_ref(budget *b)
{
    if (b)
        b->refs++;
    return b;
}

void budget_unref(budget *b)
{
    if (!b)
        return;
    assert(b->refs > 0); /* a reference is dropped once */
    if (--b->refs > 0)
        return;
    for (budget_waiter *w = b->waiters; w; w = w->next)
        w->queued = false;
    total_used -= b->used; /* bytes still charged leave the totals with it */
    free(b);
}

int budget_charge(budget *b, size_t n)
{
    if (!b)
        return 0;
    if (b->used > b->cap || n > b->cap - b->used) {
        b->refusals++;
        total_refusals++;
        return -ENOBUFS;
    }
    budget_force(b, n);
    return 0;
}

void budget_force(budget *b, size_t n)
{
    if (!b)
        return;
    b->used += n;
    total_used += n;
    if (b->used > b->peak)
        b->peak = b->used;
}

uint64_t budget_room(const budget *b)
{
    if (!b)
        return UINT64_MAX;
    return b->used >= b->cap ? 0 : b->cap - b->used;
}

/* The first waiter not yet called in this pass whose need fits, unlinked; or NULL. */
static budget_waiter *take_fitting(budget *b, unsigned pass)
{
    for (budget_waiter **pp = &b->waiters; *pp; pp = &(*pp)->next) {
        budget_waiter *w = *pp;
        if (w->pass != pass && w->need <= budget_room(b)) {
            *pp = w->next;
            w->next = NULL;
            w->queued = false;
            w->pass = pass;
            return w;
        }
    }
    return NULL;
}

void budget_release(budget *b, size_t n)
{
    if (!b)
        return;
    if (n > b->used)
        n = (size_t)b->used; /* never below zero, even after a caller's mistake */
    assert(total_used >= n); /* the total is the sum of every live budget's used */
    b->used -= n;
    total_used -= n;
    if (b->pass || !b->waiters)
        return; /* a pass already runs: it sees the new room */
    b->refs++;  /* a callback may drop the last other reference */
    unsigned pass = next_pass++;
    if (next_pass == 0)
        next_pass = 1;
    b->pass = pass;
    budget_waiter *w;
    while ((w = take_fitting(b, pass)) != NULL)
        w->cb(w);
    b->pass = 0;
    budget_unref(b);
}

void budget_wait(budget *b, budget_waiter *w)
{
    if (!b || w->queued)
        return;
    b->refusals++;
    total_refusals++;
    w->queued =
        true; /* pass kept: a waiter re-queued by its own callback waits for the next pass */
    w->next = NULL;
    budget_waiter **pp = &b->waiters;
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
}

void budget_cancel(budget *b, budget_waiter *w)
{
    if (!b || !w->queued)
        return;
    for (budget_waiter **pp = &b->waiters; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    w->next = NULL;
    w->queued = false;
}

uint64_t budget_used(const budget *b)
{
    return b ? b->used : 0;
}

uint64_t budget_cap(const budget *b)
{
    return b ? b->cap : UINT64_MAX;
}

uint64_t budget_peak(const budget *b)
{
    return b ? b->peak : 0;
}

uint64_t budget_refusals(const budget *b)
{
    return b ? b->refusals : 0;
}

uint64_t budget_total_used(void)
{
    return total_used;
}

uint64_t budget_total_refusals(void)
{
    return total_refusals;
}
