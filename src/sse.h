/*
 * sse.h — Server-Sent Events on a streamed HTTP response.
 *
 * Each event is "event: <type>\nid: <n>\ndata: <json>\n\n" with ids 1, 2, 3 … per
 * stream, as API.md specifies. The JSON must be one line (compact jansson output and
 * escape.h output are). Writes report back-pressure exactly as http_stream_write does.
 *
 * Heartbeat: every stream sends an SSE comment line (": keep-alive") after each
 * --sse-heartbeat-ms without an event, so that proxies keep it open; not while the client
 * has not taken what was sent already (a proxy that reads needs none then).
 */
#ifndef SANDBOXD_SSE_H
#define SANDBOXD_SSE_H

#include <stdint.h>

#include "escape.h"
#include "http.h"

struct sse_hb;

typedef struct sse {
    http_req *req;
    uint64_t next_id;
    struct sse_hb *hb; /* the heartbeat's timer, until sse_end */
} sse;

/* Once at start-up: the loop the heartbeat timers run on and their interval. */
void sse_configure(uv_loop_t *loop, uint64_t heartbeat_ms);

int sse_begin(sse *s, http_req *req);
/* The same with more response headers ("Name: value\r\n" lines). */
int sse_begin_with(sse *s, http_req *req, const char *extra_headers);
/* 0: go on; 1: pause until req->on_drain; -EPIPE: the client is gone. */
int sse_event(sse *s, const char *type, const char *json, size_t len);
/* An event with the id given (0: none, for a notice that is not one of the stream's
 * numbered events); for streams that replay a log with its ids. */
int sse_event_id(sse *s, const char *type, uint64_t id, const char *json, size_t len);
/* An output event {"text":"…"} from raw bytes, escaped with a carry across chunks. */
int sse_event_text(sse *s, const char *type, esc_carry *carry, const void *data, size_t n,
                   bool final);
void sse_end(sse *s);

#endif
