/* Unit tests for http.c and sse.c: a real server on the loop of this thread, a raw
 * socket client on another thread, exact bytes on the wire. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>

#include "http.h"
#include "sse.h"

static uv_loop_t loop;
static http_server *srv;
static uv_async_t stop_async;
static int port;

/* Handlers: "/echo" answers the body, "/sse/N" streams N events, "/slow" answers later. */
static uv_timer_t slow_timer;
static http_req *slow_req;
static int sse_pauses;

static void slow_done(uv_timer_t *t)
{
    (void)t;
    http_respond(slow_req, 200, "text/plain", "slow", 4, NULL);
}

struct stream_state {
    sse s;
    int left;
    char payload[1024];
};

static void sse_pump(http_req *r, void *arg)
{
    struct stream_state *st = arg;
    while (st->left > 0) {
        st->left--;
        int rc = sse_event(&st->s, "stdout", st->payload, strlen(st->payload));
        if (rc < 0)
            break;
        if (rc == 1) {
            sse_pauses++;
            return;   /* wait for on_drain */
        }
    }
    sse_end(&st->s);
    (void)r;
    free(st);
}

static void sse_abort(http_req *r, void *arg)
{
    /* the client left while the stream was paused: complete the request (the handler's
     * duty, see http.h) and free the producer */
    struct stream_state *st = arg;
    (void)r;
    sse_end(&st->s);
    free(st);
}

/* Streamed bodies: "/up…" paths are claimed by the body hook. "/up" counts the bytes,
 * pausing after every piece and resuming from a timer (back-pressure); "/upreject"
 * answers 413 before reading the body. */
struct upload_state {
    http_req *r;
    uv_timer_t t;
    size_t n;
    unsigned sum;
};
static int up_pauses, up_aborts;

static void up_closed(uv_handle_t *h)
{
    free(h->data);
}

static void up_resume(uv_timer_t *t)
{
    struct upload_state *u = t->data;
    http_body_resume(u->r);
}

static void up_body(http_req *r, const char *data, size_t len, void *arg)
{
    struct upload_state *u = arg;
    for (size_t i = 0; i < len; i++)
        u->sum = u->sum * 31 + (unsigned char)data[i];
    u->n += len;
    http_body_pause(r);
    up_pauses++;
    uv_timer_start(&u->t, up_resume, 1, 0);
}

static void up_end(http_req *r, void *arg)
{
    struct upload_state *u = arg;
    char out[64];
    int n = snprintf(out, sizeof out, "got %zu sum %u", u->n, u->sum);
    uv_timer_stop(&u->t);
    http_respond(r, 200, "text/plain", out, (size_t)n, NULL);
    uv_close((uv_handle_t *)&u->t, up_closed);
}

static void up_abort(http_req *r, void *arg)
{
    struct upload_state *u = arg;
    up_aborts++;
    uv_timer_stop(&u->t);
    http_respond(r, 499, NULL, "", 0, NULL);
    uv_close((uv_handle_t *)&u->t, up_closed);
}

static bool body_hook(const http_req *r, void *arg)
{
    (void)arg;
    return strncmp(r->path, "/up", 3) == 0;
}

#define BIG_BODY (16u << 20)   /* more than loopback's socket buffers can take */

static void dispatch(http_req *r, void *arg)
{
    (void)arg;
    if (strcmp(r->path, "/up") == 0) {
        struct upload_state *u = calloc(1, sizeof *u);
        u->r = r;
        uv_timer_init(&loop, &u->t);
        u->t.data = u;
        r->cb_arg = u;
        r->on_body = up_body;
        r->on_body_end = up_end;
        r->on_abort = up_abort;
    } else if (strcmp(r->path, "/upreject") == 0) {
        http_respond_error(r, 413, "PAYLOAD_TOO_LARGE", "no thanks");
    } else if (strcmp(r->path, "/echo") == 0) {
        http_respond(r, 200, "text/plain", r->body.data, r->body.len, NULL);
    } else if (strncmp(r->path, "/sse/", 5) == 0) {
        struct stream_state *st = calloc(1, sizeof *st);
        st->left = (int)strtol(r->path + 5, NULL, 10);
        memset(st->payload, 'x', sizeof st->payload - 1);
        st->payload[0] = '"';
        st->payload[sizeof st->payload - 2] = '"';
        r->on_drain = sse_pump;
        r->on_abort = sse_abort;
        r->cb_arg = st;
        sse_begin(&st->s, r);
        sse_pump(r, st);
    } else if (strcmp(r->path, "/big") == 0) {
        static char big[BIG_BODY];
        memset(big, 'b', sizeof big);
        http_respond(r, 200, "text/plain", big, sizeof big, NULL);
    } else if (strcmp(r->path, "/slow") == 0) {
        slow_req = r;
        uv_timer_start(&slow_timer, slow_done, 50, 0);
    } else {
        http_respond_error(r, 404, "NOT_FOUND", "no %s", r->path);
    }
}

static void on_stop(uv_async_t *a)
{
    (void)a;
    uv_close((uv_handle_t *)&stop_async, NULL);
    uv_close((uv_handle_t *)&slow_timer, NULL);
    http_server_stop(srv, NULL, NULL);
}

/* ---- client side ---- */

static int connect_client_rcvbuf(int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = { 5, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a))
        return -1;
    return fd;
}

static int connect_client(void)
{
    return connect_client_rcvbuf(0);
}

static void send_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Read until the peer closes or `until` appears (NULL: until close). */
static size_t recv_until(int fd, char *out, size_t cap, const char *until)
{
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, out + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        out[n] = '\0';
        if (until && strstr(out, until))
            break;
    }
    out[n] = '\0';
    return n;
}

static char resp[1 << 20];

static void *client_main(void *arg)
{
    (void)arg;
    return NULL;
}

static void run_with_client(void *(*fn)(void *))
{
    pthread_t t;
    pthread_create(&t, NULL, fn, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(t, NULL);
}

static uint64_t lim_header_ms = 300, lim_first_ms = 1500;   /* set by each TEST_LIM */

static int setup(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    struct http_limits lim = { .max_header_bytes = 1024, .max_body_bytes = 4096,
                               .header_timeout_ms = lim_header_ms, .idle_timeout_ms = 2000,
                               .max_connections = 3, .stream_buffer_bytes = 16384,
                               .first_request_timeout_ms = lim_first_ms };
    char err[256];
    assert_int_equal(http_server_start(&srv, &loop, "127.0.0.1", 0, &lim, dispatch, NULL, err,
                                       sizeof err), 0);
    port = http_server_port(srv);
    http_server_set_body_hook(srv, body_hook);
    uv_async_init(&loop, &stop_async, on_stop);
    uv_timer_init(&loop, &slow_timer);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    uv_loop_close(&loop);
    return 0;
}

#define CLIENT(name) static void *name##_client(void *arg)
#define DONE() do { uv_async_send(&stop_async); return NULL; } while (0)

static const char *expect_status;
static int failures;
static char failure_text[512];

static void check(int cond, const char *what)
{
    if (!cond && !failures++)
        snprintf(failure_text, sizeof failure_text, "%s; got: %.300s", what, resp);
}

CLIENT(keepalive_pipelining)
{
    (void)arg;
    int fd = connect_client();
    /* two requests in one write: answered in order on the same connection */
    const char *req = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nonePOST /echo "
                      "HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\ntwo";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, "two");
    char *a = strstr(resp, "one"), *b = strstr(resp, "two");
    check(a && b && a < b, "pipelined responses in order");
    check(strstr(resp, "Connection: keep-alive") != NULL, "keep-alive kept");
    /* a slow handler does not let the pipelined request behind it overtake it */
    req = "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\n"
          "Content-Length: 4\r\n\r\nfast";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, "fast");
    a = strstr(resp, "slow");
    b = strstr(resp, "fast");
    check(a && b && a < b, "slow response before the fast one");
    close(fd);
    DONE();
}

CLIENT(chunked_and_continue)
{
    (void)arg;
    int fd = connect_client();
    const char *req = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, "abcde");
    check(strstr(resp, "Content-Length: 5\r\n") && strstr(resp, "abcde"), "chunked body");
    req = "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, "\r\n\r\n");
    check(strncmp(resp, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 0, "100 Continue");
    send_all(fd, "hi", 2);
    recv_until(fd, resp, sizeof resp, "hi");
    check(strstr(resp, "200 OK") != NULL, "body after 100-continue");
    close(fd);
    DONE();
}

CLIENT(limits)
{
    (void)arg;
    int fd = connect_client();
    char big[2048];
    memset(big, 'a', sizeof big);
    big[sizeof big - 1] = '\0';
    char req[4096];
    snprintf(req, sizeof req, "GET /echo HTTP/1.1\r\nX-Big: %s\r\n\r\n", big);
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, NULL);
    check(strstr(resp, "431") && strstr(resp, "HEADERS_TOO_LARGE"), "431 for big headers");
    close(fd);

    fd = connect_client();
    req[0] = '\0';
    const char *r2 = "POST /echo HTTP/1.1\r\nContent-Length: 99999\r\n\r\n";
    send_all(fd, r2, strlen(r2));
    recv_until(fd, resp, sizeof resp, NULL);
    check(strstr(resp, "413 Payload Too Large") && strstr(resp, "PAYLOAD_TOO_LARGE"),
          "413 from Content-Length");
    close(fd);

    fd = connect_client();
    const char *r3 = "BLAH / HTTP/1.1\r\n\r\n";
    send_all(fd, r3, strlen(r3));
    recv_until(fd, resp, sizeof resp, NULL);
    check(strstr(resp, "400 Bad Request") && strstr(resp, "malformed"), "400 for garbage");
    close(fd);

    fd = connect_client();
    send_all(fd, "GET /echo HTTP/1.1\r\nHost:", 25);   /* never finished */
    recv_until(fd, resp, sizeof resp, NULL);
    check(strstr(resp, "408") != NULL, "408 for a stalled request");
    close(fd);
    DONE();
}

/* 1 when the server closed fd (EOF or reset) without sending anything. */
static int closed_silently(int fd)
{
    char b[256];
    snprintf(resp, sizeof resp, "(nothing: not closed)");
    ssize_t r = read(fd, b, sizeof b);
    if (r > 0) {
        b[r < 255 ? r : 255] = '\0';
        snprintf(resp, sizeof resp, "%s", b);
    }
    return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* A whole request on fd, answered 200 on the same (kept-alive) connection. */
static int served(int fd)
{
    const char *req = "POST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nok";
    send_all(fd, req, strlen(req));
    size_t n = recv_until(fd, resp, sizeof resp, "\r\n\r\nok");
    return n > 0 && strstr(resp, "200 OK") && strstr(resp, "keep-alive");
}

CLIENT(max_connections)
{
    (void)arg;
    /* table of 3: A never sends, B is idle after a request, C has half its headers */
    int a = connect_client(), b = connect_client();
    check(served(b), "B served");
    int c = connect_client();
    send_all(c, "GET /echo HTTP/1.1\r\n", 20);
    /* D: the connection that never sent a request goes first, silently */
    int d = connect_client();
    check(closed_silently(a), "A (never sent a byte) shed for D");
    check(served(d), "D served");
    /* E: then the oldest request whose headers are not complete */
    int e = connect_client();
    check(closed_silently(c), "C (half-sent headers) shed for E");
    send_all(e, "GET /echo HTTP/1.1\r\nHost", 24);
    /* F: E is the only one without a complete request in progress */
    int f = connect_client();
    check(closed_silently(e), "E (half-sent headers) shed for F");
    check(served(f), "F served");
    /* G: now all three are idle keep-alives: the one idle longest (B) goes */
    int g = connect_client();
    check(closed_silently(b), "B (idle longest) shed for G");
    check(served(g), "G served");
    check(served(d) && served(f), "D and F untouched");
    /* every connection with a request in progress (a body arriving): 429 for H */
    const char *up = "PUT /up HTTP/1.1\r\nContent-Length: 1000\r\n\r\nabc";
    send_all(d, up, strlen(up));
    send_all(f, up, strlen(up));
    send_all(g, up, strlen(up));
    usleep(100000);
    int h = connect_client();
    recv_until(h, resp, sizeof resp, NULL);
    check(strstr(resp, "429") && strstr(resp, "LIMIT_REACHED"), "429 when nothing can be shed");
    int fds[] = { a, b, c, d, e, f, g, h };
    for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++)
        close(fds[i]);
    DONE();
}

/* Read everything until the server closes; the number of bytes. */
static size_t drain(int fd)
{
    static char sink[1 << 16];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, sink, sizeof sink);
        if (r <= 0)
            return n;
        n += (size_t)r;
    }
}

CLIENT(linger_shedding)
{
    (void)arg;
    /* three clients take a large "Connection: close" response without reading it: their
     * connections linger, closing, and still fill the table of 3 */
    int l[3];
    for (int i = 0; i < 3; i++) {
        l[i] = connect_client_rcvbuf(4096);
        const char *req = "GET /big HTTP/1.1\r\nConnection: close\r\n\r\n";
        send_all(l[i], req, strlen(req));
        char first;
        check(read(l[i], &first, 1) == 1, "the response began (the connection is closing)");
    }
    /* a newcomer takes the oldest lingering one's place */
    int n = connect_client();
    check(served(n), "the newcomer is served");
    size_t got0 = drain(l[0]) + 1;
    size_t got1 = drain(l[1]) + 1;
    snprintf(resp, sizeof resp, "first %zu bytes, second %zu bytes", got0, got1);
    check(got0 < BIG_BODY, "the oldest lingering response was cut");
    check(got1 > BIG_BODY, "the next one was not");
    for (int i = 0; i < 3; i++)
        close(l[i]);
    close(n);
    DONE();
}

/* A streamed-body request whose handler has taken it (100 Continue), body unfinished. */
static int held_by_handler(int fd)
{
    const char *up = "PUT /up HTTP/1.1\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n";
    send_all(fd, up, strlen(up));
    recv_until(fd, resp, sizeof resp, "\r\n\r\n");
    return strncmp(resp, "HTTP/1.1 100 Continue", 21) == 0 && write(fd, "abc", 3) == 3;
}

CLIENT(shed_order_late_tiers)
{
    (void)arg;
    /* table of 3: X idle, D draining (answered 413 before its body), B sending a
     * buffered body (not dispatched yet) */
    int x = connect_client();
    check(served(x), "X served");
    int d = connect_client();
    const char *rej = "PUT /upreject HTTP/1.1\r\nContent-Length: 99999\r\n\r\nsome";
    send_all(d, rej, strlen(rej));
    recv_until(d, resp, sizeof resp, "no thanks\"}");
    check(strstr(resp, "413") != NULL, "D answered early");
    int b = connect_client();
    const char *part = "POST /echo HTTP/1.1\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n";
    send_all(b, part, strlen(part));
    recv_until(b, resp, sizeof resp, "\r\n\r\n");   /* its headers are in */
    check(strncmp(resp, "HTTP/1.1 100 Continue", 21) == 0, "B's headers read");
    send_all(b, "0123456789", 10);
    /* newcomers that each end up held by a handler (a streamed body arriving; the
     * 100 Continue says the handler has it) */
    int n1 = connect_client();
    check(closed_silently(x), "the idle one goes first");
    check(held_by_handler(n1), "N1 held");
    int n2 = connect_client();
    check(closed_silently(d), "then the one draining an answered body");
    check(held_by_handler(n2), "N2 held");
    int n3 = connect_client();
    check(closed_silently(b), "then the one still sending a buffered body");
    check(held_by_handler(n3), "N3 held");
    int n4 = connect_client();
    recv_until(n4, resp, sizeof resp, NULL);
    check(strstr(resp, "429") && strstr(resp, "LIMIT_REACHED"), "429 once all are handled");
    int fds[] = { x, d, b, n1, n2, n3, n4 };
    for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; i++)
        close(fds[i]);
    DONE();
}

CLIENT(first_request_deadline)
{
    (void)arg;
    /* never sends: closed at first_request_timeout_ms (1500), no answer */
    int a = connect_client();
    struct timeval tv = { 10, 0 };
    setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    check(closed_silently(a), "a silent connection is closed, without a response");
    close(a);
    /* a slow client (a byte every 100 ms) gets 408 at the header deadline (300 ms) */
    int b = connect_client();
    setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const char *req = "GET /echo HTTP/1.1\r\nHost: slow.example\r\nX-Slow: yes\r\n\r\n";
    size_t sent = 0;
    for (; sent < strlen(req); sent++) {
        if (write(b, req + sent, 1) != 1)
            break;
        usleep(100000);
        struct timeval zero = { 0, 1000 };
        setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof zero);
        ssize_t r = recv(b, resp, sizeof resp - 1, MSG_PEEK);
        setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (r > 0)
            break;
    }
    recv_until(b, resp, sizeof resp, NULL);
    check(strstr(resp, "408") && strstr(resp, "REQUEST_TIMEOUT"), "408 for a slow client");
    check(sent < strlen(req), "closed before the slow client was done");
    close(b);
    DONE();
}

CLIENT(sse_backpressure)
{
    (void)arg;
    /* a small receive window and a late reader: the server must pause, not drop */
    int fd = connect_client_rcvbuf(4096);
    const char *req = "GET /sse/3000 HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n";
    send_all(fd, req, strlen(req));
    usleep(300000);
    static char big[4 << 20];
    size_t n = recv_until(fd, big, sizeof big, "\r\n0\r\n\r\n");
    int events = 0;
    for (char *p = big; (p = strstr(p, "event: stdout\n")); p++)
        events++;
    snprintf(resp, sizeof resp, "%zu bytes, %d events, %d pauses", n, events, sse_pauses);
    check(n > 3000 * 1000, "all bytes arrive");
    check(events == 3000, "every event delivered, none dropped");
    check(strstr(big, "id: 3000\n") != NULL, "ids count up to 3000");
    check(strstr(big, "Transfer-Encoding: chunked") != NULL, "chunked stream");
    check(sse_pauses > 0, "the producer was paused at least once");
    close(fd);
    DONE();
}

CLIENT(sse_disconnect)
{
    (void)arg;
    int fd = connect_client();
    const char *req = "GET /sse/100000 HTTP/1.1\r\n\r\n";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, 4096, NULL);
    close(fd);   /* gone mid-stream: the server must clean up and keep serving */
    usleep(100000);
    fd = connect_client();
    send_all(fd, "POST /echo HTTP/1.1\r\nContent-Length: 2\r\n\r\nok", 44);
    recv_until(fd, resp, sizeof resp, "ok");
    check(strstr(resp, "200 OK") != NULL, "server alive after a client vanished");
    close(fd);
    DONE();
}

static unsigned checksum(const char *d, size_t n)
{
    unsigned s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + (unsigned char)d[i];
    return s;
}

CLIENT(stream_body)
{
    (void)arg;
    /* 3 MiB, far past max_body_bytes (4096), streamed with back-pressure */
    static char body[3 << 20];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (char)(i * 7 + (i >> 12));
    int fd = connect_client();
    char head[160], want[64];
    int hn = snprintf(head, sizeof head, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: %zu"
                      "\r\n\r\n", sizeof body);
    send_all(fd, head, (size_t)hn);
    send_all(fd, body, sizeof body);
    snprintf(want, sizeof want, "got %zu sum %u", sizeof body, checksum(body, sizeof body));
    recv_until(fd, resp, sizeof resp, want);
    check(strstr(resp, want) != NULL, "every byte of the streamed body, in order");
    check(strstr(resp, "Connection: keep-alive") != NULL, "keep-alive after a streamed body");
    check(up_pauses > 10, "the body was paused and resumed");
    /* the same connection goes on: a chunked streamed body, then a buffered request */
    const char *req = "PUT /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nPOST /echo HTTP/1.1\r\n"
                      "Content-Length: 4\r\n\r\nnext";
    send_all(fd, req, strlen(req));
    snprintf(want, sizeof want, "got 5 sum %u", checksum("abcde", 5));
    recv_until(fd, resp, sizeof resp, "next");
    check(strstr(resp, want) != NULL, "chunked streamed body");
    check(strstr(resp, want) < strstr(resp, "next"), "pipelined request after it, in order");
    /* an empty streamed body still ends */
    req = "PUT /up HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, "got 0 ");
    check(strstr(resp, "got 0 sum 0") != NULL, "empty streamed body");
    close(fd);
    DONE();
}

CLIENT(stream_body_early_answer)
{
    (void)arg;
    /* answered before the body: the client still reads the answer, then the close */
    static char body[200000];
    memset(body, 'z', sizeof body);
    int fd = connect_client();
    char head[160];
    int hn = snprintf(head, sizeof head, "PUT /upreject HTTP/1.1\r\nContent-Length: %zu"
                      "\r\n\r\n", sizeof body);
    send_all(fd, head, (size_t)hn);
    send_all(fd, body, sizeof body);
    recv_until(fd, resp, sizeof resp, NULL);   /* until the server closes */
    check(strstr(resp, "413 Payload Too Large") != NULL, "early 413 delivered");
    check(strstr(resp, "Connection: close") != NULL, "early answer closes the connection");
    close(fd);
    /* with Expect: 100-continue the body is never asked for */
    fd = connect_client();
    const char *req = "PUT /upreject HTTP/1.1\r\nExpect: 100-continue\r\n"
                      "Content-Length: 99999999\r\n\r\n";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, NULL);
    check(strstr(resp, "100 Continue") == NULL && strstr(resp, "413") != NULL,
          "no 100 Continue before an early answer");
    close(fd);
    DONE();
}

CLIENT(stream_body_stall)
{
    (void)arg;
    /* a client that stops halfway is dropped after header_timeout_ms; the handler hears */
    int fd = connect_client();
    const char *req = "PUT /up HTTP/1.1\r\nContent-Length: 1000\r\n\r\nhalf";
    send_all(fd, req, strlen(req));
    recv_until(fd, resp, sizeof resp, NULL);
    close(fd);
    usleep(50000);
    check(up_aborts == 1, "the handler's on_abort ran once");
    /* a client that half-closes mid-body: aborted too */
    fd = connect_client();
    send_all(fd, req, strlen(req));
    shutdown(fd, SHUT_WR);
    recv_until(fd, resp, sizeof resp, NULL);
    close(fd);
    usleep(50000);
    snprintf(resp, sizeof resp, "%d aborts", up_aborts);
    check(up_aborts == 2, "half-close mid-body aborts");
    DONE();
}

#define TEST_LIM(name, header_ms, first_ms)                                               \
    static void name(void **state)                                                       \
    {                                                                                    \
        (void)state;                                                                     \
        failures = 0;                                                                    \
        up_pauses = up_aborts = 0;                                                       \
        lim_header_ms = header_ms;                                                       \
        lim_first_ms = first_ms;                                                         \
        setup(NULL);                                                                     \
        run_with_client(name##_client);                                                  \
        teardown(NULL);                                                                  \
        if (failures)                                                                    \
            fail_msg("%s", failure_text);                                                \
    }
#define TEST(name) TEST_LIM(name, 300, 1500)

TEST(keepalive_pipelining)
TEST(chunked_and_continue)
TEST(limits)
TEST_LIM(max_connections, 10000, 10000)   /* no deadline may end a connection meanwhile */
TEST(first_request_deadline)
TEST_LIM(linger_shedding, 20000, 10000)
TEST_LIM(shed_order_late_tiers, 10000, 10000)
TEST(sse_backpressure)
TEST(sse_disconnect)
TEST(stream_body)
TEST(stream_body_early_answer)
TEST(stream_body_stall)

int main(void)
{
    (void)client_main;
    signal(SIGPIPE, SIG_IGN);
    (void)expect_status;
    (void)sse_pauses;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keepalive_pipelining),
        cmocka_unit_test(chunked_and_continue),
        cmocka_unit_test(limits),
        cmocka_unit_test(max_connections),
        cmocka_unit_test(first_request_deadline),
        cmocka_unit_test(linger_shedding),
        cmocka_unit_test(shed_order_late_tiers),
        cmocka_unit_test(sse_backpressure),
        cmocka_unit_test(sse_disconnect),
        cmocka_unit_test(stream_body),
        cmocka_unit_test(stream_body_early_answer),
        cmocka_unit_test(stream_body_stall),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
