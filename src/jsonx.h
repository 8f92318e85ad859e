/*
 * jsonx.h — validating the fields of a JSON object with messages that name the bad field
 * and value. No HTTP here: reading a request's body and answering in JSON is api_json.h.
 *
 * Validators return
 * 0 when the field is valid or absent and not required; otherwise -1 with err set to a
 * sentence like "field 'timeoutMs' must be an integer from 0 to 86400000, got \"x\"".
 */
#ifndef SANDBOXD_JSONX_H
#define SANDBOXD_JSONX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define JX_ERR 256

int jx_string(const json_t *obj, const char *field, bool required, size_t maxlen, const char **out,
              char *err, size_t errlen);
int jx_uint(const json_t *obj, const char *field, uint64_t min, uint64_t max, bool *present,
            uint64_t *out, char *err, size_t errlen);
int jx_number(const json_t *obj, const char *field, double min, double max, bool *present,
              double *out, char *err, size_t errlen);
int jx_bool(const json_t *obj, const char *field, bool *present, bool *out, char *err,
            size_t errlen);
/* An object whose values are all strings (environment variables): at most max entries,
 * keys valid names for the environment (no '=', not empty), values without NUL. */
int jx_env_map(const json_t *obj, const char *field, size_t max, const json_t **out, char *err,
               size_t errlen);

/* The fields an object may have: a table ended by a row with name NULL. A row with sub
 * names a nested object whose own fields are checked against sub when it is an object
 * (whether it must be an object is the field's own validator's business). */
struct jx_field {
    const char *name;
    const struct jx_field *sub;
};

/* Strict input: 0 when every field of obj is in the table (recursively into sub), else -1
 * with err naming the first unknown one by its path ("limits.memMb") and the known ones. */
int jx_known_fields(const json_t *obj, const struct jx_field *known, char *err, size_t errlen);

#endif
