/*
 * sandbox_store.c — the sandbox records on disk (see sandbox_store.h). Paths are built
 * from ids that sbx_valid_id accepted (no '/', no leading '.'), below the state dir's
 * sandboxes/ directory, which only the daemon writes (0711, owned by root).
 */
#include "sandbox_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "stamp.h"
#include "state_lock.h"

#define STORE_VERSION 1

static char sbx_dir[600];
static uint16_t generation;

void store_init(const char *state_dir, int64_t gen)
{
    snprintf(sbx_dir, sizeof sbx_dir, "%s/sandboxes", state_dir);
    generation = (uint16_t)gen;
    stamp_set_epoch(generation);
}

uint16_t store_generation(void)
{
    return generation;
}

int store_save(const sandbox *s)
{
    char dir[700];
    if (!sbx_dir[0])
        return 0; /* not set up (unit tests): nothing is durable */
    if (snprintf(dir, sizeof dir, "%s/%s", sbx_dir, s->id) >= (int)sizeof dir)
        return -ENAMETOOLONG;
    json_t *rec = json_pack("{s:i, s:s, s:I, s:i, s:i, s:O}", "version", STORE_VERSION, "id", s->id,
                            "createdAt", (json_int_t)s->created_ms, "slot", jail_slot(s->jail),
                            "bornGeneration", (int)s->born_gen, "settings",
                            s->settings ? s->settings : json_object());
    char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
    json_decref(rec);
    if (!text)
        return -ENOMEM;
    int rc = slock_write_atomic(dir, STORE_FILE, text, strlen(text));
    free(text);
    if (rc)
        log_error("sandbox %s: cannot save its settings in %s: %s", s->id, dir, strerror(-rc));
    return rc;
}

void store_forget(const char *id)
{
    char path[800];
    if (sbx_dir[0] &&
        snprintf(path, sizeof path, "%s/%s/%s", sbx_dir, id, STORE_FILE) < (int)sizeof path &&
        unlink(path) < 0 && errno != ENOENT)
        log_error("sandbox %s: cannot remove %s: %s", id, path, strerror(errno));
}

/* The record of one sandbox dir, or NULL (logged unless there is none). */
static json_t *load_one(const char *id)
{
    char path[800];
    if (snprintf(path, sizeof path, "%s/%s/%s", sbx_dir, id, STORE_FILE) >= (int)sizeof path)
        return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    struct stat st;
    json_t *rec = NULL;
    json_error_t je;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= STORE_MAX_BYTES)
        rec = json_loadfd(fd, 0, &je);
    close(fd);
    const json_t *sid = json_object_get(rec, "id");
    if (!json_is_object(rec) || !json_is_string(sid) || strcmp(json_string_value(sid), id) ||
        !json_is_object(json_object_get(rec, "settings")) ||
        json_integer_value(json_object_get(rec, "version")) != STORE_VERSION) {
        log_error("sandbox %s: %s is unreadable; the sandbox is not restored (its files stay)", id,
                  path);
        json_decref(rec);
        return NULL;
    }
    return rec;
}

unsigned store_load_all(void (*fn)(const char *id, const json_t *record, void *arg), void *arg)
{
    DIR *d = opendir(sbx_dir);
    if (!d)
        return 0;
    unsigned n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!sbx_valid_id(de->d_name))
            continue;
        json_t *rec = load_one(de->d_name);
        if (!rec)
            continue;
        fn(de->d_name, rec, arg);
        json_decref(rec);
        n++;
    }
    closedir(d);
    return n;
}

bool store_ended_by_restart(const sandbox *s, const char *id, const char *prefix)
{
    int e = id ? stamp_id_epoch(id, prefix) : -1;
    if (e < 0 || (uint16_t)e == generation)
        return false;
    /* generations, modulo 2^16: born <= e < now */
    uint16_t age = (uint16_t)(generation - (uint16_t)e);
    uint16_t lived = (uint16_t)(generation - s->born_gen);
    return age <= lived;
}
