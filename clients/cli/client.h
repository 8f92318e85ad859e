/*
 * client.h — the sbx command line's HTTP client: libcurl to one sandboxd daemon.
 *
 * One easy handle per client, reused so requests share a keep-alive connection. Every
 * response body is capped (the caller says how much it accepts); streamed responses go
 * through the SSE parser and reach a callback per event as the daemon sends it. Errors are
 * values: functions return 0 or a negative errno, and a transport failure leaves a
 * human-readable message in client->err. HTTP error statuses are not transport failures:
 * the caller sees the status and the body, and cl_print_error() renders the API's error
 * envelope {"code","message"} for the user.
 */
#ifndef SBX_CLI_CLIENT_H
#define SBX_CLI_CLIENT_H

#include <stdbool.h>
#include <stdio.h>

#include <curl/curl.h>

#include "buf.h"
#include "sse_parse.h"

#define CL_JSON_CAP ((size_t)64 << 20)     /* a JSON answer (execute results hold images) */
#define CL_ERR_CAP ((size_t)64 << 10)      /* an error body */

typedef struct sbx_client {
    CURL *curl;
    char *base;                  /* url without trailing '/', owned */
    struct curl_slist *auth;     /* "Authorization: Bearer …" or NULL */
    char err[CURL_ERROR_SIZE + 128];
    /* Called about once a second during a transfer (and on every chunk); non-zero aborts. */
    int (*on_progress)(void *ud);
    void *progress_ud;
} sbx_client;

typedef struct sbx_resp {
    long status;
    buf body;                    /* 2xx body (buffered modes) or the error body */
    char ctype[128];             /* Content-Type, "" when absent */
    char exec_id[64];            /* X-Execution-Id, "" until its header arrives */
} sbx_resp;

int cl_init(sbx_client *c, const char *url, const char *token);
void cl_free(sbx_client *c);
void cl_resp_init(sbx_resp *r, size_t cap);
void cl_resp_free(sbx_resp *r);

/* A request with an optional body (json: Content-Type application/json when body is text
 * starting with '{'; else octet-stream). 0 when the exchange completed (any status). */
int cl_request(sbx_client *c, const char *method, const char *path, const void *body,
               size_t len, sbx_resp *r);
/* POST/GET with Accept: text/event-stream; each event of a 2xx event-stream answer reaches
 * cb. Any other answer is buffered in r->body (capped). 0 or -errno (the callback's non-zero
 * return is passed back as -ECANCELED). */
int cl_stream(sbx_client *c, const char *method, const char *path, const char *json,
              ssep_cb cb, void *ud, sbx_resp *r);
/* PUT a local file (size bytes) as the raw body. */
int cl_upload(sbx_client *c, const char *path, FILE *in, long long size, sbx_resp *r);
/* GET into out when the status is 2xx (error bodies go to r->body). */
int cl_download(sbx_client *c, const char *path, FILE *out, sbx_resp *r);

/* Percent-encode s for a URL path; a '/' is kept when keep_slash. Caller frees; NULL on OOM. */
char *cl_escape(const char *s, bool keep_slash);
/* Print "sbx: CODE: message" from an error response (or the transport error). */
void cl_print_error(const sbx_client *c, int rc, const sbx_resp *r);

#endif
