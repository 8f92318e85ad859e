/*
 * router.c — see router.h. A path is matched against each pattern in turn (tables are
 * short: a few dozen routes), segment by segment, without copying until a match.
 */
#include "router.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int router_pct_decode(const char *s, size_t n, bool plus_is_space, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '+' && plus_is_space) {
            ch = ' ';
        } else if (ch == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = hexval(s[i + 1]);
            int lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            ch = (char)(hi * 16 + lo);
            i += 2;
        }
        if (ch == '\0' || o + 1 >= outlen)
            return -1;
        out[o++] = ch;
    }
    out[o] = '\0';
    return 0;
}

/* Length of the segment at s (up to '/' or the end). */
static size_t seglen(const char *s)
{
    const char *e = strchr(s, '/');
    return e ? (size_t)(e - s) : strlen(s);
}

/* Does path match pattern? Fills params (values decoded into storage) when it does.
 * Returns 1 match, 0 no match, -1 bad encoding in a captured part. */
static int match_one(const char *pattern, const char *path, route_params *p)
{
    const char *pt = pattern, *pa = path;
    size_t used = 0;
    p->n = 0;
    while (*pt && *pa) {
        if (*pt != '/' || *pa != '/')
            return 0;
        pt++;
        pa++;
        size_t tl = seglen(pt), al = seglen(pa);
        if (pt[0] == '{') {
            bool rest = tl > 5 && strncmp(pt + tl - 4, "...}", 4) == 0;
            size_t vl = rest ? strlen(pa) : al;
            if (!rest && al == 0)
                return 0;
            if (p->n == ROUTE_MAX_PARAMS)
                return 0;
            char *dst = p->storage + used;
            if (router_pct_decode(pa, vl, false, dst, vl + 1))
                return -1;
            p->names[p->n] = pt + 1;
            p->values[p->n++] = dst;
            used += vl + 1;
            pt += tl;
            pa += vl;
            if (rest)
                return *pt == '\0';
            continue;
        }
        if (tl != al || strncmp(pt, pa, tl) != 0)
            return 0;
        pt += tl;
        pa += al;
    }
    if (*pt == '\0' && *pa == '\0')
        return 1;
    /* "/a/{rest...}" also matches "/a" and "/a/" with an empty rest */
    if (*pa == '\0' && strncmp(pt, "/{", 2) == 0 && strstr(pt, "...}") &&
        strchr(pt + 1, '/') == NULL) {
        if (p->n == ROUTE_MAX_PARAMS)
            return 0;
        p->names[p->n] = pt + 2;
        p->storage[used] = '\0';
        p->values[p->n++] = p->storage + used;
        return 1;
    }
    return 0;
}

int router_match(const struct route *table, size_t n, const char *method, const char *path,
                 const struct route **match, route_params *params, char *allow, size_t allowlen)
{
    size_t plen = strlen(path);
    bool path_found = false;
    size_t alen = 0;
    memset(params, 0, sizeof *params);
    params->storage = malloc(plen * 2 + 2); /* every value fits, terminators included */
    if (!params->storage)
        return ROUTE_NO_PATH;
    if (allowlen)
        allow[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int m = match_one(table[i].pattern, path, params);
        if (m < 0) {
            route_params_free(params);
            return ROUTE_BAD_PATH;
        }
        if (!m)
            continue;
        if (strcmp(table[i].method, method) == 0) {
            *match = &table[i];
            return ROUTE_FOUND;
        }
        path_found = true;
        if (allowlen && !strstr(allow, table[i].method)) {
            int w =
                snprintf(allow + alen, allowlen - alen, "%s%s", alen ? ", " : "", table[i].method);
            if (w > 0 && (size_t)w < allowlen - alen)
                alen += (size_t)w;
        }
    }
    route_params_free(params);
    return path_found ? ROUTE_NO_METHOD : ROUTE_NO_PATH;
}

void route_params_free(route_params *p)
{
    free(p->storage);
    memset(p, 0, sizeof *p);
}

const char *route_param(const route_params *p, const char *name)
{
    size_t nl = strlen(name);
    for (unsigned i = 0; i < p->n; i++)
        if (strncmp(p->names[i], name, nl) == 0 &&
            (p->names[i][nl] == '}' || strncmp(p->names[i] + nl, "...}", 4) == 0))
            return p->values[i];
    return NULL;
}
