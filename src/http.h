/*
 * http.h — the HTTP/1.1 server: connections, request parsing (llhttp), responses.
 *
 * One libuv loop thread. Each connection handles one request at a time: pipelined
 * requests wait, already read and parsed no further, until the response before them is
 * complete, so responses always go out in request order. Requests are fully buffered
 * (bodies up to max_body_bytes) before they are dispatched — except those the body hook
 * (http_server_set_body_hook) claims at headers-complete time: they are dispatched with
 * their headers only, and the handler receives the body in pieces as it arrives
 * (on_body, then on_body_end), with http_body_pause/resume for back-pressure (a paused
 * request's connection stops reading once PENDING_CAP bytes are waiting, so the memory a
 * streamed upload holds is bounded whatever its size). Such a body is not limited by
 * max_body_bytes (the handler enforces its own limit) and its request is not bound by
 * header_timeout_ms as a whole; instead the client must send some of it at least every
 * header_timeout_ms while the handler is not pausing it. A handler that answers before
 * the body is complete gets its response sent with "Connection: close"; the rest of the
 * body is read and discarded (up to a bound) so the client sees the response.
 *
 * Guarantees to clients: a request line plus headers over max_header_bytes gets 431, a
 * body over max_body_bytes gets 413 (before it is read when Content-Length says so),
 * malformed HTTP gets 400, a request not finished within header_timeout_ms gets 408, and
 * each of these then closes the connection. A new connection must deliver its first
 * request within first_request_timeout_ms of being accepted (408 if it began one, else
 * it is just closed); idle keep-alive connections close after idle_timeout_ms.
 *
 * Fairness under a flood: max_connections counts open connections, but a full table
 * does not lock newcomers out. A new connection closes, to make room, the one that has
 * waited longest among those no handler holds, taken in this order: never sent a request
 * (oldest first), request headers incomplete (oldest request first), idle keep-alive
 * (idle longest first), draining the body of a request answered early, closing while
 * its client does not read the last response, and a buffered body still arriving. A
 * connection whose request was dispatched (being handled, its response streaming, or
 * its streamed body arriving) is never closed for room; only when every one is so is
 * the newcomer answered 429 and closed.
 *
 * Guarantees to handlers: a dispatched http_req stays valid until the handler completes
 * it (http_respond*, or http_stream_end) — even when the client goes away, in which case
 * on_abort is called first and every later write is silently discarded. Streaming writes
 * report back-pressure: when the client reads slower than the producer writes, the
 * producer is told to pause, and on_drain says when to go on; nothing is dropped.
 */
#ifndef SANDBOXD_HTTP_H
#define SANDBOXD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "buf.h"

struct http_limits {
    uint64_t max_header_bytes;
    uint64_t max_body_bytes;
    uint64_t header_timeout_ms;
    uint64_t idle_timeout_ms;
    uint64_t max_connections;
    uint64_t stream_buffer_bytes;      /* queued bytes at which a stream asks to pause */
    uint64_t first_request_timeout_ms; /* accept to a complete first request; 0: header's */
};

typedef struct http_server http_server;
typedef struct http_conn http_conn;
struct budget;

typedef struct http_req http_req;

typedef void (*http_req_cb)(http_req *req, void *arg);
/* A piece of a streamed request body; data is valid only during the call (copy it). */
typedef void (*http_body_cb)(http_req *req, const char *data, size_t len, void *arg);

struct http_req {
    http_conn *conn;
    int method; /* llhttp_method_t */
    const char *method_name;
    char *target;      /* request target as sent, NUL-terminated */
    char *path;        /* target up to '?', NUL-terminated (a copy) */
    const char *query; /* after '?', or "" */
    buf body;
    char authorization[512]; /* "" when absent; longer values are refused with 431 */
    char content_type[128];
    char last_event_id[32]; /* Last-Event-ID (SSE re-attach), "" when absent */
    /* compatibility surfaces (docs/compat.md), "" when absent; longer values are refused
     * with 431: the sandbox a request names (X-Sandbox-Id for Cloudflare's, E2b-Sandbox-Id
     * for E2B's) and an access token (X-Access-Token or E2B-Traffic-Access-Token) */
    char x_sandbox_id[128];
    char sandbox_header[80];
    char access_token[512];
    /* MCP's Streamable HTTP transport (api_mcp.c): Mcp-Session-Id and MCP-Protocol-Version,
     * "" when absent; longer values are refused with 431 */
    char mcp_session[80];
    char mcp_protocol[32];
    bool body_encoded; /* a Content-Encoding other than identity (not decoded here) */
    bool want_sse;     /* Accept names text/event-stream */
    bool keep_alive;
    bool has_content_length;
    uint64_t content_length; /* when has_content_length */
    uint64_t start_ns;
    int status;        /* status sent, for the access log and metrics */
    const char *route; /* route pattern, set by the router, for metrics */
    /* set by an asynchronous handler */
    http_req_cb on_abort; /* the client went away; stop producing */
    http_req_cb on_drain; /* a paused stream may write again */
    /* the client closed its side before a whole (not streamed) response went out: it may
     * be gone or only half-closed (it is still answered); peer_eof says it happened */
    http_req_cb on_peer_eof;
    bool peer_eof;
    void *cb_arg;
    struct budget *budget; /* charged with the response bytes queued (http_req_set_budget) */
    /* set by the handler of a streamed-body request (body_streaming) */
    http_body_cb on_body;    /* a piece of the body arrived */
    http_req_cb on_body_end; /* the whole body arrived */
    bool body_streaming;     /* dispatched at headers-complete; the body follows */
    bool body_complete;      /* every byte of a streamed body was delivered */
    bool body_paused;        /* http_body_pause() is in force */
    /* internal state */
    bool responded; /* a status line went out */
    bool streaming; /* chunked body in progress */
    bool finished;  /* complete; the conn may move to the next request */
    bool aborted;
    bool paused;          /* last stream write asked the producer to pause */
    bool stream_sized;    /* streamed with Content-Length, not chunked */
    uint64_t stream_left; /* bytes still owed on a sized stream */
};

/* Called for every complete request. The handler must eventually complete the request. */
typedef void (*http_dispatch_fn)(http_req *req, void *arg);
/* Asked at headers-complete time (method, path and headers are set, the body is not):
 * true to dispatch the request now and stream its body to the handler. */
typedef bool (*http_body_hook_fn)(const http_req *req, void *arg);

int http_server_start(http_server **out, uv_loop_t *loop, const char *host, int port,
                      const struct http_limits *lim, http_dispatch_fn fn, void *arg, char *err,
                      size_t errlen);
/* Stop accepting, abort in-flight requests, close every connection; done runs when all
 * handles are closed. */
void http_server_stop(http_server *s, void (*done)(void *arg), void *arg);
/* Close the listening socket only: connections open now go on (a shutdown's first step). */
void http_server_stop_accepting(http_server *s);
/* Install the body hook (arg is the dispatch arg). Without one, every body is buffered. */
void http_server_set_body_hook(http_server *s, http_body_hook_fn fn);
int http_server_port(const http_server *s); /* the bound port (useful with port 0) */
uint64_t http_open_connections(const http_server *s);
uint64_t http_connections_shed(const http_server *s); /* closed to make room, so far */

/* Whole responses. Each completes the request. body is copied. */
void http_respond(http_req *req, int status, const char *content_type, const void *body, size_t len,
                  const char *extra_headers);
/* The same, but body (malloc'd) is handed over: written without a copy and freed once
 * written (or at once when it cannot be). */
void http_respond_take(http_req *req, int status, const char *content_type, char *body, size_t len,
                       const char *extra_headers);
/* From now on, response bytes queued for req (whole or streamed) are charged to bg
 * (budget.h) until the socket has taken them; req holds a reference to bg. */
void http_req_set_budget(http_req *req, struct budget *bg);
/* Response bytes queued for req's connection whose write has not completed yet (0: the
 * client has taken everything; as long as it is not, the bytes are still charged). */
size_t http_queued(const http_req *req);
/* Error envelope {"code","message"}; message formatted printf-style. */
void http_respond_error(http_req *req, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Streamed responses (chunked transfer encoding). */
int http_stream_begin(http_req *req, int status, const char *content_type,
                      const char *extra_headers);
/* Returns 0 when the producer may go on, 1 when it should pause until on_drain,
 * -EPIPE when the client is gone (the data is discarded). */
int http_stream_write(http_req *req, const void *data, size_t len);
/* Sends the last chunk and completes the request. */
void http_stream_end(http_req *req);
/* http_stream_write of data, then http_stream_end, in one write when it can. */
void http_stream_end_with(http_req *req, const void *data, size_t len);
/* A streamed response of known length (Content-Length, no chunking): http_stream_write
 * sends raw bytes (anything past length is dropped) and http_stream_end completes it; if
 * fewer than length bytes were written, the connection is closed so the client sees a
 * short body rather than a wrong one. */
int http_stream_begin_sized(http_req *req, int status, const char *content_type, uint64_t length,
                            const char *extra_headers);

/* Streamed request bodies: stop delivering on_body (the connection stops reading once its
 * pending buffer is full) until http_body_resume. Both are no-ops on other requests. */
void http_body_pause(http_req *req);
void http_body_resume(http_req *req);

const char *http_status_text(int status);

#endif
