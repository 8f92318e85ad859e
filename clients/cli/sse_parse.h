/*
 * sse_parse.h — an incremental Server-Sent Events parser for the sbx command line.
 *
 * Bytes arrive from libcurl in chunks of any size, split anywhere (even inside a CRLF or a
 * UTF-8 sequence); ssep_feed() accumulates them and calls the callback once per complete
 * event, in order, with its type ("message" when the stream names none) and its data (the
 * "data:" lines joined by '\n', NUL-terminated). It follows the SSE grammar: lines end in
 * LF, CR or CRLF; lines starting with ':' are comments; "field:value" drops one leading
 * space of value; unknown fields (id, retry) are ignored; an event with no data is not
 * delivered. Every buffer has a cap fixed at init: a line or an event's data past it makes
 * ssep_feed() return -E2BIG and the parser stays failed (the stream is then garbage).
 */
#ifndef SBX_CLI_SSE_PARSE_H
#define SBX_CLI_SSE_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Called once per event; a non-zero return stops parsing and is returned by ssep_feed(). */
typedef int (*ssep_cb)(const char *event, const char *data, size_t len, void *ud);

typedef struct ssep {
    buf line;       /* the current, unterminated line */
    buf event;      /* the current event's type */
    buf data;       /* the current event's data lines joined by '\n' */
    bool has_data;  /* a data: line was seen in this event */
    bool last_cr;   /* the previous chunk ended in CR: a leading LF belongs to it */
    int failed;     /* sticky error: -E2BIG / -ENOMEM */
} ssep;

/* cap bounds one line and one event's data (bytes). */
void ssep_init(ssep *p, size_t cap);
void ssep_free(ssep *p);
/* 0, the callback's non-zero return, or -E2BIG / -ENOMEM. */
int ssep_feed(ssep *p, const char *bytes, size_t n, ssep_cb cb, void *ud);
/* End of stream: an event still pending without its blank line is dropped (as the spec says). */
bool ssep_pending(const ssep *p);

#endif
