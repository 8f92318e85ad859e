/*
 * pysite.c — the operator's Python site directories (--python-site-dir) and the list of
 * Python packages every context can import, for /v1/health (see pysite.h).
 *
 * Start-up checks each directory once: absolute, an existing directory, at most
 * PYSITE_MAX of them, and (when the daemon is root, so that a sandbox's users are other
 * host uids than ours) readable and searchable by others along its whole path: the
 * sandbox's init opens it with a mapped uid, and the sandbox user reads it. A directory
 * that fails stops the daemon with a sentence naming it, rather than every sandbox
 * failing later.
 *
 * Directory i is shown at PYSITE_INSIDE/i in every sandbox (the init binds it read-only,
 * init_root.c) and listed, in order, in the PYTHONPATH every sandboxed process starts
 * with (contexts put the same entries on sys.path, runtimes/python/sandboxd_runtime/
 * packages.py).
 *
 * The package list is computed once, by a child process (python3 -I running the
 * runtime's inventory.py over the system's paths and the site directories), never on the
 * loop and never per request. Its output is capped (PROBE_MAX); anything else than the
 * JSON object inventory.py promises leaves the list out with a warning. The health
 * fragment is rendered once, when the probe ends.
 */
#include "pysite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "probe.h"

#define PROBE_MAX (256 << 10) /* the inventory's output: ~2 KiB for Debian's 85 packages */
#define PYTHON "/usr/bin/python3"

static char dirs[PYSITE_MAX][PYSITE_PATH_MAX];
static unsigned ndirs;
static char pythonpath[PYSITE_MAX * 32 + 16];
static char *fragment; /* "\"packages\":{…}" once the probe is done (NULL until then) */
static bool probing;

/* Others may search every directory above path, and read and search path itself. */
static int check_others(const char *path, char *err, size_t errlen)
{
    char prefix[PYSITE_PATH_MAX];
    size_t n = strlen(path);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        memcpy(prefix, path, i);
        prefix[i] = '\0';
        struct stat st;
        if (stat(prefix, &st) < 0) {
            snprintf(err, errlen, "--python-site-dir %s: %s: %s", path, prefix, strerror(errno));
            return -errno;
        }
        mode_t need = path[i] == '\0' ? (S_IROTH | S_IXOTH) : S_IXOTH;
        if ((st.st_mode & need) != need) {
            snprintf(err, errlen,
                     "--python-site-dir %s: %s is not %s by others, and a sandbox's users are "
                     "not the daemon's (chmod o+%s)",
                     path, prefix, need == S_IXOTH ? "searchable" : "readable",
                     need == S_IXOTH ? "x" : "rx");
            return -EACCES;
        }
    }
    return 0;
}

static int add_dir(const char *path, size_t len, char *err, size_t errlen)
{
    if (ndirs == PYSITE_MAX) {
        snprintf(err, errlen, "--python-site-dir: more than %d directories", PYSITE_MAX);
        return -E2BIG;
    }
    if (len >= PYSITE_PATH_MAX) {
        snprintf(err, errlen, "--python-site-dir: a path is longer than %d bytes",
                 PYSITE_PATH_MAX - 1);
        return -ENAMETOOLONG;
    }
    char *d = dirs[ndirs];
    memcpy(d, path, len);
    d[len] = '\0';
    struct stat st;
    if (stat(d, &st) < 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "--python-site-dir %s: not a directory", d);
        return -ENOTDIR;
    }
    int rc = geteuid() == 0 ? check_others(d, err, errlen) : 0;
    if (rc)
        return rc;
    ndirs++;
    return 0;
}

int pysite_init(const char *list, char *err, size_t errlen)
{
    ndirs = 0;
    pythonpath[0] = '\0';
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ":");
        int rc = len ? add_dir(p, len, err, errlen) : 0;
        if (rc)
            return rc;
        p += len + (p[len] == ':');
    }
    size_t off = 0;
    for (unsigned i = 0; i < ndirs; i++)
        off += (size_t)snprintf(pythonpath + off, sizeof pythonpath - off, "%s%s/%u",
                                i ? ":" : "PYTHONPATH=", PYSITE_INSIDE, i);
    return 0;
}

unsigned pysite_count(void)
{
    return ndirs;
}

const char *pysite_host_dir(unsigned i)
{
    return i < ndirs ? dirs[i] : NULL;
}

const char *pysite_pythonpath(void)
{
    return ndirs ? pythonpath : NULL;
}

/* {"python":{name:version…},"pythonSiteDirs":[{"path","packages"}…]} from the inventory's
 * {"system":{…},"dirs":[{…}…]}: the site dirs come first on the path, so their version of a
 * package is the one a context imports. */
static char *render(const json_t *inv)
{
    const json_t *sys = json_object_get(inv, "system"), *ds = json_object_get(inv, "dirs");
    if (!json_is_object(sys) || !json_is_array(ds) || json_array_size(ds) != ndirs)
        return NULL;
    json_t *all = json_object(), *site = json_array();
    for (unsigned i = ndirs; i-- > 0;) {
        const json_t *d = json_array_get(ds, i);
        if (json_is_object(d))
            json_object_update(all, (json_t *)d);
    }
    for (unsigned i = 0; i < ndirs; i++) {
        char path[64];
        snprintf(path, sizeof path, "%s/%u", PYSITE_INSIDE, i);
        const json_t *d = json_array_get(ds, i);
        json_array_append_new(site, json_pack("{s:s, s:O}", "path", path, "packages",
                                              json_is_object(d) ? d : json_object()));
    }
    json_t *merged = json_deep_copy(sys);
    json_object_update(merged, all);
    json_decref(all);
    json_t *out = json_pack("{s:o, s:o}", "python", merged, "pythonSiteDirs", site);
    char *body = out ? json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(out);
    if (!body)
        return NULL;
    size_t n = strlen(body) + sizeof "\"packages\":";
    char *f = malloc(n);
    if (f)
        snprintf(f, n, "\"packages\":%s", body);
    free(body);
    return f;
}

/* The inventory's answer: the health fragment, or a warning. */
static void inventory_done(int64_t status, int sig, const char *out, size_t len, bool overflow,
                           void *arg)
{
    (void)arg;
    json_t *inv = NULL;
    if (status == 0 && !sig && !overflow)
        inv = json_loadb(out, len, 0, NULL);
    fragment = inv ? render(inv) : NULL;
    if (!fragment)
        log_warn("the Python package list is not available (%s)",
                 overflow        ? "the inventory's output is too big"
                 : status || sig ? "the inventory failed"
                                 : "the inventory's output is not what it should be");
    json_decref(inv);
    probing = false;
}

int pysite_probe_start(uv_loop_t *loop, const char *runtimes_dir)
{
    char script[PYSITE_PATH_MAX + 64];
    snprintf(script, sizeof script, "%s/python/sandboxd_runtime/inventory.py", runtimes_dir);
    if (access(PYTHON, X_OK) != 0 || access(script, R_OK) != 0)
        return -ENOENT;
    char *args[4 + PYSITE_MAX] = { (char *)PYTHON, (char *)"-I", script };
    for (unsigned i = 0; i < ndirs; i++)
        args[3 + i] = dirs[i];
    char *env[] = { (char *)"PATH=/usr/bin:/bin", (char *)"LANG=C.UTF-8", NULL };
    int rc = probe_run(loop, args, env, PROBE_MAX, inventory_done, NULL);
    if (rc)
        return rc;
    probing = true;
    return 0;
}

bool pysite_probing(void)
{
    return probing;
}

const char *pysite_health_fragment(void)
{
    return fragment;
}

void pysite_shutdown(void)
{
    free(fragment);
    fragment = NULL;
}
