/*
 * buf.h — a growable byte buffer with a hard cap set when it is created (curl's dynbuf).
 *
 * Every buffer that a client or a sandbox can fill is a buf: appending past the cap fails
 * with -E2BIG and leaves the buffer unchanged, so "too much input" is a normal, reported
 * outcome rather than unbounded memory. The contents are always NUL-terminated (the NUL
 * is not counted in len), so text buffers can be used as C strings.
 */
#ifndef SANDBOXD_BUF_H
#define SANDBOXD_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct buf {
    char *data;     /* NULL until the first append */
    size_t len;     /* bytes used, not counting the terminating NUL */
    size_t alloc;   /* bytes allocated */
    size_t cap;     /* the most len may ever be */
} buf;

void buf_init(buf *b, size_t cap);
void buf_free(buf *b);                 /* frees the storage; the buffer can be reused */
void buf_reset(buf *b);                /* len = 0, storage kept */
int buf_append(buf *b, const void *p, size_t n);      /* 0 or -E2BIG / -ENOMEM */
int buf_puts(buf *b, const char *s);
int buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void buf_consume(buf *b, size_t n);    /* drop the first n bytes */
char *buf_steal(buf *b);               /* hand the storage to the caller (free()); buffer empty */

#endif
