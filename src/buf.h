/*
 * buf.h — a growable byte buffer with a hard cap set when it is created (curl's dynbuf).
 *
 * Every buffer that a client or a sandbox can fill is a buf: appending past the cap fails
 * with -E2BIG and leaves the buffer unchanged, so "too much input" is a normal, reported
 * outcome rather than unbounded memory. The contents are always NUL-terminated (the NUL
 * is not counted in len), so text buffers can be used as C strings.
 *
 * A buffer may also be charged to a sandbox's budget (buf_set_budget, budget.h): then every
 * allocation it grows to is charged first (-ENOBUFS when the budget refuses, the buffer
 * unchanged) and released when it is freed or stolen.
 */
#ifndef SANDBOXD_BUF_H
#define SANDBOXD_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct budget;

typedef struct buf {
    char *data;        /* NULL until the first append */
    size_t len;        /* bytes used, not counting the terminating NUL */
    size_t alloc;      /* bytes allocated */
    size_t cap;        /* the most len may ever be */
    struct budget *bg; /* charged with alloc, or NULL; borrowed (see buf_set_budget) */
} buf;

void buf_init(buf *b, size_t cap);
void buf_free(buf *b);  /* frees the storage; the buffer can be reused */
void buf_reset(buf *b); /* len = 0, storage kept */
/* Charge the storage to bg from now on (NULL: to nothing); storage already held moves
 * from the old budget to bg. bg is borrowed: the owner of the buffer keeps a reference
 * while the buffer holds storage. */
void buf_set_budget(buf *b, struct budget *bg);
int buf_append(buf *b, const void *p, size_t n); /* 0 or -E2BIG / -ENOMEM / -ENOBUFS */
int buf_puts(buf *b, const char *s);
int buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void buf_consume(buf *b, size_t n); /* drop the first n bytes */
/* Hand the storage to the caller (free()); buffer empty. Its charge is released: the
 * caller accounts for it from now on. */
char *buf_steal(buf *b);

#endif
