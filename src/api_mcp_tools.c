/*
 * api_mcp_tools.c — the MCP server's tools (docs/mcp.md "Tools"): their table (names,
 * descriptions and arguments, from which both tools/list's JSON Schemas and the checking
 * of tools/call's arguments are made, so the two cannot disagree), the sandbox a call
 * names (get-or-create, as the compatibility surfaces do), and the tools that need no
 * process: read_file, list_files, create_context, list_contexts. run_code, exec and
 * write_file are api_mcp_run.c.
 *
 * Arguments are checked before anything happens: an unknown tool, an unknown argument, a
 * missing required one or one of the wrong type is a JSON-RPC error -32602 naming it (the
 * call is malformed). What goes wrong while a tool runs (a missing file, a context of
 * another sandbox, a raising cell) is a tool result with isError true whose text starts
 * with the /v1 error code (FILE_NOT_FOUND, CONTEXT_NOT_FOUND …), so an agent can read it.
 *
 * read_file reads on the loop: the file is opened confined (files.c: no symlink, no way
 * out, never a FIFO), must be regular and at most --mcp-max-read-bytes, so the read is
 * bounded and never waits for the sandbox.
 */
#include "api_mcp_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_e2b.h"
#include "context.h"
#include "files.h"
#include "jail.h"
#include "log.h"

enum arg_type { ARG_STRING, ARG_INTEGER };

struct tool_arg {
    const char *name;
    enum arg_type type;
    bool required;
    const char *description;
};

#define ARG_SANDBOX                                                                             \
    {                                                                                           \
        "sandbox", ARG_STRING, false,                                                           \
            "Sandbox id ([A-Za-z0-9][A-Za-z0-9._-]{0,62}); made on first use. Default: default" \
    }
#define ARG_END                       \
    {                                 \
        NULL, ARG_STRING, false, NULL \
    }

static const struct tool_arg RUN_CODE_ARGS[] = {
    { "code", ARG_STRING, true, "The code of one cell" },
    { "language", ARG_STRING, false, "python (default), javascript or typescript" },
    ARG_SANDBOX,
    { "context", ARG_STRING, false,
      "Context id (create_context); default: this session's own context for the language" },
    { "timeoutMs", ARG_INTEGER, false, "Timeout of this run, ms (0: none)" },
    ARG_END,
};
static const struct tool_arg EXEC_ARGS[] = {
    { "command", ARG_STRING, true, "A shell command (/bin/sh -c)" },
    ARG_SANDBOX,
    { "cwd", ARG_STRING, false, "Working directory. Default: /workspace" },
    { "stdin", ARG_STRING, false, "Text given to the command's standard input" },
    { "timeoutMs", ARG_INTEGER, false, "Timeout, ms (0: none)" },
    ARG_END,
};
static const struct tool_arg READ_ARGS[] = {
    { "path", ARG_STRING, true, "File path (relative paths are under /workspace)" },
    ARG_SANDBOX,
    ARG_END,
};
static const struct tool_arg WRITE_ARGS[] = {
    { "path", ARG_STRING, true,
      "File path (relative paths are under /workspace); parents are made" },
    { "content", ARG_STRING, true, "The file's new content (UTF-8 text)" },
    ARG_SANDBOX,
    ARG_END,
};
static const struct tool_arg LIST_ARGS[] = {
    { "path", ARG_STRING, false, "Directory. Default: /workspace" },
    ARG_SANDBOX,
    ARG_END,
};
static const struct tool_arg CREATE_ARGS[] = {
    { "language", ARG_STRING, false, "python (default), javascript or typescript" },
    { "cwd", ARG_STRING, false, "Working directory. Default: /workspace" },
    ARG_SANDBOX,
    ARG_END,
};
static const struct tool_arg SANDBOX_ONLY_ARGS[] = { ARG_SANDBOX, ARG_END };

static void tool_read_file(struct mcp_job *j);
static void tool_list_files(struct mcp_job *j);
static void tool_create_context(struct mcp_job *j);
static void tool_list_contexts(struct mcp_job *j);

/* One row per tool. */
static const struct tool {
    const char *name;
    const char *description;
    const struct tool_arg *args;
    void (*run)(struct mcp_job *j);
} TOOLS[] = {
    { "run_code",
      "Run code in a persistent interpreter (Python with numpy/pandas/matplotlib, JavaScript or "
      "TypeScript) inside an isolated sandbox. Variables persist across calls. Returns stdout, "
      "stderr, results as text and plots as PNG images; a raised exception is a tool error.",
      RUN_CODE_ARGS, mcp_tool_run_code },
    { "exec", "Run a shell command in the sandbox; returns stdout, stderr and the exit code.",
      EXEC_ARGS, mcp_tool_exec },
    { "read_file", "Read a file of the sandbox's /workspace.", READ_ARGS, tool_read_file },
    { "write_file", "Write a text file into the sandbox's /workspace.", WRITE_ARGS,
      mcp_tool_write_file },
    { "list_files", "List a directory of the sandbox's /workspace.", LIST_ARGS, tool_list_files },
    { "create_context",
      "Create a new interpreter context (its own variables) in the sandbox; pass its id as "
      "run_code's context.",
      CREATE_ARGS, tool_create_context },
    { "list_contexts", "List the sandbox's interpreter contexts.", SANDBOX_ONLY_ARGS,
      tool_list_contexts },
};

/* ---- results ---- */

json_t *mcp_text_result(bool is_error, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", msg, "isError",
                     is_error);
}

void mcp_job_done(struct mcp_job *j, json_t *result)
{
    if (result)
        mcp_call_done(j->call, result);
    else
        mcp_call_fail(j->call, MCP_INTERNAL_ERROR, "out of memory");
    json_decref(j->args);
    free(j);
}

/* ---- tools/list ---- */

static json_t *input_schema(const struct tool_arg *args)
{
    json_t *props = json_object(), *req = json_array();
    for (const struct tool_arg *a = args; a->name; a++) {
        json_object_set_new(props, a->name,
                            json_pack("{s:s, s:s}", "type",
                                      a->type == ARG_STRING ? "string" : "integer", "description",
                                      a->description));
        if (a->required)
            json_array_append_new(req, json_string(a->name));
    }
    return json_pack("{s:s, s:o, s:o, s:b}", "type", "object", "properties", props, "required", req,
                     "additionalProperties", 0);
}

json_t *mcp_tools_list(void)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < sizeof TOOLS / sizeof TOOLS[0]; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:o}", "name", TOOLS[i].name,
                                             "description", TOOLS[i].description, "inputSchema",
                                             input_schema(TOOLS[i].args)));
    return json_pack("{s:o}", "tools", arr);
}

/* ---- tools/call ---- */

/* 0, or -1 with err naming the first argument that does not fit t's table. */
static int check_args(const struct tool *t, const json_t *args, char *err, size_t errlen)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)args, k, v)
    {
        const struct tool_arg *a = t->args;
        while (a->name && strcmp(a->name, k) != 0)
            a++;
        if (!a->name) {
            snprintf(err, errlen, "%s has no argument '%.64s'", t->name, k);
            return -1;
        }
        bool ok = a->type == ARG_STRING ? json_is_string(v) : json_is_integer(v);
        if (!ok || (a->type == ARG_INTEGER && json_integer_value(v) < 0)) {
            snprintf(err, errlen, "%s: '%s' must be %s", t->name, k,
                     a->type == ARG_STRING ? "a string" : "a non-negative integer");
            return -1;
        }
        if (a->type == ARG_STRING && strlen(json_string_value(v)) != json_string_length(v)) {
            snprintf(err, errlen, "%s: '%s' has a NUL byte", t->name, k);
            return -1;
        }
    }
    for (const struct tool_arg *a = t->args; a->name; a++)
        if (a->required && !json_object_get(args, a->name)) {
            snprintf(err, errlen, "%s needs the argument '%s'", t->name, a->name);
            return -1;
        }
    return 0;
}

struct pending {
    struct mcp_job *job;
    const struct tool *tool;
};

static void created(sandbox *s, const char *id, int rc, const char *err, void *arg)
{
    struct pending *pd = arg;
    struct mcp_job *j = pd->job;
    if (rc) {
        log_error("sandbox %s: cannot create: %s", id, err);
        mcp_job_done(j, mcp_text_result(true, "INTERNAL_ERROR: cannot create sandbox '%s': %s", id,
                                        err && err[0] ? err : strerror(-rc)));
    } else {
        j->sb = s;
        mcp_call_set_budget(j->call, s->budget);
        pd->tool->run(j);
    }
    free(pd);
}

/* Find or make the job's sandbox, then run the tool. */
static void with_sandbox(struct mcp_job *j, const struct tool *t, const char *id)
{
    sandbox *s = sbx_find(id);
    if (s) {
        j->sb = s;
        mcp_call_set_budget(j->call, s->budget);
        t->run(j);
        return;
    }
    struct pending *pd = calloc(1, sizeof *pd);
    char err[256] = "";
    int rc = pd ? 0 : -ENOMEM;
    if (pd) {
        *pd = (struct pending){ j, t };
        rc = sbx_ensure(id, created, pd, err, sizeof err);
        if (rc == 0)
            return;
        free(pd);
    }
    mcp_job_done(j,
                 mcp_text_result(true, "%s: cannot create sandbox '%s': %s",
                                 rc == -EMFILE || rc == -EBUSY ? "LIMIT_REACHED" : "INTERNAL_ERROR",
                                 id, err[0] ? err : strerror(-rc)));
}

void mcp_tools_call(struct app *app, const json_t *params, mcp_call *call)
{
    const json_t *name = json_object_get(params, "name");
    json_t *args = json_object_get(params, "arguments");
    char err[256];
    if (!json_is_string(name)) {
        mcp_call_fail(call, MCP_INVALID_PARAMS, "tools/call needs params {\"name\": string}");
        return;
    }
    const struct tool *t = NULL;
    for (size_t i = 0; i < sizeof TOOLS / sizeof TOOLS[0] && !t; i++)
        if (strcmp(TOOLS[i].name, json_string_value(name)) == 0)
            t = &TOOLS[i];
    if (!t) {
        mcp_call_fail(call, MCP_INVALID_PARAMS, "Unknown tool: '%.64s' (see tools/list)",
                      json_string_value(name));
        return;
    }
    if (args && !json_is_object(args)) {
        mcp_call_fail(call, MCP_INVALID_PARAMS, "'arguments' must be an object");
        return;
    }
    args = args ? json_incref(args) : json_object();
    const char *sid = json_string_value(json_object_get(args, "sandbox"));
    err[0] = '\0';
    if (check_args(t, args, err, sizeof err) == 0 && sid && !sbx_valid_id(sid))
        snprintf(err, sizeof err,
                 "'%.80s' is not a valid sandbox id ([A-Za-z0-9][A-Za-z0-9._-]{0,62})", sid);
    struct mcp_job *j = err[0] ? NULL : calloc(1, sizeof *j);
    if (!j) {
        json_decref(args);
        mcp_call_fail(call, err[0] ? MCP_INVALID_PARAMS : MCP_INTERNAL_ERROR, "%s",
                      err[0] ? err : "out of memory");
        return;
    }
    *j = (struct mcp_job){ app, call, args, NULL };
    with_sandbox(j, t, sid ? sid : "default");
}

/* ---- files ---- */

/* The "path" argument normalised (files.h); false once the job is answered. */
static bool take_path(struct mcp_job *j, const char *dflt, char *rel, size_t rellen, char *shown,
                      size_t shownlen)
{
    const char *in = json_string_value(json_object_get(j->args, "path"));
    char err[256];
    if (files_normalize(in ? in : dflt, rel, rellen, err, sizeof err)) {
        mcp_job_done(j, mcp_text_result(true, "VALIDATION_FAILED: %s", err));
        return false;
    }
    files_display(rel, shown, shownlen);
    return true;
}

/* An errno from opening path, as a tool error. */
static json_t *errno_result(int rc, const char *shown)
{
    if (rc == -ENOENT || rc == -ENOTDIR)
        return mcp_text_result(true, "FILE_NOT_FOUND: '%s' does not exist", shown);
    if (rc == -ELOOP || rc == -EXDEV)
        return mcp_text_result(true,
                               "VALIDATION_FAILED: '%s' goes through a symbolic link or "
                               "leaves the workspace",
                               shown);
    return mcp_text_result(true, "INTERNAL_ERROR: '%s': %s", shown, strerror(-rc));
}

/* The confined fd of the job's path (O_RDONLY), or -errno. */
static int open_path(struct mcp_job *j, const char *rel, struct stat *st)
{
    int root = files_open_root(jail_workspace(j->sb->jail));
    if (root < 0)
        return root;
    int fd = files_openat2(root, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    close(root);
    if (fd >= 0 && fstat(fd, st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Text when the bytes are UTF-8, else an embedded resource (base64). */
static json_t *content_of(const char *shown, const char *data, size_t n)
{
    json_t *text = json_stringn(data, n);
    if (text)
        return json_pack("{s:[{s:s, s:o}]}", "content", "type", "text", "text", text);
    buf b;
    buf_init(&b, n / 3 * 4 + 8);
    e2b_base64(&b, data, n);
    char uri[FILES_PATH_MAX + 32];
    snprintf(uri, sizeof uri, "file://%s", shown);
    json_t *r = json_pack("{s:[{s:s, s:{s:s, s:s, s:s%}}]}", "content", "type", "resource",
                          "resource", "uri", uri, "mimeType", files_content_type(shown), "blob",
                          b.data ? b.data : "", b.len);
    buf_free(&b);
    return r;
}

static void tool_read_file(struct mcp_job *j)
{
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    if (!take_path(j, "", rel, sizeof rel, shown, sizeof shown))
        return;
    struct stat st;
    int fd = open_path(j, rel, &st);
    uint64_t cap = j->app->cfg->mcp_max_read_bytes;
    if (fd < 0) {
        mcp_job_done(j, errno_result(fd, shown));
        return;
    }
    json_t *r = NULL;
    if (!S_ISREG(st.st_mode))
        r = mcp_text_result(true, "VALIDATION_FAILED: '%s' is not a regular file%s", shown,
                            S_ISDIR(st.st_mode) ? " (use list_files)" : "");
    else if ((uint64_t)st.st_size > cap)
        r = mcp_text_result(true,
                            "PAYLOAD_TOO_LARGE: '%s' is %lld bytes, more than "
                            "--mcp-max-read-bytes %llu",
                            shown, (long long)st.st_size, (unsigned long long)cap);
    if (r) {
        close(fd);
        mcp_job_done(j, r);
        return;
    }
    char *data = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    ssize_t n = 1;
    while (data && got < (size_t)st.st_size && n > 0)
        if ((n = pread(fd, data + got, (size_t)st.st_size - got, (off_t)got)) > 0)
            got += (size_t)n;
    close(fd);
    r = data && n >= 0 ? content_of(shown, data, got)
                       : mcp_text_result(true, "INTERNAL_ERROR: cannot read '%s'", shown);
    free(data);
    mcp_job_done(j, r);
}

static void tool_list_files(struct mcp_job *j)
{
    char rel[FILES_PATH_MAX + 1], shown[FILES_PATH_MAX + 16];
    if (!take_path(j, "/workspace", rel, sizeof rel, shown, sizeof shown))
        return;
    struct stat st;
    int fd = open_path(j, rel, &st);
    DIR *dir = fd >= 0 && S_ISDIR(st.st_mode) ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0)
            close(fd);
        mcp_job_done(j, fd < 0 ? errno_result(fd, shown)
                               : mcp_text_result(true,
                                                 "VALIDATION_FAILED: '%s' is not a "
                                                 "directory",
                                                 shown));
        return;
    }
    json_t *entries = json_array();
    size_t max = j->app->cfg->max_list_entries;
    buf text; /* a line per entry: type, name (at most FILES_NAME_MAX), size */
    buf_init(&text, max * (FILES_NAME_MAX + 40) + 256);
    bool truncated = false;
    struct dirent *de;
    while ((de = readdir(dir))) {
        const char *nm = de->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        if (json_array_size(entries) >= max) {
            truncated = true;
            break;
        }
        if (fstatat(dirfd(dir), nm, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        const char *type = S_ISDIR(st.st_mode)   ? "dir"
                           : S_ISLNK(st.st_mode) ? "symlink"
                           : S_ISREG(st.st_mode) ? "file"
                                                 : "other";
        /* json_pack refuses a name that is not UTF-8: such entries are left out, as the
         * files API does, rather than mangled */
        json_t *e =
            json_pack("{s:s, s:s, s:I}", "name", nm, "type", type, "size", (json_int_t)st.st_size);
        if (!e)
            continue;
        json_array_append_new(entries, e);
        buf_printf(&text, "%s\t%s\t%lld\n", type, nm, (long long)st.st_size);
    }
    closedir(dir);
    if (truncated)
        buf_printf(&text, "(truncated at --max-list-entries %zu)\n", max);
    json_t *r = json_pack("{s:[{s:s, s:s%}], s:{s:s, s:o, s:b}}", "content", "type", "text", "text",
                          text.data ? text.data : "", text.len, "structuredContent", "path", shown,
                          "entries", entries, "truncated", truncated);
    buf_free(&text);
    mcp_job_done(j, r);
}

/* ---- contexts ---- */

static json_t *context_json(const struct context *c)
{
    struct ctx_info i;
    ctx_get_info(c, &i);
    static const char *const STATES[] = { "starting", "idle", "busy", "dead" };
    return json_pack("{s:s, s:s, s:s, s:i, s:s}", "id", i.id, "language", ctx_lang_name(i.lang),
                     "cwd", i.cwd, "executionCount", i.exec_count, "state", STATES[i.state]);
}

static json_t *contexts_result(json_t *list, const char *sandbox_id)
{
    buf text;
    buf_init(&text, json_array_size(list) * 128 + 256); /* id, language, state a line */
    size_t i;
    json_t *c;
    buf_printf(&text, "%zu context(s) in sandbox '%s'\n", json_array_size(list), sandbox_id);
    json_array_foreach(list, i, c)
        buf_printf(&text, "%s\t%s\t%s\n", json_string_value(json_object_get(c, "id")),
                   json_string_value(json_object_get(c, "language")),
                   json_string_value(json_object_get(c, "state")));
    json_t *r = json_pack("{s:[{s:s, s:s%}], s:{s:o}}", "content", "type", "text", "text",
                          text.data, text.len, "structuredContent", "contexts", list);
    buf_free(&text);
    return r;
}

static void context_ready(struct context *c, bool ok, const char *why, void *arg)
{
    struct mcp_job *j = arg;
    if (!ok) {
        mcp_job_done(j, mcp_text_result(true, "INTERNAL_ERROR: the context could not start: %s",
                                        why ? why : "unknown"));
        return;
    }
    json_t *info = context_json(c);
    json_t *r = mcp_text_result(false, "created context %s (%s)",
                                json_string_value(json_object_get(info, "id")),
                                json_string_value(json_object_get(info, "language")));
    json_object_set_new(r, "structuredContent", info);
    mcp_job_done(j, r);
}

static void tool_create_context(struct mcp_job *j)
{
    const char *lang_s = json_string_value(json_object_get(j->args, "language"));
    const char *cwd_in = json_string_value(json_object_get(j->args, "cwd"));
    char err[256], cwd[1100];
    int lang = ctx_parse_lang(lang_s ? lang_s : "python");
    struct context *c = NULL;
    api_update_langs(j->app);
    if (lang < 0)
        mcp_job_done(j, mcp_text_result(true,
                                        "VALIDATION_FAILED: language '%.32s' is not "
                                        "supported (python, javascript, typescript)",
                                        lang_s));
    else if (!j->app->langs[lang].available)
        mcp_job_done(j,
                     mcp_text_result(true, "LANGUAGE_UNAVAILABLE: %s", j->app->langs[lang].reason));
    else if (sbx_resolve_cwd(cwd_in, cwd, sizeof cwd, err, sizeof err))
        mcp_job_done(j, mcp_text_result(true, "VALIDATION_FAILED: %s", err));
    else if (ctx_create(j->sb, (enum ctx_lang)lang, cwd, NULL, false, &c, err, sizeof err))
        mcp_job_done(j, mcp_text_result(true, "LIMIT_REACHED: %s", err));
    else if (ctx_wait_ready(c, context_ready, j))
        mcp_job_done(j, NULL);
}

static void tool_list_contexts(struct mcp_job *j)
{
    json_t *list = json_array();
    for (struct context *c = ctx_first(j->sb); c; c = ctx_next(c))
        json_array_append_new(list, context_json(c));
    mcp_job_done(j, contexts_result(list, j->sb->id));
}
