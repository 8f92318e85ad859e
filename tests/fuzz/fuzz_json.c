/*
 * fuzz_json.c — libFuzzer target for the API's JSON request validation: every input is
 * a request body, parsed as the API parses bodies and run through every validator the
 * request handlers use. Nothing may crash, leak or accept what it should refuse.
 */
#include <stdint.h>
#include <string.h>

#include "api_json.h"
#include "jsonx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    http_req r;
    memset(&r, 0, sizeof r);
    buf_init(&r.body, 1 << 20);
    if (buf_append(&r.body, data, size))
        return 0;
    int status;
    const char *code;
    char err[JX_ERR];
    json_t *j = api_parse_body(&r, true, &status, &code, err, sizeof err);
    if (j) {
        const char *s;
        uint64_t u;
        double d;
        bool b, present;
        const json_t *env;
        static const char *const fields[] = { "code", "command", "language", "cwd", "context",
                                              "timeoutMs", "network", "stdin" };
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
            jx_string(j, fields[i], false, 1 << 16, &s, err, sizeof err);
            jx_uint(j, fields[i], 0, 86400000, &present, &u, err, sizeof err);
            jx_number(j, fields[i], 0.01, 1024, &present, &d, err, sizeof err);
            jx_bool(j, fields[i], &present, &b, err, sizeof err);
        }
        jx_env_map(j, "envVars", 256, &env, err, sizeof err);
        jx_env_map(j, "env", 256, &env, err, sizeof err);
        json_decref(j);
    }
    buf_free(&r.body);
    return 0;
}
