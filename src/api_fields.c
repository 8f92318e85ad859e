/*
 * api_fields.c — the tables of api_fields.h: every field a /v1 body may have, nested
 * objects with their own table. Maps whose keys are the client's (env, envVars) have no
 * table: any variable name is theirs to choose. The compatibility surfaces do not use
 * these (they accept whatever their real clients send).
 */
#include "api_fields.h"

#include <stddef.h>

/* A sandbox's "limits" (sbx_parse_limits). */
static const struct jx_field LIMITS[] = {
    { "memoryMb", NULL }, { "pids", NULL },      { "cpus", NULL }, { "diskMb", NULL },
    { "tmpMb", NULL },    { "timeoutMs", NULL }, { NULL, NULL },
};

/* A sandbox's "lifecycle" (sbx_parse_lifecycle). */
static const struct jx_field LIFECYCLE[] = {
    { "idleTimeoutMs", NULL },
    { "onIdle", NULL },
    { "maxAgeMs", NULL },
    { NULL, NULL },
};

const struct jx_field API_FIELDS_SANDBOX[] = {
    { "limits", LIMITS },       { "network", NULL }, { "env", NULL },
    { "lifecycle", LIFECYCLE }, { NULL, NULL },
};

const struct jx_field API_FIELDS_CONTEXT[] = {
    { "language", NULL },
    { "cwd", NULL },
    { "envVars", NULL },
    { NULL, NULL },
};

const struct jx_field API_FIELDS_EXECUTE[] = {
    { "code", NULL },    { "context", NULL },   { "language", NULL },
    { "envVars", NULL }, { "timeoutMs", NULL }, { NULL, NULL },
};

const struct jx_field API_FIELDS_EXEC[] = {
    { "command", NULL }, { "cwd", NULL },       { "env", NULL },
    { "stdin", NULL },   { "timeoutMs", NULL }, { NULL, NULL },
};

const struct jx_field API_FIELDS_PROCESS[] = {
    { "command", NULL }, { "cwd", NULL }, { "env", NULL }, { "stdin", NULL }, { NULL, NULL },
};

const struct jx_field API_FIELDS_STDIN[] = {
    { "data", NULL },
    { "encoding", NULL },
    { "eof", NULL },
    { NULL, NULL },
};

const struct jx_field API_FIELDS_MOVE[] = {
    { "from", NULL },
    { "to", NULL },
    { NULL, NULL },
};

const struct jx_field API_FIELDS_MKDIR[] = {
    { "path", NULL },
    { NULL, NULL },
};
