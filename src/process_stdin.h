/*
 * process_stdin.h — the daemon's side of a background process's stdin (process.h): bytes
 * written to a pipe without ever blocking, with a cap on what is held for a process that
 * does not read.
 *
 * One write is in flight on the pipe at a time (libuv writes it as the pipe takes it);
 * what arrives meanwhile is appended to one queue behind it, which becomes the next write
 * when the first is done. So what is held is the bytes not yet taken by the process, with
 * no per-write overhead however small the writes (the allocations' slack keeps the memory
 * under twice the cap), and the bytes arrive in the order they were accepted. The
 * allocations are charged to the budget given (the sandbox's), and the bytes held are at
 * most cap: a write that would hold more is refused whole. EOF closes the pipe once everything before it is written.
 *
 * The stream is the owner's (a child's CHILD_IN pipe): closing it is the owner's close
 * callback, called once (on EOF, on a failed write such as EPIPE, or by pstdin_close);
 * writes still pending then are called back cancelled and their bytes given back. The
 * struct must stay where it is until the stream's handle is closed (the owner frees it
 * after that), then pstdin_free gives back anything left.
 */
#ifndef SANDBOXD_PROCESS_STDIN_H
#define SANDBOXD_PROCESS_STDIN_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "budget.h"

struct pstdin {
    uv_write_t w;   /* the write in flight */
    uv_stream_t *s; /* NULL once closed */
    void (*close)(void *arg);
    void *arg;
    budget *bg; /* borrowed from the owner */
    size_t cap;
    char *flight; /* the bytes of w: flight_n of flight_alloc */
    size_t flight_n, flight_alloc;
    char *next; /* accepted while w is in flight: next_n bytes of next_alloc */
    size_t next_n, next_alloc;
    bool busy, eof; /* eof: close once nothing is left to write */
};

/* pstdin_write's refusals (process.h uses the same numbers) */
enum {
    PSTDIN_CLOSED = 4,  /* closed, or EOF already requested */
    PSTDIN_FULL = 5,    /* what is held plus n would pass cap */
    PSTDIN_TOO_BIG = 6, /* n alone is more than cap */
};

/* Ready to write s (which close(arg) closes), charging bg, holding at most cap. */
void pstdin_init(struct pstdin *in, uv_stream_t *s, void (*close)(void *arg), void *arg, budget *bg,
                 size_t cap);
/* Accept n bytes (all or none), then EOF when eof. 0; PSTDIN_*; -ENOBUFS (the budget has
 * no room for them); -ENOMEM. n may be 0. */
int pstdin_write(struct pstdin *in, const void *data, size_t n, bool eof);
/* Close now: what was not written yet is dropped (given back once cancelled). */
void pstdin_close(struct pstdin *in);
bool pstdin_open(const struct pstdin *in); /* writes may still be accepted */
size_t pstdin_held(const struct pstdin *in);
/* After the stream's handle is closed: give back anything still held. */
void pstdin_free(struct pstdin *in);

#endif
