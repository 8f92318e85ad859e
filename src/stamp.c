/*
 * stamp.c — see stamp.h.
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

int stamp_id(char *out, size_t n, const char *prefix)
{
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != sizeof r)
        return -EIO;
    snprintf(out, n, "%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, r[0], r[1], r[2], r[3],
             r[4], r[5], r[6], r[7]);
    return 0;
}
