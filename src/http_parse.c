/*
 * http_parse.c — the request side of an HTTP/1.1 connection: reading from the socket into
 * conn->pending, running llhttp over it, the parser's callbacks (URL, headers with their
 * caps, bodies buffered or streamed to the body hook) and dispatching complete requests.
 *
 * Hostile input: the request line plus headers are capped at max_header_bytes (431), a
 * buffered body at max_body_bytes (413, before reading when Content-Length says so), and
 * malformed HTTP is answered 400; each closes the connection. Header names longer than
 * HEADER_NAME_CAP are never ones we read and are skipped without being stored. Reading
 * stops while pending holds PENDING_CAP bytes, so the bytes waiting to be parsed never
 * exceed that whatever the client sends (a buffered body is held up to max_body_bytes, a
 * header value up to max_header_bytes). Loop thread only.
 */
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "metrics.h"

static char read_buf[READ_BUF_SIZE];

/* ---- llhttp callbacks ---- */

static int count_header_bytes(http_conn *c, size_t n)
{
    c->header_bytes += n;
    if (c->header_bytes > c->srv->lim.max_header_bytes) {
        http_conn_fail(c, 431, "HEADERS_TOO_LARGE", "request line and headers exceed %llu bytes",
                       (unsigned long long)c->srv->lim.max_header_bytes);
        return HPE_USER;
    }
    return 0;
}

static int on_message_begin(llhttp_t *p)
{
    http_conn *c = p->data;
    http_req *r = calloc(1, sizeof *r);
    if (!r)
        return HPE_USER;
    r->conn = c;
    r->start_ns = http_now_ns();
    buf_init(&r->body, c->srv->lim.max_body_bytes);
    c->req = r;
    c->header_bytes = 0;
    c->hname_len = 0;
    c->expect_continue = false;
    buf_reset(&c->hvalue);
    /* The first request keeps the deadline set at accept, unless header_timeout_ms
     * (counted from now) ends sooner. */
    bool first = c->tier == SHED_FRESH;
    http_conn_shed_set(c, SHED_HEAD);
    if (!first || uv_timer_get_due_in(&c->timer) > c->srv->lim.header_timeout_ms) {
        c->first_deadline = false;
        http_conn_arm_timer(c, c->srv->lim.header_timeout_ms);
    }
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
    http_conn *c = p->data;
    if (count_header_bytes(c, n))
        return HPE_USER;
    size_t old = c->req->target ? strlen(c->req->target) : 0;
    char *t = realloc(c->req->target, old + n + 1);
    if (!t)
        return HPE_USER;
    memcpy(t + old, at, n);
    t[old + n] = '\0';
    c->req->target = t;
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
    http_conn *c = p->data;
    if (count_header_bytes(c, n))
        return HPE_USER;
    if (c->hname_len + n < HEADER_NAME_CAP)
        memcpy(c->hname + c->hname_len, at, n);
    c->hname_len += n;
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
    http_conn *c = p->data;
    if (count_header_bytes(c, n))
        return HPE_USER;
    if (buf_append(&c->hvalue, at, n))
        return HPE_USER; /* unreachable: hvalue's cap equals the header limit */
    return 0;
}

static bool header_is(const http_conn *c, const char *name)
{
    return c->hname_len == strlen(name) && strncasecmp(c->hname, name, c->hname_len) == 0;
}

/* Copy a header value into a fixed field; too long for it → 431. */
static int take_value(http_conn *c, char *dst, size_t cap, const char *what)
{
    if (c->hvalue.len >= cap) {
        http_conn_fail(c, 431, "HEADERS_TOO_LARGE", "the %s header is longer than %zu bytes", what,
                       cap - 1);
        return HPE_USER;
    }
    memcpy(dst, c->hvalue.data ? c->hvalue.data : "", c->hvalue.len + 1);
    return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
    http_conn *c = p->data;
    http_req *r = c->req;
    int rc = 0;
    if (header_is(c, "authorization"))
        rc = take_value(c, r->authorization, sizeof r->authorization, "Authorization");
    else if (header_is(c, "content-type"))
        rc = take_value(c, r->content_type, sizeof r->content_type, "Content-Type");
    else if (header_is(c, "last-event-id"))
        rc = take_value(c, r->last_event_id, sizeof r->last_event_id, "Last-Event-ID");
    else if (header_is(c, "x-sandbox-id"))
        rc = take_value(c, r->x_sandbox_id, sizeof r->x_sandbox_id, "X-Sandbox-Id");
    else if (header_is(c, "e2b-sandbox-id"))
        rc = take_value(c, r->sandbox_header, sizeof r->sandbox_header, "E2b-Sandbox-Id");
    else if (header_is(c, "x-access-token") || header_is(c, "e2b-traffic-access-token"))
        rc = take_value(c, r->access_token, sizeof r->access_token, "access token");
    else if (header_is(c, "mcp-session-id"))
        rc = take_value(c, r->mcp_session, sizeof r->mcp_session, "Mcp-Session-Id");
    else if (header_is(c, "mcp-protocol-version"))
        rc = take_value(c, r->mcp_protocol, sizeof r->mcp_protocol, "MCP-Protocol-Version");
    else if (header_is(c, "content-encoding"))
        r->body_encoded = c->hvalue.len && strcasecmp(c->hvalue.data, "identity") != 0;
    else if (header_is(c, "accept") && c->hvalue.data &&
             strcasestr(c->hvalue.data, "text/event-stream"))
        r->want_sse = true;
    else if (header_is(c, "expect") && c->hvalue.data &&
             strcasecmp(c->hvalue.data, "100-continue") == 0)
        c->expect_continue = true;
    c->hname_len = 0;
    buf_reset(&c->hvalue);
    return rc;
}

static int on_headers_complete(llhttp_t *p)
{
    http_conn *c = p->data;
    http_req *r = c->req;
    http_conn_shed_set(c, SHED_BODY); /* until dispatched: see dispatch() */
    r->method = llhttp_get_method(p);
    r->method_name = llhttp_method_name((llhttp_method_t)r->method);
    if (!r->target) {
        http_conn_fail(c, 400, "BAD_REQUEST", "the request has no target");
        return HPE_USER;
    }
    const char *q = strchr(r->target, '?');
    size_t plen = q ? (size_t)(q - r->target) : strlen(r->target);
    r->path = strndup(r->target, plen);
    r->query = q ? q + 1 : "";
    if (!r->path)
        return HPE_USER;
    if (p->method == HTTP_CONNECT || p->upgrade) {
        http_conn_fail(c, 400, "BAD_REQUEST", "CONNECT and protocol upgrades are not supported");
        return HPE_USER;
    }
    r->has_content_length = (p->flags & F_CONTENT_LENGTH) != 0;
    r->content_length = r->has_content_length ? p->content_length : 0;
    if (c->srv->body_hook && c->srv->body_hook(r, c->srv->dispatch_arg)) {
        http_conn_shed_set(c, SHED_NONE); /* dispatched at once */
        r->body_streaming = true;
        r->keep_alive = llhttp_should_keep_alive(p);
        c->continue_owed = c->expect_continue;
        c->why = PAUSE_HEADERS;
        return HPE_PAUSED;
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > c->srv->lim.max_body_bytes) {
        http_conn_fail(
            c, 413, "PAYLOAD_TOO_LARGE", "the body of %llu bytes exceeds the limit of %llu bytes",
            (unsigned long long)p->content_length, (unsigned long long)c->srv->lim.max_body_bytes);
        return HPE_USER;
    }
    if (c->expect_continue)
        http_conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25, NULL, 0);
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    http_conn *c = p->data;
    if (c->discarding) {
        if (n > c->discard_left) {
            http_conn_close(c);
            return HPE_USER;
        }
        c->discard_left -= n;
        return 0;
    }
    if (c->req->body_streaming) {
        if (n == 0)
            return 0; /* llhttp flushes empty spans at the end of its input */
        c->span = at;
        c->span_len = n;
        c->why = PAUSE_BODY;
        return HPE_PAUSED;
    }
    if (buf_append(&c->req->body, at, n)) {
        http_conn_fail(c, 413, "PAYLOAD_TOO_LARGE", "the body exceeds the limit of %llu bytes",
                       (unsigned long long)c->srv->lim.max_body_bytes);
        return HPE_USER;
    }
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    http_conn *c = p->data;
    if (c->discarding || c->req->body_streaming) {
        c->why = PAUSE_COMPLETE;
        return HPE_PAUSED;
    }
    c->req->keep_alive = llhttp_should_keep_alive(p);
    c->why = PAUSE_DISPATCH;
    return HPE_PAUSED;
}

void http_parse_settings(llhttp_settings_t *settings)
{
    llhttp_settings_init(settings);
    settings->on_message_begin = on_message_begin;
    settings->on_url = on_url;
    settings->on_header_field = on_header_field;
    settings->on_header_value = on_header_value;
    settings->on_header_value_complete = on_header_value_complete;
    settings->on_headers_complete = on_headers_complete;
    settings->on_body = on_body;
    settings->on_message_complete = on_message_complete;
}

/* ---- input ---- */

static void dispatch(http_conn *c)
{
    http_conn_shed_set(c, SHED_NONE); /* the handler has it now: never shed */
    c->busy = true;
    uv_timer_stop(&c->timer);
    if (c->read_eof)
        c->req->keep_alive = false;
    c->srv->dispatch(c->req, c->srv->dispatch_arg);
}

/* A streamed-body request's headers are in: hand it over, then expect its body. */
static void dispatch_streamed(http_conn *c)
{
    dispatch(c);
    if (!c->busy || c->closing)
        return; /* answered already: http_req_finish chose discard or close */
    if (c->continue_owed && !c->req->responded)
        http_conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25, NULL, 0);
    c->continue_owed = false;
    if (!c->req->body_complete)
        http_conn_arm_timer(c, c->srv->lim.header_timeout_ms); /* the client must keep sending */
}

/* Hand the span llhttp paused on to the handler (it is still inside pending). */
static void deliver_body(http_conn *c)
{
    http_req *r = c->req;
    http_conn_arm_timer(c, c->srv->lim.header_timeout_ms);
    if (r->on_body)
        r->on_body(r, c->span, c->span_len, r->cb_arg);
}

static void body_done(http_conn *c)
{
    if (c->discarding) {
        c->discarding = false;
        http_conn_close(c); /* the response said Connection: close */
        return;
    }
    http_req *r = c->req;
    r->body_complete = true;
    r->body_paused = false;
    uv_timer_stop(&c->timer);
    if (r->on_body_end)
        r->on_body_end(r, r->cb_arg);
}

/* Whether the parser may run: no request in flight, or one whose streamed body the
 * handler is ready to take, or a body being discarded. */
static bool can_parse(const http_conn *c)
{
    if (c->closing)
        return false;
    if (c->discarding || !c->busy)
        return true;
    const http_req *r = c->req;
    return r->body_streaming && !r->body_complete && !r->body_paused;
}

void http_body_pause(http_req *r)
{
    if (r->body_streaming && !r->body_complete && !r->finished)
        r->body_paused = true;
}

void http_body_resume(http_req *r)
{
    if (!r->body_paused)
        return;
    r->body_paused = false;
    http_conn *c = r->conn;
    if (c->closing || r->finished)
        return;
    http_conn_arm_timer(c, c->srv->lim.header_timeout_ms);
    if (!c->in_process)
        http_conn_process_input(c);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)h;
    (void)hint;
    *b = uv_buf_init(read_buf, sizeof read_buf);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

/* Read while there is room in pending; stop when it is full (back-pressure). */
void http_conn_update_reading(http_conn *c)
{
    bool want = !c->closing && !c->read_eof &&
                c->pending.len + READ_BUF_SIZE <= PENDING_CAP; /* room for a whole read */
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) == 0)
            c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

/* Parse what is pending, dispatching complete requests one at a time. */
void http_conn_process_input(http_conn *c)
{
    c->in_process = true;
    /* after a body span the parser may owe a callback that needs no input (the end of a
     * Content-Length body): run it once even when nothing is pending */
    while (can_parse(c) && (c->pending.len > 0 || c->owed)) {
        c->owed = false;
        c->why = PAUSE_NONE;
        enum llhttp_errno e =
            llhttp_execute(&c->parser, c->pending.data ? c->pending.data : "", c->pending.len);
        if (e == HPE_OK) {
            buf_reset(&c->pending);
            break;
        }
        if (e == HPE_PAUSED) {
            size_t used = (size_t)(llhttp_get_error_pos(&c->parser) - c->pending.data);
            enum pause_why why = c->why;
            if (why == PAUSE_BODY) {
                deliver_body(c); /* before the span's bytes are consumed */
                c->owed = true;
            }
            buf_consume(&c->pending, used);
            llhttp_resume(&c->parser);
            if (why == PAUSE_DISPATCH)
                dispatch(c);
            else if (why == PAUSE_HEADERS) {
                c->owed = true; /* an empty body ends without further input */
                dispatch_streamed(c);
            } else if (why == PAUSE_COMPLETE)
                body_done(c);
            continue;
        }
        if (e != HPE_USER && !c->closing)
            http_conn_fail(c, 400, "BAD_REQUEST", "malformed HTTP request: %s",
                           llhttp_get_error_reason(&c->parser));
        break;
    }
    c->in_process = false;
    if (c->closing)
        return;
    if (c->pending.len == 0) {
        buf_free(&c->pending);
        /* the client half-closed in the middle of a body: it can never be complete */
        if (c->read_eof &&
            (c->discarding || (c->busy && c->req->body_streaming && !c->req->body_complete))) {
            http_conn_close(c);
            return;
        }
    }
    http_conn_update_reading(c);
}

void http_req_abort(http_conn *c)
{
    http_req *r = c->req;
    if (!r || r->aborted)
        return;
    r->aborted = true;
    if (r->on_abort)
        r->on_abort(r, r->cb_arg);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    http_conn *c = s->data;
    if (n > 0) {
        metrics_bytes_in((uint64_t)n);
        if (buf_append(&c->pending, b->base, (size_t)n)) {
            http_conn_close(c); /* cannot happen: reading stops at PENDING_CAP */
            return;
        }
        http_conn_process_input(c);
        return;
    }
    if (n == 0)
        return;
    if (n == UV_EOF) {
        c->read_eof = true;
        http_conn_update_reading(c);
        if (c->busy && c->req->body_streaming && !c->req->body_complete && c->pending.len > 0)
            return; /* http_conn_process_input decides once the pending bytes are parsed */
        if (c->busy && (!c->req->body_streaming || c->req->body_complete) && !c->req->streaming) {
            c->req->keep_alive = false; /* answer a half-closed client, then close */
            c->req->peer_eof = true;
            if (c->req->on_peer_eof)
                c->req->on_peer_eof(c->req, c->req->cb_arg);
            return;
        }
    }
    http_conn_close(c);
}
