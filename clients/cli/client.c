/*
 * client.c — libcurl transport for sbx (see client.h).
 *
 * The write callback decides per response where bytes go: a 2xx event stream into the SSE
 * parser, a 2xx download into the caller's FILE, anything else into a capped buffer. Going
 * past a cap aborts the transfer with a reported error; nothing grows without bound.
 */
#include "client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

enum sink { SINK_BUF, SINK_SSE, SINK_FILE };

typedef struct xfer {
    sbx_client *c;
    sbx_resp *r;
    enum sink sink;
    ssep parser;
    ssep_cb cb;
    void *ud;
    FILE *out;
    int cb_rc;        /* non-zero: the SSE callback stopped the stream */
    int fail;         /* -E2BIG / -EIO raised inside the write callback */
} xfer;

int cl_init(sbx_client *c, const char *url, const char *token)
{
    memset(c, 0, sizeof(*c));
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    c->base = strndup(url, n);
    c->curl = curl_easy_init();
    if (!c->base || !c->curl)
        goto fail;
    if (token && *token) {
        buf h;
        buf_init(&h, 4096);
        if (buf_printf(&h, "Authorization: Bearer %s", token) != 0) {
            buf_free(&h);
            goto fail;
        }
        c->auth = curl_slist_append(NULL, h.data);
        buf_free(&h);
        if (!c->auth)
            goto fail;
    }
    return 0;
fail:
    cl_free(c);
    return -ENOMEM;
}

void cl_free(sbx_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->auth);
    free(c->base);
    c->curl = NULL;
    c->auth = NULL;
    c->base = NULL;
}

void cl_resp_init(sbx_resp *r, size_t cap)
{
    r->status = 0;
    r->ctype[0] = '\0';
    r->exec_id[0] = '\0';
    buf_init(&r->body, cap);
}

void cl_resp_free(sbx_resp *r)
{
    if (r)
        buf_free(&r->body);
}

static bool status_ok(xfer *x)
{
    long st = 0;
    curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &st);
    return st >= 200 && st < 300;
}

static bool is_event_stream(xfer *x)
{
    char *ct = NULL;
    curl_easy_getinfo(x->c->curl, CURLINFO_CONTENT_TYPE, &ct);
    return ct && strncasecmp(ct, "text/event-stream", 17) == 0;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->sink == SINK_SSE && status_ok(x) && is_event_stream(x)) {
        int rc = ssep_feed(&x->parser, ptr, n, x->cb, x->ud);
        if (rc == -E2BIG || rc == -ENOMEM) {
            x->fail = rc;
            return 0;
        }
        if (rc != 0) {
            x->cb_rc = rc;
            return 0;
        }
        return n;
    }
    if (x->sink == SINK_FILE && status_ok(x)) {
        if (fwrite(ptr, 1, n, x->out) != n) {
            x->fail = -EIO;
            return 0;
        }
        return n;
    }
    int rc = buf_append(&x->r->body, ptr, n);
    if (rc) {
        x->fail = rc;
        return 0;
    }
    return n;
}

static int on_xferinfo(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    xfer *x = ud;
    if (x->c->on_progress && x->c->on_progress(x->c->progress_ud) != 0) {
        x->cb_rc = 1;
        return 1;
    }
    return 0;
}

/* A response header: keeps X-Execution-Id (the run, for an interrupt while it streams). */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    static const char name[] = "x-execution-id:";
    if (n > sizeof(name) - 1 && strncasecmp(ptr, name, sizeof(name) - 1) == 0) {
        const char *v = ptr + sizeof(name) - 1;
        size_t vl = n - (sizeof(name) - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl < sizeof(x->r->exec_id)) {
            memcpy(x->r->exec_id, v, vl);
            x->r->exec_id[vl] = '\0';
        }
    }
    return n;
}

/* Everything common to one exchange: URL, method, headers, callbacks, perform. */
static int perform(sbx_client *c, const char *method, const char *path,
                   struct curl_slist *extra, xfer *x)
{
    CURL *h = c->curl;
    buf url;
    buf_init(&url, 16384);
    int rc = buf_printf(&url, "%s%s", c->base, path);
    if (rc) {
        buf_free(&url);
        snprintf(c->err, sizeof(c->err), "URL too long");
        return rc;
    }
    struct curl_slist *hdrs = NULL, *tmp;
    for (struct curl_slist *s = extra; s; s = s->next)
        if ((tmp = curl_slist_append(hdrs, s->data)) != NULL)
            hdrs = tmp;
    for (struct curl_slist *s = c->auth; s; s = s->next)
        if ((tmp = curl_slist_append(hdrs, s->data)) != NULL)
            hdrs = tmp;
    if ((tmp = curl_slist_append(hdrs, "Expect:")) != NULL)
        hdrs = tmp;
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url.data);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_xferinfo);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "sbx/" SANDBOXD_VERSION);
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x->r->status);
    char *ct = NULL;
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(x->r->ctype, sizeof(x->r->ctype), "%s", ct ? ct : "");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(hdrs);
    rc = 0;
    if (x->cb_rc) {
        rc = -ECANCELED;
    } else if (x->fail) {
        rc = x->fail;
        snprintf(c->err, sizeof(c->err), "%s %s: %s", method, url.data,
                 rc == -E2BIG ? "response larger than the client accepts" : strerror(-rc));
    } else if (cc != CURLE_OK) {
        rc = -EIO;
        snprintf(c->err, sizeof(c->err), "%s %s: %s", method, url.data,
                 errbuf[0] ? errbuf : curl_easy_strerror(cc));
    }
    buf_free(&url);
    return rc;
}

static void reset_body(sbx_client *c)
{
    curl_easy_setopt(c->curl, CURLOPT_UPLOAD, 0L);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
    curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->curl, CURLOPT_NOBODY, 0L);
}

static void set_body(sbx_client *c, const void *body, size_t len)
{
    reset_body(c);
    if (body) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
    }
}

int cl_request(sbx_client *c, const char *method, const char *path, const void *body,
               size_t len, sbx_resp *r)
{
    xfer x = { .c = c, .r = r, .sink = SINK_BUF };
    bool json = body && len > 0 && ((const char *)body)[0] == '{';
    struct curl_slist *h = curl_slist_append(NULL, json ? "Content-Type: application/json"
                                                        : "Content-Type: application/octet-stream");
    if (body)
        set_body(c, body, len);
    else
        reset_body(c);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
    int rc = perform(c, method, path, h, &x);
    curl_slist_free_all(h);
    return rc;
}

int cl_stream(sbx_client *c, const char *method, const char *path, const char *json,
              ssep_cb cb, void *ud, sbx_resp *r)
{
    xfer x = { .c = c, .r = r, .sink = SINK_SSE, .cb = cb, .ud = ud };
    ssep_init(&x.parser, CL_JSON_CAP);
    struct curl_slist *h = curl_slist_append(NULL, "Accept: text/event-stream");
    struct curl_slist *t = curl_slist_append(h, "Content-Type: application/json");
    if (t)
        h = t;
    if (json)
        set_body(c, json, strlen(json));
    else
        reset_body(c);
    int rc = perform(c, method, path, h, &x);
    curl_slist_free_all(h);
    ssep_free(&x.parser);
    return rc;
}

int cl_upload(sbx_client *c, const char *path, FILE *in, long long size, sbx_resp *r)
{
    xfer x = { .c = c, .r = r, .sink = SINK_BUF };
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    reset_body(c);
    curl_easy_setopt(c->curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c->curl, CURLOPT_READDATA, in);
    curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, NULL);
    curl_easy_setopt(c->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
    int rc = perform(c, "PUT", path, h, &x);
    curl_easy_setopt(c->curl, CURLOPT_UPLOAD, 0L);
    curl_slist_free_all(h);
    return rc;
}

int cl_download(sbx_client *c, const char *path, FILE *out, sbx_resp *r)
{
    xfer x = { .c = c, .r = r, .sink = SINK_FILE, .out = out };
    struct curl_slist *h = curl_slist_append(NULL, "Accept: */*");
    reset_body(c);
    int rc = perform(c, "GET", path, h, &x);
    curl_slist_free_all(h);
    return rc;
}

char *cl_escape(const char *s, bool keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(n * 3 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/')) {
            *o++ = (char)ch;
        } else {
            *o++ = '%';
            *o++ = hex[ch >> 4];
            *o++ = hex[ch & 15];
        }
    }
    *o = '\0';
    return out;
}

void cl_print_error(const sbx_client *c, int rc, const sbx_resp *r)
{
    if (rc != 0 && rc != -ECANCELED) {
        fprintf(stderr, "sbx: %s\n", c->err[0] ? c->err : strerror(-rc));
        return;
    }
    if (rc == -ECANCELED) {
        fprintf(stderr, "sbx: interrupted\n");
        return;
    }
    json_error_t jerr;
    json_t *doc = r->body.len ? json_loadb(r->body.data, r->body.len, 0, &jerr) : NULL;
    const char *code = json_string_value(json_object_get(doc, "code"));
    const char *msg = json_string_value(json_object_get(doc, "message"));
    if (code && msg)
        fprintf(stderr, "sbx: %s: %s\n", code, msg);
    else
        fprintf(stderr, "sbx: HTTP %ld: %.*s\n", r->status, (int)(r->body.len > 300 ? 300 : r->body.len),
                r->body.data ? r->body.data : "");
    json_decref(doc);
}
