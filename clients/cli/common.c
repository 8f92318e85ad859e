/*
 * common.c — small request-building helpers shared by the commands: the sandbox URL path,
 * the get-or-create call every command that uses a sandbox makes first, and the
 * environment object built from -e K=V options.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sbx.h"

int sbx_path(char *out, size_t cap, const char *id, const char *suffix)
{
    char *esc = cl_escape(id, false);
    if (!esc)
        return -ENOMEM;
    int n = snprintf(out, cap, "/v1/sandboxes/%s%s", esc, suffix ? suffix : "");
    free(esc);
    return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}

int sbx_ensure_sandbox(sbx_client *c, const char *id)
{
    char path[512];
    if (sbx_path(path, sizeof(path), id, NULL) != 0) {
        fprintf(stderr, "sbx: sandbox id too long\n");
        return SBX_EXIT_USAGE;
    }
    sbx_resp r;
    cl_resp_init(&r, CL_ERR_CAP);
    int rc = cl_request(c, "PUT", path, NULL, 0, &r);
    int out = 0;
    if (rc != 0 || r.status < 200 || r.status >= 300) {
        cl_print_error(c, rc, &r);
        out = SBX_EXIT_API;
    }
    cl_resp_free(&r);
    return out;
}

json_t *sbx_env_object(const sbx_args *a, bool *bad)
{
    *bad = false;
    if (a->nenv == 0)
        return NULL;
    json_t *obj = json_object();
    for (size_t i = 0; obj && i < a->nenv; i++) {
        const char *eq = strchr(a->env[i], '=');
        if (!eq || eq == a->env[i]) {
            fprintf(stderr, "sbx: -e wants KEY=VALUE, got '%s'\n", a->env[i]);
            *bad = true;
            json_decref(obj);
            return NULL;
        }
        char key[256];
        size_t klen = (size_t)(eq - a->env[i]);
        if (klen >= sizeof(key)) {
            fprintf(stderr, "sbx: -e name longer than %zu bytes\n", sizeof(key) - 1);
            *bad = true;
            json_decref(obj);
            return NULL;
        }
        memcpy(key, a->env[i], klen);
        key[klen] = '\0';
        json_object_set_new(obj, key, json_string(eq + 1));
    }
    return obj;
}

int sbx_read_all(FILE *f, buf *out)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        int rc = buf_append(out, chunk, n);
        if (rc)
            return rc;
    }
    if (!out->data && buf_append(out, "", 0) != 0)
        return -ENOMEM;
    return ferror(f) ? -EIO : 0;
}
