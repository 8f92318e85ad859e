/*
 * buf.c — capped growable buffer. Growth doubles the allocation (bounded by cap + 1 for
 * the NUL) so appends are amortised O(1); nothing here ever writes past alloc.
 */
#include "buf.h"

#include "budget.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(buf *b, size_t cap)
{
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->cap = cap;
    b->bg = NULL;
}

void buf_set_budget(buf *b, struct budget *bg)
{
    budget_release(b->bg, b->alloc); /* storage already held moves to the new budget */
    budget_force(bg, b->alloc);
    b->bg = bg;
}

void buf_free(buf *b)
{
    budget_release(b->bg, b->alloc);
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
}

void buf_reset(buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

/* Make room for n more bytes plus the NUL. */
static int buf_reserve(buf *b, size_t n)
{
    if (n > b->cap || b->len > b->cap - n)
        return -E2BIG;
    size_t need = b->len + n + 1;
    if (need <= b->alloc)
        return 0;
    size_t a = b->alloc ? b->alloc : 64;
    while (a < need)
        a = a > SIZE_MAX / 2 ? need : a * 2;
    if (a > b->cap + 1)
        a = b->cap + 1;
    if (b->bg && a - b->alloc > budget_room(b->bg)) {
        /* Doubling does not fit the budget: grow by an eighth, or when even that does not
         * fit by half of what is left (so that a buffer filled a few bytes at a time near
         * the budget is copied a few dozen times, not once per append), and never by less
         * than what is needed (then the charge below refuses it). */
        size_t room = budget_room(b->bg), min_step = need - b->alloc;
        size_t step = b->alloc / 8 <= room ? b->alloc / 8 : room / 2;
        if (step < min_step)
            step = min_step;
        a = b->alloc + step <= b->cap + 1 ? b->alloc + step : b->cap + 1;
    }
    if (budget_charge(b->bg, a - b->alloc))
        return -ENOBUFS;
    char *p = realloc(b->data, a);
    if (!p) {
        budget_release(b->bg, a - b->alloc);
        return -ENOMEM;
    }
    b->data = p;
    b->alloc = a;
    assert(need <= b->alloc && b->alloc <= b->cap + 1); /* room, and never past the cap */
    return 0;
}

int buf_append(buf *b, const void *p, size_t n)
{
    int rc = buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_puts(buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return -EINVAL;
    int rc = buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void buf_consume(buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *buf_steal(buf *b)
{
    budget_release(b->bg, b->alloc);
    char *p = b->data;
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    return p;
}
