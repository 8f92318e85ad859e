/*
 * api_cf.h — internal to the Cloudflare container protocol (api_cf*.c): the routes under
 * /api that @cloudflare/sandbox 0.12's route clients (SandboxClient, CodeInterpreter)
 * call, mapped onto the same engine the /v1 routes use (contexts, runs, exec, processes).
 * No state of its own lives in the daemon: a session's cwd and exports live in the
 * sandbox's /tmp (api_cf_exec.c).
 *
 * Shared here: the error envelope and its status map (never 503, which the client
 * retries for two minutes), JSON and SSE answers in Cloudflare's shapes, the sandbox a
 * request is for (X-Sandbox-Id, get-or-create, "default" when absent), and cf_shell, one
 * shell command run in the sandbox through exec.h whose outcome comes back as data.
 */
#ifndef SANDBOXD_API_CF_H
#define SANDBOXD_API_CF_H

#include <jansson.h>
#include <stdbool.h>

#include "api.h"
#include "buf.h"
#include "sandbox.h"

/* {"code","message","error","context":{},"httpStatus","timestamp"} with status. */
void cf_error(http_req *req, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with a ready message and more response headers (may be NULL). */
void cf_error_msg(http_req *req, int status, const char *code, const char *msg,
                  const char *extra_headers);
/* True for the paths of this surface (/api/…): api.c answers their unknown routes and
 * missing tokens in this envelope too. */
bool cf_path(const char *path);
/* The request body as an object (an empty one allowed when allow_empty), or NULL once a
 * 400 VALIDATION_FAILED (415 for a foreign Content-Type) has been sent. */
json_t *cf_body(http_req *req, bool allow_empty);
/* 200 with j plus "success":true and "timestamp" (j is taken). */
void cf_ok(http_req *req, json_t *j);
/* The current time as ISO 8601 (out: at least 40 bytes). */
void cf_now(char *out, size_t n);

/* Server-Sent Events as the client reads them: one "data: <json>\n\n" per write. */
int cf_sse_begin(http_req *req);
/* Sends j (taken) with "type": type first. 0 go on, 1 pause (on_drain), -EPIPE gone. */
int cf_sse_send(http_req *req, const char *type, json_t *j);
/* The same for the last event, and the stream is ended (one write). */
void cf_sse_finish(http_req *req, const char *type, json_t *j);

/* What a handler does once its sandbox exists; param is the route's one parameter (or
 * NULL), a copy valid during the call. */
typedef void (*cf_next)(struct app *app, http_req *req, sandbox *sb, const char *param);
/* Find or create the sandbox named by X-Sandbox-Id (default "default") and call next, now
 * or once it is ready; answers the request itself when the id is invalid or the sandbox
 * cannot be made. */
void cf_with_sandbox(struct app *app, http_req *req, const char *param, cf_next next);

/* An engine refusal (a -errno or a limit) as a Cloudflare error. */
void cf_start_error(http_req *req, int rc, const char *err, const char *what);

/* One shell command in the sandbox and its outcome. */
struct cf_shell_out {
    int exit_code;
    bool timed_out, truncated;
    const char *out, *err; /* valid during the callback */
    size_t out_len, err_len;
};
typedef void (*cf_shell_cb)(http_req *req, const struct cf_shell_out *o, void *arg);
struct cf_shell {
    const char *script; /* run by /bin/sh -c */
    json_t *env;        /* borrowed: an object of strings, or NULL */
    const char *cwd;    /* resolved (NULL: /workspace) */
    const char *stdin_data;
    uint64_t timeout_ms;
};
/* Run s in sb; 0: cb gets the outcome later (arg is the caller's); -1: the request has
 * been answered with a Cloudflare error (the command could not start; cb never runs). */
int cf_shell_run(struct app *app, http_req *req, sandbox *sb, const struct cf_shell *s,
                 cf_shell_cb cb, void *arg);

/* Sessions (api_cf_exec.c): the environment that makes the session shell run command in
 * session sid (NULL: none) with call_env on top; use_cwd: start in the session's
 * directory; save: keep the state on exit. 0 with *env_out (owned), or -1 with err. */
int cf_session_shell(const char *sid, const char *command, const json_t *call_env, bool use_cwd,
                     bool save, json_t **env_out, char *err, size_t errlen);
/* For a background process: the shell text that, put before its command, loads session sid's
 * exports and (use_cwd) directory, then call_env on top, ending with CF_SESSION_MARK. 0, or
 * -1 with err. */
#define CF_SESSION_MARK "# sandboxd: the session's state, then the command\n"
int cf_session_prefix(buf *b, const char *sid, const json_t *call_env, bool use_cwd, char *err,
                      size_t errlen);

/* Handlers, by file. */
void api_cf_ping(struct app *app, http_req *req, const route_params *p);
void api_cf_version(struct app *app, http_req *req, const route_params *p);
void api_cf_commands(struct app *app, http_req *req, const route_params *p);
void api_cf_context_create(struct app *app, http_req *req, const route_params *p);
void api_cf_context_list(struct app *app, http_req *req, const route_params *p);
void api_cf_context_delete(struct app *app, http_req *req, const route_params *p);
void api_cf_execute_code(struct app *app, http_req *req, const route_params *p);
void api_cf_interp_health(struct app *app, http_req *req, const route_params *p);
void api_cf_execute(struct app *app, http_req *req, const route_params *p);
void api_cf_execute_stream(struct app *app, http_req *req, const route_params *p);
void api_cf_session_create(struct app *app, http_req *req, const route_params *p);
void api_cf_session_delete(struct app *app, http_req *req, const route_params *p);
void api_cf_write(struct app *app, http_req *req, const route_params *p);
void api_cf_read(struct app *app, http_req *req, const route_params *p);
void api_cf_read_stream(struct app *app, http_req *req, const route_params *p);
void api_cf_exists(struct app *app, http_req *req, const route_params *p);
void api_cf_mkdir(struct app *app, http_req *req, const route_params *p);
void api_cf_delete(struct app *app, http_req *req, const route_params *p);
void api_cf_rename(struct app *app, http_req *req, const route_params *p);
void api_cf_move(struct app *app, http_req *req, const route_params *p);
void api_cf_list_files(struct app *app, http_req *req, const route_params *p);
void api_cf_process_start(struct app *app, http_req *req, const route_params *p);
void api_cf_process_list(struct app *app, http_req *req, const route_params *p);
void api_cf_process_get(struct app *app, http_req *req, const route_params *p);
void api_cf_process_kill(struct app *app, http_req *req, const route_params *p);
void api_cf_process_kill_all(struct app *app, http_req *req, const route_params *p);
void api_cf_process_logs(struct app *app, http_req *req, const route_params *p);
void api_cf_process_stream(struct app *app, http_req *req, const route_params *p);

#endif
