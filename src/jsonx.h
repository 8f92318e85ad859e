/*
 * jsonx.h — JSON for the API: parsing request bodies, validating fields with messages
 * that name the bad field and value, and sending JSON responses.
 *
 * Bodies are parsed by jansson, which rejects invalid UTF-8, NUL bytes in strings,
 * duplicate keys (JSON_REJECT_DUPLICATES) and numbers that do not fit. Validators return
 * 0 when the field is valid or absent and not required; otherwise -1 with err set to a
 * sentence like "field 'timeoutMs' must be an integer from 0 to 86400000, got \"x\"".
 */
#ifndef SANDBOXD_JSONX_H
#define SANDBOXD_JSONX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "http.h"

#define JX_ERR 256

/* The body as a JSON object; an empty body is {} when allow_empty. On failure returns
 * NULL with err set; *status and *code say which error to send (400 INVALID_JSON,
 * 400 VALIDATION_FAILED when it is not an object, 415 for a non-JSON Content-Type). */
json_t *jx_parse_object(const http_req *req, bool allow_empty, int *status, const char **code,
                        char *err, size_t errlen);

/* The same for a handler: on failure the request has been answered and NULL is returned. */
json_t *jx_body(http_req *req, bool allow_empty);

int jx_string(const json_t *obj, const char *field, bool required, size_t maxlen,
              const char **out, char *err, size_t errlen);
int jx_uint(const json_t *obj, const char *field, uint64_t min, uint64_t max, bool *present,
            uint64_t *out, char *err, size_t errlen);
int jx_number(const json_t *obj, const char *field, double min, double max, bool *present,
              double *out, char *err, size_t errlen);
int jx_bool(const json_t *obj, const char *field, bool *present, bool *out, char *err,
            size_t errlen);
/* An object whose values are all strings (environment variables): at most max entries,
 * keys valid names for the environment (no '=', not empty), values without NUL. */
int jx_env_map(const json_t *obj, const char *field, size_t max, const json_t **out,
               char *err, size_t errlen);

/* Send j (compact) and release it. */
void jx_respond(http_req *req, int status, json_t *j);

#endif
