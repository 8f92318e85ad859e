/*
 * jsonx.c — see jsonx.h. Values quoted in error messages are cut to a short preview so
 * that a hostile body cannot make an error message large.
 */
#include "jsonx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A short, printable rendering of a JSON value for messages. */
static void preview(const json_t *v, char *out, size_t n)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) {
        snprintf(out, n, "(a value)");
        return;
    }
    if (strlen(s) > 40)
        snprintf(out, n, "%.37s...", s);
    else
        snprintf(out, n, "%s", s);
    free(s);
}

int jx_string(const json_t *obj, const char *field, bool required, size_t maxlen, const char **out,
              char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, field);
    if (!v || json_is_null(v)) {
        if (!required)
            return 0;
        snprintf(err, errlen, "field '%s' is required", field);
        return -1;
    }
    if (!json_is_string(v)) {
        char p[64];
        preview(v, p, sizeof p);
        snprintf(err, errlen, "field '%s' must be a string, got %s", field, p);
        return -1;
    }
    if (json_string_length(v) > maxlen) {
        snprintf(err, errlen, "field '%s' is %zu bytes long, more than the limit of %zu", field,
                 json_string_length(v), maxlen);
        return -1;
    }
    if (strlen(json_string_value(v)) != json_string_length(v)) {
        snprintf(err, errlen, "field '%s' contains a NUL character", field);
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

int jx_uint(const json_t *obj, const char *field, uint64_t min, uint64_t max, bool *present,
            uint64_t *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, field);
    if (present)
        *present = false;
    if (!v || json_is_null(v))
        return 0;
    json_int_t x = 0;
    bool ok = false;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
        ok = true;
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        ok = d == floor(d) && d >= 0 && d < 9.2e18;
        if (ok)
            x = (json_int_t)d;
    }
    if (!ok || x < 0 || (uint64_t)x < min || (uint64_t)x > max) {
        char p[64];
        preview(v, p, sizeof p);
        snprintf(err, errlen, "field '%s' must be an integer from %llu to %llu, got %s", field,
                 (unsigned long long)min, (unsigned long long)max, p);
        return -1;
    }
    *out = (uint64_t)x;
    if (present)
        *present = true;
    return 0;
}

int jx_number(const json_t *obj, const char *field, double min, double max, bool *present,
              double *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, field);
    if (present)
        *present = false;
    if (!v || json_is_null(v))
        return 0;
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d >= min && d <= max)) {
        char p[64];
        preview(v, p, sizeof p);
        snprintf(err, errlen, "field '%s' must be a number from %g to %g, got %s", field, min, max,
                 p);
        return -1;
    }
    *out = d;
    if (present)
        *present = true;
    return 0;
}

int jx_bool(const json_t *obj, const char *field, bool *present, bool *out, char *err,
            size_t errlen)
{
    const json_t *v = json_object_get(obj, field);
    if (present)
        *present = false;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v)) {
        char p[64];
        preview(v, p, sizeof p);
        snprintf(err, errlen, "field '%s' must be true or false, got %s", field, p);
        return -1;
    }
    *out = json_is_true(v);
    if (present)
        *present = true;
    return 0;
}

int jx_env_map(const json_t *obj, const char *field, size_t max, const json_t **out, char *err,
               size_t errlen)
{
    const json_t *v = json_object_get(obj, field);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v)) {
        snprintf(err, errlen, "field '%s' must be an object of strings", field);
        return -1;
    }
    if (json_object_size(v) > max) {
        snprintf(err, errlen, "field '%s' has %zu entries, more than the limit of %zu", field,
                 json_object_size(v), max);
        return -1;
    }
    const char *k;
    const json_t *val;
    json_object_foreach((json_t *)v, k, val)
    {
        if (k[0] == '\0' || strchr(k, '=') || strlen(k) > 1024) {
            snprintf(err, errlen, "field '%s' has an invalid variable name '%.40s'", field, k);
            return -1;
        }
        if (!json_is_string(val) || strlen(json_string_value(val)) != json_string_length(val)) {
            snprintf(err, errlen, "field '%s': the value of '%.40s' must be a string without NUL",
                     field, k);
            return -1;
        }
    }
    *out = v;
    return 0;
}

/* The known names of a table as "a, b, c" (cut to fit). */
static void known_list(const struct jx_field *known, char *out, size_t n)
{
    size_t l = 0;
    out[0] = '\0';
    for (const struct jx_field *f = known; f->name && l < n; f++) {
        int w = snprintf(out + l, n - l, "%s%s", l ? ", " : "", f->name);
        if (w < 0)
            break;
        l += (size_t)w;
    }
    if (!known->name)
        snprintf(out, n, "none");
}

/* jx_known_fields below prefix ("" at the top, "limits." inside). */
static int known_at(const json_t *obj, const struct jx_field *known, const char *prefix, char *err,
                    size_t errlen)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        const struct jx_field *f = known;
        while (f->name && strcmp(f->name, k) != 0)
            f++;
        if (!f->name) {
            char list[160];
            known_list(known, list, sizeof list);
            snprintf(err, errlen, "unknown field '%s%.64s' (known here: %s)", prefix, k, list);
            return -1;
        }
        if (f->sub && json_is_object(v)) {
            char sub[96];
            snprintf(sub, sizeof sub, "%s%.64s.", prefix, k);
            if (known_at(v, f->sub, sub, err, errlen))
                return -1;
        }
    }
    return 0;
}

int jx_known_fields(const json_t *obj, const struct jx_field *known, char *err, size_t errlen)
{
    if (!json_is_object(obj))
        return 0;
    return known_at(obj, known, "", err, errlen);
}
