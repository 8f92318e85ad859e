/*
 * cmd_mcp.c — `sbx mcp`: an MCP server over stdio for agents that launch a command
 * (docs/mcp.md). It reads newline-delimited JSON-RPC messages on stdin and forwards each,
 * in order and one at a time, to the daemon's /mcp (Streamable HTTP), keeping the
 * Mcp-Session-Id that initialize's response gave; every JSON-RPC message of the answer
 * (a JSON body, or each `data:` of an SSE stream) goes to stdout as one line. Nothing
 * but protocol messages is ever written to stdout; diagnostics go to stderr.
 *
 * An answer that is not JSON-RPC (401 for a missing token, the daemon unreachable) is
 * turned into a JSON-RPC error for the request's id, so the agent sees why. At EOF the
 * session is ended (DELETE /mcp). A line is at most MCP_LINE_CAP bytes (a longer one is
 * answered with a parse error, never cut); an answer at most CL_JSON_CAP.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sbx.h"

#define MCP_LINE_CAP ((size_t)64 << 20)

struct fwd {
    CURL *curl;
    char url[2048];
    const char *token;
    char session[128];
    buf body;
    char ctype[128];
    char version[32]; /* the protocol revision initialize agreed on, "" before */
    bool in_event;    /* an SSE event's data is being printed */
};

/* One line of an SSE body: a data line is printed (an event's data lines joined), the
 * blank line that ends an event ends its line on stdout. */
static void sse_line(struct fwd *f, const char *p, size_t ll)
{
    if (ll && p[ll - 1] == '\r')
        ll--;
    if (ll == 0 && f->in_event) {
        putchar('\n');
        fflush(stdout);
        f->in_event = false;
    } else if (ll >= 5 && strncmp(p, "data:", 5) == 0) {
        size_t skip = ll > 5 && p[5] == ' ' ? 6 : 5;
        fwrite(p + skip, 1, ll - skip, stdout);
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
static void emit_error(const char *line, int code, const char *msg)
{
    json_t *m = json_loads(line, 0, NULL);
    json_t *id = json_object_get(m, "id");
    if (!m || id) {
        json_t *e = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                              id ? id : json_null(), "error", "code", code, "message", msg);
        char *s = json_dumps(e, JSON_COMPACT);
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(e);
    }
    json_decref(m);
}

/* POST (or DELETE, line NULL) to /mcp; the answer in f. 0, or a curl code. */
static CURLcode send_one(struct fwd *f, const char *method, const char *line)
{
    char hdr[640];
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    if (f->token && *f->token) {
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", f->token);
        h = curl_slist_append(h, hdr);
    }
    if (f->session[0]) {
        snprintf(hdr, sizeof hdr, "Mcp-Session-Id: %s", f->session);
        h = curl_slist_append(h, hdr);
    }
    if (f->version[0]) {
        snprintf(hdr, sizeof hdr, "MCP-Protocol-Version: %s", f->version);
        h = curl_slist_append(h, hdr);
    }
    buf_reset(&f->body);
    f->ctype[0] = '\0';
    curl_easy_setopt(f->curl, CURLOPT_URL, f->url);
    curl_easy_setopt(f->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(f->curl, CURLOPT_POSTFIELDS, line ? line : "");
    curl_easy_setopt(f->curl, CURLOPT_POSTFIELDSIZE, (long)(line ? strlen(line) : 0));
    curl_easy_setopt(f->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(f->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(f->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(f->curl, CURLOPT_HEADERDATA, f);
    CURLcode rc = curl_easy_perform(f->curl);
    curl_slist_free_all(h);
    return rc;
}

/* After initialize: the revision agreed on, sent on every later request as the
 * transport asks. */
static void note_version(struct fwd *f)
{
    if (f->version[0])
        return;
    json_t *m = json_loadb(f->body.data, f->body.len, 0, NULL);
    const char *v =
        json_string_value(json_object_get(json_object_get(m, "result"), "protocolVersion"));
    if (v && strlen(v) < sizeof f->version)
        snprintf(f->version, sizeof f->version, "%s", v);
    json_decref(m);
}

/* Forward one message and print what came back. */
static void forward(struct fwd *f, const char *line)
{
    CURLcode rc = send_one(f, "POST", line);
    long status = 0;
    curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
    char msg[512];
    if (rc != CURLE_OK) {
        snprintf(msg, sizeof msg, "sandboxd at %.200s is unreachable: %s", f->url,
                 curl_easy_strerror(rc));
        emit_error(line, -32603, msg);
    } else if (strncasecmp(f->ctype, "text/event-stream", 17) == 0) {
        if (f->body.len) /* a last line without its newline */
            sse_line(f, f->body.data, f->body.len);
        if (f->in_event)
            putchar('\n');
        f->in_event = false;
    } else if (f->body.len && f->body.data && strstr(f->body.data, "\"jsonrpc\"")) {
        fwrite(f->body.data, 1, f->body.len, stdout);
        putchar('\n');
        note_version(f);
    } else if (status >= 300) {
        snprintf(msg, sizeof msg, "HTTP %ld from sandboxd: %.400s", status,
                 f->body.data ? f->body.data : "");
        emit_error(line, -32603, msg);
    }
    fflush(stdout);
}

int cmd_mcp(sbx_client *c, const sbx_args *a)
{
    struct fwd f = { .token = NULL };
    f.curl = curl_easy_init();
    if (!f.curl)
        return SBX_EXIT_API;
    snprintf(f.url, sizeof f.url, "%s/mcp", c->base);
    f.token = a->token; /* --token, else $SANDBOXD_TOKEN (main.c) */
    buf_init(&f.body, CL_JSON_CAP);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if ((size_t)n > MCP_LINE_CAP)
            emit_error("{}", -32700, "message longer than sbx mcp's 64 MiB line cap");
        else
            forward(&f, line);
    }
    free(line);
    if (f.session[0])
        send_one(&f, "DELETE", NULL);
    buf_free(&f.body);
    curl_easy_cleanup(f.curl);
    return 0;
}
