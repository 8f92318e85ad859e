/*
 * context.c — code contexts and their runs (see context.h).
 *
 * Objects and who frees them:
 *   struct context   — in its sandbox's list; freed after its timer handle closes, once it
 *                      is deleted (API or sandbox destroy).
 *   struct ctx_proc  — one incarnation: three pipes (channel, stdout, stderr) and the
 *                      process. Detached from its context when it dies or is replaced;
 *                      freed when its handles are closed and the process is reaped.
 *   struct ctx_run   — one execute request, queued on a context; freed when answered.
 *
 * Ordering: a context flushes stdout/stderr before each channel message, and here every
 * channel message is handled only after both pipes have been drained (drain_output), so
 * what was printed before a result reaches the client before it.
 *
 * Memory: what a context makes the daemon hold is charged to its sandbox's budget
 * (budget.h): the channel line being assembled (a buf charged as it grows: a line the
 * budget refuses, or longer than --max-result-bytes, is freed at once and fails the run
 * with OutputLimitError, the context restarting), and for a plain run its kept output
 * (counted as jansson will escape it) and results, until the run is answered; the answer
 * is built once and handed to http without a copy, charged while it waits for the client.
 * A streamed run's events are charged while queued (http_req_set_budget); its stdout and
 * stderr are read in pieces sized to what is left of the budget, and when nothing fits the
 * context is not read (it blocks on its own writes) until bytes are released.
 */
#include "stamp.h"
#include "context.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "budget.h"
#include "escape.h"
#include "exec.h"
#include "jsonx.h"
#include "log.h"
#include "sse.h"
#include "zygote_client.h"


static const char *const LANG_NAMES[] = { "python", "javascript", "typescript" };

enum ctx_state { ST_STARTING, ST_IDLE, ST_BUSY, ST_DEAD };
static const char *const STATE_NAMES[] = { "starting", "idle", "busy", "dead" };

struct context;

struct ctx_proc {
    struct context *ctx;        /* NULL once detached */
    jail_proc *jp;              /* watches the exit; NULL once reaped */
    uv_pipe_t chan, out, err;
    bool chan_open, out_open, err_open;
    int handles;
    bool exited, ready, dying;
    uint64_t oom_base;          /* the sandbox's OOM-kill count when this incarnation began */
    bool zyg_pending;           /* the zygote has not answered the fork yet */
    jail_req *spawn_req;        /* Node: the sandbox's init has not started it yet */
    char why[160];              /* the zygote's reason when the fork failed */
    pid_t host_pid;             /* from the zygote, until the process is adopted */
    int status;
    buf line;                   /* channel bytes up to the next newline, charged to bg */
    budget *bg;                 /* the sandbox's budget; one reference */
    char limit_why[256];        /* why a channel message was refused (OutputLimitError) */
    int nspid;
    uint64_t started_ns;
};

struct ctx_run {
    struct ctx_run *next;
    struct context *ctx;
    http_req *req;              /* NULL once answered */
    sse sse;
    bool streaming;
    char id[40];
    json_t *body;               /* the request body: owns code and envVars */
    uint64_t timeout_ms;
    json_t *results, *out_list, *err_list, *error;
    size_t out_bytes, err_bytes;
    bool truncated;
    const char *truncated_by;   /* the setting that cut the output */
    budget *bg;                 /* the sandbox's budget; one reference */
    size_t charged;             /* kept output and results charged to bg */
    budget_waiter bw;           /* streamed: queued while reading waits for room in bg */
    esc_carry c_out, c_err;
    bool timed_out, interrupted, killed, state_lost, paused;
    uint64_t start_ns;
};

/* A request waiting for a context to be ready (create, restart) or a run to end
 * (interrupt). */
struct waiter {
    struct waiter *next;
    http_req *req;
    enum { W_READY, W_INTERRUPT } kind;
};

struct context {
    char id[40];
    sandbox *sb;
    enum ctx_lang lang;
    bool is_default;
    char cwd[1100];
    json_t *env;
    uint64_t created_ms, last_used_ms;
    int exec_count;
    enum ctx_state state;
    struct ctx_proc *proc;
    struct ctx_run *cur, *q_head, *q_tail;
    struct waiter *waiters;
    uv_timer_t timer;           /* start timeout, run timeout, kill grace */
    bool deleting;
    bool ever_ready;            /* an incarnation that never got ready is not retried */
    struct context *next;       /* the sandbox's list */
};

static struct app *APP;

/* ---- helpers ---- */

int ctx_parse_lang(const char *s)
{
    static const struct { const char *name; int lang; } ALIASES[] = {
        { "python", LANG_PYTHON }, { "python3", LANG_PYTHON },
        { "javascript", LANG_JAVASCRIPT }, { "js", LANG_JAVASCRIPT }, { "node", LANG_JAVASCRIPT },
        { "typescript", LANG_TYPESCRIPT }, { "ts", LANG_TYPESCRIPT },
    };
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (strcmp(s, ALIASES[i].name) == 0)
            return ALIASES[i].lang;
    return -1;
}

static json_t *ctx_to_json(const struct context *c)
{
    char created[40], used[40];
    stamp_iso8601(c->created_ms, created, sizeof created);
    stamp_iso8601(c->last_used_ms, used, sizeof used);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "id", c->id, "language",
                     LANG_NAMES[c->lang], "cwd", c->cwd, "createdAt", created, "lastUsed", used,
                     "executionCount", c->exec_count, "state",
                     c->state == ST_STARTING ? "idle" : STATE_NAMES[c->state]);
}

static struct context **ctx_list(sandbox *sb)
{
    return (struct context **)&sb->contexts;
}

static struct context *ctx_find(sandbox *sb, const char *id)
{
    for (struct context *c = *ctx_list(sb); c; c = c->next)
        if (strcmp(c->id, id) == 0 && !c->deleting)
            return c;
    return NULL;
}

/* ---- answering runs ---- */

static void run_free(struct ctx_run *r)
{
    budget_cancel(r->bg, &r->bw);
    budget_release(r->bg, r->charged);
    budget_unref(r->bg);
    json_decref(r->body);
    json_decref(r->results);
    json_decref(r->out_list);
    json_decref(r->err_list);
    json_decref(r->error);
    free(r);
}

static void set_paused(struct context *c, bool paused);

/* Send the end of a run (end event, or the whole JSON response) and free it. */
static void run_answer(struct ctx_run *r)
{
    struct context *c = r->ctx;
    double ms = (double)(uv_hrtime() - r->start_ns) / 1e6;
    bool preserved = !r->state_lost;
    if (r->req) {
        r->req->on_abort = NULL;
        r->req->on_drain = NULL;
        if (r->streaming) {
            buf b;
            buf_init(&b, 4096);
            esc_carry *cs[2] = { &r->c_out, &r->c_err };
            const char *names[2] = { "stdout", "stderr" };
            for (int i = 0; i < 2; i++)
                sse_event_text(&r->sse, names[i], cs[i], "", 0, true);
            if (r->error) {
                char *e = json_dumps(r->error, JSON_COMPACT);
                if (e)
                    sse_event(&r->sse, "error", e, strlen(e));
                free(e);
            }
            buf_printf(&b, "{\"executionCount\":%d,\"durationMs\":%.3f,\"statePreserved\":%s}",
                       c->exec_count, ms, preserved ? "true" : "false");
            sse_event(&r->sse, "end", b.data, b.len);
            buf_free(&b);
            sse_end(&r->sse);
        } else {
            json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:O, s:{s:O, s:O}, s:O, s:b, s:b}",
                                  "id", r->id, "contextId", c->id, "code",
                                  json_string_value(json_object_get(r->body, "code")),
                                  "executionCount", c->exec_count, "results", r->results,
                                  "logs", "stdout", r->out_list, "stderr", r->err_list, "error",
                                  r->error ? r->error : json_null(), "statePreserved", preserved,
                                  "truncated", r->truncated);
            if (j && r->truncated_by)
                json_object_set_new(j, "truncatedBy", json_string(r->truncated_by));
            char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
            json_decref(j);
            /* durationMs spliced in by hand (jansson would print 17 significant digits),
             * in the dumped string itself: the answer exists once, handed over to http */
            char hdr[80], tail[64];
            snprintf(hdr, sizeof hdr, "X-Context-Id: %s\r\n", c->id);
            int tn = snprintf(tail, sizeof tail, ",\"durationMs\":%.3f}", ms);
            size_t sl = s ? strlen(s) : 0;
            char *grown = s ? realloc(s, sl + (size_t)tn + 1) : NULL;
            if (grown) {
                memcpy(grown + sl - 1, tail, (size_t)tn + 1);   /* over the closing brace */
                http_respond_take(r->req, 200, "application/json", grown, sl - 1 + (size_t)tn,
                                  hdr);
            } else {
                free(s);
                http_respond_error(r->req, 500, "INTERNAL_ERROR", "cannot encode the result");
            }
        }
        r->req = NULL;
    }
    run_free(r);
}

/* The error of a run that the context could not finish. */
static void run_set_error(struct ctx_run *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void run_set_error(struct ctx_run *r, const char *name, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_decref(r->error);
    r->error = json_pack("{s:s, s:s, s:[]}", "name", name, "message", msg, "traceback");
}

/* Bytes the JSON string of s takes once jansson escapes it (6 for most control bytes). */
static size_t json_cost(const char *s, size_t n)
{
    size_t cost = n;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\' || ch == '\n' || ch == '\t' || ch == '\r' || ch == '\b' ||
            ch == '\f')
            cost += 1;
        else if (ch < 0x20)
            cost += 5;
    }
    return cost;
}

/* A plain run's output was cut; the first reason is kept, the budget's wins. */
static void run_truncate(struct ctx_run *r, const char *why)
{
    r->truncated = true;
    if (!r->truncated_by || strcmp(why, "sandbox-buffer-bytes") == 0)
        r->truncated_by = why;
}

/* Output of the running cell (or of nothing, between runs: then it is dropped). */
static void run_output(struct context *c, bool is_err, const char *data, size_t n)
{
    struct ctx_run *r = c->cur;
    if (!r || !r->req)
        return;
    if (r->streaming) {
        int rc = sse_event_text(&r->sse, is_err ? "stderr" : "stdout",
                                is_err ? &r->c_err : &r->c_out, data, n, false);
        if (rc == 1)
            set_paused(c, true);
        return;
    }
    size_t *used = is_err ? &r->err_bytes : &r->out_bytes;
    size_t room = APP->cfg->max_output_bytes - *used;
    if (n > room) {
        n = room;
        run_truncate(r, "max-output-bytes");
    }
    if (n == 0)
        return;
    buf b;
    buf_init(&b, n * 3 + 16);
    esc_utf8(&b, is_err ? &r->c_err : &r->c_out, data, n, false);
    /* charged as it is held and as the answer will hold it: escaped, plus jansson's own */
    size_t cost = json_cost(b.data, b.len) + 64;
    if (b.len && budget_charge(r->bg, cost) == 0) {
        r->charged += cost;
        json_array_append_new(is_err ? r->err_list : r->out_list, json_stringn(b.data, b.len));
    } else if (b.len) {
        run_truncate(r, "sandbox-buffer-bytes");
        *used = APP->cfg->max_output_bytes;    /* cut here: nothing later of this stream */
    }
    *used += n;
    if (*used > APP->cfg->max_output_bytes)
        *used = APP->cfg->max_output_bytes;
    buf_free(&b);
}

/* ---- incarnations ---- */

static void proc_maybe_free(struct ctx_proc *p)
{
    if (p->handles == 0 && !p->jp && !p->ctx && !p->zyg_pending && !p->spawn_req) {
        buf_free(&p->line);
        budget_unref(p->bg);
        free(p);
    }
}

static void proc_handle_closed(uv_handle_t *h)
{
    struct ctx_proc *p = h->data;
    p->handles--;
    proc_maybe_free(p);
}

static void proc_close_pipes(struct ctx_proc *p)
{
    if (p->chan_open) {
        p->chan_open = false;
        uv_close((uv_handle_t *)&p->chan, proc_handle_closed);
    }
    if (p->out_open) {
        p->out_open = false;
        uv_close((uv_handle_t *)&p->out, proc_handle_closed);
    }
    if (p->err_open) {
        p->err_open = false;
        uv_close((uv_handle_t *)&p->err, proc_handle_closed);
    }
}

static void proc_kill(struct ctx_proc *p)
{
    if (p->exited)
        return;
    if (p->jp)
        jail_proc_kill(p->jp, SIGKILL);
    else if (p->host_pid > 0)
        kill(p->host_pid, SIGKILL);    /* a zygote child not adopted yet */
    else if (p->spawn_req) {
        jail_cancel(p->spawn_req);     /* not started yet: the jail ends it if it starts */
        p->spawn_req = NULL;
    }
}

/* Let go of an incarnation: it is killed and its pipes closed. The caller then calls
 * proc_maybe_free(), and the proc frees itself once reaped and closed. */
static void proc_detach(struct ctx_proc *p)
{
    if (p->ctx && p->ctx->proc == p)
        p->ctx->proc = NULL;
    p->ctx = NULL;
    proc_kill(p);
    proc_close_pipes(p);
}

static int proc_start(struct context *c, char *err, size_t errlen);
static void run_next(struct context *c);
static void answer_waiters(struct context *c, int kind, bool ok, const char *why);

static void fail_queue(struct context *c, const char *name, const char *why)
{
    while (c->q_head) {
        struct ctx_run *r = c->q_head;
        c->q_head = r->next;
        r->state_lost = true;
        run_set_error(r, name, "%s", why);
        run_answer(r);
    }
    c->q_tail = NULL;
}

/* The incarnation ended (exit seen, or killed). Decide what the run in flight reports,
 * then start a fresh incarnation unless the context is going away. */
static void ctx_proc_died(struct context *c, struct ctx_proc *p)
{
    const char *sig = NULL;
    int code = p->exited ? exec_exit_code(p->status, &sig) : -1;
    char how[200];
    if (p->why[0])
        snprintf(how, sizeof how, "could not be created: %s", p->why);
    else if (sig)
        snprintf(how, sizeof how, "was killed by SIG%s", sig);
    else if (code >= 0)
        snprintf(how, sizeof how, "exited with status %d", code);
    else
        snprintf(how, sizeof how, "closed its channel");
    /* OOM: killed by SIGKILL while the sandbox's own counter moved since this process
     * started (read once per incarnation, not per run: it is a cgroup file) */
    bool oom = c->sb && p->exited && WIFSIGNALED(p->status) && WTERMSIG(p->status) == SIGKILL &&
               jail_oom_kills(c->sb->jail) > p->oom_base;
    proc_detach(p);
    uv_timer_stop(&c->timer);
    struct ctx_run *r = c->cur;
    c->cur = NULL;
    if (r) {
        r->state_lost = true;
        if (p->limit_why[0])
            run_set_error(r, "OutputLimitError", "%s; the context was restarted with empty "
                          "state", p->limit_why);
        else if (r->timed_out)
            run_set_error(r, "TimeoutError",
                          "the run did not finish within %llu ms and did not stop when "
                          "interrupted; the context was restarted with empty state",
                          (unsigned long long)r->timeout_ms);
        else if (r->interrupted)
            run_set_error(r, "KeyboardInterrupt", "the run did not stop when interrupted; "
                          "the context was restarted with empty state");
        else if (oom)
            run_set_error(r, "OutOfMemoryError", "the context ran out of memory (sandbox "
                          "limit %llu MiB) and was restarted with empty state",
                          (unsigned long long)c->sb->limits.memory_mb);
        else
            run_set_error(r, "ContextDied", "the context's process %s; it was restarted "
                          "with empty state", how);
        run_answer(r);
    }
    if (c->deleting)
        return;
    log_info("context %s (%s) %s%s", c->id, LANG_NAMES[c->lang], how,
             c->ever_ready ? ": restarting" : "");
    c->exec_count = 0;
    char err[256];
    if (!c->ever_ready || proc_start(c, err, sizeof err)) {
        c->state = ST_DEAD;
        char why[400];
        snprintf(why, sizeof why, "the context could not start: its process %s", how);
        answer_waiters(c, W_READY, false, why);
        answer_waiters(c, W_INTERRUPT, false, why);
        fail_queue(c, "ContextDied", why);
        return;
    }
    answer_waiters(c, W_INTERRUPT, true, NULL);
}

static void proc_exit_cb(jail_proc *jp, int status, void *arg)
{
    struct ctx_proc *p = arg;
    (void)jp;
    p->jp = NULL;
    p->exited = true;
    p->status = status;
    if (p->ctx)
        ctx_proc_died(p->ctx, p);
    proc_maybe_free(p);
}

/* ---- channel ---- */

/* A streamed run whose sandbox budget cannot take another read's events (a 64 KiB read
 * escapes to at most 6 times as much) is not read until bytes are released, except for
 * a small read when its client has taken everything queued (a stream that is read never
 * starves because of the sandbox's streams that are not). */
#define STREAM_RESERVE (65536 * 6 + 512)
#define STREAM_FLOOR 4096

/* How much the next read may take: the whole chunk, STREAM_FLOOR, or 0 (wait). */
static size_t stream_allowance(const struct ctx_proc *p, size_t chunk)
{
    const struct ctx_run *r = p->ctx ? p->ctx->cur : NULL;
    if (!r || !r->streaming || !r->req || r->req->aborted ||
        budget_room(r->bg) >= STREAM_RESERVE)
        return chunk;
    return http_queued(r->req) == 0 ? STREAM_FLOOR : 0;
}

static void run_budget_woken(budget_waiter *w)
{
    struct ctx_run *r = w->arg;
    if (r->ctx && r->ctx->cur == r)
        set_paused(r->ctx, false);
}

/* Stop reading until the budget has room (libuv said UV_ENOBUFS: alloc_cb gave nothing). */
static void wait_for_budget(struct ctx_proc *p)
{
    struct context *c = p->ctx;
    struct ctx_run *r = c ? c->cur : NULL;
    if (!r)
        return;
    set_paused(c, true);
    r->bw.need = STREAM_RESERVE;
    r->bw.cb = run_budget_woken;
    r->bw.arg = r;
    budget_wait(r->bg, &r->bw);
    if (r->req)
        r->req->paused = true;   /* so that run_drain says when the client took it all */
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char chunk[65536];
    (void)hint;
    *b = uv_buf_init(chunk, (unsigned)stream_allowance(h->data, sizeof chunk));
}

/* Read what the context printed so far, without waiting. */
static void drain_output(struct ctx_proc *p)
{
    static char chunk[65536];
    uv_pipe_t *pipes[2] = { &p->out, &p->err };
    bool open[2] = { p->out_open, p->err_open };
    for (int i = 0; i < 2; i++) {
        uv_os_fd_t fd;
        if (!open[i] || uv_fileno((uv_handle_t *)pipes[i], &fd))
            continue;
        for (int rounds = 0; rounds < 64; rounds++) {
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n <= 0)
                break;
            if (p->ctx)
                run_output(p->ctx, i == 1, chunk, (size_t)n);
        }
    }
}

static void answer_waiters(struct context *c, int kind, bool ok, const char *why)
{
    struct waiter **pp = &c->waiters;
    while (*pp) {
        struct waiter *w = *pp;
        if ((int)w->kind != kind) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        if (kind == W_READY) {
            if (ok)
                jx_respond(w->req, strstr(w->req->path, "/restart") ? 200 : 201, ctx_to_json(c));
            else
                http_respond_error(w->req, 500, "INTERNAL_ERROR", "%s", why);
        } else {
            char body[96];
            int n = snprintf(body, sizeof body, "{\"interrupted\":true,\"statePreserved\":%s}",
                             ok ? "true" : "false");
            http_respond(w->req, 200, "application/json", body, (size_t)n, NULL);
        }
        free(w);
    }
}

static void on_ready(struct context *c, struct ctx_proc *p)
{
    p->ready = true;
    c->ever_ready = true;
    uv_timer_stop(&c->timer);
    c->state = ST_IDLE;
    answer_waiters(c, W_READY, true, NULL);
    run_next(c);
}

static void on_message(struct context *c, struct ctx_proc *p, const char *line, size_t n)
{
    json_error_t je;
    json_t *msg = json_loadb(line, n, JSON_ALLOW_NUL, &je);   /* output may hold NULs */
    const char *type = msg ? json_string_value(json_object_get(msg, "type")) : NULL;
    if (!type) {
        log_warn("context %s: malformed channel message: %s", c->id, msg ? "no type" : je.text);
        json_decref(msg);
        p->dying = true;
        proc_kill(p);
        return;
    }
    struct ctx_run *r = c->cur;
    const char *mid = json_string_value(json_object_get(msg, "id"));
    if (r && mid && strcmp(mid, r->id) != 0 && strcmp(type, "stream") != 0) {
        /* not about the run in flight (a stale or forged message): ignored */
        json_decref(msg);
        return;
    }
    if (strcmp(type, "ready") == 0) {
        on_ready(c, p);
    } else if (strcmp(type, "stream") == 0) {
        /* Python-level output, ordered with the results on the channel */
        const char *name = json_string_value(json_object_get(msg, "name"));
        json_t *text = json_object_get(msg, "text");
        if (name && json_is_string(text))
            run_output(c, strcmp(name, "stderr") == 0, json_string_value(text),
                       json_string_length(text));
    } else if (strcmp(type, "failed") == 0 && !p->ready) {
        /* The zygote's child could not enter the sandbox (it exits 127 next; the exit
         * reports it, with this reason). Only before ready: no user code has run yet. */
        const char *why = json_string_value(json_object_get(msg, "message"));
        snprintf(p->why, sizeof p->why, "%s", why ? why : "it could not enter the sandbox");
    } else if (!r) {
        /* nothing is running: a stray message is ignored */
    } else if (strcmp(type, "result") == 0) {
        json_t *res = json_object_get(msg, "result");
        if (json_is_object(res) && r->req) {
            if (r->streaming) {
                char *s = json_dumps(res, JSON_COMPACT);
                if (s && sse_event(&r->sse, "result", s, strlen(s)) == 1)
                    set_paused(c, true);
                free(s);
            } else if (budget_charge(r->bg, n) == 0) {
                r->charged += n;     /* the message's size bounds the result's JSON */
                json_array_append(r->results, res);
            } else {
                run_truncate(r, "sandbox-buffer-bytes");
            }
        }
    } else if (strcmp(type, "error") == 0) {
        json_t *e = json_object_get(msg, "error");
        if (json_is_object(e)) {
            json_decref(r->error);
            r->error = json_deep_copy(e);
            const char *name = json_string_value(json_object_get(e, "name"));
            if (r->timed_out && name && strcmp(name, "KeyboardInterrupt") == 0) {
                char m[160];
                snprintf(m, sizeof m, "the run did not finish within %llu ms and was interrupted",
                         (unsigned long long)r->timeout_ms);
                json_object_set_new(r->error, "name", json_string("TimeoutError"));
                json_object_set_new(r->error, "message", json_string(m));
            }
        }
    } else if (strcmp(type, "end") == 0) {
        json_t *ec = json_object_get(msg, "executionCount");
        if (json_is_integer(ec))
            c->exec_count = (int)json_integer_value(ec);
        uv_timer_stop(&c->timer);
        c->cur = NULL;
        c->state = ST_IDLE;
        c->last_used_ms = stamp_now_ms();
        run_answer(r);
        answer_waiters(c, W_INTERRUPT, true, NULL);
        run_next(c);
    }
    json_decref(msg);
}

static void chan_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct ctx_proc *p = s->data;
    struct context *c = p->ctx;
    if (n == UV_ENOBUFS) {
        wait_for_budget(p);
        return;
    }
    if (n < 0) {
        /* the context closed its channel: it is exiting or broken; make sure it ends */
        if (p->chan_open) {
            p->chan_open = false;
            uv_close((uv_handle_t *)&p->chan, proc_handle_closed);
        }
        drain_output(p);
        if (p->zyg_pending || p->spawn_req)
            return;                  /* the zygote's or init's answer will say what happened */
        if (!p->jp && c && !p->exited)
            ctx_proc_died(c, p);     /* nothing watches its exit: treat EOF as the end */
        else
            proc_kill(p);
        return;
    }
    /* Everything the context wrote to its pipes before it sent these messages is in the
     * pipes now: forward it first (the ordering rule). Once per read, not per message:
     * output that arrives while the batch is handled was written after all of it. */
    drain_output(p);
    const char *d = b->base;
    size_t len = (size_t)n;
    while (len && p->ctx && !p->dying) {
        const char *nl = memchr(d, '\n', len);
        size_t take = nl ? (size_t)(nl - d) : len;
        int rc = buf_append(&p->line, d, take);
        if (rc) {
            if (rc == -ENOBUFS)
                snprintf(p->limit_why, sizeof p->limit_why, "a message of the context (a "
                         "result) reached %zu bytes, more than its sandbox's buffer budget "
                         "has left (--sandbox-buffer-bytes %llu, %llu bytes held for the "
                         "sandbox)", p->line.len + take,
                         (unsigned long long)budget_cap(p->bg),
                         (unsigned long long)budget_used(p->bg));
            else
                snprintf(p->limit_why, sizeof p->limit_why, "a message of the context (a "
                         "result) exceeds --max-result-bytes (%llu bytes)",
                         (unsigned long long)APP->cfg->max_result_bytes);
            log_warn("context %s: %s", p->ctx->id, p->limit_why);
            buf_free(&p->line);   /* given back now, not when the process is reaped */
            p->dying = true;
            proc_kill(p);
            return;
        }
        if (!nl)
            return;
        d += take + 1;
        len -= take + 1;
        char *line = buf_steal(&p->line);
        buf_init(&p->line, APP->cfg->max_result_bytes);
        buf_set_budget(&p->line, p->bg);
        on_message(p->ctx, p, line ? line : "", line ? strlen(line) : 0);
        free(line);
        if (!p->ctx)
            return;
    }
}

static void out_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct ctx_proc *p = s->data;
    bool is_err = s == (uv_stream_t *)&p->err;
    if (n == UV_ENOBUFS) {
        wait_for_budget(p);
        return;
    }
    if (n < 0) {
        bool *open = is_err ? &p->err_open : &p->out_open;
        if (*open) {
            *open = false;
            uv_close((uv_handle_t *)s, proc_handle_closed);
        }
        return;
    }
    if (n > 0 && p->ctx)
        run_output(p->ctx, is_err, b->base, (size_t)n);
}

/* Stop or resume reading the context (back-pressure from a slow streaming client). */
static void set_paused(struct context *c, bool paused)
{
    struct ctx_proc *p = c->proc;
    if (c->cur)
        c->cur->paused = paused;
    if (!p)
        return;
    if (paused) {
        if (p->chan_open)
            uv_read_stop((uv_stream_t *)&p->chan);
        if (p->out_open)
            uv_read_stop((uv_stream_t *)&p->out);
        if (p->err_open)
            uv_read_stop((uv_stream_t *)&p->err);
    } else {
        if (p->chan_open)
            uv_read_start((uv_stream_t *)&p->chan, alloc_cb, chan_read);
        if (p->out_open)
            uv_read_start((uv_stream_t *)&p->out, alloc_cb, out_read);
        if (p->err_open)
            uv_read_start((uv_stream_t *)&p->err, alloc_cb, out_read);
    }
}

/* ---- starting an incarnation ---- */

static void ctx_timer_cb(uv_timer_t *t);

static void zyg_forked(pid_t pid, pid_t ns_pid, const char *msg, void *arg)
{
    struct ctx_proc *p = arg;
    p->zyg_pending = false;
    if (pid > 0) {
        p->host_pid = pid;
        p->nspid = ns_pid;
        if (!p->ctx)
            proc_kill(p);   /* deleted while it was being forked */
        else if (jail_adopt_child(p->ctx->sb->jail, pid, ns_pid, proc_exit_cb, p, &p->jp))
            p->jp = NULL;   /* already gone: its channel's EOF will tell */
    } else if (p->ctx) {
        log_warn("context %s: the zygote could not fork it: %s", p->ctx->id, msg ? msg : "");
        snprintf(p->why, sizeof p->why, "%s", msg ? msg : strerror(-pid));
        ctx_proc_died(p->ctx, p);
    }
    proc_maybe_free(p);
}

/* Node: the sandbox's init started the context's process, or could not. */
static void node_spawned(jail_proc *jp, int rc, const char *msg, void *arg)
{
    struct ctx_proc *p = arg;
    p->spawn_req = NULL;
    if (!rc) {
        p->jp = jp;
        if (!p->ctx)
            proc_kill(p);   /* let go of while it was being started */
    } else if (p->ctx) {
        log_warn("context %s: could not start node: %s", p->ctx->id, msg ? msg : "");
        snprintf(p->why, sizeof p->why, "%s", msg ? msg : strerror(-rc));
        ctx_proc_died(p->ctx, p);
    }
    proc_maybe_free(p);
}

static int proc_start(struct context *c, char *err, size_t errlen)
{
    int sv[2] = { -1, -1 }, po[2] = { -1, -1 }, pe[2] = { -1, -1 };
    int rc = 0;
    char **envp = NULL;
    struct ctx_proc *p = calloc(1, sizeof *p);
    if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ||
        pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
        rc = -errno;
        snprintf(err, errlen, "cannot create the context's pipes: %s", strerror(errno));
        goto fail;
    }
    json_t *lang_env = json_pack("{s:s}", "SANDBOXD_LANGUAGE", LANG_NAMES[c->lang]);
    envp = sbx_environ(c->sb, c->env, c->lang == LANG_PYTHON ? NULL : lang_env);
    json_decref(lang_env);
    if (!envp) {
        rc = -E2BIG;
        snprintf(err, errlen, "the context's environment is too large");
        goto fail;
    }
    buf_init(&p->line, APP->cfg->max_result_bytes);
    p->bg = budget_ref(c->sb->budget);
    buf_set_budget(&p->line, p->bg);
    p->ctx = c;
    p->started_ns = uv_hrtime();
    p->oom_base = jail_oom_kills(c->sb->jail);
    if (c->lang == LANG_PYTHON) {
        struct jail_entry e;
        if ((rc = jail_entry_info(c->sb->jail, &e))) {
            snprintf(err, errlen, "the sandbox is gone");
            goto fail;
        }
        p->zyg_pending = true;
        rc = zyg_fork(&e, c->cwd, (const char *const *)envp, sv[1], po[1], pe[1], zyg_forked, p);
        if (rc) {
            p->zyg_pending = false;
            snprintf(err, errlen, "the Python zygote is not available: %s", strerror(-rc));
            goto fail;
        }
    } else {
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        const char *argv[] = { "/usr/bin/node", "/opt/sandboxd/node/kernel.js", NULL };
        struct jail_spawn_opts so = {
            .argv = argv, .envp = (const char *const *)envp, .cwd = c->cwd,
            .stdin_fd = devnull, .stdout_fd = po[1], .stderr_fd = pe[1], .extra_fd = sv[1],
        };
        rc = jail_spawn(c->sb->jail, &so, node_spawned, proc_exit_cb, p, &p->spawn_req, err,
                        errlen);
        close(devnull);
        if (rc)
            goto fail;
    }
    free(envp);
    close(sv[1]);
    close(po[1]);
    close(pe[1]);
    uv_loop_t *loop = APP->loop;
    uv_pipe_init(loop, &p->chan, 0);
    uv_pipe_init(loop, &p->out, 0);
    uv_pipe_init(loop, &p->err, 0);
    p->chan.data = p->out.data = p->err.data = p;
    uv_pipe_open(&p->chan, sv[0]);
    uv_pipe_open(&p->out, po[0]);
    uv_pipe_open(&p->err, pe[0]);
    p->chan_open = p->out_open = p->err_open = true;
    p->handles = 3;
    c->proc = p;
    c->state = ST_STARTING;
    set_paused(c, false);
    uv_timer_start(&c->timer, ctx_timer_cb, APP->cfg->context_start_timeout_ms, 0);
    return 0;
fail:
    free(envp);
    for (int i = 0; i < 2; i++) {
        if (sv[i] >= 0) close(sv[i]);
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
    }
    if (p) {
        buf_free(&p->line);
        budget_unref(p->bg);
    }
    free(p);
    return rc ? rc : -EIO;
}

/* ---- runs ---- */

static void chan_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

/* Queue one line on the channel (copied); a broken channel shows up as EOF on reading. */
static void chan_write(struct ctx_proc *p, const char *data, size_t n)
{
    uv_write_t *w = malloc(sizeof *w + n);
    if (!w)
        return;
    char *copy = (char *)(w + 1);
    memcpy(copy, data, n);
    uv_buf_t ub = uv_buf_init(copy, (unsigned)n);
    if (uv_write(w, (uv_stream_t *)&p->chan, &ub, 1, chan_written))
        free(w);
}

static void send_execute(struct context *c, struct ctx_run *r)
{
    json_t *env = json_object_get(r->body, "envVars");
    json_t *m = json_pack("{s:s, s:s, s:O}", "type", "execute", "id", r->id, "code",
                          json_object_get(r->body, "code"));
    json_object_set_new(m, "envVars", env ? json_incref(env) : json_object());
    buf b;
    buf_init(&b, APP->cfg->max_code_bytes * 7 + (1 << 20));
    char *s = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    if (s && buf_puts(&b, s) == 0 && buf_append(&b, "\n", 1) == 0)
        chan_write(c->proc, b.data, b.len);
    free(s);
    buf_free(&b);
}

static void run_next(struct context *c)
{
    if (c->state != ST_IDLE || c->cur || !c->q_head || !c->proc)
        return;
    struct ctx_run *r = c->q_head;
    c->q_head = r->next;
    if (!c->q_head)
        c->q_tail = NULL;
    r->next = NULL;
    c->cur = r;
    c->state = ST_BUSY;
    r->start_ns = uv_hrtime();
    send_execute(c, r);
    if (r->timeout_ms)
        uv_timer_start(&c->timer, ctx_timer_cb, r->timeout_ms, 0);
}

/* SIGINT now; SIGKILL (and a fresh incarnation) if the run has not ended after the grace. */
static void interrupt_run(struct context *c)
{
    struct ctx_run *r = c->cur;
    if (!r || !c->proc)
        return;
    r->interrupted = true;
    if (c->proc->jp)
        jail_proc_kill(c->proc->jp, SIGINT);
    uv_timer_start(&c->timer, ctx_timer_cb, APP->cfg->kill_grace_ms, 0);
}

static void ctx_timer_cb(uv_timer_t *t)
{
    struct context *c = t->data;
    struct ctx_proc *p = c->proc;
    if (c->state == ST_STARTING) {
        log_warn("context %s did not get ready within %llu ms", c->id,
                 (unsigned long long)APP->cfg->context_start_timeout_ms);
        if (p && !p->why[0])
            snprintf(p->why, sizeof p->why, "it did not get ready within %llu ms "
                     "(--context-start-timeout-ms)",
                     (unsigned long long)APP->cfg->context_start_timeout_ms);
        if (p)
            ctx_proc_died(c, p);
        return;
    }
    struct ctx_run *r = c->cur;
    if (!r || !p)
        return;
    if (!r->interrupted) {
        r->timed_out = true;
        interrupt_run(c);
        return;
    }
    /* the grace is over: kill; ctx_proc_died answers the run */
    r->killed = true;
    ctx_proc_died(c, p);
}

static void run_abort(http_req *req, void *arg)
{
    struct ctx_run *r = arg;
    (void)req;
    /* The client is gone. The run goes on (the context's state should stay consistent),
     * but its output is no longer produced for anyone: resume reading so it cannot block. */
    budget_cancel(r->bg, &r->bw);
    if (r->paused && r->ctx && r->ctx->cur == r)
        set_paused(r->ctx, false);
}

static void run_drain(http_req *req, void *arg)
{
    struct ctx_run *r = arg;
    (void)req;
    if (r->ctx && r->ctx->cur == r)
        set_paused(r->ctx, false);   /* alloc_cb decides what the budget allows */
}

/* ---- contexts ---- */

static void ctx_closed(uv_handle_t *h)
{
    struct context *c = h->data;
    json_decref(c->env);
    free(c);
}

/* Remove a context: the process ends, queued runs fail, waiters get an answer. */
static void ctx_delete(struct context *c, const char *why)
{
    c->deleting = true;
    struct context **pp = ctx_list(c->sb);
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    if (c->sb->ncontexts)
        c->sb->ncontexts--;
    struct ctx_run *r = c->cur;
    c->cur = NULL;
    if (r) {
        r->state_lost = true;
        run_set_error(r, "ContextDied", "%s", why);
        run_answer(r);
    }
    fail_queue(c, "ContextDied", why);
    answer_waiters(c, W_READY, false, why);
    answer_waiters(c, W_INTERRUPT, false, why);
    struct ctx_proc *p = c->proc;
    if (p) {
        proc_detach(p);
        proc_maybe_free(p);
    }
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, ctx_closed);
}

static void on_sandbox_destroy(sandbox *sb)
{
    while (*ctx_list(sb))
        ctx_delete(*ctx_list(sb), "the sandbox was deleted");
}

void ctx_init(struct app *app)
{
    APP = app;
    sbx_on_destroy(on_sandbox_destroy);
}

/* Create a context and start its first incarnation. */
static int ctx_create(sandbox *sb, enum ctx_lang lang, const char *cwd, const json_t *env,
                      bool is_default, struct context **out, char *err, size_t errlen)
{
    if (sb->ncontexts >= APP->cfg->max_contexts) {
        snprintf(err, errlen, "sandbox '%s' has %u contexts, the limit (--max-contexts)",
                 sb->id, sb->ncontexts);
        return -EMFILE;
    }
    struct context *c = calloc(1, sizeof *c);
    if (!c || stamp_id(c->id, sizeof c->id, "ctx-")) {
        free(c);
        return -ENOMEM;
    }
    c->sb = sb;
    c->lang = lang;
    c->is_default = is_default;
    snprintf(c->cwd, sizeof c->cwd, "%s", cwd);
    c->env = env ? json_deep_copy(env) : json_object();
    c->created_ms = c->last_used_ms = stamp_now_ms();
    uv_timer_init(APP->loop, &c->timer);
    c->timer.data = c;
    int rc = proc_start(c, err, errlen);
    if (rc) {
        json_decref(c->env);
        uv_close((uv_handle_t *)&c->timer, (uv_close_cb)free);
        return rc;
    }
    c->next = *ctx_list(sb);
    *ctx_list(sb) = c;
    sb->ncontexts++;
    *out = c;
    return 0;
}

static bool lang_available(http_req *req, enum ctx_lang lang)
{
    api_update_langs(APP);
    const struct lang_status *l = &APP->langs[lang];
    if (l->available)
        return true;
    http_respond_error(req, 501, "LANGUAGE_UNAVAILABLE", "%s", l->reason);
    return false;
}

static void respond_create_error(http_req *req, int rc, const char *err)
{
    if (rc == -EMFILE || rc == -EBUSY)
        http_respond_error(req, 429, "LIMIT_REACHED", "%s", err);
    else if (rc == -ENOENT || rc == -ENOTDIR || rc == -EACCES)
        http_respond_error(req, 400, "VALIDATION_FAILED", "cannot start the context: %s", err);
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot start the context: %s", err);
}

static void add_waiter(struct context *c, http_req *req, int kind)
{
    struct waiter *w = calloc(1, sizeof *w);
    if (!w) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    w->req = req;
    w->kind = kind;
    w->next = c->waiters;
    c->waiters = w;
}

void api_context_create(struct app *app, http_req *req, const route_params *p)
{
    char err[JX_ERR];
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    json_t *body = jx_body(req, true);
    if (!body)
        return;
    const char *lang_s = "python", *cwd_in = NULL;
    const json_t *env = NULL;
    char cwd[1100];
    if (jx_string(body, "language", false, 32, &lang_s, err, sizeof err) ||
        jx_string(body, "cwd", false, 1024, &cwd_in, err, sizeof err) ||
        jx_env_map(body, "envVars", APP->cfg->max_env_vars, &env, err, sizeof err) ||
        sbx_resolve_cwd(cwd_in, cwd, sizeof cwd, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    int lang = ctx_parse_lang(lang_s);
    if (lang < 0) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "field 'language' must be python, javascript or typescript, got "
                           "\"%.32s\"", lang_s);
        json_decref(body);
        return;
    }
    if (!lang_available(req, (enum ctx_lang)lang)) {
        json_decref(body);
        return;
    }
    struct context *c;
    int rc = ctx_create(sb, (enum ctx_lang)lang, cwd, env, false, &c, err, sizeof err);
    json_decref(body);
    if (rc) {
        respond_create_error(req, rc, err);
        return;
    }
    add_waiter(c, req, W_READY);
}

/* The context named by {cid} in the sandbox, or a 404 answer and NULL. */
static struct context *lookup(http_req *req, const route_params *p)
{
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return NULL;
    const char *cid = route_param(p, "cid");
    struct context *c = ctx_find(sb, cid);
    if (!c)
        http_respond_error(req, 404, "CONTEXT_NOT_FOUND", "context '%.64s' does not exist in "
                           "sandbox '%s'", cid, sb->id);
    return c;
}

void api_context_list(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    json_t *arr = json_array();
    for (struct context *c = *ctx_list(sb); c; c = c->next)
        json_array_insert_new(arr, 0, ctx_to_json(c));
    jx_respond(req, 200, json_pack("{s:o}", "contexts", arr));
}

void api_context_get(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (c)
        jx_respond(req, 200, ctx_to_json(c));
}

void api_context_delete(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (!c)
        return;
    ctx_delete(c, "the context was deleted");
    http_respond(req, 200, "application/json", "{\"deleted\":true}", 16, NULL);
}

void api_context_interrupt(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    struct context *c = lookup(req, p);
    if (!c)
        return;
    if (c->state != ST_BUSY || !c->cur) {
        http_respond(req, 200, "application/json",
                     "{\"interrupted\":false,\"statePreserved\":true}", 43, NULL);
        return;
    }
    add_waiter(c, req, W_INTERRUPT);
    if (!c->cur->interrupted)
        interrupt_run(c);
}

void api_context_restart(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    char err[256];
    struct context *c = lookup(req, p);
    if (!c)
        return;
    struct ctx_run *r = c->cur;
    c->cur = NULL;
    if (r) {
        r->state_lost = true;
        run_set_error(r, "ContextDied", "the context was restarted");
        run_answer(r);
    }
    struct ctx_proc *old = c->proc;
    if (old) {
        proc_detach(old);
        proc_maybe_free(old);
    }
    uv_timer_stop(&c->timer);
    c->exec_count = 0;
    answer_waiters(c, W_INTERRUPT, false, NULL);
    int rc = proc_start(c, err, sizeof err);
    if (rc) {
        c->state = ST_DEAD;
        respond_create_error(req, rc, err);
        return;
    }
    add_waiter(c, req, W_READY);
}

void api_execute(struct app *app, http_req *req, const route_params *p)
{
    char err[JX_ERR];
    sandbox *sb = api_sandbox_lookup(req, p);
    if (!sb)
        return;
    json_t *body = jx_body(req, false);
    if (!body)
        return;
    const char *src = NULL, *cid = NULL, *lang_s = NULL;
    const json_t *env = NULL;
    uint64_t timeout = sb->limits.timeout_ms;
    if (jx_string(body, "code", true, APP->cfg->max_code_bytes, &src, err, sizeof err) ||
        jx_string(body, "context", false, 64, &cid, err, sizeof err) ||
        jx_string(body, "language", false, 32, &lang_s, err, sizeof err) ||
        jx_env_map(body, "envVars", APP->cfg->max_env_vars, &env, err, sizeof err) ||
        sbx_parse_timeout(body, &timeout, err, sizeof err)) {
        json_decref(body);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return;
    }
    int lang = lang_s ? ctx_parse_lang(lang_s) : LANG_PYTHON;
    if (lang < 0) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "field 'language' must be python, javascript or typescript, got "
                           "\"%.32s\"", lang_s);
        json_decref(body);
        return;
    }
    struct context *c = NULL;
    if (cid) {
        c = ctx_find(sb, cid);
        if (!c) {
            http_respond_error(req, 404, "CONTEXT_NOT_FOUND",
                               "context '%s' does not exist in sandbox '%s'", cid, sb->id);
            json_decref(body);
            return;
        }
        if (lang_s && (int)c->lang != lang &&
            !(c->lang == LANG_TYPESCRIPT && lang == LANG_JAVASCRIPT)) {
            http_respond_error(req, 400, "VALIDATION_FAILED",
                               "context '%s' runs %s, not %s", cid, LANG_NAMES[c->lang],
                               LANG_NAMES[lang]);
            json_decref(body);
            return;
        }
    } else {
        for (struct context *x = *ctx_list(sb); x; x = x->next)
            if (x->is_default && (int)x->lang == lang)
                c = x;
        if (!c) {
            if (!lang_available(req, (enum ctx_lang)lang)) {
                json_decref(body);
                return;
            }
            int rc = ctx_create(sb, (enum ctx_lang)lang, "/workspace", NULL, true, &c, err,
                                sizeof err);
            if (rc) {
                json_decref(body);
                respond_create_error(req, rc, err);
                return;
            }
        }
    }
    if (c->state == ST_DEAD) {
        http_respond_error(req, 409, "CONFLICT", "context '%s' is dead (its process could not "
                           "start); delete it or restart it", c->id);
        json_decref(body);
        return;
    }
    struct ctx_run *r = calloc(1, sizeof *r);
    if (!r || stamp_id(r->id, sizeof r->id, "exe-")) {
        free(r);
        json_decref(body);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    /* A queued run holds its request (the raw body, kept by http until the answer, and the
     * parsed tree): charged, so that queueing runs cannot fill the daemon either. */
    size_t held = 2 * req->body.len + 4096;
    if (budget_charge(sb->budget, held)) {
        free(r);
        json_decref(body);
        http_respond_error(req, 429, "LIMIT_REACHED", "the run's request (%zu bytes) does not "
                           "fit in what is left of sandbox '%s''s buffer budget "
                           "(--sandbox-buffer-bytes %llu, %llu bytes held); wait for queued "
                           "runs and unread answers", req->body.len, sb->id,
                           (unsigned long long)budget_cap(sb->budget),
                           (unsigned long long)budget_used(sb->budget));
        return;
    }
    r->ctx = c;
    r->req = req;
    r->bg = budget_ref(sb->budget);
    r->charged = held;
    http_req_set_budget(req, r->bg);
    r->body = body;
    r->timeout_ms = timeout;
    r->results = json_array();
    r->out_list = json_array();
    r->err_list = json_array();
    r->start_ns = uv_hrtime();
    req->on_abort = run_abort;
    req->on_drain = run_drain;
    req->cb_arg = r;
    if (req->want_sse) {
        r->streaming = true;
        char hdr[80];
        snprintf(hdr, sizeof hdr, "X-Context-Id: %s\r\n", c->id);
        sse_begin_with(&r->sse, req, hdr);
    }
    (void)app;
    if (c->q_tail)
        c->q_tail->next = r;
    else
        c->q_head = r;
    c->q_tail = r;
    run_next(c);
}
