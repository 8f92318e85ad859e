/*
 * api_json.c — see api_json.h.
 */
#include "api_json.h"

#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

json_t *api_parse_body(const http_req *req, bool allow_empty, int *status, const char **code,
                       char *err, size_t errlen)
{
    *status = 400;
    *code = "INVALID_JSON";
    if (req->body.len == 0) {
        if (allow_empty)
            return json_object();
        snprintf(err, errlen, "the request needs a JSON body");
        *code = "VALIDATION_FAILED";
        return NULL;
    }
    /* JSON, or what curl -d and fetch() send by default when nobody sets a type */
    if (req->content_type[0] && strncasecmp(req->content_type, "application/json", 16) != 0 &&
        strncasecmp(req->content_type, "text/plain", 10) != 0 &&
        strncasecmp(req->content_type, "application/x-www-form-urlencoded", 33) != 0) {
        snprintf(err, errlen, "Content-Type '%.60s' is not application/json", req->content_type);
        *status = 415;
        *code = "UNSUPPORTED_MEDIA_TYPE";
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(req->body.data, req->body.len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(err, errlen, "the body is not valid JSON: %s at line %d column %d", je.text,
                 je.line, je.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        snprintf(err, errlen, "the body must be a JSON object");
        *code = "VALIDATION_FAILED";
        return NULL;
    }
    return j;
}

json_t *api_body(http_req *req, bool allow_empty)
{
    char err[JX_ERR];
    int status;
    const char *code;
    json_t *j = api_parse_body(req, allow_empty, &status, &code, err, sizeof err);
    if (!j)
        http_respond_error(req, status, code, "%s", err);
    return j;
}

json_t *api_body_known(http_req *req, bool allow_empty, const struct jx_field *known)
{
    char err[JX_ERR];
    json_t *j = api_body(req, allow_empty);
    if (j && jx_known_fields(j, known, err, sizeof err)) {
        json_decref(j);
        http_respond_error(req, 400, "VALIDATION_FAILED", "%s", err);
        return NULL;
    }
    return j;
}

int api_body_none(http_req *req)
{
    static const struct jx_field none[] = { { NULL, NULL } };
    if (req->body.len == 0)
        return 0;
    json_t *j = api_body_known(req, true, none);
    json_decref(j);
    return j ? 0 : -1;
}

void api_respond_json(http_req *req, int status, json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!s) {
        http_respond_error(req, 500, "INTERNAL_ERROR", "could not encode the response");
        return;
    }
    http_respond(req, status, "application/json", s, strlen(s), NULL);
    free(s);
}
