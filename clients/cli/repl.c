/*
 * repl.c — `sbx repl`: an interactive prompt on a fresh code context.
 *
 * Creates one context (language from -l, env from -e) in the sandbox, reads cells with the
 * line editor, runs each through execute_stream(), and deletes the context on exit. A cell
 * is one line, unless repl_needs_more() says it is unfinished: then "... " lines follow
 * until an empty line runs the cell. Ctrl-C at the prompt drops the cell; during a run it
 * interrupts the context (POST …/interrupt on a second connection) and the run ends with
 * the language's interrupt error. Ctrl-D, `.exit`, `exit()` or `quit()` leave.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "execute.h"
#include "lineedit.h"
#include "repl.h"
#include "sbx.h"

#define CELL_CAP ((size_t)4 << 20)

static volatile sig_atomic_t g_sigint;

static void on_sigint(int sig)
{
    (void)sig;
    g_sigint = 1;
}

typedef struct repl {
    sbx_client *c;          /* the streaming connection */
    sbx_client ctl;         /* a second one for interrupts */
    const char *sandbox;
    char ctx[128];
    bool interrupt_sent;
} repl;

/* Called by libcurl during a run: forward a Ctrl-C as an interrupt, once per Ctrl-C. */
static int on_progress(void *ud)
{
    repl *r = ud;
    if (!g_sigint)
        return 0;
    g_sigint = 0;
    char path[512], suffix[200];
    snprintf(suffix, sizeof(suffix), "/contexts/%s/interrupt", r->ctx);
    if (sbx_path(path, sizeof(path), r->sandbox, suffix) != 0)
        return 0;
    sbx_resp resp;
    cl_resp_init(&resp, CL_ERR_CAP);
    int rc = cl_request(&r->ctl, "POST", path, "{}", 2, &resp);
    if (rc != 0 || resp.status != 200) {
        cl_print_error(&r->ctl, rc, &resp);
        cl_resp_free(&resp);
        return 1;   /* cannot interrupt: abandon the stream instead */
    }
    cl_resp_free(&resp);
    return 0;
}

/* POST …/contexts; fills r->ctx. 0 or an exit code. */
static int create_context(repl *r, const sbx_args *a, const char *lang)
{
    bool bad = false;
    json_t *env = sbx_env_object(a, &bad);
    if (bad)
        return SBX_EXIT_USAGE;
    json_t *body = json_object();
    json_object_set_new(body, "language", json_string(lang));
    if (env)
        json_object_set_new(body, "envVars", env);
    if (a->cwd)
        json_object_set_new(body, "cwd", json_string(a->cwd));
    char *txt = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    char path[512];
    sbx_path(path, sizeof(path), r->sandbox, "/contexts");
    sbx_resp resp;
    cl_resp_init(&resp, CL_JSON_CAP);
    int rc = txt ? cl_request(r->c, "POST", path, txt, strlen(txt), &resp) : -ENOMEM;
    free(txt);
    int out = 0;
    if (rc != 0 || resp.status != 201) {
        cl_print_error(r->c, rc, &resp);
        out = SBX_EXIT_API;
    } else {
        json_error_t jerr;
        json_t *doc = json_loadb(resp.body.data, resp.body.len, 0, &jerr);
        const char *id = json_string_value(json_object_get(doc, "id"));
        if (!id || strlen(id) >= sizeof(r->ctx)) {
            fprintf(stderr, "sbx repl: the daemon sent no usable context id\n");
            out = SBX_EXIT_API;
        } else {
            snprintf(r->ctx, sizeof(r->ctx), "%s", id);
        }
        json_decref(doc);
    }
    cl_resp_free(&resp);
    return out;
}

static void delete_context(repl *r)
{
    char path[512], suffix[160];
    snprintf(suffix, sizeof(suffix), "/contexts/%s", r->ctx);
    if (sbx_path(path, sizeof(path), r->sandbox, suffix) != 0)
        return;
    sbx_resp resp;
    cl_resp_init(&resp, CL_ERR_CAP);
    cl_request(r->c, "DELETE", path, NULL, 0, &resp);
    cl_resp_free(&resp);
}

static bool is_quit(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    static const char *const k_quit[] = { ".exit", ".quit", "exit()", "quit()", "exit", "quit" };
    for (size_t i = 0; i < sizeof(k_quit) / sizeof(k_quit[0]); i++) {
        size_t n = strlen(k_quit[i]);
        if (strncmp(s, k_quit[i], n) == 0 && (s[n] == '\0' || s[n] == ' '))
            return true;
    }
    return false;
}

/* Runs one cell. */
static void run_cell(repl *r, const sbx_args *a, exec_view *v, const buf *cell)
{
    json_t *body = json_object();
    json_object_set_new(body, "code", json_stringn(cell->data, cell->len));
    json_object_set_new(body, "context", json_string(r->ctx));
    if (a->timeout_ms >= 0)
        json_object_set_new(body, "timeoutMs", json_integer(a->timeout_ms));
    g_sigint = 0;
    r->c->on_progress = on_progress;
    r->c->progress_ud = r;
    execute_stream(r->c, r->sandbox, body, v);
    r->c->on_progress = NULL;
    if (v->out_open) {
        fputc('\n', stdout);
        v->out_open = false;
    }
    fflush(stdout);
    json_decref(body);
}

int cmd_repl(sbx_client *c, const sbx_args *a)
{
    const char *lang = a->language ? a->language : "python";
    bool python = strcmp(lang, "python") == 0;
    repl r = { .c = c, .sandbox = a->sandbox };
    if (a->argc != 0) {
        fprintf(stderr, "sbx repl: takes no arguments (use sbx run for code)\n");
        return SBX_EXIT_USAGE;
    }
    int rc = sbx_ensure_sandbox(c, a->sandbox);
    if (rc)
        return rc;
    if (cl_init(&r.ctl, a->url, a->token) != 0)
        return SBX_EXIT_API;
    if ((rc = create_context(&r, a, lang)) != 0) {
        cl_free(&r.ctl);
        return rc;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);

    ledit ed;
    le_init(&ed);
    if (ed.tty)
        printf("sbx repl: %s in sandbox '%s' (context %s). Ctrl-D or .exit leaves; "
               "an empty line ends a multi-line cell.\n", lang, a->sandbox, r.ctx);
    exec_view v = { .save_dir = a->save };
    buf line, cell;
    buf_init(&line, LE_LINE_MAX);
    buf_init(&cell, CELL_CAP);
    bool more = false;   /* we are inside a multi-line cell */
    for (;;) {
        int lr = le_read(&ed, more ? "... " : ">>> ", &line);
        if (lr == 1)
            break;
        if (lr == -EINTR) {
            buf_reset(&cell);
            more = false;
            g_sigint = 0;
            continue;
        }
        if (lr < 0)
            break;
        const char *text = line.data ? line.data : "";
        if (!more && cell.len == 0 && is_quit(text))
            break;
        le_history_add(&ed, text);
        if (!more && line.len == 0)
            continue;
        if (more && line.len == 0 && !repl_needs_more(cell.data, cell.len, python)) {
            run_cell(&r, a, &v, &cell);
            buf_reset(&cell);
            more = false;
            continue;
        }
        if ((cell.len && buf_puts(&cell, "\n") != 0) || buf_append(&cell, text, line.len) != 0) {
            fprintf(stderr, "sbx repl: cell larger than %zu bytes, dropped\n", CELL_CAP);
            buf_reset(&cell);
            more = false;
            continue;
        }
        if (!more && !repl_needs_more(cell.data, cell.len, python)) {
            run_cell(&r, a, &v, &cell);
            buf_reset(&cell);
            continue;
        }
        more = true;
    }
    if (cell.len && !ed.tty)
        run_cell(&r, a, &v, &cell);    /* piped input may end without the blank line */
    sigaction(SIGINT, &old, NULL);
    delete_context(&r);
    buf_free(&line);
    buf_free(&cell);
    le_free(&ed);
    cl_free(&r.ctl);
    return 0;
}
