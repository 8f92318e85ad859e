/*
 * cmd_mcp.c — `sbx mcp`: an MCP server over stdio for agents that launch a command
 * (docs/mcp.md). It reads newline-delimited JSON-RPC messages on stdin and forwards each
 * to the daemon's /mcp (Streamable HTTP), keeping the Mcp-Session-Id that initialize's
 * response gave; every JSON-RPC message of the answer (a JSON body, or each event of an
 * SSE stream, as it arrives) goes to stdout as one line, written whole under a lock.
 * Nothing but protocol messages is ever written to stdout; diagnostics go to stderr.
 *
 * Order: every message is forwarded in the order read and answered before the next one,
 * except tools/call requests, which each get a thread of their own (at most
 * MCP_MAX_INFLIGHT at once; past it they too are forwarded in line), so that a long run
 * does not hold up the messages after it: a notifications/cancelled for it, a ping,
 * another call. The threads are joined at EOF, then the session is ended (DELETE /mcp).
 *
 * An answer that is not JSON-RPC (401 for a missing token, the daemon unreachable) is
 * turned into a JSON-RPC error for the request's id, so the agent sees why. A line is at
 * most MCP_LINE_CAP bytes (a longer one is answered with a parse error, never cut); an
 * answer at most CL_JSON_CAP.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sbx.h"

#define MCP_LINE_CAP ((size_t)64 << 20)
#define MCP_MAX_INFLIGHT 16

/* What every forward shares; session and version are read and written under lock. */
struct shared {
    char url[2048];
    const char *token;
    char session[128];
    char version[32]; /* the protocol revision initialize agreed on, "" before */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    int inflight; /* threads forwarding a tools/call */
};

/* One message forwarded: its own handle and answer. */
struct fwd {
    struct shared *sh;
    CURL *curl;
    char *line; /* the message (owned by a thread's fwd) */
    buf body;
    buf event; /* the data of the SSE event being read */
    char ctype[128];
    char session[128]; /* Mcp-Session-Id of the answer */
    bool in_event;
};

/* Write one line to stdout whole. */
static void out_line(struct shared *sh, const char *p, size_t n)
{
    pthread_mutex_lock(&sh->lock);
    fwrite(p, 1, n, stdout);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&sh->lock);
}

/* One line of an SSE body: data lines are collected, the blank line that ends an event
 * sends it. */
static void sse_line(struct fwd *f, const char *p, size_t ll)
{
    if (ll && p[ll - 1] == '\r')
        ll--;
    if (ll == 0 && f->in_event) {
        out_line(f->sh, f->event.data ? f->event.data : "", f->event.len);
        buf_reset(&f->event);
        f->in_event = false;
    } else if (ll >= 5 && strncmp(p, "data:", 5) == 0) {
        size_t skip = ll > 5 && p[5] == ' ' ? 6 : 5;
        buf_append(&f->event, p + skip, ll - skip);
        f->in_event = true;
    }
}

/* The body as it arrives: an event stream is passed on event by event (progress
 * notifications reach the agent while the call runs); anything else is kept whole. */
static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct fwd *f = ud;
    if (buf_append(&f->body, p, size * n))
        return 0;
    if (strncasecmp(f->ctype, "text/event-stream", 17) != 0)
        return size * n;
    char *nl;
    while (f->body.len && (nl = memchr(f->body.data, '\n', f->body.len))) {
        size_t ll = (size_t)(nl - f->body.data);
        sse_line(f, f->body.data, ll);
        buf_consume(&f->body, ll + 1);
    }
    return size * n;
}

/* Keep Mcp-Session-Id and Content-Type of the answer. */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct fwd *f = ud;
    size_t len = size * n;
    static const struct {
        const char *name;
        size_t off, cap;
    } KEEP[] = {
        { "mcp-session-id:", offsetof(struct fwd, session), sizeof(((struct fwd *)0)->session) },
        { "content-type:", offsetof(struct fwd, ctype), sizeof(((struct fwd *)0)->ctype) },
    };
    for (size_t i = 0; i < sizeof KEEP / sizeof KEEP[0]; i++) {
        size_t nl = strlen(KEEP[i].name);
        if (len <= nl || strncasecmp(p, KEEP[i].name, nl) != 0)
            continue;
        const char *v = p + nl;
        size_t vl = len - nl;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl < KEEP[i].cap) {
            char *dst = (char *)f + KEEP[i].off;
            memcpy(dst, v, vl);
            dst[vl] = '\0';
        }
    }
    return len;
}

/* A JSON-RPC error for the request in line (none for a notification). */
static void emit_error(struct shared *sh, const char *line, int code, const char *msg)
{
    json_t *m = json_loads(line, 0, NULL);
    json_t *id = json_object_get(m, "id");
    if (!m || id) {
        json_t *e = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                              id ? id : json_null(), "error", "code", code, "message", msg);
        char *s = json_dumps(e, JSON_COMPACT);
        if (s)
            out_line(sh, s, strlen(s));
        free(s);
        json_decref(e);
    }
    json_decref(m);
}

/* POST (or DELETE, line NULL) to /mcp; the answer in f. 0, or a curl code. */
static CURLcode send_one(struct fwd *f, const char *method, const char *line)
{
    struct shared *sh = f->sh;
    char hdr[640];
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    if (sh->token && *sh->token) {
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", sh->token);
        h = curl_slist_append(h, hdr);
    }
    pthread_mutex_lock(&sh->lock);
    if (sh->session[0]) {
        snprintf(hdr, sizeof hdr, "Mcp-Session-Id: %s", sh->session);
        h = curl_slist_append(h, hdr);
    }
    if (sh->version[0]) {
        snprintf(hdr, sizeof hdr, "MCP-Protocol-Version: %s", sh->version);
        h = curl_slist_append(h, hdr);
    }
    pthread_mutex_unlock(&sh->lock);
    curl_easy_setopt(f->curl, CURLOPT_URL, sh->url);
    curl_easy_setopt(f->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(f->curl, CURLOPT_POSTFIELDS, line ? line : "");
    curl_easy_setopt(f->curl, CURLOPT_POSTFIELDSIZE, (long)(line ? strlen(line) : 0));
    curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(f->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(f->curl, CURLOPT_HEADERDATA, f);
    curl_easy_setopt(f->curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(f->curl);
    curl_slist_free_all(h);
    return rc;
}

/* After initialize: the session and the revision agreed on, sent on every later
 * request as the transport asks. */
static void note_session(struct fwd *f)
{
    json_t *m = json_loadb(f->body.data, f->body.len, 0, NULL);
    const char *v =
        json_string_value(json_object_get(json_object_get(m, "result"), "protocolVersion"));
    pthread_mutex_lock(&f->sh->lock);
    if (v && f->session[0]) {
        snprintf(f->sh->session, sizeof f->sh->session, "%s", f->session);
        snprintf(f->sh->version, sizeof f->sh->version, "%.31s", v);
    }
    pthread_mutex_unlock(&f->sh->lock);
    json_decref(m);
}

/* Forward f->line and print what came back. */
static void forward(struct fwd *f)
{
    CURLcode rc = send_one(f, "POST", f->line);
    long status = 0;
    curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
    char msg[512];
    if (rc != CURLE_OK) {
        snprintf(msg, sizeof msg, "sandboxd at %.200s is unreachable: %s", f->sh->url,
                 curl_easy_strerror(rc));
        emit_error(f->sh, f->line, -32603, msg);
    } else if (strncasecmp(f->ctype, "text/event-stream", 17) == 0) {
        if (f->body.len) /* a last line without its newline */
            sse_line(f, f->body.data, f->body.len);
        if (f->in_event)
            sse_line(f, "", 0);
    } else if (f->body.len && f->body.data && strstr(f->body.data, "\"jsonrpc\"")) {
        out_line(f->sh, f->body.data, f->body.len);
        if (f->session[0])
            note_session(f);
    } else if (status >= 300) {
        snprintf(msg, sizeof msg, "HTTP %ld from sandboxd: %.400s", status,
                 f->body.data ? f->body.data : "");
        emit_error(f->sh, f->line, -32603, msg);
    }
}

static struct fwd *fwd_new(struct shared *sh, const char *line)
{
    struct fwd *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->sh = sh;
    f->curl = curl_easy_init();
    f->line = line ? strdup(line) : NULL;
    if (!f->curl || (line && !f->line)) {
        curl_easy_cleanup(f->curl);
        free(f);
        return NULL;
    }
    buf_init(&f->body, CL_JSON_CAP);
    buf_init(&f->event, CL_JSON_CAP);
    return f;
}

static void fwd_free(struct fwd *f)
{
    buf_free(&f->body);
    buf_free(&f->event);
    curl_easy_cleanup(f->curl);
    free(f->line);
    free(f);
}

static void *call_thread(void *arg)
{
    struct fwd *f = arg;
    struct shared *sh = f->sh;
    forward(f);
    fwd_free(f);
    pthread_mutex_lock(&sh->lock);
    sh->inflight--;
    pthread_cond_signal(&sh->idle);
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

/* True for a tools/call request (its own thread). */
static bool is_call(const char *line)
{
    json_t *m = json_loads(line, 0, NULL);
    const char *method = json_string_value(json_object_get(m, "method"));
    bool yes = method && strcmp(method, "tools/call") == 0 && json_object_get(m, "id");
    json_decref(m);
    return yes;
}

/* Forward line: in a thread of its own when it is a tools/call and there is room. */
static void dispatch(struct shared *sh, const char *line)
{
    struct fwd *f = fwd_new(sh, line);
    if (!f) {
        emit_error(sh, line, -32603, "sbx mcp: out of memory");
        return;
    }
    pthread_mutex_lock(&sh->lock);
    bool threaded = sh->inflight < MCP_MAX_INFLIGHT && is_call(line);
    if (threaded)
        sh->inflight++;
    pthread_mutex_unlock(&sh->lock);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (threaded && pthread_create(&t, &at, call_thread, f) == 0) {
        pthread_attr_destroy(&at);
        return;
    }
    pthread_attr_destroy(&at);
    if (threaded) {
        pthread_mutex_lock(&sh->lock);
        sh->inflight--;
        pthread_mutex_unlock(&sh->lock);
    }
    forward(f);
    fwd_free(f);
}

int cmd_mcp(sbx_client *c, const sbx_args *a)
{
    struct shared sh = { .token = a->token }; /* --token, else $SANDBOXD_TOKEN (main.c) */
    snprintf(sh.url, sizeof sh.url, "%s/mcp", c->base);
    json_object_seed(0); /* before any thread: jansson's hash seed is then set once */
    pthread_mutex_init(&sh.lock, NULL);
    pthread_cond_init(&sh.idle, NULL);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if ((size_t)n > MCP_LINE_CAP)
            emit_error(&sh, "", -32700, "message longer than sbx mcp's 64 MiB line cap");
        else
            dispatch(&sh, line);
    }
    free(line);
    pthread_mutex_lock(&sh.lock);
    while (sh.inflight)
        pthread_cond_wait(&sh.idle, &sh.lock);
    pthread_mutex_unlock(&sh.lock);
    struct fwd *f = sh.session[0] ? fwd_new(&sh, NULL) : NULL;
    if (f) {
        send_one(f, "DELETE", NULL);
        fwd_free(f);
    }
    pthread_cond_destroy(&sh.idle);
    pthread_mutex_destroy(&sh.lock);
    return 0;
}
