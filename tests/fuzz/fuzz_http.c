/*
 * fuzz_http.c — libFuzzer target for the HTTP server: each input is sent as raw bytes on
 * a real loopback connection to a real http_server (echo handler), then the client
 * half-closes and the loop runs until the server closes or answers. Finds crashes, leaks
 * (with ASan) and hangs (the server must close every connection it cannot use).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t *loop;
static int port;

static void echo(http_req *r, void *arg)
{
    (void)arg;
    http_respond(r, 200, "application/octet-stream", r->body.data, r->body.len, NULL);
}

static void start(void)
{
    signal(SIGPIPE, SIG_IGN);
    log_set_level(LOG_ERROR);
    loop = uv_default_loop();
    struct http_limits lim = { 4096, 65536, 1000, 1000, 64, 65536, 1000 };
    http_server *s;
    char err[256];
    if (http_server_start(&s, loop, "127.0.0.1", 0, &lim, echo, NULL, err, sizeof err))
        abort();
    port = http_server_port(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!loop)
        start();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect(fd, (struct sockaddr *)&a, sizeof a);
    uv_run(loop, UV_RUN_NOWAIT);   /* accept */
    size_t off = 0;
    char sink[65536];
    /* write everything (interleaved with server work), then half-close */
    for (int spins = 0; off < size && spins < 100000; spins++) {
        ssize_t w = write(fd, data + off, size - off);
        if (w > 0)
            off += (size_t)w;
        uv_run(loop, UV_RUN_NOWAIT);
        while (read(fd, sink, sizeof sink) > 0)
            ;
    }
    shutdown(fd, SHUT_WR);
    /* the server must end the connection: by answering and closing, or by closing */
    for (int spins = 0; spins < 100000; spins++) {
        uv_run(loop, UV_RUN_NOWAIT);
        ssize_t r = read(fd, sink, sizeof sink);
        if (r == 0)
            break;
        if (r < 0 && spins > 50000)
            abort();   /* hang: connection neither closed nor answered */
    }
    close(fd);
    uv_run(loop, UV_RUN_NOWAIT);
    return 0;
}
