/*
 * api_fields.h — the fields each /v1 request body may carry (API.md "Conventions": a field
 * this API does not know is a 400 VALIDATION_FAILED naming it, so that a typo such as
 * "timeout" for "timeoutMs" never passes silently). One table per body, in api_fields.c;
 * a handler that reads a new field adds it to its table there.
 */
#ifndef SANDBOXD_API_FIELDS_H
#define SANDBOXD_API_FIELDS_H

#include "jsonx.h"

extern const struct jx_field API_FIELDS_SANDBOX[]; /* PUT, POST /v1/sandboxes */
extern const struct jx_field API_FIELDS_CONTEXT[]; /* POST …/contexts */
extern const struct jx_field API_FIELDS_EXECUTE[]; /* POST …/execute */
extern const struct jx_field API_FIELDS_EXEC[];    /* POST …/exec */
extern const struct jx_field API_FIELDS_PROCESS[]; /* POST …/processes */
extern const struct jx_field API_FIELDS_STDIN[];   /* POST …/processes/{pid}/stdin */
extern const struct jx_field API_FIELDS_MOVE[];    /* POST …/files:move */
extern const struct jx_field API_FIELDS_MKDIR[];   /* POST …/files:mkdir */

#endif
