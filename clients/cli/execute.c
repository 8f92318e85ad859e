/*
 * execute.c — the execute stream rendered for a terminal (see execute.h).
 *
 * Output is flushed per event so a slow loop shows up line by line. Image formats are
 * base64-decoded into <save_dir>/result-<n>.<ext>; the directory is created if missing.
 * A file name is never taken from the daemon, so a hostile server cannot pick paths.
 */
#include "execute.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b64.h"
#include "sbx.h"

/* Formats written to files with --save, and their extensions. */
static const struct { const char *field; const char *ext; bool base64; } k_files[] = {
    { "png", "png", true },
    { "jpeg", "jpg", true },
    { "svg", "svg", false },
    { "pdf", "pdf", true },
};

/* Write one format of a result to the next file name; prints where it went. */
static int save_format(exec_view *v, const char *value, const char *ext, bool base64)
{
    if (mkdir(v->save_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "sbx: cannot create %s: %s\n", v->save_dir, strerror(errno));
        return -errno;
    }
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/result-%d.%s", v->save_dir, v->nsaved + 1, ext);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fprintf(stderr, "sbx: --save directory name too long\n");
        return -E2BIG;
    }
    size_t len = strlen(value), outlen = len;
    unsigned char *data = (unsigned char *)(uintptr_t)value;
    unsigned char *decoded = NULL;
    if (base64) {
        decoded = malloc(b64_max(len));
        if (!decoded)
            return -ENOMEM;
        if (b64_decode(value, len, decoded, &outlen) != 0) {
            fprintf(stderr, "sbx: the daemon sent bad base64 for a %s result\n", ext);
            free(decoded);
            return -EINVAL;
        }
        data = decoded;
    }
    FILE *f = fopen(path, "wbe");
    int rc = 0;
    if (!f || fwrite(data, 1, outlen, f) != outlen) {
        fprintf(stderr, "sbx: cannot write %s: %s\n", path, strerror(errno));
        rc = -EIO;
    }
    if (f && fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "sbx: cannot write %s: %s\n", path, strerror(errno));
        rc = -EIO;
    }
    free(decoded);
    if (rc == 0) {
        v->nsaved++;
        fprintf(stderr, "sbx: saved %s\n", path);
    }
    return rc;
}

static void print_text(exec_view *v, const char *text)
{
    if (v->out_open)
        fputc('\n', stdout);
    fputs(text, stdout);
    fputc('\n', stdout);
    v->out_open = false;
    fflush(stdout);
}

/* A result: images to files (or a note), otherwise its text (or the richest text form). */
static void show_result(exec_view *v, json_t *res)
{
    bool imaged = false;
    for (size_t i = 0; i < sizeof(k_files) / sizeof(k_files[0]); i++) {
        const char *val = json_string_value(json_object_get(res, k_files[i].field));
        if (!val)
            continue;
        imaged = true;
        if (v->save_dir)
            save_format(v, val, k_files[i].ext, k_files[i].base64);
        else
            fprintf(stderr, "sbx: [%s result not shown: use --save DIR to write it]\n",
                    k_files[i].field);
        if (v->save_dir)
            break;   /* one file per result: the first (richest) image format */
    }
    const char *text = json_string_value(json_object_get(res, "text"));
    if (imaged && text && strncmp(text, "<Figure", 7) == 0)
        return;     /* matplotlib's placeholder text adds nothing to the image */
    if (!text)
        text = json_string_value(json_object_get(res, "markdown"));
    if (!text)
        text = json_string_value(json_object_get(res, "html"));
    if (text)
        print_text(v, text);
}

static void show_error(exec_view *v, json_t *err)
{
    const char *name = json_string_value(json_object_get(err, "name"));
    const char *msg = json_string_value(json_object_get(err, "message"));
    json_t *tb = json_object_get(err, "traceback");
    if (v->out_open) {
        fputc('\n', stdout);
        v->out_open = false;
    }
    fflush(stdout);
    size_t i;
    json_t *line;
    bool printed_tb = false;
    if (json_is_array(tb)) {
        json_array_foreach(tb, i, line) {
            if (json_is_string(line)) {
                fprintf(stderr, "%s\n", json_string_value(line));
                printed_tb = true;
            }
        }
    } else if (json_is_string(tb) && json_string_length(tb) > 0) {
        fprintf(stderr, "%s\n", json_string_value(tb));
        printed_tb = true;
    }
    /* The traceback's last line is usually "Name: message"; print it when it is not. */
    bool last_has_it = false;
    if (printed_tb && json_is_array(tb) && json_array_size(tb) > 0) {
        const char *last = json_string_value(json_array_get(tb, json_array_size(tb) - 1));
        last_has_it = last && name && strstr(last, name) && (!msg || strstr(last, msg));
    }
    if (!last_has_it)
        fprintf(stderr, "%s: %s\n", name ? name : "Error", msg ? msg : "");
    fflush(stderr);
}

static void write_output(exec_view *v, FILE *f, const char *text)
{
    size_t n = strlen(text);
    fwrite(text, 1, n, f);
    fflush(f);
    if (f == stdout && n > 0)
        v->out_open = text[n - 1] != '\n';
}

static int on_event(const char *event, const char *data, size_t len, void *ud)
{
    exec_view *v = ud;
    json_error_t jerr;
    json_t *doc = json_loadb(data, len, 0, &jerr);
    if (!doc)
        return 0;   /* not JSON: nothing to show */
    if (strcmp(event, "stdout") == 0 || strcmp(event, "stderr") == 0) {
        const char *t = json_string_value(json_object_get(doc, "text"));
        if (t)
            write_output(v, event[3] == 'o' ? stdout : stderr, t);
    } else if (strcmp(event, "result") == 0) {
        show_result(v, doc);
    } else if (strcmp(event, "error") == 0) {
        v->raised = true;
        show_error(v, doc);
    } else if (strcmp(event, "end") == 0) {
        v->ended = true;
        json_t *n = json_object_get(doc, "executionCount");
        v->exec_count = json_is_integer(n) ? json_integer_value(n) : -1;
    }
    json_decref(doc);
    return 0;
}

int execute_stream(sbx_client *c, const char *sandbox, json_t *body, exec_view *v)
{
    char path[512];
    if (sbx_path(path, sizeof(path), sandbox, "/execute") != 0)
        return SBX_EXIT_USAGE;
    char *json = json_dumps(body, JSON_COMPACT);
    if (!json)
        return SBX_EXIT_API;
    v->raised = false;
    v->ended = false;
    v->exec_count = -1;
    sbx_resp r;
    cl_resp_init(&r, CL_ERR_CAP);
    v->resp = &r;
    int rc = cl_stream(c, "POST", path, json, on_event, v, &r);
    v->resp = NULL;
    free(json);
    int out = 0;
    if (rc != 0 || r.status < 200 || r.status >= 300) {
        fflush(stdout);
        cl_print_error(c, rc, &r);
        out = SBX_EXIT_API;
    } else if (!v->ended) {
        fprintf(stderr, "sbx: the execution stream ended before its end event\n");
        out = SBX_EXIT_API;
    }
    if (v->out_open && out == 0 && isatty(1)) {
        fputc('\n', stdout);
        v->out_open = false;
    }
    fflush(stdout);
    cl_resp_free(&r);
    return out;
}
