/*
 * sse.c — see sse.h. An event is formatted into one buffer and written as one chunk, so a
 * client never sees half an event followed by another stream's bytes.
 */
#include "sse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int sse_begin_with(sse *s, http_req *req, const char *extra)
{
    char headers[512];
    snprintf(headers, sizeof headers, "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n%s",
             extra ? extra : "");
    s->req = req;
    s->next_id = 1;
    return http_stream_begin(req, 200, "text/event-stream", headers);
}

int sse_begin(sse *s, http_req *req)
{
    return sse_begin_with(s, req, NULL);
}

int sse_event(sse *s, const char *type, const char *json, size_t len)
{
    buf b;
    buf_init(&b, len + 256);
    int rc = buf_printf(&b, "event: %s\nid: %llu\ndata: ", type, (unsigned long long)s->next_id++);
    if (!rc)
        rc = buf_append(&b, json, len);
    if (!rc)
        rc = buf_append(&b, "\n\n", 2);
    if (!rc)
        rc = http_stream_write(s->req, b.data, b.len);
    buf_free(&b);
    return rc;
}

int sse_event_text(sse *s, const char *type, esc_carry *carry, const void *data, size_t n,
                   bool final)
{
    buf b;
    /* escaping grows text at most 6x ("\u00XX" per byte) */
    buf_init(&b, n * 6 + 64);
    int rc = buf_puts(&b, "{\"text\":\"");
    size_t start = b.len;
    if (!rc)
        rc = esc_json(&b, carry, data, n, final);
    if (!rc && b.len == start) {
        buf_free(&b);
        return 0; /* everything waits in the carry: nothing to send yet */
    }
    if (!rc)
        rc = buf_puts(&b, "\"}");
    if (!rc)
        rc = sse_event(s, type, b.data, b.len);
    buf_free(&b);
    return rc;
}

void sse_end(sse *s)
{
    http_stream_end(s->req);
}
