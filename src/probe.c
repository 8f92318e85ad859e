/*
 * probe.c — one program run for its output (see probe.h). The probe owns a process and a
 * pipe handle; it is freed when both are closed, after done has been called. Output past
 * max stops the reading (the program may then get EPIPE) and is reported as overflow.
 */
#include "probe.h"

#include <stdlib.h>

struct probe {
    uv_process_t proc;
    uv_pipe_t out;
    char *buf; /* max + 1 bytes read at most (one more than max tells overflow), + NUL */
    size_t len, max;
    int closed;
    probe_done_cb done;
    void *arg;
};

static void probe_closed(uv_handle_t *h)
{
    struct probe *pr = h->data;
    if (++pr->closed == 2) {
        free(pr->buf);
        free(pr);
    }
}

static void probe_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    struct probe *pr = h->data;
    (void)hint;
    *b = uv_buf_init(pr->buf + pr->len, (unsigned)(pr->max + 1 - pr->len));
}

static void probe_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct probe *pr = s->data;
    (void)b;
    if (n > 0)
        pr->len += (size_t)n;
    if (n < 0 || pr->len > pr->max)
        uv_read_stop(s);
}

static void probe_exit(uv_process_t *p, int64_t status, int sig)
{
    struct probe *pr = p->data;
    bool overflow = pr->len > pr->max;
    if (overflow)
        pr->len = pr->max;
    pr->buf[pr->len] = '\0';
    pr->done(status, sig, pr->buf, pr->len, overflow, pr->arg);
    uv_close((uv_handle_t *)&pr->proc, probe_closed);
    uv_close((uv_handle_t *)&pr->out, probe_closed);
}

int probe_run(uv_loop_t *loop, char **argv, char **env, size_t max, probe_done_cb done, void *arg)
{
    struct probe *pr = calloc(1, sizeof *pr);
    if (!pr || !(pr->buf = malloc(max + 2))) {
        free(pr);
        return UV_ENOMEM;
    }
    pr->max = max;
    pr->done = done;
    pr->arg = arg;
    uv_pipe_init(loop, &pr->out, 0);
    pr->out.data = pr->proc.data = pr;
    uv_stdio_container_t stdio[3] = {
        { .flags = UV_IGNORE },
        { .flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&pr->out },
        { .flags = UV_IGNORE },
    };
    uv_process_options_t o = { .exit_cb = probe_exit,
                               .file = argv[0],
                               .args = argv,
                               .env = env,
                               .stdio_count = 3,
                               .stdio = stdio };
    int rc = uv_spawn(loop, &pr->proc, &o);
    if (rc) {
        pr->closed++; /* the process handle: uv_spawn closes it itself */
        uv_close((uv_handle_t *)&pr->out, probe_closed);
        return rc;
    }
    uv_read_start((uv_stream_t *)&pr->out, probe_alloc, probe_read);
    return 0;
}
