/*
 * main.c — sandboxd's entry point: read the configuration, start the HTTP server on the
 * libuv loop, run until SIGTERM or SIGINT, then close every connection and end every
 * child before exiting 0. A second signal during shutdown exits at once.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "api.h"
#include "config.h"
#include "http.h"
#include "log.h"

static struct config cfg;
static struct app app;
static uv_signal_t sig_term, sig_int;
static bool stopping;

static void server_stopped(void *arg)
{
    (void)arg;
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)h;
    if (stopping) {
        log_warn("second %s: exiting now", strsignal(signum));
        exit(1);
    }
    stopping = true;
    log_info("%s: shutting down", strsignal(signum));
    http_server_stop(app.server, server_stopped, NULL);
}

/* mkdir -p for the state directory, private to the daemon. */
static int make_dirs(const char *path)
{
    char tmp[sizeof cfg.state_dir];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0700) && errno != EEXIST)
        return -errno;
    return 0;
}

int main(int argc, char **argv)
{
    char err[512];
    bool exit_now;
    if (config_load(&cfg, argc, argv, &exit_now, err, sizeof err)) {
        fprintf(stderr, "sandboxd: %s\n", err);
        return 2;
    }
    if (exit_now)
        return 0;
    log_set_level(cfg.log_level);
    signal(SIGPIPE, SIG_IGN);

    int rc = make_dirs(cfg.state_dir);
    if (rc) {
        fprintf(stderr, "sandboxd: cannot create state dir %s: %s\n", cfg.state_dir,
                strerror(-rc));
        return 1;
    }

    uv_loop_t *loop = uv_default_loop();
    api_init(&app, loop, &cfg);
    struct http_limits lim = {
        .max_header_bytes = cfg.max_header_bytes,
        .max_body_bytes = cfg.max_body_bytes,
        .header_timeout_ms = cfg.header_timeout_ms,
        .idle_timeout_ms = cfg.idle_timeout_ms,
        .max_connections = cfg.max_connections,
        .stream_buffer_bytes = cfg.stream_buffer_bytes,
    };
    rc = http_server_start(&app.server, loop, cfg.host, cfg.port, &lim, api_dispatch, &app,
                           err, sizeof err);
    if (rc) {
        fprintf(stderr, "sandboxd: %s\n", err);
        return 1;
    }
    uv_signal_init(loop, &sig_term);
    uv_signal_init(loop, &sig_int);
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);

    const char *h = cfg.host;
    bool v6 = strchr(h, ':') != NULL;
    /* the banner is printed whatever the log level: scripts wait for it */
    fprintf(stderr, "sandboxd %s listening on http://%s%s%s:%d (state in %s%s)\n", SANDBOXD_VERSION,
             v6 ? "[" : "", h, v6 ? "]" : "", http_server_port(app.server), cfg.state_dir,
             cfg.token[0] ? ", token required" : "");
    fprintf(stderr, "try: curl http://%s%s%s:%d/v1/health\n", v6 ? "[" : "", h, v6 ? "]" : "",
             http_server_port(app.server));

    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    log_info("stopped");
    return 0;
}
