/*
 * api_mcp_run.c — the MCP tools that run something in a sandbox (docs/mcp.md): run_code
 * (a cell on a code context, context.h), exec (a shell command, exec.h) and write_file
 * (the bytes are written by `cat` running in the sandbox as its user, so they count
 * against the sandbox's own limits as the files API's writes do). The same engine calls
 * as /v1's handlers, with sinks that collect the output into one tool result.
 *
 * run_code: without "context", the call's session keeps one context per sandbox and
 * language (api_mcp.h), made on first use, so state persists across calls; with one, it
 * must be a context of the named sandbox (CONTEXT_NOT_FOUND otherwise, also when it
 * belongs to another sandbox). The result's content is stdout, stderr (marked), each
 * result as text or, for PNG/JPEG, as image content, and for a raised exception a text
 * naming it with its traceback; the exception makes the result a tool error.
 *
 * Memory: stdout and stderr are kept up to --max-output-bytes each, results while the
 * sandbox's buffer budget (--sandbox-buffer-bytes) has room; past either the rest is
 * dropped and the result says so ("truncated"). Nothing is held for a client that left:
 * the run ends as it would and its answer is discarded by http.c.
 */
#include "api_mcp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_command.h"
#include "budget.h"
#include "context.h"
#include "exec.h"
#include "files.h"

/* A JSON string of n bytes of output: cut back to the last whole UTF-8 sequence, and
 * when that is not enough (bytes that are no UTF-8 at all), each non-ASCII byte as '?'. */
static json_t *text_of(const char *data, size_t n)
{
    for (size_t cut = 0; cut < 4 && cut <= n; cut++) {
        json_t *s = json_stringn(data, n - cut);
        if (s)
            return s;
    }
    char *copy = malloc(n + 1);
    for (size_t i = 0; copy && i < n; i++)
        copy[i] = (unsigned char)data[i] < 0x80 && data[i] ? data[i] : '?';
    json_t *s = copy ? json_stringn(copy, n) : NULL;
    free(copy);
    return s;
}

static void add_text(json_t *content, const char *prefix, const char *data, size_t n)
{
    json_t *t = text_of(data, n);
    if (t && prefix) {
        json_t *p = json_sprintf("%s%s", prefix, json_string_value(t));
        json_decref(t);
        t = p;
    }
    if (t)
        json_array_append_new(content, json_pack("{s:s, s:o}", "type", "text", "text", t));
}

/* ---- run_code ---- */

struct run {
    struct mcp_job *job;
    struct ctx_run *run;
    budget *bg;
    buf out, err;
    json_t *results;
    size_t charged;
    bool cut;
};

static int run_output(void *arg, bool is_err, const char *data, size_t n)
{
    struct run *r = arg;
    if (buf_append(is_err ? &r->err : &r->out, data, n))
        r->cut = true;
    json_t *t = text_of(data, n); /* a sequence cut between chunks is left out here only */
    if (t && json_string_length(t))
        mcp_call_progress(r->job->call, json_string_value(t));
    json_decref(t);
    return 0;
}

static int run_result(void *arg, json_t *result, size_t msg_bytes)
{
    struct run *r = arg;
    if (budget_charge(r->bg, msg_bytes)) {
        r->cut = true;
        return 0;
    }
    r->charged += msg_bytes;
    json_array_append(r->results, result);
    return 0;
}

/* One result as content: its image, else its text (or another text form). */
static void add_result(json_t *content, const json_t *res)
{
    static const struct {
        const char *key, *mime;
    } IMAGES[] = { { "png", "image/png" }, { "jpeg", "image/jpeg" } };
    static const char *const TEXTS[] = { "text", "markdown", "latex", "html", "svg" };
    for (size_t i = 0; i < sizeof IMAGES / sizeof IMAGES[0]; i++) {
        const json_t *d = json_object_get(res, IMAGES[i].key);
        if (json_is_string(d)) {
            json_array_append_new(content, json_pack("{s:s, s:O, s:s}", "type", "image", "data", d,
                                                     "mimeType", IMAGES[i].mime));
            return;
        }
    }
    for (size_t i = 0; i < sizeof TEXTS / sizeof TEXTS[0]; i++) {
        const json_t *t = json_object_get(res, TEXTS[i]);
        if (json_is_string(t)) {
            json_array_append_new(content, json_pack("{s:s, s:O}", "type", "text", "text", t));
            return;
        }
    }
    json_t *j = json_object_get(res, "json");
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (s)
        json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", s));
    free(s);
}

static void add_error(json_t *content, const json_t *e)
{
    buf b;
    buf_init(&b, (size_t)1 << 24);
    buf_printf(&b, "%s: %s", json_string_value(json_object_get(e, "name")),
               json_string_value(json_object_get(e, "message")) ?: "");
    size_t i;
    const json_t *l;
    json_array_foreach(json_object_get(e, "traceback"), i, l)
    {
        buf_append(&b, "\n", 1);
        buf_puts(&b, json_string_value(l) ? json_string_value(l) : "");
    }
    add_text(content, NULL, b.data ? b.data : "", b.len);
    buf_free(&b);
}

/* The client went away or cancelled: interrupt (SIGINT, the state is kept). */
static void run_cancel(void *arg)
{
    struct run *r = arg;
    ctx_run_interrupt(r->run);
}

static void run_end(void *arg, const struct ctx_run_end *e)
{
    struct run *r = arg;
    mcp_call_on_cancel(r->job->call, NULL, NULL);
    json_t *content = json_array();
    if (r->out.len)
        add_text(content, NULL, r->out.data, r->out.len);
    if (r->err.len)
        add_text(content, "[stderr]\n", r->err.data, r->err.len);
    size_t i;
    json_t *res;
    json_array_foreach(r->results, i, res) add_result(content, res);
    if (e->error)
        add_error(content, e->error);
    if (r->cut)
        add_text(content, NULL,
                 "[output truncated: --max-output-bytes or the sandbox's buffer "
                 "budget]",
                 69);
    json_t *out = json_pack("{s:o, s:b, s:{s:s, s:s, s:i, s:b, s:O?}}", "content", content,
                            "isError", e->error != NULL, "structuredContent", "contextId",
                            e->context_id, "executionId", e->run_id, "executionCount",
                            e->exec_count, "statePreserved", e->state_preserved, "error", e->error);
    mcp_job_done(r->job, out);
    budget_release(r->bg, r->charged);
    buf_free(&r->out);
    buf_free(&r->err);
    budget_unref(r->bg);
    json_decref(r->results);
    free(r);
}

static const struct ctx_sink MCP_RUN_SINK = {
    .output = run_output,
    .result = run_result,
    .end = run_end,
};

/* The context the call runs on, made when the session has none yet; NULL once answered. */
static struct context *pick_context(struct mcp_job *j, int lang)
{
    sandbox *sb = j->sb;
    const char *cid = json_string_value(json_object_get(j->args, "context"));
    const char *sid = mcp_call_session(j->call);
    char err[256];
    if (cid) {
        struct context *c = ctx_find(sb, cid);
        if (!c)
            mcp_job_done(j, mcp_text_result(true,
                                            "CONTEXT_NOT_FOUND: context '%.64s' is not "
                                            "in sandbox '%s'",
                                            cid, sb->id));
        return c;
    }
    const char *mine = mcp_session_context(sid, sb->id, lang);
    struct context *c = mine ? ctx_find(sb, mine) : NULL;
    if (c)
        return c;
    api_update_langs(j->app);
    if (!j->app->langs[lang].available) {
        mcp_job_done(j,
                     mcp_text_result(true, "LANGUAGE_UNAVAILABLE: %s", j->app->langs[lang].reason));
        return NULL;
    }
    if (ctx_create(sb, (enum ctx_lang)lang, "/workspace", NULL, false, &c, err, sizeof err)) {
        mcp_job_done(j, mcp_text_result(true, "LIMIT_REACHED: cannot create a context: %s", err));
        return NULL;
    }
    struct ctx_info i;
    ctx_get_info(c, &i);
    mcp_session_remember(sid, sb->id, lang, i.id);
    return c;
}

void mcp_tool_run_code(struct mcp_job *j)
{
    const char *lang_s = json_string_value(json_object_get(j->args, "language"));
    const json_t *t = json_object_get(j->args, "timeoutMs");
    uint64_t timeout = t ? (uint64_t)json_integer_value(t) : j->sb->limits.timeout_ms;
    int lang = ctx_parse_lang(lang_s ? lang_s : "python");
    if (lang < 0) {
        mcp_job_done(j, mcp_text_result(true,
                                        "VALIDATION_FAILED: language '%.32s' is not "
                                        "supported (python, javascript, typescript)",
                                        lang_s));
        return;
    }
    size_t clen = json_string_length(json_object_get(j->args, "code"));
    if (clen > j->app->cfg->max_code_bytes) {
        mcp_job_done(j, mcp_text_result(true,
                                        "PAYLOAD_TOO_LARGE: code is %zu bytes, more than "
                                        "--max-code-bytes %llu",
                                        clen, (unsigned long long)j->app->cfg->max_code_bytes));
        return;
    }
    if (timeout > j->app->cfg->max_timeout_ms) {
        mcp_job_done(j, mcp_text_result(true,
                                        "VALIDATION_FAILED: timeoutMs %llu is above "
                                        "--max-timeout-ms %llu",
                                        (unsigned long long)timeout,
                                        (unsigned long long)j->app->cfg->max_timeout_ms));
        return;
    }
    struct context *c = pick_context(j, lang);
    if (!c)
        return;
    struct ctx_info i;
    ctx_get_info(c, &i);
    struct run *r = i.state == CTX_DEAD ? NULL : calloc(1, sizeof *r);
    if (!r) {
        mcp_job_done(j, mcp_text_result(true,
                                        "CONFLICT: context '%s' is dead (its process "
                                        "could not start)",
                                        i.id));
        return;
    }
    r->job = j;
    r->bg = budget_ref(j->sb->budget);
    r->results = json_array();
    buf_init(&r->out, j->app->cfg->max_output_bytes);
    buf_init(&r->err, j->app->cfg->max_output_bytes);
    buf_set_budget(&r->out, r->bg);
    buf_set_budget(&r->err, r->bg);
    r->run = ctx_run_queue(c, json_object_get(j->args, "code"), NULL, timeout, &MCP_RUN_SINK, r);
    if (r->run) {
        mcp_call_on_cancel(j->call, run_cancel, r);
    } else {
        buf_free(&r->out);
        buf_free(&r->err);
        budget_unref(r->bg);
        json_decref(r->results);
        free(r);
        mcp_job_done(j, NULL);
    }
}

/* ---- exec and write_file: a command, its whole answer collected ---- */

struct cmd {
    cmd_sink sink; /* first: the engine holds &sink */
    struct mcp_job *job;
    const char *written; /* write_file: the path shown, else NULL */
    char shown[FILES_PATH_MAX + 16];
    size_t size;
};

#define CMD(s) ((struct cmd *)(s))

static int cmd_begin(cmd_sink *s, struct budget *bg)
{
    (void)s;
    (void)bg;
    return 0;
}

static int cmd_event(cmd_sink *s, const char *type, const char *json, size_t len)
{
    (void)s, (void)type, (void)json, (void)len;
    return 0; /* plain runs send no events */
}

static int cmd_text(cmd_sink *s, const char *type, esc_carry *carry, const void *data, size_t n,
                    bool final)
{
    (void)s, (void)type, (void)carry, (void)data, (void)n, (void) final;
    return 0;
}

static void cmd_end(cmd_sink *s)
{
    mcp_job_done(CMD(s)->job, NULL);
    free(s);
}

static json_t *exec_result(json_t *a)
{
    json_t *content = json_array();
    const char *out = json_string_value(json_object_get(a, "stdout"));
    const char *err = json_string_value(json_object_get(a, "stderr"));
    if (out && out[0])
        add_text(content, NULL, out, strlen(out));
    if (err && err[0])
        add_text(content, "[stderr]\n", err, strlen(err));
    char tail[96];
    snprintf(tail, sizeof tail, "[exit code %lld%s]",
             (long long)json_integer_value(json_object_get(a, "exitCode")),
             json_is_true(json_object_get(a, "timedOut")) ? ", timed out" : "");
    add_text(content, NULL, tail, strlen(tail));
    return json_pack("{s:o, s:b, s:o}", "content", content, "isError",
                     !json_is_true(json_object_get(a, "success")), "structuredContent", a);
}

static void cmd_answer(cmd_sink *s, char *json, size_t len)
{
    struct cmd *c = CMD(s);
    json_t *a = json ? json_loadb(json, len, 0, NULL) : NULL;
    free(json);
    json_t *r;
    if (!a)
        r = mcp_text_result(true, "INTERNAL_ERROR: the command's result does not fit");
    else if (!c->written)
        r = exec_result(a);
    else if (json_is_true(json_object_get(a, "success")))
        r = mcp_text_result(false, "wrote %zu bytes to %s", c->size, c->written);
    else
        r = mcp_text_result(true, "INTERNAL_ERROR: cannot write %s: %s", c->written,
                            json_string_value(json_object_get(a, "stderr")) ?: "");
    if (c->written)
        json_decref(a);
    mcp_job_done(c->job, r);
    free(c);
}

static void cmd_failed(cmd_sink *s, int rc, const char *cwd, const char *msg)
{
    mcp_job_done(CMD(s)->job,
                 mcp_text_result(true, "%s: cannot start the command in %s: %s",
                                 rc == -EBUSY || rc == -EAGAIN ? "LIMIT_REACHED" : "INTERNAL_ERROR",
                                 cwd, msg));
    free(s);
}

static size_t cmd_queued(const cmd_sink *s)
{
    (void)s;
    return 0;
}

static bool cmd_gone(const cmd_sink *s)
{
    (void)s;
    return false;
}

static void cmd_wait_drain(cmd_sink *s)
{
    (void)s;
}

static const struct cmd_sink_ops MCP_CMD_OPS = {
    .begin = cmd_begin,
    .event = cmd_event,
    .text = cmd_text,
    .end = cmd_end,
    .answer = cmd_answer,
    .failed = cmd_failed,
    .queued = cmd_queued,
    .gone = cmd_gone,
    .wait_drain = cmd_wait_drain,
};

/* The client went away or cancelled: the command is killed (its answer still comes). */
static void cmd_cancel(void *arg)
{
    exec_abort(arg);
}

/* Start o's command with a collecting sink (c, handed over). */
static void cmd_start(struct mcp_job *j, struct cmd *c, const struct exec_opts *o)
{
    char err[256];
    exec_run *run = NULL;
    c->sink.ops = &MCP_CMD_OPS;
    c->job = j;
    int rc = exec_start(j->sb, j->app->cfg, o, &c->sink, &run, err, sizeof err);
    if (rc == 0) {
        mcp_call_on_cancel(j->call, cmd_cancel, run); /* the call ends before the run */
        return;
    }
    free(c);
    mcp_job_done(j, mcp_text_result(true, "%s: cannot start the command: %s",
                                    rc == EXEC_NO_ROOM ? "LIMIT_REACHED" : "INTERNAL_ERROR",
                                    rc == EXEC_NO_ROOM ? "stdin does not fit in the sandbox's "
                                                         "buffer budget"
                                                       : err));
}

void mcp_tool_exec(struct mcp_job *j)
{
    char err[256];
    struct cmd_request req;
    const json_t *t = json_object_get(j->args, "timeoutMs");
    struct exec_opts o = {
        .cmd = &req,
        .stdin_data = json_string_value(json_object_get(j->args, "stdin")),
        .timeout_ms = t ? (uint64_t)json_integer_value(t) : j->sb->limits.timeout_ms,
    };
    struct cmd *c = NULL;
    if (api_cmd_parse(j->args, j->app->cfg, &req, err, sizeof err))
        mcp_job_done(j, mcp_text_result(true, "VALIDATION_FAILED: %s", err));
    else if (o.timeout_ms > j->app->cfg->max_timeout_ms)
        mcp_job_done(j, mcp_text_result(true,
                                        "VALIDATION_FAILED: timeoutMs is above "
                                        "--max-timeout-ms %llu",
                                        (unsigned long long)j->app->cfg->max_timeout_ms));
    else if (!(c = calloc(1, sizeof *c)))
        mcp_job_done(j, NULL);
    else
        cmd_start(j, c, &o);
}

void mcp_tool_write_file(struct mcp_job *j)
{
    const json_t *content = json_object_get(j->args, "content");
    const char *path = json_string_value(json_object_get(j->args, "path"));
    char rel[FILES_PATH_MAX + 1] = "", err[256];
    struct cmd *c = NULL;
    int bad = 0;
    /* a NUL in content or path was refused with the arguments (api_mcp_tools.c) */
    if ((bad = files_normalize(path, rel, sizeof rel, err, sizeof err)) || !rel[0])
        mcp_job_done(j, mcp_text_result(true, "VALIDATION_FAILED: %s",
                                        bad ? err : "the workspace itself is no file"));
    else if (!(c = calloc(1, sizeof *c)))
        mcp_job_done(j, NULL);
    if (!c)
        return;
    files_display(rel, c->shown, sizeof c->shown);
    c->written = c->shown;
    c->size = json_string_length(content);
    json_t *env = json_pack("{s:s}", "SBX_MCP_PATH", c->shown);
    struct cmd_request req = {
        .command = "mkdir -p -- \"$(dirname -- \"$SBX_MCP_PATH\")\" && "
                   "cat > \"$SBX_MCP_PATH\"",
        .env = env,
        .cwd = "/workspace",
    };
    struct exec_opts o = { .cmd = &req, .stdin_data = json_string_value(content) };
    cmd_start(j, c, &o);
    json_decref(env);
}
