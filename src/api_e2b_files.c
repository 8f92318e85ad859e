/*
 * api_e2b_files.c — envd's file transfer routes as the E2B SDK calls them (docs/compat.md
 * "E2B"): GET /files?path=P answers the file's bytes, POST /files?path=P takes
 * multipart/form-data (one part named "file" per file, its filename the path when no
 * path is given) or a raw application/octet-stream body, and answers
 * [{"name","type":"file","path"}].
 *
 * Both are the native files routes underneath: GET is api_files_get itself, and each
 * uploaded file is written by api_files_write, the same writer in the sandbox as PUT
 * (charged to the sandbox, atomic, confined by files.c). The body is buffered by the HTTP
 * server, so it is capped by --max-body-bytes (413) and each file by --max-file-bytes.
 * The multipart parser looks only inside the body it was given: at most --max-upload-files
 * parts, part headers of at most PART_HEADERS_MAX bytes, and anything malformed (no
 * boundary, a part without its closing delimiter, no filename and no path) is a 400.
 */
#include "api_e2b.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_json.h"
#include "files.h"
#include "jail.h"
#include "router.h"

#define PART_HEADERS_MAX 8192 /* one part's header block */
#define BOUNDARY_MAX 72       /* RFC 2046 allows 70 */

/* The value of name in the query string, percent-decoded ('+' is a space): 1 found, 0
 * absent, -1 when it does not fit in out or has a broken escape or a NUL. */
int e2b_query(const char *query, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    for (const char *q = query; q && *q;) {
        const char *end = strchr(q, '&');
        size_t len = end ? (size_t)(end - q) : strlen(q);
        if (len > nl && strncmp(q, name, nl) == 0 && q[nl] == '=') {
            if (router_pct_decode(q + nl + 1, len - nl - 1, true, out, outlen))
                return -1;
            return 1;
        }
        q = end ? end + 1 : NULL;
    }
    return 0;
}

/* ---- multipart/form-data ---- */

struct part {
    const char *data;
    size_t len;
    const char *hdr; /* the part's headers (for its filename), in the body */
    size_t hdr_len;
};

static const char *find(const char *h, size_t hn, const char *n, size_t nn)
{
    return memmem(h, hn, n, nn);
}

/* The boundary parameter of a multipart Content-Type (quotes removed); -1 when none. */
static int boundary_of(const char *ct, char *out, size_t outlen)
{
    const char *b = strcasestr(ct, "boundary=");
    if (!b)
        return -1;
    b += 9;
    bool quoted = *b == '"';
    b += quoted;
    size_t n = 0;
    while (b[n] && (quoted ? b[n] != '"' : b[n] != ';' && b[n] != ' '))
        n++;
    if (n == 0 || n >= outlen)
        return -1;
    memcpy(out, b, n);
    out[n] = '\0';
    return 0;
}

/* filename="…" of a part's headers into out; 0, or -1 when absent or too long. */
static int filename_of(const char *h, size_t hn, char *out, size_t outlen)
{
    const char *f = find(h, hn, "filename=\"", 10);
    if (!f)
        return -1;
    f += 10;
    size_t o = 0;
    for (const char *e = h + hn; f < e && *f != '"'; f++) {
        char ch = *f;
        if (ch == '%' && e - f >= 3 &&
            (!strncmp(f, "%22", 3) || !strncasecmp(f, "%0D", 3) || !strncasecmp(f, "%0A", 3))) {
            ch = f[2] == '2' ? '"' : (f[2] == 'D' || f[2] == 'd') ? '\r' : '\n';
            f += 2;
        }
        if (o + 1 >= outlen)
            return -1;
        out[o++] = ch;
    }
    out[o] = '\0';
    return 0;
}

/* Split body into parts; 0, or -1 with err set. */
static int multipart_parse(const char *body, size_t n, const char *boundary, struct part *parts,
                           size_t max, size_t *count, char *err, size_t errlen)
{
    char delim[BOUNDARY_MAX + 8];
    int dl = snprintf(delim, sizeof delim, "\r\n--%s", boundary);
    /* the first delimiter may start the body (no CRLF before it) */
    const char *p =
        n >= (size_t)dl - 2 && !memcmp(body, delim + 2, (size_t)dl - 2) ? body + dl - 2 : NULL;
    if (!p) {
        const char *f = find(body, n, delim, (size_t)dl);
        p = f ? f + dl : NULL;
    }
    *count = 0;
    const char *end = body + n;
    while (p) {
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return *count ? 0 : (snprintf(err, errlen, "the multipart body has no part"), -1);
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
            break;
        p += 2;
        size_t left = (size_t)(end - p);
        const char *he = find(p, left < PART_HEADERS_MAX ? left : PART_HEADERS_MAX, "\r\n\r\n", 4);
        if (!he || *count >= max)
            break;
        struct part *pt = &parts[*count];
        pt->hdr = p;
        pt->hdr_len = (size_t)(he - p);
        pt->data = he + 4;
        const char *next = find(pt->data, (size_t)(end - pt->data), delim, (size_t)dl);
        if (!next)
            break;
        pt->len = (size_t)(next - pt->data);
        (*count)++;
        p = next + dl;
    }
    if (*count >= max)
        snprintf(err, errlen, "more than %zu files in one upload (--max-upload-files)", max);
    else
        snprintf(err, errlen,
                 "the multipart body is malformed (a part's headers or its closing "
                 "boundary are missing)");
    return -1;
}

/* ---- POST /files ---- */

struct upload_set {
    struct app *app;
    char sid[80];
    char path[FILES_PATH_MAX + 1]; /* the query's path, "" when none */
    struct part *parts;
    size_t n, next;
    json_t *answer;
};

static void set_free(struct upload_set *u)
{
    free(u->parts);
    json_decref(u->answer);
    free(u);
}

static void write_next(http_req *req, struct upload_set *u);

static void written(http_req *req, const char *shown, uint64_t size, void *arg)
{
    struct upload_set *u = arg;
    (void)size;
    if (!req) {
        set_free(u); /* the write failed; its error was answered */
        return;
    }
    const char *slash = strrchr(shown, '/');
    json_array_append_new(u->answer, json_pack("{s:s, s:s, s:s}", "name", slash ? slash + 1 : shown,
                                               "type", "file", "path", shown));
    write_next(req, u);
}

static void write_next(http_req *req, struct upload_set *u)
{
    if (u->next == u->n) {
        api_respond_json(req, 200, json_incref(u->answer));
        set_free(u);
        return;
    }
    struct part *pt = &u->parts[u->next++];
    char name[FILES_PATH_MAX + 1] = "";
    if (pt->hdr && filename_of(pt->hdr, pt->hdr_len, name, sizeof name))
        name[0] = '\0';
    const char *target = u->n == 1 && u->path[0] ? u->path : name;
    char rel[FILES_PATH_MAX + 1], err[256];
    sandbox *sb = sbx_find(u->sid);
    if (!target[0])
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           "a file has no path: give ?path= or a filename in its part");
    else if (files_normalize(target, rel, sizeof rel, err, sizeof err))
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
    else if (!sb)
        http_respond_error(req, 404, "SANDBOX_NOT_FOUND", "sandbox '%s' does not exist", u->sid);
    else {
        api_files_write(u->app, req, sb, rel, pt->data, pt->len, written, u);
        return; /* written is called, on success or failure */
    }
    set_free(u);
}

static void post_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    if (!sb)
        return;
    struct upload_set *u = calloc(1, sizeof *u);
    char err[256] = "", boundary[BOUNDARY_MAX];
    size_t max = app->cfg->max_upload_files;
    if (!u || !(u->parts = calloc(max, sizeof *u->parts))) {
        free(u);
        http_respond_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    u->app = app;
    u->answer = json_array();
    snprintf(u->sid, sizeof u->sid, "%s", sb->id);
    if (e2b_query(req->query, "path", u->path, sizeof u->path) < 0) {
        http_respond_error(req, 400, "VALIDATION_FAILED", "the query's 'path' is malformed");
    } else if (strncasecmp(req->content_type, "application/octet-stream", 24) == 0) {
        u->parts[0] =
            (struct part){ .data = req->body.data ? req->body.data : "", .len = req->body.len };
        u->n = 1;
        write_next(req, u);
        return;
    } else if (strncasecmp(req->content_type, "multipart/form-data", 19) != 0 ||
               boundary_of(req->content_type, boundary, sizeof boundary)) {
        http_respond_error(req, 415, "UNSUPPORTED_MEDIA_TYPE",
                           "POST /files takes multipart/form-data with a boundary, or "
                           "application/octet-stream");
    } else if (multipart_parse(req->body.data ? req->body.data : "", req->body.len, boundary,
                               u->parts, max, &u->n, err, sizeof err)) {
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
    } else {
        write_next(req, u);
        return;
    }
    set_free(u);
}

void api_e2b_files_post(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    if (req->body_encoded) {
        http_respond_error(req, 415, "UNSUPPORTED_MEDIA_TYPE",
                           "compressed uploads (Content-Encoding) are not supported");
        return;
    }
    e2b_with_sandbox(app, req, post_in, NULL);
}

/* ---- GET /files ---- */

static void get_in(struct app *app, http_req *req, sandbox *sb, void *arg)
{
    (void)arg;
    if (!sb)
        return;
    char path[FILES_PATH_MAX + 1];
    int q = e2b_query(req->query, "path", path, sizeof path);
    if (q <= 0) {
        http_respond_error(req, 400, "VALIDATION_FAILED",
                           q < 0 ? "the query's 'path' is malformed"
                                 : "GET /files needs ?path=<file>");
        return;
    }
    /* envd reads files only: a directory is an error here, not /v1's listing */
    char rel[FILES_PATH_MAX + 1], err[256];
    if (files_normalize(path, rel, sizeof rel, err, sizeof err) == 0) {
        int root = files_open_root(jail_workspace(sb->jail));
        int fd = root < 0 ? -1 : files_openat2(root, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (root >= 0)
            close(root);
        if (fd >= 0) {
            close(fd);
            http_respond_error(req, 400, "VALIDATION_FAILED", "'%s' is a directory", path);
            return;
        }
    }
    route_params rp = { .n = 2,
                        .names = { "sid}", "path...}" }, /* as the router sets them */
                        .values = { sb->id, path },
                        .storage = NULL };
    api_files_get(app, req, &rp);
}

void api_e2b_files_get(struct app *app, http_req *req, const route_params *p)
{
    (void)p;
    e2b_with_sandbox(app, req, get_in, NULL);
}
