/*
 * process_stdin.c — a background process's stdin as the daemon writes it (see
 * process_stdin.h for the contract): one write in flight, one queue behind it, the cap and
 * the budget checked before anything is accepted.
 */
#include "process_stdin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_MIN 4096 /* the queue's first allocation */

void pstdin_init(struct pstdin *in, uv_stream_t *s, void (*close)(void *arg), void *arg, budget *bg,
                 size_t cap)
{
    memset(in, 0, sizeof *in);
    in->s = s;
    in->close = close;
    in->arg = arg;
    in->bg = bg;
    in->cap = cap;
}

static void drop_queue(struct pstdin *in)
{
    budget_release(in->bg, in->next_alloc);
    free(in->next);
    in->next = NULL;
    in->next_n = in->next_alloc = 0;
}

static void drop_flight(struct pstdin *in)
{
    budget_release(in->bg, in->flight_alloc);
    free(in->flight);
    in->flight = NULL;
    in->flight_n = in->flight_alloc = 0;
}

static void close_once(struct pstdin *in)
{
    if (!in->s)
        return;
    in->s = NULL;
    in->close(in->arg); /* pending writes are called back with UV_ECANCELED */
}

static void written(uv_write_t *w, int status);

/* The queue becomes the write in flight. 0, or libuv's error (then it is closed). */
static int submit(struct pstdin *in)
{
    in->flight = in->next;
    in->flight_n = in->next_n;
    in->flight_alloc = in->next_alloc;
    in->next = NULL;
    in->next_n = in->next_alloc = 0;
    uv_buf_t b = uv_buf_init(in->flight, (unsigned)in->flight_n);
    int rc = uv_write(&in->w, in->s, &b, 1, written);
    if (rc) {
        drop_flight(in);
        close_once(in);
        return rc;
    }
    in->busy = true;
    return 0;
}

static void written(uv_write_t *w, int status)
{
    struct pstdin *in = (struct pstdin *)w; /* w is its first member */
    in->busy = false;
    drop_flight(in);
    if (status < 0 || !in->s) {
        /* EPIPE (the process closed its end), or closed meanwhile (cancelled) */
        drop_queue(in);
        close_once(in);
    } else if (in->next_n) {
        submit(in);
    } else if (in->eof) {
        close_once(in);
    }
}

/* Room in the queue for n more bytes, charged to the budget. */
static int queue_grow(struct pstdin *in, size_t n)
{
    size_t want = in->next_n + n;
    if (want <= in->next_alloc)
        return 0;
    size_t a = in->next_alloc ? in->next_alloc : QUEUE_MIN;
    while (a < want)
        a *= 2;
    if (a > in->cap - in->flight_n)
        a = in->cap - in->flight_n; /* >= want: the caller checked the cap */
    if (budget_charge(in->bg, a - in->next_alloc))
        return -ENOBUFS;
    char *nd = realloc(in->next, a);
    if (!nd) {
        budget_release(in->bg, a - in->next_alloc);
        return -ENOMEM;
    }
    in->next = nd;
    in->next_alloc = a;
    return 0;
}

int pstdin_write(struct pstdin *in, const void *data, size_t n, bool eof)
{
    if (!in->s || in->eof)
        return PSTDIN_CLOSED;
    if (n > in->cap)
        return PSTDIN_TOO_BIG;
    if (pstdin_held(in) + n > in->cap)
        return PSTDIN_FULL;
    if (n) {
        int rc = queue_grow(in, n);
        if (rc)
            return rc;
        memcpy(in->next + in->next_n, data, n);
        in->next_n += n;
    }
    in->eof = in->eof || eof;
    if (in->busy)
        return 0; /* the queue goes when the write in flight is done */
    if (in->next_n)
        return submit(in) ? PSTDIN_CLOSED : 0;
    if (in->eof)
        close_once(in);
    return 0;
}

void pstdin_close(struct pstdin *in)
{
    close_once(in);
    if (!in->busy)
        drop_queue(in); /* else given back when the write in flight is cancelled */
}

bool pstdin_open(const struct pstdin *in)
{
    return in->s && !in->eof;
}

size_t pstdin_held(const struct pstdin *in)
{
    return in->flight_n + in->next_n;
}

void pstdin_free(struct pstdin *in)
{
    drop_flight(in);
    drop_queue(in);
}
