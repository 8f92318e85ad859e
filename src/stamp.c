/*
 * stamp.c — see stamp.h. Used on the loop thread only.
 */
#include "stamp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>

uint64_t stamp_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

void stamp_iso8601(uint64_t ms, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    size_t l = strlen(out);
    snprintf(out + l, n - l, ".%03uZ", (unsigned)(ms % 1000));
}

/* Random bytes from a pool refilled with one getrandom(2) per 64 ids (single-threaded). */
static int random8(unsigned char r[8])
{
    static unsigned char pool[512];
    static size_t used = sizeof pool;
    if (used == sizeof pool) {
        if (getrandom(pool, sizeof pool, 0) != (ssize_t)sizeof pool)
            return -EIO;
        used = 0;
    }
    memcpy(r, pool + used, 8);
    memset(pool + used, 0, 8); /* an id's bytes do not stay behind */
    used += 8;
    return 0;
}

/* The daemon run's tag in the first two bytes of every id, once set (stamp_set_epoch). */
static int epoch = -1;

void stamp_set_epoch(uint16_t e)
{
    epoch = e;
}

int stamp_id(char *out, size_t n, const char *prefix)
{
    unsigned char r[8];
    if (random8(r))
        return -EIO;
    if (epoch >= 0) {
        r[0] = (unsigned char)(epoch >> 8);
        r[1] = (unsigned char)epoch;
    }
    snprintf(out, n, "%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3], r[4],
             r[5], r[6], r[7]);
    return 0;
}

int stamp_id_epoch(const char *id, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (strncmp(id, prefix, pl) != 0 || strlen(id + pl) != 16)
        return -1;
    int e = 0;
    for (int i = 0; i < 16; i++) {
        char c = id[pl + i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        if (i < 4)
            e = e * 16 + d;
    }
    return e;
}
