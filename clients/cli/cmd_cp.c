/*
 * cmd_cp.c — `sbx cp`: copy one file between this machine and a sandbox (files API).
 *
 *   sbx cp LOCAL SANDBOX:PATH    PUT  /v1/sandboxes/SANDBOX/files/PATH   (LOCAL '-' = stdin)
 *   sbx cp SANDBOX:PATH LOCAL    GET  …/files/PATH  (LOCAL a directory: its basename inside;
 *                                                    LOCAL '-' = stdout)
 * An argument is remote when it has the form ID:PATH with ID a valid sandbox id; write a
 * local file whose name has a colon as ./name. Downloads go to LOCAL.sbx-part and are
 * renamed into place only when complete, so a failed copy never leaves half a file.
 * Sandbox paths under /workspace are sent relative to it, as API.md's routes expect.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sbx.h"

typedef struct remote {
    char id[64];
    const char *path;
} remote;

/* ID:PATH with ID [A-Za-z0-9][A-Za-z0-9._-]{0,62}: true and *out filled. */
static bool parse_remote(const char *arg, remote *out)
{
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || (size_t)(colon - arg) > 63 || colon[1] == '\0')
        return false;
    for (const char *p = arg; p < colon; p++) {
        char ch = *p;
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && (p == arg || (ch != '.' && ch != '_' && ch != '-')))
            return false;
    }
    memcpy(out->id, arg, (size_t)(colon - arg));
    out->id[colon - arg] = '\0';
    out->path = colon + 1;
    return true;
}

/* "/v1/sandboxes/ID/files/REL" for a sandbox path. 0 or -E2BIG / -ENOMEM. */
static int files_path(char *out, size_t cap, const remote *rm)
{
    const char *rel = rm->path;
    if (strcmp(rel, "/workspace") == 0 || strcmp(rel, "/workspace/") == 0)
        rel = "";
    else if (strncmp(rel, "/workspace/", 11) == 0)
        rel += 11;
    char *esc = cl_escape(rel, true);
    if (!esc)
        return -ENOMEM;
    char suffix[4200];
    int n = snprintf(suffix, sizeof(suffix), "/files/%s", esc);
    free(esc);
    if (n < 0 || (size_t)n >= sizeof(suffix))
        return -E2BIG;
    return sbx_path(out, cap, rm->id, suffix);
}

static int upload(sbx_client *c, const char *local, const remote *rm)
{
    char path[4800];
    if (files_path(path, sizeof(path), rm) != 0) {
        fprintf(stderr, "sbx cp: path too long\n");
        return SBX_EXIT_USAGE;
    }
    bool is_stdin = strcmp(local, "-") == 0;
    FILE *in = is_stdin ? stdin : fopen(local, "rbe");
    if (!in) {
        fprintf(stderr, "sbx cp: cannot open %s: %s\n", local, strerror(errno));
        return SBX_EXIT_RAISED;
    }
    struct stat st;
    long long size = -1;
    if (fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode))
        size = (long long)st.st_size;
    else if (!is_stdin) {
        fprintf(stderr, "sbx cp: %s is not a regular file\n", local);
        fclose(in);
        return SBX_EXIT_RAISED;
    }
    int rc = sbx_ensure_sandbox(c, rm->id);
    if (rc == 0) {
        sbx_resp r;
        cl_resp_init(&r, CL_ERR_CAP);
        int trc = cl_upload(c, path, in, size, &r);
        if (trc != 0 || r.status < 200 || r.status >= 300) {
            cl_print_error(c, trc, &r);
            rc = SBX_EXIT_API;
        }
        cl_resp_free(&r);
    }
    if (!is_stdin)
        fclose(in);
    return rc;
}

static int download(sbx_client *c, const remote *rm, const char *local)
{
    char path[4800];
    if (files_path(path, sizeof(path), rm) != 0) {
        fprintf(stderr, "sbx cp: path too long\n");
        return SBX_EXIT_USAGE;
    }
    bool to_stdout = strcmp(local, "-") == 0;
    char target[4096], part[4200];
    struct stat st;
    if (!to_stdout && stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
        const char *base = strrchr(rm->path, '/');
        base = base ? base + 1 : rm->path;
        if (!*base) {
            fprintf(stderr, "sbx cp: %s names a directory; copy one file\n", rm->path);
            return SBX_EXIT_USAGE;
        }
        int n = snprintf(target, sizeof(target), "%s/%s", local, base);
        if (n < 0 || (size_t)n >= sizeof(target))
            return SBX_EXIT_USAGE;
    } else {
        int n = snprintf(target, sizeof(target), "%s", local);
        if (n < 0 || (size_t)n >= sizeof(target))
            return SBX_EXIT_USAGE;
    }
    int n = snprintf(part, sizeof(part), "%s.sbx-part", target);
    if (n < 0 || (size_t)n >= sizeof(part))
        return SBX_EXIT_USAGE;
    FILE *out = to_stdout ? stdout : fopen(part, "wbe");
    if (!out) {
        fprintf(stderr, "sbx cp: cannot write %s: %s\n", part, strerror(errno));
        return SBX_EXIT_RAISED;
    }
    sbx_resp r;
    cl_resp_init(&r, CL_ERR_CAP);
    int trc = cl_download(c, path, out, &r);
    int rc = 0;
    if (trc != 0 || r.status < 200 || r.status >= 300) {
        cl_print_error(c, trc, &r);
        rc = SBX_EXIT_API;
    } else if (strncmp(r.ctype, "application/json", 16) == 0 && !to_stdout) {
        /* A directory answers with its listing: refuse rather than save the listing. */
        char head[16] = "";
        FILE *chk = fopen(part, "rbe");
        if (chk) {
            size_t got = fread(head, 1, sizeof(head) - 1, chk);
            head[got] = '\0';
            fclose(chk);
        }
        if (strncmp(head, "{\"entries\"", 10) == 0) {
            fprintf(stderr, "sbx cp: %s:%s is a directory; copy one file\n", rm->id, rm->path);
            rc = SBX_EXIT_RAISED;
        }
    }
    if (to_stdout) {
        fflush(stdout);
        cl_resp_free(&r);
        return rc;
    }
    if (fclose(out) != 0 && rc == 0) {
        fprintf(stderr, "sbx cp: cannot write %s: %s\n", part, strerror(errno));
        rc = SBX_EXIT_RAISED;
    }
    if (rc == 0 && rename(part, target) != 0) {
        fprintf(stderr, "sbx cp: cannot rename %s to %s: %s\n", part, target, strerror(errno));
        rc = SBX_EXIT_RAISED;
    }
    if (rc != 0)
        unlink(part);
    cl_resp_free(&r);
    return rc;
}

int cmd_cp(sbx_client *c, const sbx_args *a)
{
    if (a->argc != 2) {
        fprintf(stderr, "sbx cp: usage: sbx cp LOCAL SANDBOX:PATH | sbx cp SANDBOX:PATH LOCAL\n");
        return SBX_EXIT_USAGE;
    }
    remote src, dst;
    bool rsrc = parse_remote(a->argv[0], &src), rdst = parse_remote(a->argv[1], &dst);
    if (rsrc == rdst) {
        fprintf(stderr, "sbx cp: exactly one side must be SANDBOX:PATH (use ./name for a "
                        "local file with a colon)\n");
        return SBX_EXIT_USAGE;
    }
    return rdst ? upload(c, a->argv[0], &dst) : download(c, &src, a->argv[1]);
}
