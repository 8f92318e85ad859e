/*
 * http.c — HTTP/1.1 connections on libuv with llhttp (see http.h for the guarantees): the
 * server (listen, accept, stop), the connection table and its shedding lists, and each
 * connection's lifecycle (timers, graceful and immediate close, freeing). Parsing and
 * reading are in http_parse.c, responses and writes in http_write.c; the three share
 * http_int.h.
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
#include "http_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"

static void conn_close_how(http_conn *c, bool graceful);
static void conn_close_handles(http_conn *c);

/* ---- the connection table ---- */

/* Move c to the tail of list t (or off every list for SHED_NONE). */
void http_conn_shed_set(http_conn *c, enum shed_tier t)
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
            conn_close_handles(v); /* already closing: drop what it still had to send */
        else
            conn_close_how(v, false);
        return 1;
    }
    return 0;
}

uint64_t http_now_ns(void)
{
    return uv_hrtime();
}

/* ---- connections ---- */

static void server_maybe_done(http_server *s);

void http_conn_free(http_conn *c)
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
        http_conn_free(c);
}

/* Close both handles now (a no-op when they are closing already); off the linger list. */
static void conn_close_handles(http_conn *c)
{
    if (c->tier == SHED_LINGER) {
        http_conn_shed_set(c, SHED_NONE);
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
            http_conn_close(c); /* aborts the request: its handler gets on_abort */
        }
        return;
    }
    if (c->req && c->first_deadline)
        http_conn_fail(c, 408, "REQUEST_TIMEOUT",
                       "the first request was not complete within %llu ms of connecting",
                       (unsigned long long)c->srv->lim.first_request_timeout_ms);
    else if (c->req)
        http_conn_fail(c, 408, "REQUEST_TIMEOUT", "the request was not complete within %llu ms",
                       (unsigned long long)c->srv->lim.header_timeout_ms);
    else
        http_conn_close(c);
}

void http_conn_arm_timer(http_conn *c, uint64_t ms)
{
    uv_timer_start(&c->timer, timer_cb, ms, 0);
}

/* Close gracefully: stop reading, abort a request in flight, let queued writes go out
 * (bounded by the header timeout), then close both handles. */
void http_conn_close(http_conn *c)
{
    conn_close_how(c, true);
}

/* graceful: as http_conn_close; otherwise the handles are closed at once (queued writes are
 * dropped), so that the descriptor is free before the loop's next turn. */
static void conn_close_how(http_conn *c, bool graceful)
{
    if (c->closing)
        return;
    c->closing = true;
    http_server *s = c->srv;
    http_conn_shed_set(c, SHED_NONE);
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
        http_req_abort(c);
    else if (c->req) {
        http_req_free(c->req);
        c->req = NULL;
    }
    uv_shutdown_t *sr = graceful ? malloc(sizeof *sr) : NULL;
    if (sr) {
        sr->data = c;
        if (uv_shutdown(sr, (uv_stream_t *)&c->tcp, shutdown_cb) == 0) {
            /* it still counts against max_connections until it is closed */
            http_conn_shed_set(c, SHED_LINGER);
            s->nlinger++;
            http_conn_arm_timer(c, s->lim.header_timeout_ms);
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
        http_conn_fail(c, 429, "LIMIT_REACHED",
                       "the server has %llu connections open, its limit, each with a request in "
                       "progress",
                       (unsigned long long)s->lim.max_connections);
        return;
    }
    http_conn_shed_set(c, SHED_FRESH);
    c->first_deadline = true;
    http_conn_arm_timer(c, s->lim.first_request_timeout_ms);
    http_conn_update_reading(c);
}

/* ---- server ---- */

int http_server_start(http_server **out, uv_loop_t *loop, const char *host, int port,
                      const struct http_limits *lim, http_dispatch_fn fn, void *arg, char *err,
                      size_t errlen)
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
    http_parse_settings(&s->settings);
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

void http_server_stop_accepting(http_server *s)
{
    if (s->listener_closing)
        return;
    s->listener_closing = true;
    uv_close((uv_handle_t *)&s->tcp, listener_closed);
}

void http_server_stop(http_server *s, void (*done)(void *), void *arg)
{
    s->stopping = true;
    s->stop_done = done;
    s->stop_arg = arg;
    http_server_stop_accepting(s);
    while (s->conns)
        http_conn_close(s->conns);
    server_maybe_done(s); /* the listener may be closed already; s may be freed here */
}
