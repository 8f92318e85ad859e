/*
 * cmd_admin.c — `sbx ls`, `sbx contexts`, `sbx rm`: listing and deleting.
 *
 * Tables are fixed-width text for people; --json prints the daemon's answer unchanged for
 * scripts. These commands never create a sandbox: `contexts` on a missing one is an error.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "sbx.h"

/* GET path into a parsed JSON document; NULL with the error printed. */
static json_t *get_json(sbx_client *c, const char *path, bool raw_print)
{
    sbx_resp r;
    cl_resp_init(&r, CL_JSON_CAP);
    int rc = cl_request(c, "GET", path, NULL, 0, &r);
    json_t *doc = NULL;
    if (rc != 0 || r.status != 200) {
        cl_print_error(c, rc, &r);
    } else {
        json_error_t jerr;
        doc = json_loadb(r.body.data ? r.body.data : "", r.body.len, 0, &jerr);
        if (!doc)
            fprintf(stderr, "sbx: the daemon sent bad JSON: %s\n", jerr.text);
        else if (raw_print)
            printf("%.*s\n", (int)r.body.len, r.body.data);
    }
    cl_resp_free(&r);
    return doc;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

static long long num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? (long long)json_number_value(v) : -1;
}

int cmd_ls(sbx_client *c, const sbx_args *a)
{
    json_t *doc = get_json(c, "/v1/sandboxes", a->json);
    if (!doc)
        return SBX_EXIT_API;
    if (!a->json) {
        json_t *list = json_object_get(doc, "sandboxes"), *s;
        size_t i;
        printf("%-28s %-24s %-8s %8s %9s %10s\n", "ID", "CREATED", "NETWORK", "CONTEXTS",
               "PROCESSES", "MEMORY_MB");
        json_array_foreach(list, i, s) {
            json_t *u = json_object_get(s, "usage");
            long long mem = num(u, "memoryBytes");
            printf("%-28s %-24s %-8s %8lld %9lld %10.1f\n", str(s, "id"), str(s, "createdAt"),
                   str(s, "network"), num(u, "contexts"), num(u, "processes"),
                   mem < 0 ? 0.0 : (double)mem / (1024.0 * 1024.0));
        }
    }
    json_decref(doc);
    return 0;
}

int cmd_contexts(sbx_client *c, const sbx_args *a)
{
    char path[512];
    if (sbx_path(path, sizeof(path), a->sandbox, "/contexts") != 0)
        return SBX_EXIT_USAGE;
    json_t *doc = get_json(c, path, a->json);
    if (!doc)
        return SBX_EXIT_API;
    if (!a->json) {
        json_t *list = json_object_get(doc, "contexts"), *x;
        size_t i;
        printf("%-24s %-11s %-6s %6s %-24s %s\n", "ID", "LANGUAGE", "STATE", "RUNS",
               "LAST USED", "CWD");
        json_array_foreach(list, i, x)
            printf("%-24s %-11s %-6s %6lld %-24s %s\n", str(x, "id"), str(x, "language"),
                   str(x, "state"), num(x, "executionCount"), str(x, "lastUsed"), str(x, "cwd"));
    }
    json_decref(doc);
    return 0;
}

int cmd_rm(sbx_client *c, const sbx_args *a)
{
    if (a->argc < 1) {
        fprintf(stderr, "sbx rm: which sandbox? e.g. sbx rm default\n");
        return SBX_EXIT_USAGE;
    }
    int out = 0;
    for (int i = 0; i < a->argc; i++) {
        char path[512];
        if (sbx_path(path, sizeof(path), a->argv[i], NULL) != 0) {
            fprintf(stderr, "sbx rm: sandbox id too long\n");
            out = SBX_EXIT_USAGE;
            continue;
        }
        sbx_resp r;
        cl_resp_init(&r, CL_ERR_CAP);
        int rc = cl_request(c, "DELETE", path, NULL, 0, &r);
        if (rc != 0 || r.status < 200 || r.status >= 300) {
            cl_print_error(c, rc, &r);
            out = SBX_EXIT_API;
        } else {
            printf("deleted %s\n", a->argv[i]);
        }
        cl_resp_free(&r);
    }
    return out;
}
