/*
 * api_cf_files.c — Cloudflare's file routes: POST /api/write, /api/read, /api/read/stream,
 * /api/exists, /api/mkdir, /api/delete, /api/rename, /api/move, /api/list-files.
 *
 * Each operation is a short shell command run by the sandbox's own user in the sandbox
 * (cf_shell_run, the native exec): the bytes it writes are charged to the sandbox as its
 * own code's are, and it sees exactly the filesystem the sandbox sees, so nothing it does
 * can reach the host. Paths reach the shell as environment variables ($P, $Q), never
 * spliced into the script. A path must be under /workspace or /tmp (relative ones are
 * taken under /workspace) and is normalised first (files_normalize: no `..`, no NUL, no
 * over-long names): anything else is 400 VALIDATION_FAILED before anything runs.
 *
 * Contents travel as base64 both ways (the command's stdin and stdout), so binary files
 * round-trip; a read is capped by --max-output-bytes of base64 (larger: 413 FILE_TOO_LARGE,
 * read it with GET /v1/…/files). A file is text (encoding "utf-8") when it is valid UTF-8
 * without NUL bytes and base64 was not asked for; else it comes back as base64. A write
 * goes to a hidden temporary file next to the target, renamed over it once complete:
 * readers never see half a file, and a write that fails (the disk is full: 507 NO_SPACE)
 * leaves the old file and nothing else.
 */
#include "api_cf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "jsonx.h"
#include "stamp.h"

/* Exit codes of the scripts below. */
enum { FILE_MISSING = 44, FILE_IS_DIR = 46 };

/* One script per operation ($P the path, $Q the second path). */
/* written next to the target and renamed over it: readers never see half a file, and a
 * failed write leaves nothing behind */
static const char SH_WRITE[] =
    "[ -d \"$P\" ] && exit 46; d=$(dirname -- \"$P\"); mkdir -p -- \"$d\" || exit 1; "
    "t=\"$d/.sandboxd-write.$$\"; if base64 -d > \"$t\" && mv -fT -- \"$t\" \"$P\"; then exit 0; "
    "fi; "
    "rm -f -- \"$t\"; exit 1";
static const char SH_READ[] = "[ -e \"$P\" ] || exit 44; [ -d \"$P\" ] && exit 46; "
                              "base64 -w0 < \"$P\"";
static const char SH_EXISTS[] = "[ -e \"$P\" ] || [ -L \"$P\" ]";
static const char SH_MKDIR[] = "mkdir -- \"$P\"";
static const char SH_MKDIR_P[] = "mkdir -p -- \"$P\"";
static const char SH_DELETE[] = "[ -e \"$P\" ] || [ -L \"$P\" ] || exit 44; rm -rf -- \"$P\"";
static const char SH_MOVE[] = "[ -e \"$P\" ] || [ -L \"$P\" ] || exit 44; mv -f -- \"$P\" \"$Q\"";
/* type, size, mtime, mode, path below $P; one line each */
static const char SH_LIST[] = "[ -e \"$P\" ] || exit 44; [ -d \"$P\" ] || exit 45; cd \"$P\" && "
                              "find . -mindepth 1 $DEPTH -printf '%y\\t%s\\t%T@\\t%m\\t%P\\n'";

/* What one request does. */
enum op { OP_WRITE, OP_READ, OP_STREAM, OP_EXISTS, OP_MKDIR, OP_DELETE, OP_MOVE, OP_LIST };

struct fop {
    enum op op;
    json_t *body;
    json_t *env; /* P, Q */
    char path[FILES_PATH_MAX + 16], path2[FILES_PATH_MAX + 16];
    bool want_b64, recursive, hidden;
};

static void fop_free(struct fop *f)
{
    json_decref(f->env);
    json_decref(f->body);
    free(f);
}

/* A request's path as the sandbox sees it, or -1 with err. */
static int take_path(const char *in, char *out, size_t outlen, char *err, size_t errlen)
{
    char rel[FILES_PATH_MAX + 1], tmp[FILES_PATH_MAX + 32];
    const char *base = "/workspace";
    if (strcmp(in, "/tmp") == 0 || strncmp(in, "/tmp/", 5) == 0) {
        base = "/tmp";
        snprintf(tmp, sizeof tmp, "/workspace%s", in + 4);
        in = tmp;
    }
    if (in[0] == '/' && strcmp(in, "/workspace") != 0 && strncmp(in, "/workspace/", 11) != 0) {
        snprintf(err, errlen, "path '%.200s' is outside /workspace and /tmp", in);
        return -1;
    }
    if (files_normalize(in, rel, sizeof rel, err, errlen))
        return -1;
    snprintf(out, outlen, "%s%s%s", base, rel[0] ? "/" : "", rel);
    return 0;
}

/* Parse the fields op needs; 0, or -1 once answered. */
static int fop_parse(http_req *req, struct fop *f)
{
    char err[JX_ERR];
    const char *k1 = "path", *k2 = NULL, *p1 = NULL, *p2 = NULL, *enc = NULL;
    if (f->op == OP_MOVE) {
        bool rename = strstr(req->path, "/api/rename") != NULL;
        k1 = rename ? "oldPath" : "sourcePath";
        k2 = rename ? "newPath" : "destinationPath";
    }
    const json_t *opts = json_object_get(f->body, "options");
    bool has;
    if (jx_string(f->body, k1, true, FILES_PATH_MAX, &p1, err, sizeof err) ||
        (k2 && jx_string(f->body, k2, true, FILES_PATH_MAX, &p2, err, sizeof err)) ||
        jx_string(f->body, "encoding", false, 32, &enc, err, sizeof err) ||
        jx_bool(f->body, "recursive", &has, &f->recursive, err, sizeof err) ||
        (opts && !json_is_object(opts) &&
         snprintf(err, sizeof err, "field 'options' must be an object") > 0) ||
        (opts && (jx_bool(opts, "recursive", &has, &f->recursive, err, sizeof err) ||
                  jx_bool(opts, "includeHidden", &has, &f->hidden, err, sizeof err))) ||
        take_path(p1, f->path, sizeof f->path, err, sizeof err) ||
        (p2 && take_path(p2, f->path2, sizeof f->path2, err, sizeof err))) {
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return -1;
    }
    if (enc && strcmp(enc, "base64") != 0 && strcmp(enc, "utf-8") != 0 &&
        strcmp(enc, "utf8") != 0) {
        cf_error(req, 400, "VALIDATION_FAILED",
                 "field 'encoding' must be \"utf-8\" or \"base64\", got \"%.32s\"", enc);
        return -1;
    }
    bool changes = f->op == OP_WRITE || f->op == OP_DELETE || f->op == OP_MOVE;
    const char *roots[] = { f->path, f->path2 };
    for (int i = 0; i < 2 && changes; i++)
        if (strcmp(roots[i], "/workspace") == 0 || strcmp(roots[i], "/tmp") == 0) {
            cf_error(req, 400, "VALIDATION_FAILED",
                     "'%s' itself cannot be written, moved or deleted", roots[i]);
            return -1;
        }
    f->want_b64 = enc && strcmp(enc, "base64") == 0;
    f->env = json_pack("{s:s, s:s, s:s}", "P", f->path, "Q", f->path2, "DEPTH",
                       f->recursive ? "" : "-maxdepth 1");
    return 0;
}

/* ---- base64 ---- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *in, size_t n, size_t *outlen)
{
    char *o = malloc((n + 2) / 3 * 4 + 1), *w = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        *w++ = B64[v >> 18 & 63];
        *w++ = B64[v >> 12 & 63];
        *w++ = i + 1 < n ? B64[v >> 6 & 63] : '=';
        *w++ = i + 2 < n ? B64[v & 63] : '=';
    }
    *w = '\0';
    *outlen = (size_t)(w - o);
    return o;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(B64, c) : NULL;
    return p ? (int)(p - B64) : -1;
}

/* Decode base64 (whitespace skipped); NULL when it is not base64. */
static unsigned char *b64_decode(const char *in, size_t n, size_t *outlen)
{
    unsigned char *o = malloc(n / 4 * 3 + 3);
    size_t w = 0;
    unsigned acc = 0;
    int bits = 0;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '=' || c == '\n' || c == '\r' || c == ' ')
            continue;
        int v = b64_val(c);
        if (v < 0) {
            free(o);
            return NULL;
        }
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[w++] = (unsigned char)(acc >> bits);
        }
    }
    *outlen = w;
    return o;
}

/* Valid UTF-8 without NUL bytes. */
static bool is_text(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (c == 0 || len == 0 || i + len > n)
            return false;
        for (size_t j = 1; j < len; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
        if (len == 2 && c < 0xC2)
            return false;
        i += len;
    }
    return true;
}

/* ---- answers ---- */

static void respond_failure(http_req *req, const struct fop *f, const struct cf_shell_out *o)
{
    int n = (int)(o->err_len > 400 ? 400 : o->err_len);
    while (n > 0 && o->err[n - 1] == '\n')
        n--;
    if (o->exit_code == FILE_MISSING)
        cf_error(req, 404, "FILE_NOT_FOUND", "File not found: %s", f->path);
    else if (o->exit_code == FILE_IS_DIR)
        cf_error(req, 400, "IS_DIRECTORY", "'%s' is a directory", f->path);
    else if (f->op == OP_LIST && o->exit_code == 45)
        cf_error(req, 400, "NOT_DIRECTORY", "'%s' is not a directory", f->path);
    else if (o->timed_out)
        cf_error(req, 500, "FILESYSTEM_ERROR", "the operation on '%s' timed out", f->path);
    else if (n && strstr(o->err, "No space left"))
        cf_error(req, 507, "NO_SPACE", "'%s': the sandbox's disk is full (its diskMb limit)",
                 f->path);
    else if (n && (strstr(o->err, "Permission denied") || strstr(o->err, "Read-only")))
        cf_error(req, 403, "PERMISSION_DENIED", "%.*s", n, o->err);
    else if (n && strstr(o->err, "No such file"))
        cf_error(req, 404, "FILE_NOT_FOUND", "File not found: %s", f->path);
    else if (n && strstr(o->err, "File exists"))
        cf_error(req, 409, "FILE_EXISTS", "'%s' already exists", f->path);
    else
        cf_error(req, 500, "FILESYSTEM_ERROR", "cannot act on '%s': %.*s", f->path, n,
                 n ? o->err : "the command failed");
}

static void send_stream(http_req *req, const char *mime, const char *content, size_t clen,
                        size_t size, bool binary)
{
    cf_sse_begin(req);
    cf_sse_send(req, "metadata",
                json_pack("{s:s, s:I, s:b, s:s}", "mimeType", mime, "size", (json_int_t)size,
                          "isBinary", binary, "encoding", binary ? "base64" : "utf-8"));
    size_t chunk = 65536; /* on a UTF-8 boundary for text, a base64 quantum for binary */
    for (size_t off = 0; off < clen;) {
        size_t n = clen - off < chunk ? clen - off : chunk;
        while (!binary && off + n < clen && ((unsigned char)content[off + n] & 0xC0) == 0x80)
            n--;
        cf_sse_send(req, "chunk", json_pack("{s:s%}", "data", content + off, n));
        off += n;
    }
    cf_sse_send(req, "complete", json_pack("{s:I}", "bytesRead", (json_int_t)size));
    http_stream_end(req);
}

static void answer_read(http_req *req, const struct fop *f, const struct cf_shell_out *o)
{
    if (o->truncated) {
        cf_error(req, 413, "FILE_TOO_LARGE",
                 "'%s' is larger than a JSON read carries (--max-output-bytes of base64); "
                 "read it with GET /v1/sandboxes/{sid}/files",
                 f->path);
        return;
    }
    size_t n = 0;
    unsigned char *data = b64_decode(o->out, o->out_len, &n);
    if (!data) {
        cf_error(req, 500, "FILESYSTEM_ERROR", "cannot read '%s'", f->path);
        return;
    }
    bool binary = f->want_b64 || !is_text(data, n);
    const char *mime = files_content_type(f->path);
    if (!binary && strcmp(mime, "application/octet-stream") == 0)
        mime = "text/plain";
    const char *content = binary ? o->out : (const char *)data;
    size_t clen = binary ? o->out_len : n;
    if (f->op == OP_STREAM)
        send_stream(req, mime, content, clen, n, binary);
    else
        cf_ok(req, json_pack("{s:s, s:s%, s:s, s:b, s:s, s:I}", "path", f->path, "content", content,
                             clen, "encoding", binary ? "base64" : "utf-8", "isBinary", binary,
                             "mimeType", mime, "size", (json_int_t)n));
    free(data);
}

/* One line of SH_LIST as Cloudflare's FileInfo, or NULL to leave it out. */
static json_t *list_entry(const struct fop *f, char *line)
{
    char *field[5];
    for (int i = 0; i < 4; i++) {
        field[i] = line;
        char *t = strchr(line, '\t');
        if (!t)
            return NULL;
        *t = '\0';
        line = t + 1;
    }
    field[4] = line;
    const char *rel = field[4], *name = strrchr(rel, '/');
    name = name ? name + 1 : rel;
    if (!f->hidden && (rel[0] == '.' || strstr(rel, "/.")))
        return NULL;
    char c = field[0][0];
    const char *type = c == 'f' ? "file" : c == 'd' ? "directory" : c == 'l' ? "symlink" : "other";
    unsigned long mode = strtoul(field[3], NULL, 8);
    double mtime = strtod(field[2], NULL);
    char when[40], abs[FILES_PATH_MAX * 2 + 8];
    stamp_iso8601((uint64_t)(mtime * 1000), when, sizeof when);
    snprintf(abs, sizeof abs, "%s/%s", f->path, rel);
    char perm[8];
    snprintf(perm, sizeof perm, "%03lo", mode & 0777);
    return json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:{s:b, s:b, s:b}}", "name", name,
                     "absolutePath", abs, "relativePath", rel, "type", type, "size",
                     (json_int_t)strtoll(field[1], NULL, 10), "modifiedAt", when, "mode", perm,
                     "permissions", "readable", (mode & 0400) != 0, "writable", (mode & 0200) != 0,
                     "executable", (mode & 0100) != 0);
}

static void answer_list(http_req *req, const struct fop *f, const struct cf_shell_out *o)
{
    json_t *files = json_array();
    char *text = strndup(o->out, o->out_len);
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        json_t *e = list_entry(f, line);
        if (e)
            json_array_append_new(files, e);
    }
    free(text);
    size_t count = json_array_size(files);
    cf_ok(req, json_pack("{s:s, s:o, s:I, s:b}", "path", f->path, "files", files, "count",
                         (json_int_t)count, "truncated", o->truncated));
}

static void fop_done(http_req *req, const struct cf_shell_out *o, void *arg)
{
    struct fop *f = arg;
    if (f->op == OP_EXISTS)
        cf_ok(req, json_pack("{s:s, s:b}", "path", f->path, "exists", o->exit_code == 0));
    else if (o->exit_code != 0)
        respond_failure(req, f, o);
    else if (f->op == OP_READ || f->op == OP_STREAM)
        answer_read(req, f, o);
    else if (f->op == OP_LIST)
        answer_list(req, f, o);
    else if (f->op == OP_MOVE)
        cf_ok(req, json_pack("{s:s, s:s, s:s}", "path", f->path, "oldPath", f->path, "newPath",
                             f->path2));
    else
        cf_ok(req, json_pack("{s:s}", "path", f->path));
    fop_free(f);
}

/* The content to write as base64 (the writer's stdin), owned; NULL once answered. */
static char *write_input(http_req *req, const struct fop *f)
{
    char err[JX_ERR];
    const char *content;
    if (jx_string(f->body, "content", true, (size_t)-1, &content, err, sizeof err)) {
        cf_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return NULL;
    }
    size_t n = json_string_length(json_object_get(f->body, "content")), dn;
    if (f->want_b64) {
        unsigned char *d = b64_decode(content, n, &dn);
        if (!d) {
            cf_error(req, 400, "VALIDATION_FAILED", "field 'content' is not valid base64");
            return NULL;
        }
        free(d);
        return strndup(content, n);
    }
    char *s = b64_encode((const unsigned char *)content, n, &dn);
    if (!s)
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
    return s;
}

static const char *fop_script(const struct fop *f)
{
    switch (f->op) {
    case OP_WRITE: return SH_WRITE;
    case OP_READ:
    case OP_STREAM: return SH_READ;
    case OP_EXISTS: return SH_EXISTS;
    case OP_MKDIR: return f->recursive ? SH_MKDIR_P : SH_MKDIR;
    case OP_DELETE: return SH_DELETE;
    case OP_MOVE: return SH_MOVE;
    default: return SH_LIST;
    }
}

static void file_op(struct app *app, http_req *req, sandbox *sb, enum op op)
{
    struct fop *f = calloc(1, sizeof *f);
    if (!f) {
        cf_error(req, 500, "INTERNAL_ERROR", "out of memory");
        return;
    }
    f->op = op;
    f->body = cf_body(req, false);
    if (!f->body || fop_parse(req, f)) {
        fop_free(f);
        return;
    }
    char *input = op == OP_WRITE ? write_input(req, f) : NULL;
    if (op == OP_WRITE && !input) {
        fop_free(f);
        return;
    }
    struct cf_shell s = { .script = fop_script(f), .env = f->env, .stdin_data = input };
    if (cf_shell_run(app, req, sb, &s, fop_done, f))
        fop_free(f);
    free(input); /* exec copied it */
}

#define FILE_ROUTE(name, op)                                                              \
    static void name##_in(struct app *app, http_req *req, sandbox *sb, const char *param) \
    {                                                                                     \
        (void)param;                                                                      \
        file_op(app, req, sb, op);                                                        \
    }                                                                                     \
    void api_cf_##name(struct app *app, http_req *req, const route_params *p)             \
    {                                                                                     \
        (void)p;                                                                          \
        cf_with_sandbox(app, req, NULL, name##_in);                                       \
    }

FILE_ROUTE(write, OP_WRITE)
FILE_ROUTE(read, OP_READ)
FILE_ROUTE(read_stream, OP_STREAM)
FILE_ROUTE(exists, OP_EXISTS)
FILE_ROUTE(mkdir, OP_MKDIR)
FILE_ROUTE(delete, OP_DELETE)
FILE_ROUTE(rename, OP_MOVE)
FILE_ROUTE(move, OP_MOVE)
FILE_ROUTE(list_files, OP_LIST)
