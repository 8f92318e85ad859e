/*
 * api_cf_exec.c — Cloudflare's commands and sessions: POST /api/execute,
 * POST /api/execute/stream, POST /api/session/create, POST /api/session/delete, on the
 * native exec (exec.h).
 *
 * A session is a directory entry in the sandbox's own /tmp (/tmp/.sandboxd-cf/<id>.env
 * and .cwd), written by the sandbox's shell itself: each command of a session runs under
 * SESSION_SH, which loads the session's exports and directory, runs the command with eval
 * in the same shell, and on exit (also `exit 3`) saves `export -p` and `pwd` again. So
 * `cd` and `export` carry over between calls, an exiting command does not end the
 * session, and the daemon keeps nothing per session (the files go with the sandbox). The
 * command, the session's path and the call's variable names reach the shell as
 * environment variables, never spliced into the script, so no quoting can break out.
 * A call's own "env" applies to that call only; its own "cwd" overrides the session's.
 */
#include "api_cf.h"
#include "api_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "command.h"
#include "escape.h"
#include "exec.h"
#include "jsonx.h"

/* The shell every session command runs under (see the top of the file). SBXCF_NEW: create
 * the session (exit 45 when it exists); SBXCF_SAVE: save the state on exit. */
static const char SESSION_SH[] =
    "__s=$SBXCF_S __c=$SBXCF_CMD __k=$SBXCF_KEYS __cd=$SBXCF_CD __new=$SBXCF_NEW "
    "__save=$SBXCF_SAVE\n"
    "unset SBXCF_S SBXCF_CMD SBXCF_KEYS SBXCF_CD SBXCF_NEW SBXCF_SAVE\n"
    "__sbxcf_save() {\n"
    "  __rc=$?\n"
    "  for __n in $__k; do\n"
    "    if eval \"[ -n \\\"\\${__h_$__n}\\\" ]\"; then eval \"export "
    "$__n=\\\"\\${__o_$__n}\\\"\"; else unset \"$__n\"; fi\n"
    "  done\n"
    "  { export -p > \"$__s.env.t\" && mv -f \"$__s.env.t\" \"$__s.env\"\n"
    "    if [ -n \"$__cd$__new\" ]; then pwd > \"$__s.cwd\"; fi; } 2>/dev/null\n"
    "  exit $__rc\n"
    "}\n"
    "if [ -n \"$__s\" ]; then\n"
    "  mkdir -p /tmp/.sandboxd-cf 2>/dev/null\n"
    "  if [ -n \"$__new\" ]; then [ -e \"$__s.cwd\" ] && exit 45\n"
    "  else\n"
    "    for __n in $__k; do eval \"__v_$__n=\\${$__n}\"; unset \"$__n\"; done\n"
    "    [ -r \"$__s.env\" ] && . \"$__s.env\"\n"
    "    if [ -n \"$__cd\" ] && [ -r \"$__s.cwd\" ]; then __d=$(cat \"$__s.cwd\"); cd \"$__d\" "
    "2>/dev/null; fi\n"
    "    for __n in $__k; do eval \"__h_$__n=\\${$__n+x} __o_$__n=\\${$__n-}\"; eval \"export "
    "$__n=\\\"\\${__v_$__n}\\\"\"; done\n"
    "  fi\n"
    "  [ -n \"$__save\" ] && trap __sbxcf_save EXIT\n"
    "fi\n"
    "eval \"$__c\"\n";

#define SESSION_EXISTS 45 /* SESSION_SH's exit code for a session that exists */
#define SESSION_ID_MAX 128

static bool name_ok(const char *s, bool first_alpha)
{
    if (!s[0])
        return false;
    for (const char *c = s; *c; c++) {
        bool alpha = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || *c == '_';
        bool digit = *c >= '0' && *c <= '9';
        bool other = !first_alpha && (*c == '-' || *c == '.');
        if (!(alpha || digit || other) || (first_alpha && c == s && digit) ||
            (!first_alpha && c == s && *c == '.'))
            return false;
    }
    return true;
}

int cf_session_shell(const char *sid, const char *command, const json_t *call_env, bool use_cwd,
                     bool save, json_t **env_out, char *err, size_t errlen)
{
    *env_out = NULL;
    if (sid && (strlen(sid) > SESSION_ID_MAX || !name_ok(sid, false))) {
        snprintf(err, errlen,
                 "field 'sessionId' must be 1 to %d of [A-Za-z0-9._-], not starting with '.'",
                 SESSION_ID_MAX);
        return -1;
    }
    json_t *env = call_env ? json_deep_copy(call_env) : json_object();
    buf keys;
    buf_init(&keys, 4096);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)call_env, k, v)
    {
        if (!name_ok(k, true) || strncmp(k, "SBXCF_", 6) == 0 || strncmp(k, "__", 2) == 0) {
            snprintf(err, errlen, "field 'env': '%.64s' is not a shell variable name", k);
            buf_free(&keys);
            json_decref(env);
            return -1;
        }
        buf_printf(&keys, "%s%s", keys.len ? " " : "", k);
    }
    char path[64 + SESSION_ID_MAX];
    snprintf(path, sizeof path, "/tmp/.sandboxd-cf/%s", sid ? sid : "");
    json_object_set_new(env, "SBXCF_S", json_string(sid ? path : ""));
    json_object_set_new(env, "SBXCF_CMD", json_string(command));
    json_object_set_new(env, "SBXCF_KEYS", json_stringn(keys.data ? keys.data : "", keys.len));
    json_object_set_new(env, "SBXCF_CD", json_string(use_cwd ? "1" : ""));
    json_object_set_new(env, "SBXCF_SAVE", json_string(save ? "1" : ""));
    buf_free(&keys);
    *env_out = env;
    return 0;
}

int cf_session_prefix(buf *b, const char *sid, const json_t *call_env, bool use_cwd, char *err,
                      size_t errlen)
{
    if (strlen(sid) > SESSION_ID_MAX || !name_ok(sid, false)) {
        snprintf(err, errlen,
                 "field 'sessionId' must be 1 to %d of [A-Za-z0-9._-], not starting with '.'",
                 SESSION_ID_MAX);
        return -1;
    }
    /* sid is [A-Za-z0-9._-] only: safe between double quotes */
    int rc =
        buf_printf(b, "__s=\"/tmp/.sandboxd-cf/%s\"; [ -r \"$__s.env\" ] && . \"$__s.env\"; ", sid);
    if (!rc && use_cwd)
        rc = buf_puts(b, "[ -r \"$__s.cwd\" ] && cd \"$(cat \"$__s.cwd\")\" 2>/dev/null; ");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)call_env, k, v)
    {
        if (!name_ok(k, true)) {
            snprintf(err, errlen, "field 'env': '%.64s' is not a shell variable name", k);
            return -1;
        }
        /* the value single-quoted: ' becomes '\'' */
        rc = rc ? rc : buf_printf(b, "export %s='", k);
        for (const char *c = json_string_value(v); !rc && *c; c++)
            rc = *c == '\'' ? buf_puts(b, "'\\''") : buf_append(b, c, 1);
        rc = rc ? rc : buf_puts(b, "'; ");
    }
    rc = rc ? rc : buf_puts(b, "unset __s\n" CF_SESSION_MARK);
    if (rc)
        snprintf(err, errlen, "the command is too long");
    return rc ? -1 : 0;
}

/* ---- the request ---- */

struct cf_cmd {
    json_t *body;
    const char *command, *sid, *cwd_in;
    const json_t *env;
    uint64_t timeout;
    char cwd[1100];
    json_t *shell_env; /* SESSION_SH's */
};

/* 0, or -1 once answered (the body is freed then). */
static int cmd_parse(struct app *app, http_req *req, const sandbox *sb, struct cf_cmd *c)
{
    char err[JX_ERR];
    bool has_t = false;
    memset(c, 0, sizeof *c);
    c->body = cf_body(req, false);
    if (!c->body)
        return -1;
    c->timeout = sb->limits.timeout_ms;
    if (jx_string(c->body, "command", true, app->cfg->max_code_bytes, &c->command, err,
                  sizeof err) ||
        jx_string(c->body, "sessionId", false, 1024, &c->sid, err, sizeof err) ||
        jx_string(c->body, "cwd", false, 1024, &c->cwd_in, err, sizeof err) ||
        jx_env_map(c->body, "env", app->cfg->max_env_vars, &c->env, err, sizeof err) ||
        jx_uint(c->body, "timeoutMs", 1, app->cfg->max_timeout_ms, &has_t, &c->timeout, err,
                sizeof err) ||
        sbx_resolve_cwd(c->cwd_in, c->cwd, sizeof c->cwd, err, sizeof err) ||
        cf_session_shell(c->sid, c->command, c->env, !c->cwd_in, true, &c->shell_env, err,
                         sizeof err)) {
        json_decref(c->body);
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return -1;
    }
    return 0;
}

static void cmd_free(struct cf_cmd *c)
{
    json_decref(c->shell_env);
    json_decref(c->body);
    free(c);
}

/* ---- POST /api/execute ---- */

static void executed(http_req *req, const struct cf_shell_out *o, void *arg)
{
    struct cf_cmd *c = arg;
    if (o->timed_out) {
        cf_error(req, 500, "COMMAND_EXECUTION_ERROR", "Command timeout after %llums",
                 (unsigned long long)c->timeout);
    } else {
        size_t n = o->out_len;
        if (n && o->out[n - 1] == '\n')
            n--; /* as Cloudflare's runtime does */
        json_t *j =
            json_pack("{s:b, s:i, s:s%, s:s%, s:s, s:i, s:s?}", "success", o->exit_code == 0,
                      "exitCode", o->exit_code, "stdout", o->out, n, "stderr", o->err, o->err_len,
                      "command", c->command, "duration", 0, "sessionId", c->sid);
        cf_ok(req, j);
    }
    cmd_free(c);
}

static void execute(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)param;
    struct cf_cmd *c = malloc(sizeof *c);
    if (!c) {
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    if (cmd_parse(app, req, sb, c)) {
        free(c);
        return;
    }
    struct cf_shell s = {
        .script = SESSION_SH, .env = c->shell_env, .cwd = c->cwd, .timeout_ms = c->timeout
    };
    if (cf_shell_run(app, req, sb, &s, executed, c))
        cmd_free(c); /* answered; executed never runs */
}

void api_cf_execute(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, execute);
}

/* ---- POST /api/execute/stream ---- */

struct stream_sink {
    cmd_sink sink; /* first: the engine holds &sink */
    http_req *req;
    struct cf_cmd *cmd;
};

#define STREAM(s) ((struct stream_sink *)(s))

static void stream_free(struct stream_sink *k)
{
    cmd_free(k->cmd);
    free(k);
}

static int st_begin(cmd_sink *s, struct budget *bg)
{
    struct stream_sink *k = STREAM(s);
    char now[40];
    cf_now(now, sizeof now);
    http_req_set_budget(k->req, bg);
    int rc = cf_sse_begin(k->req);
    if (rc < 0)
        return rc;
    return cf_sse_send(k->req, "start",
                       json_pack("{s:s, s:s}", "command", k->cmd->command, "timestamp", now));
}

static int st_event(cmd_sink *s, const char *type, const char *json, size_t len)
{
    struct stream_sink *k = STREAM(s);
    char now[40];
    if (strcmp(type, "exit") != 0)
        return 0;
    cf_now(now, sizeof now);
    json_t *e = json_loadb(json, len, 0, NULL);
    int code = (int)json_integer_value(json_object_get(e, "exitCode"));
    bool timed_out = json_is_true(json_object_get(e, "timedOut"));
    json_decref(e);
    if (timed_out)
        return cf_sse_send(k->req, "error",
                           json_pack("{s:s, s:i, s:s}", "data", "Command timed out", "exitCode",
                                     code, "timestamp", now));
    return cf_sse_send(k->req, "complete",
                       json_pack("{s:i, s:s}", "exitCode", code, "timestamp", now));
}

static int st_text(cmd_sink *s, const char *type, esc_carry *carry, const void *data, size_t n,
                   bool final)
{
    struct stream_sink *k = STREAM(s);
    char now[40];
    buf b;
    buf_init(&b, n + 16);
    int rc = esc_utf8(&b, carry, data, n, final);
    if (!rc && b.len) {
        cf_now(now, sizeof now);
        rc = cf_sse_send(k->req, type,
                         json_pack("{s:s%, s:s}", "data", b.data, b.len, "timestamp", now));
    }
    buf_free(&b);
    return rc;
}

static void st_end(cmd_sink *s)
{
    http_stream_end(STREAM(s)->req);
    stream_free(STREAM(s));
}

static void st_answer(cmd_sink *s, char *json, size_t len)
{
    (void)len;
    free(json); /* not reached: the run streams */
    cf_error(STREAM(s)->req, 500, "INTERNAL_ERROR", "the command did not stream");
    stream_free(STREAM(s));
}

static void st_failed(cmd_sink *s, int rc, const char *cwd, const char *msg)
{
    (void)cwd;
    cf_start_error(STREAM(s)->req, rc, msg, "command");
    stream_free(STREAM(s));
}

static const struct cmd_sink_ops STREAM_OPS = {
    .begin = st_begin,
    .event = st_event,
    .text = st_text,
    .end = st_end,
    .answer = st_answer,
    .failed = st_failed,
    .queued = api_sink_queued,
    .gone = api_sink_gone,
    .wait_drain = api_sink_wait_drain,
};

static void execute_stream(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)param;
    char err[JX_ERR];
    struct stream_sink *k = calloc(1, sizeof *k);
    struct cf_cmd *c = malloc(sizeof *c);
    if (!k || !c) {
        free(k);
        free(c);
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    if (cmd_parse(app, req, sb, c)) {
        free(c);
        free(k);
        return;
    }
    *k = (struct stream_sink){ .sink.ops = &STREAM_OPS, .req = req, .cmd = c };
    struct cmd_request cmd = { .command = SESSION_SH, .env = c->shell_env };
    snprintf(cmd.cwd, sizeof cmd.cwd, "%s", c->cwd);
    struct exec_opts o = { .cmd = &cmd, .timeout_ms = c->timeout, .streaming = true };
    exec_run *r = NULL;
    err[0] = '\0';
    int rc = exec_start(sb, app->cfg, &o, &k->sink, &r, err, sizeof err);
    if (rc) {
        stream_free(k);
        cf_start_error(req, rc > 0 ? -EIO : rc, err, "command");
        return;
    }
    req->on_drain = api_exec_drained;
    req->on_abort = api_exec_aborted;
    req->cb_arg = r;
}

void api_cf_execute_stream(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, execute_stream);
}

/* ---- sessions ---- */

struct session_op {
    json_t *body;
    json_t *shell_env;
    const char *sid;
};

static void session_op_free(struct session_op *s)
{
    json_decref(s->shell_env);
    json_decref(s->body);
    free(s);
}

static void session_created(http_req *req, const struct cf_shell_out *o, void *arg)
{
    struct session_op *s = arg;
    if (o->exit_code == SESSION_EXISTS)
        cf_error(req, 409, "SESSION_ALREADY_EXISTS", "Session '%s' already exists", s->sid);
    else if (o->exit_code != 0)
        cf_error(req, 500, "INTERNAL_ERROR", "cannot create session '%s': %.*s", s->sid,
                 (int)(o->err_len > 300 ? 300 : o->err_len), o->err);
    else
        cf_ok(req, json_pack("{s:s, s:n}", "id", s->sid, "containerPlacementId"));
    session_op_free(s);
}

static void session_create(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)param;
    char err[JX_ERR], cwd[1100];
    struct session_op *s = calloc(1, sizeof *s);
    if (!s || !(s->body = cf_body(req, false))) {
        if (!s)
            cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        free(s);
        return;
    }
    const char *cwd_in = NULL;
    const json_t *env = NULL;
    if (jx_string(s->body, "id", true, 1024, &s->sid, err, sizeof err) ||
        jx_string(s->body, "cwd", false, 1024, &cwd_in, err, sizeof err) ||
        jx_env_map(s->body, "env", app->cfg->max_env_vars, &env, err, sizeof err) ||
        sbx_resolve_cwd(cwd_in, cwd, sizeof cwd, err, sizeof err) ||
        cf_session_shell(s->sid, ":", NULL, false, true, &s->shell_env, err, sizeof err)) {
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        session_op_free(s);
        return;
    }
    /* the session's variables are the new shell's environment, saved by its exit */
    json_object_set_new(s->shell_env, "SBXCF_NEW", json_string("1"));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) json_object_set(s->shell_env, k, v);
    struct cf_shell sh = { .script = SESSION_SH, .env = s->shell_env, .cwd = cwd };
    if (cf_shell_run(app, req, sb, &sh, session_created, s))
        session_op_free(s);
}

void api_cf_session_create(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, session_create);
}

static void session_deleted(http_req *req, const struct cf_shell_out *o, void *arg)
{
    struct session_op *s = arg;
    (void)o;
    cf_ok(req, json_pack("{s:s}", "sessionId", s->sid));
    session_op_free(s);
}

static void session_delete(struct app *app, http_req *req, sandbox *sb, const char *param)
{
    (void)param;
    char err[JX_ERR];
    struct session_op *s = calloc(1, sizeof *s);
    if (!s || !(s->body = cf_body(req, false))) {
        if (!s)
            cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        free(s);
        return;
    }
    if (jx_string(s->body, "sessionId", true, 1024, &s->sid, err, sizeof err) ||
        cf_session_shell(s->sid, "", NULL, false, false, &s->shell_env, err, sizeof err)) {
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        session_op_free(s);
        return;
    }
    struct cf_shell sh = { .script = "rm -f -- \"$SBXCF_S.env\" \"$SBXCF_S.cwd\"",
                           .env = s->shell_env };
    if (cf_shell_run(app, req, sb, &sh, session_deleted, s))
        session_op_free(s);
}

void api_cf_session_delete(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    cf_with_sandbox(app, req, NULL, session_delete);
}
