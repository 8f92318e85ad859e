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
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct fwd *f = ud;
    return buf_append(&f->body, p, size * n) ? 0 : size * n;
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

/* Each `data:` payload of an SSE body, one line each (an event's data lines joined). */
static void emit_sse(const char *p, size_t n)
{
    const char *end = p + n;
    bool pending = false;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = (size_t)((nl ? nl : end) - p);
        if (ll && p[ll - 1] == '\r')
            ll--;
        if (ll == 0 && pending) {
            putchar('\n');
            pending = false;
        } else if (ll >= 5 && strncmp(p, "data:", 5) == 0) {
            size_t skip = ll > 5 && p[5] == ' ' ? 6 : 5;
            fwrite(p + skip, 1, ll - skip, stdout);
            pending = true;
        }
        p = nl ? nl + 1 : end;
    }
    if (pending)
        putchar('\n');
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
        emit_sse(f->body.data ? f->body.data : "", f->body.len);
    } else if (f->body.len && f->body.data && strstr(f->body.data, "\"jsonrpc\"")) {
        fwrite(f->body.data, 1, f->body.len, stdout);
        putchar('\n');
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
