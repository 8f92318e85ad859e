/*
 * api_e2b_process.c — envd's Connect service process.Process as the E2B SDK's commands
 * use it (docs/compat.md "E2B"), mapped onto the sandbox's background processes
 * (process.h): Start (server stream: start {pid}, data {stdout|stderr: base64} as the
 * output comes, end {exitCode, exited, status}, then the end-of-stream message), Connect
 * (the same stream for a running process, by pid), List (the running ones), SendSignal
 * (SIGKILL / SIGTERM: the process group is killed, as DELETE …/processes/{id} does),
 * SendInput {input: {stdin: base64}} and CloseStdin onto the process's stdin (process.h:
 * a Start with "stdin": true keeps one open). PTYs, Update and StreamInput (which the
 * SDK's commands do not use) answer `unimplemented`.
 *
 * A process started here is an ordinary background process of the sandbox (listed by
 * /v1 too): `exec CMD ARGS…` with every word shell-quoted, run by the native /bin/sh -c.
 * Its output reaches the stream through a follower (process.h), so a slow reader never
 * slows the process and what is queued for it is charged to the sandbox's budget; a
 * client that goes away detaches its follower, the process runs on (as on E2B).
 */
#include "api_e2b.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_command.h"
#include "api_json.h"
#include "jsonx.h"
#include "process.h"

/* ---- the stream ---- */

struct e2b_stream {
    cmd_sink sink; /* first: the engine holds &sink */
    http_req *req;
    proc_follower *f;
    json_t *body; /* the request message (owns what the start borrows) */
};

static int stream_msg(http_req *req, unsigned flags, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s)
        return 0;
    buf b;
    buf_init(&b, strlen(s) + 8);
    e2b_connect_frame(&b, flags, s, strlen(s));
    free(s);
    int rc = http_stream_write(req, b.data, b.len);
    buf_free(&b);
    return rc;
}

/* A streaming call that fails before its stream: 200, then the end-of-stream error. */
static void stream_error(http_req *req, enum e2b_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void stream_error(http_req *req, enum e2b_code code, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    http_stream_begin(req, 200, "application/connect+json", NULL);
    stream_msg(req, 2,
               json_pack("{s:{s:s, s:s}}", "error", "code", e2b_code_name(code), "message", msg));
    http_stream_end(req);
}

#define STREAM(s) ((struct e2b_stream *)(s))

static void stream_free(struct e2b_stream *st)
{
    json_decref(st->body);
    free(st);
}

static int op_begin(cmd_sink *s, struct budget *bg)
{
    http_req_set_budget(STREAM(s)->req, bg);
    return 0;
}

static int op_event(cmd_sink *s, const char *type, const char *json, size_t len)
{
    if (strcmp(type, "exit") != 0)
        return 0; /* "dropped": the stream has no way to say it */
    json_t *e = json_loadb(json, len, 0, NULL);
    int code = (int)json_integer_value(json_object_get(e, "exitCode"));
    const char *sig = json_string_value(json_object_get(e, "signal"));
    char status[64];
    if (sig)
        snprintf(status, sizeof status, "signal: %s", strcmp(sig, "SIGKILL") ? sig : "killed");
    else
        snprintf(status, sizeof status, "exit status %d", code);
    json_decref(e);
    json_t *end =
        json_pack("{s:i, s:b, s:s}", "exitCode", sig ? -1 : code, "exited", !sig, "status", status);
    if (sig || code)
        json_object_set_new(end, "error", json_string(status)); /* E2B's: the error's message */
    return stream_msg(STREAM(s)->req, 0, json_pack("{s:{s:o}}", "event", "end", end));
}

static int op_text(cmd_sink *s, const char *type, esc_carry *carry, const void *data, size_t n,
                   bool final)
{
    (void)carry;
    (void) final;
    if (n == 0)
        return 0;
    buf b;
    buf_init(&b, n * 2 + 64);
    e2b_base64(&b, data, n);
    json_t *j = json_pack("{s:{s:{s:s%}}}", "event", "data", type, b.data ? b.data : "", b.len);
    buf_free(&b);
    return stream_msg(STREAM(s)->req, 0, j);
}

static void op_end(cmd_sink *s)
{
    http_req *req = STREAM(s)->req;
    req->on_abort = NULL;
    req->on_drain = NULL;
    stream_msg(req, 2, json_object());
    http_stream_end(req);
    stream_free(STREAM(s));
}

static void op_answer(cmd_sink *s, char *json, size_t len)
{
    (void)len;
    free(json);
    op_end(s);
}

static void op_failed(cmd_sink *s, int rc, const char *cwd, const char *msg)
{
    (void)cwd;
    http_req *req = STREAM(s)->req;
    stream_msg(req, 2,
               json_pack("{s:{s:s, s:s}}", "error", "code", "internal", "message",
                         msg && msg[0] ? msg : strerror(-rc)));
    http_stream_end(req);
    stream_free(STREAM(s));
}

static const struct cmd_sink_ops OPS = {
    .begin = op_begin,
    .event = op_event,
    .text = op_text,
    .end = op_end,
    .answer = op_answer,
    .failed = op_failed,
    .queued = api_sink_queued,
    .gone = api_sink_gone,
    .wait_drain = api_sink_wait_drain,
};

/* Stream p's events to st's request: start {pid}, then what the follower sends. */
static void stream_follow(struct e2b_stream *st, proc *p)
{
    http_req *req = st->req;
    json_t *info = proc_json(p);
    int pid = (int)json_integer_value(json_object_get(info, "pid"));
    json_decref(info);
    http_stream_begin(req, 200, "application/connect+json", NULL);
    stream_msg(req, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", pid));
    st->sink.ops = &OPS;
    st->f = proc_follow(p, &st->sink);
    if (!st->f) {
        stream_msg(
            req, 2,
            json_pack("{s:{s:s, s:s}}", "error", "code", "internal", "message", "out of memory"));
        http_stream_end(req);
        stream_free(st);
        return;
    }
    req->cb_arg = st->f;
    req->on_drain = api_follower_drained;
    req->on_abort = api_follower_aborted;
    proc_follower_start(st->f);
}

/* ---- Start ---- */

static void start_aborted(http_req *req, void *arg)
{
    (void)req;
    proc_start_cancel(arg);
}

static void started(void *arg, const proc *p, int rc, const char *cwd, const char *msg)
{
    struct e2b_stream *st = arg;
    http_req *req = st->req;
    req->on_abort = NULL;
    req->cb_arg = NULL;
    if (rc) {
        stream_error(req, rc == -ENOENT || rc == -ENOTDIR ? E2B_INVALID_ARGUMENT : E2B_INTERNAL,
                     "cannot start the process%s%s: %s", cwd ? " in " : "", cwd ? cwd : "",
                     rc == PROC_NO_MEMORY ? "out of memory"
                     : msg && msg[0]      ? msg
                                          : strerror(-rc));
        stream_free(st);
        return;
    }
    stream_follow(st, (proc *)p);
}

/* `exec 'cmd' 'arg'…`: every word single-quoted for the native /bin/sh -c. */
static int build_command(const json_t *cfg, buf *b, char *err, size_t errlen)
{
    const char *cmd = json_string_value(json_object_get(cfg, "cmd"));
    const json_t *args = json_object_get(cfg, "args");
    if (!cmd || !cmd[0] || (args && !json_is_array(args))) {
        snprintf(err, errlen,
                 "process.cmd must be a non-empty string and process.args an array "
                 "of strings");
        return -1;
    }
    buf_puts(b, "exec");
    for (size_t i = 0; i <= json_array_size(args); i++) {
        const char *w = i == 0 ? cmd : json_string_value(json_array_get(args, i - 1));
        if (!w) {
            snprintf(err, errlen, "process.args[%zu] is not a string", i - 1);
            return -1;
        }
        buf_puts(b, " '");
        for (const char *c = w; *c; c++)
            if (*c == '\'' ? buf_puts(b, "'\\''") : buf_append(b, c, 1))
                break;
        if (buf_puts(b, "'")) {
            snprintf(err, errlen, "the command is longer than allowed (--max-code-bytes)");
            return -1;
        }
    }
    return 0;
}

static void start_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    if (!sb)
        return;
    char err[JX_ERR];
    json_t *body = e2b_connect_request(req, true, err, sizeof err);
    if (!body) {
        stream_error(req, E2B_INVALID_ARGUMENT, "%s", err);
        return;
    }
    const json_t *cfg = json_object_get(body, "process");
    const char *cwd_in = NULL;
    struct cmd_request cmd = { 0 };
    buf line;
    buf_init(&line, app->cfg->max_code_bytes);
    if (json_object_get(body, "pty") && !json_is_null(json_object_get(body, "pty"))) {
        stream_error(req, E2B_UNIMPLEMENTED, "PTYs are not supported by sandboxd");
    } else if (!json_is_object(cfg) || build_command(cfg, &line, err, sizeof err) ||
               (json_is_null(json_object_get(cfg, "cwd"))
                    ? 0
                    : jx_string(cfg, "cwd", false, 1024, &cwd_in, err, sizeof err)) ||
               jx_env_map(cfg, "envs", app->cfg->max_env_vars, &cmd.env, err, sizeof err) ||
               sbx_resolve_cwd(cwd_in, cmd.cwd, sizeof cmd.cwd, err, sizeof err)) {
        stream_error(req, E2B_INVALID_ARGUMENT, "%s",
                     json_is_object(cfg) ? err : "the request needs a 'process' object");
    } else {
        struct e2b_stream *st = calloc(1, sizeof *st);
        proc *p = NULL;
        cmd.command = line.data;
        cmd.stdin_open = json_is_true(json_object_get(body, "stdin"));
        if (st)
            st->req = req;
        int rc =
            st ? proc_start(sb, app->cfg, &cmd, started, st, &p, err, sizeof err) : PROC_NO_MEMORY;
        if (rc == 0) {
            st->body = body;
            req->on_abort = start_aborted;
            req->cb_arg = p;
            buf_free(&line);
            return;
        }
        free(st);
        stream_error(req, rc == PROC_FULL ? E2B_RESOURCE_EXHAUSTED : E2B_INTERNAL, "%s",
                     rc == PROC_FULL        ? "the sandbox has as many processes as it may "
                                              "(--max-processes)"
                     : rc == PROC_NO_MEMORY ? "out of memory"
                                            : err);
    }
    buf_free(&line);
    json_decref(body);
}

void api_e2b_process_start(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, start_in, NULL);
}

/* ---- the calls on a running process: by pid ---- */

/* The process whose pid the message's process selector names, or NULL (*pid set, 0 when
 * the selector is missing or not a pid). Only processes still running are found. */
static proc *by_pid(sandbox *sb, const json_t *msg, int *pid)
{
    const json_t *sel = json_object_get(json_object_get(msg, "process"), "pid");
    *pid = json_is_integer(sel) ? (int)json_integer_value(sel) : 0;
    if (*pid <= 0)
        return NULL;
    json_t *all = proc_list_json(sb);
    size_t i;
    json_t *j;
    proc *found = NULL;
    json_array_foreach(all, i, j)
    {
        const char *status = json_string_value(json_object_get(j, "status"));
        if (json_integer_value(json_object_get(j, "pid")) == *pid && status &&
            strcmp(status, "running") == 0)
            found = proc_find(sb, json_string_value(json_object_get(j, "id")));
    }
    json_decref(all);
    return found;
}

static void connect_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)app;
    (void)arg;
    if (!sb)
        return;
    char err[JX_ERR];
    int pid = 0;
    json_t *body = e2b_connect_request(req, true, err, sizeof err);
    proc *p = body ? by_pid(sb, body, &pid) : NULL;
    json_decref(body);
    struct e2b_stream *st = p ? calloc(1, sizeof *st) : NULL;
    if (!body)
        stream_error(req, E2B_INVALID_ARGUMENT, "%s", err);
    else if (!p && pid <= 0)
        stream_error(req, E2B_INVALID_ARGUMENT, "the request needs process.pid");
    else if (!p)
        stream_error(req, E2B_NOT_FOUND, "process with pid %d not found", pid);
    else if (!st)
        stream_error(req, E2B_INTERNAL, "out of memory");
    else {
        st->req = req;
        stream_follow(st, p);
    }
}

void api_e2b_process_connect(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, connect_in, NULL);
}

static void list_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)app;
    (void)arg;
    if (!sb)
        return;
    char err[JX_ERR];
    json_t *body = e2b_connect_request(req, false, err, sizeof err);
    if (!body) {
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "%s", err);
        return;
    }
    json_decref(body);
    json_t *all = proc_list_json(sb), *out = json_array();
    size_t i;
    json_t *j;
    json_array_foreach(all, i, j)
    {
        const char *status = json_string_value(json_object_get(j, "status"));
        if (!status || strcmp(status, "running") != 0)
            continue;
        json_array_append_new(out, json_pack("{s:{s:s, s:[s, O], s:{}, s:O}, s:O}", "config", "cmd",
                                             "/bin/sh", "args", "-c", json_object_get(j, "command"),
                                             "envs", "cwd", json_object_get(j, "cwd"), "pid",
                                             json_object_get(j, "pid")));
    }
    json_decref(all);
    api_respond_json(req, 200, json_pack("{s:o}", "processes", out));
}

void api_e2b_process_list(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, list_in, NULL);
}

static void signalled(void *arg, const proc *p)
{
    (void)p;
    http_respond(arg, 200, "application/json", "{}", 2, NULL);
}

static void signal_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)app;
    (void)arg;
    if (!sb)
        return;
    char err[JX_ERR];
    int pid = 0;
    json_t *body = e2b_connect_request(req, false, err, sizeof err);
    proc *p = body ? by_pid(sb, body, &pid) : NULL;
    const json_t *sig = body ? json_object_get(body, "signal") : NULL;
    const char *name = json_string_value(sig);
    json_int_t num = json_integer_value(sig);
    bool known = (name && (!strcmp(name, "SIGNAL_SIGKILL") || !strcmp(name, "SIGNAL_SIGTERM"))) ||
                 num == 9 || num == 15;
    json_decref(body);
    if (!body)
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "%s", err);
    else if (!known)
        e2b_unary_error(req, E2B_INVALID_ARGUMENT,
                        "signal must be SIGNAL_SIGKILL or "
                        "SIGNAL_SIGTERM (both kill the process)");
    else if (!p && pid <= 0)
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "the request needs process.pid");
    else if (!p)
        e2b_unary_error(req, E2B_NOT_FOUND, "process with pid %d not found", pid);
    else {
        int rc = proc_delete(sb, p, signalled, req);
        if (rc == 1 || rc == -ENOMEM)
            http_respond(req, 200, "application/json", "{}", 2, NULL);
    }
}

void api_e2b_process_signal(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, signal_in, NULL);
}

/* ---- SendInput and CloseStdin ---- */

/* proc_stdin_write's outcome as the unary answer. */
static void input_answer(http_req *req, proc *p, int rc, size_t n)
{
    if (rc == 0)
        http_respond(req, 200, "application/json", "{}", 2, NULL);
    else if (rc == PROC_STDIN_NONE)
        e2b_unary_error(req, E2B_FAILED_PRECONDITION,
                        "process %s was started without stdin (start it with stdin: true)",
                        proc_id(p));
    else if (rc == PROC_STDIN_CLOSED)
        e2b_unary_error(req, E2B_FAILED_PRECONDITION, "the stdin of process %s is closed",
                        proc_id(p));
    else if (rc == PROC_STDIN_TOO_BIG)
        e2b_unary_error(req, E2B_RESOURCE_EXHAUSTED,
                        "%zu bytes of stdin in one call; at most %zu (--process-stdin-bytes): "
                        "split it",
                        n, proc_stdin_cap());
    else if (rc == PROC_STDIN_FULL)
        e2b_unary_error(req, E2B_RESOURCE_EXHAUSTED,
                        "process %s has not read %zu bytes of its stdin yet; %zu more would "
                        "pass --process-stdin-bytes (%zu); nothing was written",
                        proc_id(p), proc_stdin_held(p), n, proc_stdin_cap());
    else if (rc == -ENOBUFS)
        e2b_unary_error(req, E2B_RESOURCE_EXHAUSTED,
                        "%zu bytes of stdin do not fit in the sandbox's buffer budget "
                        "(--sandbox-buffer-bytes); nothing was written",
                        n);
    else
        e2b_unary_error(req, E2B_INTERNAL, "out of memory");
}

/* arg non-NULL: CloseStdin; else SendInput. */
static void input_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)app;
    if (!sb)
        return;
    char err[JX_ERR];
    int pid = 0;
    json_t *body = e2b_connect_request(req, false, err, sizeof err);
    proc *p = body ? by_pid(sb, body, &pid) : NULL;
    const json_t *input = body ? json_object_get(body, "input") : NULL;
    const char *data = json_string_value(json_object_get(input, "stdin"));
    buf b;
    buf_init(&b, data ? strlen(data) + 1 : 1);
    if (!body)
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "%s", err);
    else if (!p && pid <= 0)
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "the request needs process.pid");
    else if (!p)
        e2b_unary_error(req, E2B_NOT_FOUND, "process with pid %d not found", pid);
    else if (arg)
        input_answer(req, p, proc_stdin_write(p, NULL, 0, true), 0);
    else if (json_object_get(input, "pty"))
        e2b_unary_error(req, E2B_UNIMPLEMENTED, "PTYs are not supported by sandboxd");
    else if (!data || e2b_unbase64(&b, data, strlen(data)))
        e2b_unary_error(req, E2B_INVALID_ARGUMENT, "input.stdin must be base64 bytes");
    else
        input_answer(req, p, proc_stdin_write(p, b.data, b.len, false), b.len);
    buf_free(&b);
    json_decref(body);
}

void api_e2b_process_input(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, input_in, NULL);
}

void api_e2b_process_close_stdin(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, input_in, req);
}

/* Update, StreamInput, the filesystem watchers: not supported. */
void api_e2b_unimplemented(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    e2b_unary_error(req, E2B_UNIMPLEMENTED,
                    "%s is not supported by sandboxd (no PTYs, no streamed input, no "
                    "watchers)",
                    req->path);
}
