/*
 * http.c — HTTP/1.1 connections on libuv with llhttp (see http.h for the guarantees).
 *
 * Life of a connection: accepted → idle (idle timer) → a request begins (header timer
 * covers the whole request) → on_message_complete pauses the parser and the request is
 * dispatched → the handler responds, now or later → the next pipelined request, already
 * in conn->pending, is parsed; or back to idle. While a request is in flight the
 * connection keeps reading (so a client that goes away is noticed) into conn->pending,
 * up to PENDING_CAP bytes; past that it stops reading until the response is done.
 *
 * Streamed request bodies (the body hook): llhttp is paused at headers-complete, the
 * request is dispatched, and then the parser is paused again after every body span so
 * that the span (a pointer into conn->pending) is handed to the handler before the bytes
 * are consumed. While the handler pauses the body, nothing more is parsed and reading
 * stops once pending holds PENDING_CAP bytes. A response that completes before the body
 * does puts the connection in discard mode: the rest of the body is parsed and dropped
 * (at most DISCARD_CAP bytes, within header_timeout_ms), then the connection closes.
 *
 * Memory: an idle connection holds its struct (a few hundred bytes) and nothing else:
 * the read buffer is one loop-wide array, used only inside read_cb.
 *
 * Connection table and shedding (so that a flood of idle connections from one client
 * cannot lock the others out): max_connections counts the connections that hold a
 * descriptor, except those whose handles are already closing. Each connection that no
 * handler holds sits on one of six lists, oldest first, in the order they are shed:
 * FRESH (no request begun since accept), HEAD (a request begun, its headers not complete
 * yet), IDLE (keep-alive between requests, by the time it went idle), DRAIN (answered
 * early, the rest of its body being dropped), LINGER (closing, still flushing its last
 * response to a client that does not read it) and BODY (headers complete, a buffered
 * body still arriving). The order puts first what costs a real client least (nothing
 * sent yet; a keep-alive it can reopen) and last what it would have to redo (an upload);
 * everything but IDLE is bounded by header_timeout_ms anyway. When a new connection
 * finds the table full, the head of the first non-empty list is closed at once (no
 * graceful shutdown: a lingering one gives up its unsent bytes) to make room; only when
 * every open connection is held by a handler (dispatched: being handled, streaming its
 * response or receiving a streamed body) is the new one answered 429. A FRESH
 * connection also has a deadline from accept (first_request_timeout_ms) instead of the
 * keep-alive idle timeout, so never sending a byte buys no more than that. The lists are
 * intrusive, so every transition and every choice is O(1). Running out of descriptors
 * sheds one connection the same way, so that the listener recovers.
 *
 * Handles are freed only from their close callbacks (libuv's rule); a conn with a
 * request still owned by a handler is freed when that request completes.
 */
#include "http.h"

#include <errno.h>
#include <llhttp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "budget.h"
#include "escape.h"
#include "log.h"
#include "metrics.h"

#define READ_BUF_SIZE 65536
#define PENDING_CAP (256 * 1024)
#define HEADER_NAME_CAP 64      /* longer header names are never ones we read */
#define DISCARD_CAP (8u << 20)  /* body bytes read and dropped after an early response */

/* The shedding lists, in the order victims are taken from them (see the top). */
enum shed_tier {
    SHED_FRESH,     /* accepted, no request begun yet */
    SHED_HEAD,      /* a request begun, headers incomplete */
    SHED_IDLE,      /* keep-alive, between requests */
    SHED_DRAIN,     /* answered early; the rest of its body is read and dropped */
    SHED_LINGER,    /* closing, its last response still being flushed */
    SHED_BODY,      /* headers complete, a buffered body still arriving (not dispatched) */
    SHED_TIERS,
    SHED_NONE = SHED_TIERS,   /* a request in progress, or closed: never shed */
};

struct shed_list {
    struct http_conn *head, *tail;
};

/* Why llhttp_execute returned HPE_PAUSED. */
enum pause_why {
    PAUSE_NONE,
    PAUSE_DISPATCH,     /* a buffered request is complete */
    PAUSE_HEADERS,      /* a streamed-body request's headers are complete */
    PAUSE_BODY,         /* a span of a streamed body is in conn->span */
    PAUSE_COMPLETE,     /* a streamed (or discarded) body is complete */
};

struct http_server {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    struct http_limits lim;
    http_dispatch_fn dispatch;
    http_body_hook_fn body_hook;
    void *dispatch_arg;
    llhttp_settings_t settings;
    uint64_t nconns;            /* allocated connections, closing ones included */
    uint64_t nlive;             /* open and not closing */
    uint64_t nlinger;           /* closing, flushing a last response (SHED_LINGER) */
    uint64_t nshed;             /* closed to make room for a new connection */
    struct shed_list shed[SHED_TIERS];
    struct http_conn *conns;    /* doubly linked list of open connections */
    bool stopping;
    bool listener_closed;
    void (*stop_done)(void *);
    void *stop_arg;
    int port;
};

struct http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    llhttp_t parser;
    http_server *srv;
    struct http_conn *prev, *next;
    enum shed_tier tier;        /* the shedding list it is on, or SHED_NONE */
    struct http_conn *sprev, *snext;
    bool first_deadline;        /* the timer is the accept-time deadline (first request) */
    http_req *req;              /* request being received or handled */
    buf pending;                /* received, not yet parsed */
    size_t unwritten;           /* bytes queued whose write has not completed */
    uint64_t header_bytes;      /* of the request being received */
    char hname[HEADER_NAME_CAP];
    size_t hname_len;           /* > HEADER_NAME_CAP: a name we ignore */
    buf hvalue;
    int open_handles;
    bool closing;
    bool reading;
    bool read_eof;
    bool in_process;            /* inside process_input(): no recursion */
    bool busy;                  /* req was dispatched and is not complete yet */
    bool expect_continue;
    bool reject;                /* an error response was sent; close after it */
    bool continue_owed;         /* streamed body: 100 Continue not sent yet */
    bool discarding;            /* dropping the rest of a body answered early */
    uint64_t discard_left;
    enum pause_why why;
    bool owed;                  /* llhttp_execute is due even with nothing pending */
    const char *span;           /* PAUSE_BODY: the span, inside pending */
    size_t span_len;
};

struct write_req {
    uv_write_t w;
    http_conn *conn;
    size_t len;
    budget *bg;                 /* charged with len until written (http_req_set_budget) */
    char *owned;                /* a handed-over body after data (http_respond_take) */
    char data[];
};

static char read_buf[READ_BUF_SIZE];

static void conn_close(http_conn *c);
static void conn_free(http_conn *c);
static void process_input(http_conn *c);

static void arm_timer(http_conn *c, uint64_t ms);
static void conn_close_how(http_conn *c, bool graceful);
static void conn_close_handles(http_conn *c);

/* ---- the connection table ---- */

/* Move c to the tail of list t (or off every list for SHED_NONE). */
static void shed_set(http_conn *c, enum shed_tier t)
{
    http_server *s = c->srv;
    if (c->tier != SHED_NONE) {
        struct shed_list *l = &s->shed[c->tier];
        if (c->sprev)
            c->sprev->snext = c->snext;
        else
            l->head = c->snext;
        if (c->snext)
            c->snext->sprev = c->sprev;
        else
            l->tail = c->sprev;
        c->sprev = c->snext = NULL;
    }
    c->tier = t;
    if (t == SHED_NONE)
        return;
    struct shed_list *l = &s->shed[t];
    c->sprev = l->tail;
    if (l->tail)
        l->tail->snext = c;
    else
        l->head = c;
    l->tail = c;
}

/* Close the connection that has waited longest without a request in progress: 1 when
 * one was closed, 0 when every connection has a request in progress. */
static int shed_one(http_server *s)
{
    static const char *const why[SHED_TIERS] = { "never sent a request",
                                                  "had not finished its request's headers",
                                                  "was idle",
                                                  "was draining an answered request's body",
                                                  "was closing, its client not reading",
                                                  "was still sending a request's body" };
    for (int t = 0; t < SHED_TIERS; t++) {
        http_conn *v = s->shed[t].head;
        if (!v)
            continue;
        s->nshed++;
        log_debug("connection table full: closing the oldest connection that %s", why[t]);
        if (t == SHED_LINGER)
            conn_close_handles(v);   /* already closing: drop what it still had to send */
        else
            conn_close_how(v, false);
        return 1;
    }
    return 0;
}

static uint64_t now_ns(void)
{
    return uv_hrtime();
}

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
            conn_close(c);
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
static int conn_write_owned(http_conn *c, const void *a, size_t alen, const void *b,
                            size_t blen, char *owned, size_t olen)
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
    budget_force(wr->bg, wr->len);   /* the bytes exist already: counted, never refused */
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
static int conn_write(http_conn *c, const void *a, size_t alen, const void *b, size_t blen)
{
    return conn_write_owned(c, a, alen, b, blen, NULL, 0);
}

/* Status line and headers into b. */
static int format_head(buf *b, int status, const char *ctype, long long content_length,
                       bool keep_alive, const char *extra)
{
    int rc = buf_printf(b, "HTTP/1.1 %d %s\r\nServer: sandboxd\r\n", status,
                        http_status_text(status));
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

static void req_free(http_req *r)
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
static void req_finish(http_req *r)
{
    http_conn *c = r->conn;
    r->finished = true;
    uint64_t dur = now_ns() - r->start_ns;
    metrics_request(r->route, r->method_name, r->status, dur);
    log_info("%s %s %d %.3fms%s", r->method_name, r->path ? r->path : "-", r->status,
             (double)dur / 1e6, r->aborted ? " (client gone)" : "");
    c->req = NULL;
    c->busy = false;
    c->first_deadline = false;
    bool body_open = r->body_streaming && !r->body_complete;
    bool keep = r->keep_alive && !r->aborted && !c->reject && !body_open;
    req_free(r);
    if (c->closing) {
        /* the conn waited for this request before it could be freed */
        if (c->open_handles == 0)
            conn_free(c);
        return;
    }
    if (body_open && !c->srv->stopping && !c->continue_owed) {
        /* answered before its body was in: read the rest so the client sees the answer */
        c->discarding = true;
        c->discard_left = DISCARD_CAP;
        shed_set(c, SHED_DRAIN);
        arm_timer(c, c->srv->lim.header_timeout_ms);
        if (!c->in_process)
            process_input(c);
        return;
    }
    if (!keep || c->srv->stopping) {
        conn_close(c);
        return;
    }
    shed_set(c, SHED_IDLE);
    arm_timer(c, c->srv->lim.idle_timeout_ms);
    if (!c->in_process)
        process_input(c);
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
            conn_write(r->conn, head.data, head.len,
                       r->method == HTTP_HEAD ? NULL : body, r->method == HTTP_HEAD ? 0 : len);
        buf_free(&head);
    }
    req_finish(r);
}

void http_respond_take(http_req *r, int status, const char *ctype, char *body, size_t len,
                       const char *extra)
{
    if (r->responded || r->finished || r->aborted || r->method == HTTP_HEAD) {
        free(body);
        http_respond(r, status, ctype, NULL, len, extra);   /* HEAD: the head alone */
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
    req_finish(r);
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
        rc = conn_write(r->conn, head.data, head.len, NULL, 0);
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
        rc = conn_write(r->conn, head.data, head.len, NULL, 0);
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
        rc = conn_write(r->conn, data, len, NULL, 0);
        r->stream_left -= len;
    } else {
        char hdr[32];
        int n = snprintf(hdr, sizeof hdr, "%zx\r\n", len);
        rc = conn_write(r->conn, hdr, (size_t)n, data, len);
        if (!rc)
            rc = conn_write(r->conn, "\r\n", 2, NULL, 0);
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
            r->conn->reject = true;   /* short body: closing is the only honest signal */
    } else if (!r->aborted && !r->conn->closing) {
        conn_write(r->conn, "0\r\n\r\n", 5, NULL, 0);
    }
    req_finish(r);
}

/* An error found while parsing: answer it (no request was dispatched) and close. */
static void conn_fail(http_conn *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void conn_fail(http_conn *c, int status, const char *code, const char *fmt, ...)
{
    buf body, head;
    buf_init(&body, 4096);
    buf_init(&head, 1024);
    va_list ap;
    va_start(ap, fmt);
    format_error(&body, code, fmt, ap);
    va_end(ap);
    format_head(&head, status, "application/json", (long long)body.len, false, NULL);
    conn_write(c, head.data, head.len, body.data, body.len);
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
        uint64_t dur = now_ns() - r->start_ns;
        metrics_request(NULL, r->method_name, status, dur);
        log_info("%s %s %d %.3fms (%s)", r->method_name, r->path ? r->path : "-", status,
                 (double)dur / 1e6, code);
        req_free(r);
    } else {
        metrics_request(NULL, "-", status, 0);
        log_info("- - %d (%s)", status, code);
    }
    conn_close(c);
}

/* ---- llhttp callbacks ---- */

static int count_header_bytes(http_conn *c, size_t n)
{
    c->header_bytes += n;
    if (c->header_bytes > c->srv->lim.max_header_bytes) {
        conn_fail(c, 431, "HEADERS_TOO_LARGE",
                  "request line and headers exceed %llu bytes",
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
    r->start_ns = now_ns();
    buf_init(&r->body, c->srv->lim.max_body_bytes);
    c->req = r;
    c->header_bytes = 0;
    c->hname_len = 0;
    c->expect_continue = false;
    buf_reset(&c->hvalue);
    /* The first request keeps the deadline set at accept, unless header_timeout_ms
     * (counted from now) ends sooner. */
    bool first = c->tier == SHED_FRESH;
    shed_set(c, SHED_HEAD);
    if (!first || uv_timer_get_due_in(&c->timer) > c->srv->lim.header_timeout_ms) {
        c->first_deadline = false;
        arm_timer(c, c->srv->lim.header_timeout_ms);
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
        return HPE_USER;   /* unreachable: hvalue's cap equals the header limit */
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
        conn_fail(c, 431, "HEADERS_TOO_LARGE", "the %s header is longer than %zu bytes", what,
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
    shed_set(c, SHED_BODY);   /* until dispatched: see dispatch() */
    r->method = llhttp_get_method(p);
    r->method_name = llhttp_method_name((llhttp_method_t)r->method);
    if (!r->target) {
        conn_fail(c, 400, "BAD_REQUEST", "the request has no target");
        return HPE_USER;
    }
    const char *q = strchr(r->target, '?');
    size_t plen = q ? (size_t)(q - r->target) : strlen(r->target);
    r->path = strndup(r->target, plen);
    r->query = q ? q + 1 : "";
    if (!r->path)
        return HPE_USER;
    if (p->method == HTTP_CONNECT || p->upgrade) {
        conn_fail(c, 400, "BAD_REQUEST", "CONNECT and protocol upgrades are not supported");
        return HPE_USER;
    }
    r->has_content_length = (p->flags & F_CONTENT_LENGTH) != 0;
    r->content_length = r->has_content_length ? p->content_length : 0;
    if (c->srv->body_hook && c->srv->body_hook(r, c->srv->dispatch_arg)) {
        shed_set(c, SHED_NONE);   /* dispatched at once */
        r->body_streaming = true;
        r->keep_alive = llhttp_should_keep_alive(p);
        c->continue_owed = c->expect_continue;
        c->why = PAUSE_HEADERS;
        return HPE_PAUSED;
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > c->srv->lim.max_body_bytes) {
        conn_fail(c, 413, "PAYLOAD_TOO_LARGE",
                  "the body of %llu bytes exceeds the limit of %llu bytes",
                  (unsigned long long)p->content_length,
                  (unsigned long long)c->srv->lim.max_body_bytes);
        return HPE_USER;
    }
    if (c->expect_continue)
        conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25, NULL, 0);
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
    http_conn *c = p->data;
    if (c->discarding) {
        if (n > c->discard_left) {
            conn_close(c);
            return HPE_USER;
        }
        c->discard_left -= n;
        return 0;
    }
    if (c->req->body_streaming) {
        if (n == 0)
            return 0;   /* llhttp flushes empty spans at the end of its input */
        c->span = at;
        c->span_len = n;
        c->why = PAUSE_BODY;
        return HPE_PAUSED;
    }
    if (buf_append(&c->req->body, at, n)) {
        conn_fail(c, 413, "PAYLOAD_TOO_LARGE", "the body exceeds the limit of %llu bytes",
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

/* ---- input ---- */

static void dispatch(http_conn *c)
{
    shed_set(c, SHED_NONE);   /* the handler has it now: never shed */
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
        return;   /* answered already: req_finish chose discard or close */
    if (c->continue_owed && !c->req->responded)
        conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25, NULL, 0);
    c->continue_owed = false;
    if (!c->req->body_complete)
        arm_timer(c, c->srv->lim.header_timeout_ms);   /* the client must keep sending */
}

/* Hand the span llhttp paused on to the handler (it is still inside pending). */
static void deliver_body(http_conn *c)
{
    http_req *r = c->req;
    arm_timer(c, c->srv->lim.header_timeout_ms);
    if (r->on_body)
        r->on_body(r, c->span, c->span_len, r->cb_arg);
}

static void body_done(http_conn *c)
{
    if (c->discarding) {
        c->discarding = false;
        conn_close(c);   /* the response said Connection: close */
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
    arm_timer(c, c->srv->lim.header_timeout_ms);
    if (!c->in_process)
        process_input(c);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)h;
    (void)hint;
    *b = uv_buf_init(read_buf, sizeof read_buf);
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

/* Read while there is room in pending; stop when it is full (back-pressure). */
static void update_reading(http_conn *c)
{
    bool want = !c->closing && !c->read_eof &&
                c->pending.len + READ_BUF_SIZE <= PENDING_CAP;   /* room for a whole read */
    if (want && !c->reading) {
        if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) == 0)
            c->reading = true;
    } else if (!want && c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
}

/* Parse what is pending, dispatching complete requests one at a time. */
static void process_input(http_conn *c)
{
    c->in_process = true;
    /* after a body span the parser may owe a callback that needs no input (the end of a
     * Content-Length body): run it once even when nothing is pending */
    while (can_parse(c) && (c->pending.len > 0 || c->owed)) {
        c->owed = false;
        c->why = PAUSE_NONE;
        enum llhttp_errno e = llhttp_execute(&c->parser, c->pending.data ? c->pending.data : "",
                                             c->pending.len);
        if (e == HPE_OK) {
            buf_reset(&c->pending);
            break;
        }
        if (e == HPE_PAUSED) {
            size_t used = (size_t)(llhttp_get_error_pos(&c->parser) - c->pending.data);
            enum pause_why why = c->why;
            if (why == PAUSE_BODY) {
                deliver_body(c);   /* before the span's bytes are consumed */
                c->owed = true;
            }
            buf_consume(&c->pending, used);
            llhttp_resume(&c->parser);
            if (why == PAUSE_DISPATCH)
                dispatch(c);
            else if (why == PAUSE_HEADERS) {
                c->owed = true;   /* an empty body ends without further input */
                dispatch_streamed(c);
            }
            else if (why == PAUSE_COMPLETE)
                body_done(c);
            continue;
        }
        if (e != HPE_USER && !c->closing)
            conn_fail(c, 400, "BAD_REQUEST", "malformed HTTP request: %s",
                      llhttp_get_error_reason(&c->parser));
        break;
    }
    c->in_process = false;
    if (c->closing)
        return;
    if (c->pending.len == 0) {
        buf_free(&c->pending);
        /* the client half-closed in the middle of a body: it can never be complete */
        if (c->read_eof && (c->discarding || (c->busy && c->req->body_streaming &&
                                              !c->req->body_complete))) {
            conn_close(c);
            return;
        }
    }
    update_reading(c);
}

static void req_abort(http_conn *c)
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
            conn_close(c);   /* cannot happen: reading stops at PENDING_CAP */
            return;
        }
        process_input(c);
        return;
    }
    if (n == 0)
        return;
    if (n == UV_EOF) {
        c->read_eof = true;
        update_reading(c);
        if (c->busy && c->req->body_streaming && !c->req->body_complete &&
            c->pending.len > 0)
            return;   /* process_input decides once the pending bytes are parsed */
        if (c->busy && (!c->req->body_streaming || c->req->body_complete) &&
            !c->req->streaming) {
            c->req->keep_alive = false;   /* answer a half-closed client, then close */
            return;
        }
    }
    conn_close(c);
}

/* ---- connections ---- */

static void server_maybe_done(http_server *s);

static void conn_free(http_conn *c)
{
    http_server *s = c->srv;
    buf_free(&c->pending);
    buf_free(&c->hvalue);
    free(c);
    s->nconns--;
    server_maybe_done(s);
}

static void close_cb(uv_handle_t *h)
{
    http_conn *c = h->data;
    if (--c->open_handles == 0 && !c->busy)
        conn_free(c);
}

/* Close both handles now (a no-op when they are closing already); off the linger list. */
static void conn_close_handles(http_conn *c)
{
    if (c->tier == SHED_LINGER) {
        shed_set(c, SHED_NONE);
        c->srv->nlinger--;
    }
    if (!uv_is_closing((uv_handle_t *)&c->tcp)) {
        uv_close((uv_handle_t *)&c->tcp, close_cb);
        uv_close((uv_handle_t *)&c->timer, close_cb);
    }
}

static void shutdown_cb(uv_shutdown_t *sr, int status)
{
    http_conn *c = sr->data;
    (void)status;
    free(sr);
    conn_close_handles(c);
}

static void timer_cb(uv_timer_t *t)
{
    http_conn *c = t->data;
    if (c->closing) {
        /* the peer did not take the last response in time: drop it */
        conn_close_handles(c);
        return;
    }
    if (c->busy) {
        http_req *r = c->req;
        if (r->body_streaming && !r->body_complete && !r->body_paused) {
            log_info("%s %s: the client stopped sending its body", r->method_name, r->path);
            conn_close(c);   /* aborts the request: its handler gets on_abort */
        }
        return;
    }
    if (c->req && c->first_deadline)
        conn_fail(c, 408, "REQUEST_TIMEOUT",
                  "the first request was not complete within %llu ms of connecting",
                  (unsigned long long)c->srv->lim.first_request_timeout_ms);
    else if (c->req)
        conn_fail(c, 408, "REQUEST_TIMEOUT", "the request was not complete within %llu ms",
                  (unsigned long long)c->srv->lim.header_timeout_ms);
    else
        conn_close(c);
}

static void arm_timer(http_conn *c, uint64_t ms)
{
    uv_timer_start(&c->timer, timer_cb, ms, 0);
}

/* Close gracefully: stop reading, abort a request in flight, let queued writes go out
 * (bounded by the header timeout), then close both handles. */
static void conn_close(http_conn *c)
{
    conn_close_how(c, true);
}

/* graceful: as conn_close; otherwise the handles are closed at once (queued writes are
 * dropped), so that the descriptor is free before the loop's next turn. */
static void conn_close_how(http_conn *c, bool graceful)
{
    if (c->closing)
        return;
    c->closing = true;
    http_server *s = c->srv;
    shed_set(c, SHED_NONE);
    s->nlive--;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    metrics_connection(-1);
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
    }
    if (c->busy)
        req_abort(c);
    else if (c->req) {
        req_free(c->req);
        c->req = NULL;
    }
    uv_shutdown_t *sr = graceful ? malloc(sizeof *sr) : NULL;
    if (sr) {
        sr->data = c;
        if (uv_shutdown(sr, (uv_stream_t *)&c->tcp, shutdown_cb) == 0) {
            /* it still counts against max_connections until it is closed */
            shed_set(c, SHED_LINGER);
            s->nlinger++;
            arm_timer(c, s->lim.header_timeout_ms);
            return;
        }
        free(sr);
    }
    conn_close_handles(c);
}

static void on_connection(uv_stream_t *server, int status)
{
    http_server *s = server->data;
    if (status == UV_EMFILE || status == UV_ENFILE) {
        /* libuv dropped the waiting connection; free a descriptor for the next one */
        if (shed_one(s))
            log_warn("out of file descriptors: closed the connection idle the longest");
        return;
    }
    if (status < 0)
        return;
    http_conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->srv = s;
    c->tier = SHED_NONE;
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->open_handles = 2;
    s->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp)) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->tcp, close_cb);
        uv_close((uv_handle_t *)&c->timer, close_cb);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    llhttp_init(&c->parser, HTTP_REQUEST, &s->settings);
    c->parser.data = c;
    buf_init(&c->pending, PENDING_CAP);
    buf_init(&c->hvalue, s->lim.max_header_bytes);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nlive++;
    metrics_connection(+1);
    if (s->nlive + s->nlinger > s->lim.max_connections && !shed_one(s)) {
        conn_fail(c, 429, "LIMIT_REACHED",
                  "the server has %llu connections open, its limit, each with a request in "
                  "progress", (unsigned long long)s->lim.max_connections);
        return;
    }
    shed_set(c, SHED_FRESH);
    c->first_deadline = true;
    arm_timer(c, s->lim.first_request_timeout_ms);
    update_reading(c);
}

/* ---- server ---- */

int http_server_start(http_server **out, uv_loop_t *loop, const char *host, int port,
                      const struct http_limits *lim, http_dispatch_fn fn, void *arg,
                      char *err, size_t errlen)
{
    struct sockaddr_storage addr;
    int rc;
    const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (uv_ip4_addr(h, port, (struct sockaddr_in *)&addr) &&
        uv_ip6_addr(h, port, (struct sockaddr_in6 *)&addr)) {
        snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address", host);
        return -EINVAL;
    }
    http_server *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->loop = loop;
    s->lim = *lim;
    if (!s->lim.first_request_timeout_ms)
        s->lim.first_request_timeout_ms = s->lim.header_timeout_ms;
    s->dispatch = fn;
    s->dispatch_arg = arg;
    llhttp_settings_init(&s->settings);
    s->settings.on_message_begin = on_message_begin;
    s->settings.on_url = on_url;
    s->settings.on_header_field = on_header_field;
    s->settings.on_header_value = on_header_value;
    s->settings.on_header_value_complete = on_header_value_complete;
    s->settings.on_headers_complete = on_headers_complete;
    s->settings.on_body = on_body;
    s->settings.on_message_complete = on_message_complete;
    uv_tcp_init(loop, &s->tcp);
    s->tcp.data = s;
    if ((rc = uv_tcp_bind(&s->tcp, (struct sockaddr *)&addr, 0)) ||
        (rc = uv_listen((uv_stream_t *)&s->tcp, 1024, on_connection))) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port, uv_strerror(rc));
        uv_close((uv_handle_t *)&s->tcp, (uv_close_cb)free);
        return rc;
    }
    struct sockaddr_storage bound;
    int blen = sizeof bound;
    uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&bound, &blen);
    s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    *out = s;
    return 0;
}

void http_server_set_body_hook(http_server *s, http_body_hook_fn fn)
{
    s->body_hook = fn;
}

int http_server_port(const http_server *s)
{
    return s->port;
}

uint64_t http_open_connections(const http_server *s)
{
    return s->nconns;
}

uint64_t http_connections_shed(const http_server *s)
{
    return s->nshed;
}

static void server_maybe_done(http_server *s)
{
    if (s->stopping && s->nconns == 0 && s->listener_closed) {
        if (s->stop_done)
            s->stop_done(s->stop_arg);
        free(s);
    }
}

static void listener_closed(uv_handle_t *h)
{
    http_server *s = h->data;
    s->listener_closed = true;
    server_maybe_done(s);
}

void http_server_stop(http_server *s, void (*done)(void *), void *arg)
{
    s->stopping = true;
    s->stop_done = done;
    s->stop_arg = arg;
    uv_close((uv_handle_t *)&s->tcp, listener_closed);
    while (s->conns)
        conn_close(s->conns);
}
