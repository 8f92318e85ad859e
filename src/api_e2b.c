/*
 * api_e2b.c — what the E2B handlers share (see api_e2b.h): the request's sandbox
 * (get-or-create from E2b-Sandbox-Id), Connect error answers, the Connect envelope
 * (parsed strictly: one message, its declared length checked against the cap and the
 * body before anything is read), base64 both ways, and GET /health.
 */
#include "api_e2b.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "log.h"

/* ---- the sandbox ---- */

struct pending {
    struct app *app;
    http_req *req;
    e2b_sandbox_cb cb;
    void *arg;
};

static void created(sandbox *s, const char *id, int rc, const char *err, void *arg)
{
    struct pending *pd = arg;
    if (rc) {
        log_error("sandbox %s: cannot create: %s", id, err);
        http_respond_error(pd->req, 500, "INTERNAL_ERROR", "cannot create sandbox '%s': %s", id,
                           err && err[0] ? err : strerror(-rc));
        s = NULL;
    } else {
        log_info("sandbox %s created (E2B)", id);
    }
    pd->cb(pd->app, pd->req, s, pd->arg);
    free(pd);
}

void e2b_with_sandbox(struct app *app, http_req *req, e2b_sandbox_cb cb, void *arg)
{
    const char *id = req->sandbox_header[0] ? req->sandbox_header : "default";
    if (!sbx_valid_id(id)) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "'%.80s' (E2b-Sandbox-Id) is not a valid sandbox id "
                           "([A-Za-z0-9][A-Za-z0-9._-]{0,62})",
                           id);
        cb(app, req, NULL, arg);
        return;
    }
    sandbox *s = sbx_find(id);
    if (s) {
        cb(app, req, s, arg);
        return;
    }
    struct pending *pd = calloc(1, sizeof *pd);
    if (!pd) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        cb(app, req, NULL, arg);
        return;
    }
    *pd = (struct pending){ app, req, cb, arg };
    char err[256] = "";
    int rc = sbx_ensure(id, created, pd, err, sizeof err);
    if (rc == 0)
        return;
    free(pd);
    if (rc == -EMFILE || rc == -EBUSY)
        http_respond_error(req, 429, "LIMIT_REACHED", "%s",
                           err[0] ? err : "too many sandboxes or requests waiting for one");
    else
        http_respond_error(req, 500, "INTERNAL_ERROR", "cannot create sandbox '%s': %s", id,
                           err[0] ? err : strerror(-rc));
    cb(app, req, NULL, arg);
}

/* ---- Connect ---- */

/* Each code's wire name and HTTP status (connectrpc.com/docs/protocol#error-codes). */
static const struct {
    const char *name;
    int status;
} CODES[] = {
    [E2B_INVALID_ARGUMENT] = { "invalid_argument", 400 },
    [E2B_NOT_FOUND] = { "not_found", 404 },
    [E2B_ALREADY_EXISTS] = { "already_exists", 409 },
    [E2B_RESOURCE_EXHAUSTED] = { "resource_exhausted", 429 },
    [E2B_UNIMPLEMENTED] = { "unimplemented", 501 },
    [E2B_INTERNAL] = { "internal", 500 },
    [E2B_FAILED_PRECONDITION] = { "failed_precondition", 400 },
};

const char *e2b_code_name(enum e2b_code code)
{
    return CODES[code].name;
}

void e2b_unary_error(http_req *req, enum e2b_code code, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *j = json_pack("{s:s, s:s}", "code", CODES[code].name, "message", msg);
    api_respond_json(req, CODES[code].status, j);
}

json_t *e2b_connect_request(const http_req *req, bool streaming, char *err, size_t errlen)
{
    const unsigned char *d = (const unsigned char *)req->body.data;
    size_t n = req->body.len;
    if (streaming) {
        if (n < 5) {
            snprintf(err, errlen, "the request is not one enveloped Connect message (%zu bytes)",
                     n);
            return NULL;
        }
        uint32_t len = (uint32_t)d[1] << 24 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 8 | d[4];
        if (d[0] != 0) {
            snprintf(err, errlen,
                     "envelope flags 0x%02x are not supported (only 0: no compression)", d[0]);
            return NULL;
        }
        if ((size_t)len != n - 5) {
            snprintf(err, errlen, "the envelope declares %u bytes but %zu follow", len, n - 5);
            return NULL;
        }
        d += 5;
        n = len;
    }
    if (n == 0)
        return json_object();
    json_error_t je;
    json_t *j = json_loadb((const char *)d, n, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(err, errlen, "the message is not valid JSON: %s", je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        snprintf(err, errlen, "the message must be a JSON object");
        return NULL;
    }
    return j;
}

int e2b_connect_frame(buf *b, unsigned flags, const char *json, size_t len)
{
    unsigned char hdr[5] = { (unsigned char)flags, (unsigned char)(len >> 24),
                             (unsigned char)(len >> 16), (unsigned char)(len >> 8),
                             (unsigned char)len };
    int rc = buf_append(b, hdr, 5);
    return rc ? rc : buf_append(b, json, len);
}

/* ---- base64 ---- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int e2b_base64(buf *b, const void *data, size_t n)
{
    const unsigned char *p = data;
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        q[0] = B64[v >> 18 & 63];
        q[1] = B64[v >> 12 & 63];
        q[2] = i + 1 < n ? B64[v >> 6 & 63] : '=';
        q[3] = i + 2 < n ? B64[v & 63] : '=';
        int rc = buf_append(b, q, 4);
        if (rc)
            return rc;
    }
    return 0;
}

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+' || ch == '-')
        return 62;
    if (ch == '/' || ch == '_')
        return 63;
    return -1;
}

int e2b_unbase64(buf *b, const char *s, size_t n)
{
    while (n && s[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return -EINVAL;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0)
            return -EINVAL;
        acc = (acc << 6 | (unsigned)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            unsigned char ch = (unsigned char)(acc >> bits);
            int rc = buf_append(b, &ch, 1);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* ---- GET /health (the code interpreter's readiness probe) ---- */

void api_e2b_health(struct app *app, http_req *req, const route_params *p)
{
    (void)app;
    (void)p;
    http_respond(req, 200, "application/json", "\"OK\"", 4, NULL);
}
