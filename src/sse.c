/*
 * sse.c — see sse.h. An event is formatted into one buffer and written as one chunk, so a
 * client never sees half an event followed by another stream's bytes. The heartbeat is a
 * timer per stream, restarted by every event and closed by sse_end (the request is valid
 * until then, http.h).
 */
#include "sse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sse_hb {
    uv_timer_t t;
    http_req *req;
};

static uv_loop_t *hb_loop;
static uint64_t hb_ms;

void sse_configure(uv_loop_t *loop, uint64_t heartbeat_ms)
{
    hb_loop = loop;
    hb_ms = heartbeat_ms;
}

static void hb_fire(uv_timer_t *t)
{
    struct sse_hb *hb = t->data;
    static const char line[] = ": keep-alive\n\n";
    if (!hb->req->aborted && http_queued(hb->req) == 0)
        http_stream_write(hb->req, line, sizeof line - 1);
}

static void hb_closed(uv_handle_t *h)
{
    free(h->data);
}

int sse_begin_with(sse *s, http_req *req, const char *extra)
{
    char headers[512];
    snprintf(headers, sizeof headers, "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n%s",
             extra ? extra : "");
    s->req = req;
    s->next_id = 1;
    s->hb = NULL;
    int rc = http_stream_begin(req, 200, "text/event-stream", headers);
    if (!rc && hb_loop && hb_ms && (s->hb = calloc(1, sizeof *s->hb))) {
        s->hb->req = req;
        uv_timer_init(hb_loop, &s->hb->t);
        s->hb->t.data = s->hb;
        uv_timer_start(&s->hb->t, hb_fire, hb_ms, hb_ms);
    }
    return rc;
}

int sse_begin(sse *s, http_req *req)
{
    return sse_begin_with(s, req, NULL);
}

int sse_event(sse *s, const char *type, const char *json, size_t len)
{
    return sse_event_id(s, type, s->next_id++, json, len);
}

int sse_event_id(sse *s, const char *type, uint64_t id, const char *json, size_t len)
{
    buf b;
    buf_init(&b, len + 256);
    if (s->hb)
        uv_timer_again(&s->hb->t);
    int rc = id ? buf_printf(&b, "event: %s\nid: %llu\ndata: ", type, (unsigned long long)id)
                : buf_printf(&b, "event: %s\ndata: ", type);
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
    if (s->hb) {
        uv_timer_stop(&s->hb->t);
        uv_close((uv_handle_t *)&s->hb->t, hb_closed);
        s->hb = NULL;
    }
    http_stream_end(s->req);
}
