/*
 * http_int.h — internal to the HTTP server (http.c, http_parse.c, http_write.c): the
 * objects behind the opaque types of http.h and the functions the three files call in
 * each other. Nothing else includes it. Everything here runs on the loop thread.
 *
 *   http.c        the server, the connection table (shedding), connection lifecycle
 *   http_parse.c  reading, llhttp and its callbacks, dispatching requests
 *   http_write.c  responses, streamed writes and back-pressure, finishing a request
 */
#ifndef SANDBOXD_HTTP_INT_H
#define SANDBOXD_HTTP_INT_H

#include <llhttp.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "budget.h"
#include "buf.h"
#include "http.h"

#define READ_BUF_SIZE 65536
#define PENDING_CAP (256 * 1024)
#define HEADER_NAME_CAP 64     /* longer header names are never ones we read */
#define DISCARD_CAP (8u << 20) /* body bytes read and dropped after an early response */

/* The shedding lists, in the order victims are taken from them (see the top). */
enum shed_tier {
    SHED_FRESH,  /* accepted, no request begun yet */
    SHED_HEAD,   /* a request begun, headers incomplete */
    SHED_IDLE,   /* keep-alive, between requests */
    SHED_DRAIN,  /* answered early; the rest of its body is read and dropped */
    SHED_LINGER, /* closing, its last response still being flushed */
    SHED_BODY,   /* headers complete, a buffered body still arriving (not dispatched) */
    SHED_TIERS,
    SHED_NONE = SHED_TIERS, /* a request in progress, or closed: never shed */
};

struct shed_list {
    struct http_conn *head, *tail;
};

/* Why llhttp_execute returned HPE_PAUSED. */
enum pause_why {
    PAUSE_NONE,
    PAUSE_DISPATCH, /* a buffered request is complete */
    PAUSE_HEADERS,  /* a streamed-body request's headers are complete */
    PAUSE_BODY,     /* a span of a streamed body is in conn->span */
    PAUSE_COMPLETE, /* a streamed (or discarded) body is complete */
};

struct http_server {
    uv_loop_t *loop;
    uv_tcp_t tcp;
    struct http_limits lim;
    http_dispatch_fn dispatch;
    http_body_hook_fn body_hook;
    void *dispatch_arg;
    llhttp_settings_t settings;
    uint64_t nconns;  /* allocated connections, closing ones included */
    uint64_t nlive;   /* open and not closing */
    uint64_t nlinger; /* closing, flushing a last response (SHED_LINGER) */
    uint64_t nshed;   /* closed to make room for a new connection */
    struct shed_list shed[SHED_TIERS];
    struct http_conn *conns; /* doubly linked list of open connections */
    bool stopping;
    bool listener_closed;
    bool listener_closing; /* uv_close called on it (http_server_stop_accepting) */
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
    enum shed_tier tier; /* the shedding list it is on, or SHED_NONE */
    struct http_conn *sprev, *snext;
    bool first_deadline;   /* the timer is the accept-time deadline (first request) */
    http_req *req;         /* request being received or handled */
    buf pending;           /* received, not yet parsed */
    size_t unwritten;      /* bytes queued whose write has not completed */
    uint64_t header_bytes; /* of the request being received */
    char hname[HEADER_NAME_CAP];
    size_t hname_len; /* > HEADER_NAME_CAP: a name we ignore */
    buf hvalue;
    int open_handles;
    bool closing;
    bool reading;
    bool read_eof;
    bool in_process; /* inside process_input(): no recursion */
    bool busy;       /* req was dispatched and is not complete yet */
    bool expect_continue;
    bool reject;        /* an error response was sent; close after it */
    bool continue_owed; /* streamed body: 100 Continue not sent yet */
    bool discarding;    /* dropping the rest of a body answered early */
    uint64_t discard_left;
    enum pause_why why;
    bool owed;        /* llhttp_execute is due even with nothing pending */
    const char *span; /* PAUSE_BODY: the span, inside pending */
    size_t span_len;
};

struct write_req {
    uv_write_t w;
    http_conn *conn;
    size_t len;
    budget *bg;  /* charged with len until written (http_req_set_budget) */
    char *owned; /* a handed-over body after data (http_respond_take) */
    char data[];
};

/* http.c: the connection table and lifecycle */
/* Move c to the tail of shedding list t (or off every list for SHED_NONE). */
void http_conn_shed_set(http_conn *c, enum shed_tier t);
uint64_t http_now_ns(void);
/* (Re)start c's one timer: what it means depends on c's state (http.c timer_cb). */
void http_conn_arm_timer(http_conn *c, uint64_t ms);
/* Close gracefully: stop reading, abort a request in flight, flush, close the handles. */
void http_conn_close(http_conn *c);
/* Free c once its handles are closed and no handler holds its request. */
void http_conn_free(http_conn *c);

/* http_parse.c: input */
/* Fill llhttp's settings with the parser callbacks. */
void http_parse_settings(llhttp_settings_t *settings);
/* Parse what is pending, dispatching each complete request; never recursive. */
void http_conn_process_input(http_conn *c);
/* Start or stop reading from c's socket as its state and pending bytes allow. */
void http_conn_update_reading(http_conn *c);
/* Tell the handler of c's dispatched request that its client is gone (once). */
void http_req_abort(http_conn *c);

/* http_write.c: output */
/* Queue a + b as one write (either may be empty); 0 or a negative errno. */
int http_conn_write(http_conn *c, const void *a, size_t alen, const void *b, size_t blen);
/* An error found while parsing: answer it (no request was dispatched) and close. */
void http_conn_fail(http_conn *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void http_req_free(http_req *r);
/* The handler is done with r: log it, then keep-alive, discard the body, or close. */
void http_req_finish(http_req *r);

#endif
