/*
 * http_write.c — the response side of an HTTP/1.1 connection: status lines and heads,
 * whole responses (copied or handed over), error envelopes, streamed responses (sized or
 * chunked) with back-pressure, and the end of a request (keep-alive, discard mode for a
 * body answered early, the next pipelined request).
 *
 * Every write is one uv_write (head and body copied into one allocation, or followed by a
 * handed-over body). Responses go out in request order because a connection handles one
 * request at a time (http.h). The bytes queued count against the connection's
 * back-pressure and, when the request carries one, against a sandbox's byte budget until
 * written. A write to a connection that is closing is dropped silently: a handler never
 * has to check whether its client is still there (http.h). Loop thread only.
 */
#include "http_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "escape.h"
#include "log.h"
#include "metrics.h"

const char *http_status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
    }
}

/* ---- writing ---- */

static size_t queued_bytes(const http_conn *c)
{
    return uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp);
}

static void write_cb(uv_write_t *w, int status)
{
    struct write_req *wr = (struct write_req *)w;
    http_conn *c = wr->conn;
    budget *bg = wr->bg;
    size_t charged = wr->len;
    c->unwritten -= wr->len;
    free(wr->owned);
    free(wr);
    if (status < 0) {
        if (!c->closing)
            http_conn_close(c);
    } else {
        http_req *r = c->req;
        if (r && r->paused && !r->aborted &&
            queued_bytes(c) <= c->srv->lim.stream_buffer_bytes / 2) {
            r->paused = false;
            if (r->on_drain)
                r->on_drain(r, r->cb_arg);
        }
    }
    /* last: releasing may wake producers of this sandbox, which write again */
    budget_release(bg, charged);
    budget_unref(bg);
}

/* Queue bytes: a and b copied into one allocation, then owned (malloc'd, olen bytes, may
 * be NULL) handed over without a copy and freed once written. The queued bytes are charged
 * to the request's budget until written. */
static int conn_write_owned(http_conn *c, const void *a, size_t alen, const void *b, size_t blen,
                            char *owned, size_t olen)
{
    struct write_req *wr = c->closing ? NULL : malloc(sizeof *wr + alen + blen);
    if (!wr) {
        free(owned);
        return c->closing ? -EPIPE : -ENOMEM;
    }
    wr->conn = c;
    wr->len = alen + blen + olen;
    wr->owned = owned;
    wr->bg = budget_ref(c->req ? c->req->budget : NULL);
    budget_force(wr->bg, wr->len); /* the bytes exist already: counted, never refused */
    if (alen)
        memcpy(wr->data, a, alen);
    if (blen)
        memcpy(wr->data + alen, b, blen);
    uv_buf_t ub[2] = { uv_buf_init(wr->data, (unsigned)(alen + blen)),
                       uv_buf_init(owned, (unsigned)olen) };
    int rc = uv_write(&wr->w, (uv_stream_t *)&c->tcp, ub, owned ? 2 : 1, write_cb);
    if (rc) {
        budget_release(wr->bg, wr->len);
        budget_unref(wr->bg);
        free(owned);
        free(wr);
        return rc;
    }
    c->unwritten += wr->len;
    metrics_bytes_out(wr->len);
    return 0;
}

/* Queue bytes (two pieces, copied into one allocation). */
int http_conn_write(http_conn *c, const void *a, size_t alen, const void *b, size_t blen)
{
    return conn_write_owned(c, a, alen, b, blen, NULL, 0);
}

/* Status line and headers into b. */
static int format_head(buf *b, int status, const char *ctype, long long content_length,
                       bool keep_alive, const char *extra)
{
    int rc =
        buf_printf(b, "HTTP/1.1 %d %s\r\nServer: sandboxd\r\n", status, http_status_text(status));
    if (!rc && ctype)
        rc = buf_printf(b, "Content-Type: %s\r\n", ctype);
    if (!rc)
        rc = content_length >= 0 ? buf_printf(b, "Content-Length: %lld\r\n", content_length)
                                 : buf_puts(b, "Transfer-Encoding: chunked\r\n");
    if (!rc)
        rc = buf_puts(b, keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n");
    if (!rc && extra)
        rc = buf_puts(b, extra);
    if (!rc)
        rc = buf_puts(b, "\r\n");
    return rc;
}

/* ---- request lifecycle ---- */

void http_req_free(http_req *r)
{
    if (!r)
        return;
    buf_free(&r->body);
    budget_unref(r->budget);
    free(r->target);
    free(r->path);
    free(r);
}

/* Whether the response may announce keep-alive: not when a streamed body is still
 * arriving (the connection closes after discarding it). */
static bool resp_keep(const http_req *r)
{
    return r->keep_alive && !r->conn->reject && !r->conn->srv->stopping &&
           !(r->body_streaming && !r->body_complete);
}

/* The request is complete: log, count, move on to the next one. */
void http_req_finish(http_req *r)
{
    http_conn *c = r->conn;
    r->finished = true;
    uint64_t dur = http_now_ns() - r->start_ns;
    metrics_request(r->route, r->method_name, r->status, dur);
    log_info("%s %s %d %.3fms%s", r->method_name, r->path ? r->path : "-", r->status,
             (double)dur / 1e6, r->aborted ? " (client gone)" : "");
    c->req = NULL;
    c->busy = false;
    c->first_deadline = false;
    bool body_open = r->body_streaming && !r->body_complete;
    bool keep = r->keep_alive && !r->aborted && !c->reject && !body_open;
    http_req_free(r);
    if (c->closing) {
        /* the conn waited for this request before it could be freed */
        if (c->open_handles == 0)
            http_conn_free(c);
        return;
    }
    if (body_open && !c->srv->stopping && !c->continue_owed) {
        /* answered before its body was in: read the rest so the client sees the answer */
        c->discarding = true;
        c->discard_left = DISCARD_CAP;
        http_conn_shed_set(c, SHED_DRAIN);
        http_conn_arm_timer(c, c->srv->lim.header_timeout_ms);
        if (!c->in_process)
            http_conn_process_input(c);
        return;
    }
    if (!keep || c->srv->stopping) {
        http_conn_close(c);
        return;
    }
    http_conn_shed_set(c, SHED_IDLE);
    http_conn_arm_timer(c, c->srv->lim.idle_timeout_ms);
    if (!c->in_process)
        http_conn_process_input(c);
}

void http_respond(http_req *r, int status, const char *ctype, const void *body, size_t len,
                  const char *extra)
{
    if (r->responded || r->finished)
        return;
    r->responded = true;
    r->status = status;
    if (!r->aborted) {
        buf head;
        buf_init(&head, 8192);
        if (format_head(&head, status, ctype, (long long)len, resp_keep(r), extra) == 0)
            http_conn_write(r->conn, head.data, head.len, r->method == HTTP_HEAD ? NULL : body,
                            r->method == HTTP_HEAD ? 0 : len);
        buf_free(&head);
    }
    http_req_finish(r);
}

void http_respond_take(http_req *r, int status, const char *ctype, char *body, size_t len,
                       const char *extra)
{
    if (r->responded || r->finished || r->aborted || r->method == HTTP_HEAD) {
        free(body);
        http_respond(r, status, ctype, NULL, len, extra); /* HEAD: the head alone */
        return;
    }
    r->responded = true;
    r->status = status;
    buf head;
    buf_init(&head, 8192);
    if (format_head(&head, status, ctype, (long long)len, resp_keep(r), extra) == 0)
        conn_write_owned(r->conn, head.data, head.len, NULL, 0, body, len);
    else
        free(body);
    buf_free(&head);
    http_req_finish(r);
}

size_t http_queued(const http_req *r)
{
    return r->conn->unwritten;
}

void http_req_set_budget(http_req *r, struct budget *bg)
{
    budget *old = r->budget;
    r->budget = budget_ref(bg);
    budget_unref(old);
}

/* Error envelope into b: {"code":"…","message":"…"} with the message escaped. */
static void format_error(buf *b, const char *code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void format_error(buf *b, const char *code, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    buf_printf(b, "{\"code\":\"%s\",\"message\":", code);
    esc_json_quoted(b, msg, strlen(msg));
    buf_puts(b, "}");
}

void http_respond_error(http_req *r, int status, const char *code, const char *fmt, ...)
{
    buf b;
    buf_init(&b, 4096);
    va_list ap;
    va_start(ap, fmt);
    format_error(&b, code, fmt, ap);
    va_end(ap);
    http_respond(r, status, "application/json", b.data, b.len, NULL);
    buf_free(&b);
}

int http_stream_begin(http_req *r, int status, const char *ctype, const char *extra)
{
    if (r->responded || r->finished)
        return -EINVAL;
    r->responded = true;
    r->streaming = true;
    r->status = status;
    if (r->aborted)
        return -EPIPE;
    buf head;
    buf_init(&head, 8192);
    int rc = format_head(&head, status, ctype, -1, resp_keep(r), extra);
    if (!rc)
        rc = http_conn_write(r->conn, head.data, head.len, NULL, 0);
    buf_free(&head);
    return rc;
}

int http_stream_begin_sized(http_req *r, int status, const char *ctype, uint64_t length,
                            const char *extra)
{
    if (r->responded || r->finished)
        return -EINVAL;
    r->responded = true;
    r->streaming = true;
    r->stream_sized = true;
    r->stream_left = r->method == HTTP_HEAD ? 0 : length;
    r->status = status;
    if (r->aborted)
        return -EPIPE;
    buf head;
    buf_init(&head, 8192);
    int rc = format_head(&head, status, ctype, (long long)length, resp_keep(r), extra);
    if (!rc)
        rc = http_conn_write(r->conn, head.data, head.len, NULL, 0);
    buf_free(&head);
    return rc;
}

int http_stream_write(http_req *r, const void *data, size_t len)
{
    if (r->aborted || r->conn->closing)
        return -EPIPE;
    if (r->stream_sized && len > r->stream_left)
        len = (size_t)r->stream_left;
    if (len == 0)
        return 0;
    int rc;
    if (r->stream_sized) {
        rc = http_conn_write(r->conn, data, len, NULL, 0);
        r->stream_left -= len;
    } else {
        char hdr[32];
        int n = snprintf(hdr, sizeof hdr, "%zx\r\n", len);
        /* the chunk's header, data and CRLF in one write (one writev, one segment) */
        char *crlf = malloc(2);
        if (crlf) {
            memcpy(crlf, "\r\n", 2);
            rc = conn_write_owned(r->conn, hdr, (size_t)n, data, len, crlf, 2);
        } else {
            rc = http_conn_write(r->conn, hdr, (size_t)n, data, len);
            if (!rc)
                rc = http_conn_write(r->conn, "\r\n", 2, NULL, 0);
        }
    }
    if (rc)
        return -EPIPE;
    if (queued_bytes(r->conn) >= r->conn->srv->lim.stream_buffer_bytes) {
        r->paused = true;
        return 1;
    }
    return 0;
}

void http_stream_end(http_req *r)
{
    if (r->finished)
        return;
    if (r->stream_sized) {
        if (r->stream_left > 0)
            r->conn->reject = true; /* short body: closing is the only honest signal */
    } else if (!r->aborted && !r->conn->closing) {
        http_conn_write(r->conn, "0\r\n\r\n", 5, NULL, 0);
    }
    http_req_finish(r);
}

/* An error found while parsing: answer it (no request was dispatched) and close. */
void http_conn_fail(http_conn *c, int status, const char *code, const char *fmt, ...)
{
    buf body, head;
    buf_init(&body, 4096);
    buf_init(&head, 1024);
    va_list ap;
    va_start(ap, fmt);
    format_error(&body, code, fmt, ap);
    va_end(ap);
    format_head(&head, status, "application/json", (long long)body.len, false, NULL);
    http_conn_write(c, head.data, head.len, body.data, body.len);
    buf_free(&body);
    buf_free(&head);
    c->reject = true;
    http_req *r = c->req;
    if (r) {
        r->status = status;
        if (!r->method_name)
            r->method_name = "-";
        if (!r->path)
            r->path = strdup("-");
        c->req = NULL;
        uint64_t dur = http_now_ns() - r->start_ns;
        metrics_request(NULL, r->method_name, status, dur);
        log_info("%s %s %d %.3fms (%s)", r->method_name, r->path ? r->path : "-", status,
                 (double)dur / 1e6, code);
        http_req_free(r);
    } else {
        metrics_request(NULL, "-", status, 0);
        log_info("- - %d (%s)", status, code);
    }
    http_conn_close(c);
}
