/*
 * router.h — matching a method and a path against a table of routes.
 *
 * Patterns are paths whose segments are literals ("sandboxes", "files:move"), a named
 * segment ("{sid}": one segment, percent-decoded), or a named rest ("{path...}": every
 * remaining segment, percent-decoded, '/' kept; may be empty). Matching never allocates
 * more than the path's length, and a decoded value with a NUL byte or a broken escape
 * is refused, never passed on.
 */
#ifndef SANDBOXD_ROUTER_H
#define SANDBOXD_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#define ROUTE_MAX_PARAMS 4

typedef struct route_params {
    unsigned n;
    const char *names[ROUTE_MAX_PARAMS]; /* point into the pattern */
    char *values[ROUTE_MAX_PARAMS];      /* point into storage */
    char *storage;                       /* owned; freed by route_params_free() */
} route_params;

struct route {
    const char *method; /* "GET", "PUT", … */
    const char *pattern;
    void (*handler)(void); /* opaque to the router; callers cast it back */
    unsigned flags;
};

enum {
    ROUTE_FOUND = 0,
    ROUTE_NO_PATH = 1,   /* 404 */
    ROUTE_NO_METHOD = 2, /* 405; allow lists the methods the path has */
    ROUTE_BAD_PATH = 3,  /* 400: broken percent-encoding or a NUL byte */
};

/* Find the route for method + path. On ROUTE_FOUND *match and params are set (free
 * params with route_params_free). On ROUTE_NO_METHOD, allow gets "GET, PUT". */
int router_match(const struct route *table, size_t n, const char *method, const char *path,
                 const struct route **match, route_params *params, char *allow, size_t allowlen);
void route_params_free(route_params *p);

/* Percent-decode s[0..n) into out (outlen bytes, NUL-terminated); '+' is a space when
 * plus_is_space (a query string). 0, or -1 on a broken escape, a NUL, or no room. */
int router_pct_decode(const char *s, size_t n, bool plus_is_space, char *out, size_t outlen);
/* The value of a named parameter, or NULL. */
const char *route_param(const route_params *p, const char *name);

#endif
