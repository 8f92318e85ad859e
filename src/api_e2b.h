/*
 * api_e2b.h — what the E2B compatibility handlers share (docs/compat.md "E2B"): the
 * sandbox a request names, the Connect protocol's framing, the E2B handlers themselves.
 *
 * The E2B SDK (@e2b/code-interpreter, e2b) names its sandbox in the E2b-Sandbox-Id
 * header; the sandbox is made on first use (get-or-create), `default` when the header is
 * absent, so all surfaces (/v1, E2B) see the same sandboxes. envd's services speak the
 * Connect protocol with the JSON codec (the SDK sets useBinaryFormat: false): unary calls
 * are one JSON document each way (errors: an HTTP status and {"code","message"}), server
 * streams are enveloped messages (a flags byte, a 4-byte big-endian length, the JSON)
 * ending with an end-of-stream message (flags 0x02) that carries the error, if any.
 */
#ifndef SANDBOXD_API_E2B_H
#define SANDBOXD_API_E2B_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api.h"
#include "buf.h"
#include "sandbox.h"

/* Called once the request's sandbox exists (or the request has been answered: sb NULL). */
typedef void (*e2b_sandbox_cb)(struct app *app, http_req *req, sandbox *sb, void *arg);
/* Find or make the sandbox named by E2b-Sandbox-Id; cb now or once it is ready. An
 * invalid id gets 400, a failed creation 500 or 429 (cb with sb NULL, already answered). */
void e2b_with_sandbox(struct app *app, http_req *req, e2b_sandbox_cb cb, void *arg);

/* Connect error codes (their names are the wire's) and the HTTP status of each. */
enum e2b_code {
    E2B_INVALID_ARGUMENT,
    E2B_NOT_FOUND,
    E2B_ALREADY_EXISTS,
    E2B_RESOURCE_EXHAUSTED,
    E2B_UNIMPLEMENTED,
    E2B_INTERNAL,
    E2B_FAILED_PRECONDITION,
};
const char *e2b_code_name(enum e2b_code code);
/* A unary Connect error answer (HTTP status of the code, {"code","message"}). */
void e2b_unary_error(http_req *req, enum e2b_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The request message: a unary call's body (application/json) or a streaming call's one
 * enveloped message (application/connect+json), parsed as a JSON object. The body is
 * buffered by the HTTP server, so --max-body-bytes caps it. NULL with err set when it is
 * not exactly that (a declared length that is not the rest of the body, a compressed or
 * end-of-stream flag, bad JSON, not an object). */
json_t *e2b_connect_request(const http_req *req, bool streaming, char *err, size_t errlen);
/* Append one enveloped message (flags 0: a message, 2: end of stream) to b. */
int e2b_connect_frame(buf *b, unsigned flags, const char *json, size_t len);

/* Standard base64 of n bytes appended to b. */
int e2b_base64(buf *b, const void *data, size_t n);
/* Decode standard or URL-safe base64 (padding optional) into b; -EINVAL when invalid. */
int e2b_unbase64(buf *b, const char *s, size_t n);

/* The value of name in a query string, percent-decoded ('+' is a space): 1 found, 0
 * absent, -1 when it does not fit in out or has a broken escape or a NUL
 * (api_e2b_files.c). */
int e2b_query(const char *query, const char *name, char *out, size_t outlen);

/* Handlers (api_e2b_interp.c, api_e2b_files.c, api_e2b_process.c, api_e2b_fs.c). */
void api_e2b_execute(struct app *app, http_req *req, const route_params *p);
void api_e2b_context_create(struct app *app, http_req *req, const route_params *p);
void api_e2b_context_list(struct app *app, http_req *req, const route_params *p);
void api_e2b_context_restart(struct app *app, http_req *req, const route_params *p);
void api_e2b_context_delete(struct app *app, http_req *req, const route_params *p);
void api_e2b_files_get(struct app *app, http_req *req, const route_params *p);
void api_e2b_files_post(struct app *app, http_req *req, const route_params *p);
void api_e2b_process_start(struct app *app, http_req *req, const route_params *p);
void api_e2b_process_connect(struct app *app, http_req *req, const route_params *p);
void api_e2b_process_list(struct app *app, http_req *req, const route_params *p);
void api_e2b_process_signal(struct app *app, http_req *req, const route_params *p);
void api_e2b_process_input(struct app *app, http_req *req, const route_params *p);
void api_e2b_process_close_stdin(struct app *app, http_req *req, const route_params *p);
void api_e2b_fs_stat(struct app *app, http_req *req, const route_params *p);
void api_e2b_fs_listdir(struct app *app, http_req *req, const route_params *p);
void api_e2b_fs_mkdir(struct app *app, http_req *req, const route_params *p);
void api_e2b_fs_move(struct app *app, http_req *req, const route_params *p);
void api_e2b_fs_remove(struct app *app, http_req *req, const route_params *p);
void api_e2b_unimplemented(struct app *app, http_req *req, const route_params *p);
void api_e2b_health(struct app *app, http_req *req, const route_params *p);

#endif
