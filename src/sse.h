/*
 * sse.h — Server-Sent Events on a streamed HTTP response.
 *
 * Each event is "event: <type>\nid: <n>\ndata: <json>\n\n" with ids 1, 2, 3 … per
 * stream, as API.md specifies. The JSON must be one line (compact jansson output and
 * escape.h output are). Writes report back-pressure exactly as http_stream_write does.
 */
#ifndef SANDBOXD_SSE_H
#define SANDBOXD_SSE_H

#include <stdint.h>

#include "escape.h"
#include "http.h"

typedef struct sse {
    http_req *req;
    uint64_t next_id;
} sse;

int sse_begin(sse *s, http_req *req);
/* The same with more response headers ("Name: value\r\n" lines). */
int sse_begin_with(sse *s, http_req *req, const char *extra_headers);
/* 0: go on; 1: pause until req->on_drain; -EPIPE: the client is gone. */
int sse_event(sse *s, const char *type, const char *json, size_t len);
/* An output event {"text":"…"} from raw bytes, escaped with a carry across chunks. */
int sse_event_text(sse *s, const char *type, esc_carry *carry, const void *data, size_t n,
                   bool final);
void sse_end(sse *s);

#endif
