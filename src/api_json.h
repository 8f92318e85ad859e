/*
 * api_json.h — JSON in and out of a request, for the API handlers: the body parsed as an
 * object (with the right error answer when it is not one) and a JSON value sent as the
 * response. Field validation is jsonx.h (no HTTP there).
 *
 * Bodies are parsed by jansson, which rejects invalid UTF-8, NUL bytes in strings,
 * duplicate keys (JSON_REJECT_DUPLICATES) and numbers that do not fit.
 */
#ifndef SANDBOXD_API_JSON_H
#define SANDBOXD_API_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "http.h"
#include "jsonx.h"

/* The body as a JSON object; an empty body is {} when allow_empty. On failure returns
 * NULL with err set; *status and *code say which error to send (400 INVALID_JSON,
 * 400 VALIDATION_FAILED when it is not an object, 415 for a non-JSON Content-Type). */
json_t *api_parse_body(const http_req *req, bool allow_empty, int *status, const char **code,
                       char *err, size_t errlen);

/* The same for a handler: on failure the request has been answered and NULL is returned. */
json_t *api_body(http_req *req, bool allow_empty);

/* api_body, then strict input: a field not in known (api_fields.h) is answered with 400
 * VALIDATION_FAILED naming it, and NULL is returned. */
json_t *api_body_known(http_req *req, bool allow_empty, const struct jx_field *known);

/* For routes whose body has no fields (interrupt, restart, suspend, resume): 0 when the
 * body is empty or an object without fields; else the request has been answered (400)
 * and -1 is returned. */
int api_body_none(http_req *req);

/* Send j (compact) and release it. */
void api_respond_json(http_req *req, int status, json_t *j);

#endif
