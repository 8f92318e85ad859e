/* Unit tests for jsonx.c: body parsing and field validation name the bad field/value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "api_json.h"
#include "jsonx.h"

static json_t *parse(const char *body, const char *ctype, int *status, const char **code,
                     char *err)
{
    http_req r;
    memset(&r, 0, sizeof r);
    buf_init(&r.body, 1 << 20);
    buf_append(&r.body, body, strlen(body));
    snprintf(r.content_type, sizeof r.content_type, "%s", ctype);
    json_t *j = api_parse_body(&r, true, status, code, err, JX_ERR);
    buf_free(&r.body);
    return j;
}

static void bodies(void **state)
{
    (void)state;
    int st;
    const char *code;
    char err[JX_ERR];
    json_t *j = parse("", "", &st, &code, err);
    assert_non_null(j);
    assert_int_equal(json_object_size(j), 0);
    json_decref(j);
    assert_null(parse("{\"a\":", "application/json", &st, &code, err));
    assert_int_equal(st, 400);
    assert_string_equal(code, "INVALID_JSON");
    assert_null(parse("[1,2]", "application/json", &st, &code, err));
    assert_string_equal(code, "VALIDATION_FAILED");
    assert_null(parse("{\"a\":1,\"a\":2}", "", &st, &code, err));
    assert_string_equal(code, "INVALID_JSON");
    assert_null(parse("{\"a\":\"\xff\"}", "", &st, &code, err));
    assert_string_equal(code, "INVALID_JSON");
    assert_null(parse("{}", "application/xml", &st, &code, err));
    assert_int_equal(st, 415);
    j = parse("{\"a\":1}", "application/json; charset=utf-8", &st, &code, err);
    assert_non_null(j);
    json_decref(j);
}

static void fields(void **state)
{
    (void)state;
    char err[JX_ERR];
    json_t *o = json_loads("{\"s\":\"abc\",\"n\":5,\"neg\":-1,\"f\":1.5,\"b\":true,"
                           "\"e\":{\"K\":\"v\"},\"bad\":{\"A=B\":\"x\"},\"nul\":\"a\\u0000b\"}",
                           JSON_ALLOW_NUL, NULL);
    assert_non_null(o);
    const char *s = NULL;
    assert_int_equal(jx_string(o, "s", true, 10, &s, err, sizeof err), 0);
    assert_string_equal(s, "abc");
    assert_int_equal(jx_string(o, "s", true, 2, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "'s'"));
    assert_int_equal(jx_string(o, "missing", true, 2, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "'missing' is required"));
    assert_int_equal(jx_string(o, "nul", true, 10, &s, err, sizeof err), -1);
    assert_int_equal(jx_string(o, "n", true, 10, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "must be a string, got 5"));

    uint64_t u = 0;
    bool present;
    assert_int_equal(jx_uint(o, "n", 0, 10, &present, &u, err, sizeof err), 0);
    assert_true(present);
    assert_int_equal(u, 5);
    assert_int_equal(jx_uint(o, "n", 6, 10, &present, &u, err, sizeof err), -1);
    assert_non_null(strstr(err, "'n' must be an integer from 6 to 10, got 5"));
    assert_int_equal(jx_uint(o, "neg", 0, 10, &present, &u, err, sizeof err), -1);
    assert_int_equal(jx_uint(o, "f", 0, 10, &present, &u, err, sizeof err), -1);
    json_object_set_new(o, "huge", json_real(1e81));   /* found by fuzz_json: no UB */
    assert_int_equal(jx_uint(o, "huge", 0, 10, &present, &u, err, sizeof err), -1);
    assert_int_equal(jx_uint(o, "absent", 0, 10, &present, &u, err, sizeof err), 0);
    assert_false(present);

    double d;
    assert_int_equal(jx_number(o, "f", 0, 2, &present, &d, err, sizeof err), 0);
    assert_true(d == 1.5);
    bool b = false;
    assert_int_equal(jx_bool(o, "b", &present, &b, err, sizeof err), 0);
    assert_true(b);
    assert_int_equal(jx_bool(o, "s", &present, &b, err, sizeof err), -1);

    const json_t *env;
    assert_int_equal(jx_env_map(o, "e", 10, &env, err, sizeof err), 0);
    assert_non_null(env);
    assert_int_equal(jx_env_map(o, "bad", 10, &env, err, sizeof err), -1);
    assert_non_null(strstr(err, "A=B"));
    assert_int_equal(jx_env_map(o, "e", 0, &env, err, sizeof err), -1);
    json_decref(o);
}

/* Strict input: every field known, recursively; the first unknown one named by its path. */
static void known_fields(void **state)
{
    (void)state;
    static const struct jx_field sub[] = { { "memoryMb", NULL }, { NULL, NULL } };
    static const struct jx_field top[] = { { "limits", sub }, { "env", NULL }, { NULL, NULL } };
    char err[JX_ERR];
    json_t *j = json_loads("{\"limits\":{\"memoryMb\":1},\"env\":{\"ANY\":\"x\"}}", 0, NULL);
    assert_int_equal(jx_known_fields(j, top, err, sizeof err), 0);
    json_decref(j);
    j = json_loads("{\"limits\":{\"memMb\":1}}", 0, NULL);
    assert_int_equal(jx_known_fields(j, top, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown field 'limits.memMb'"));
    assert_non_null(strstr(err, "memoryMb"));
    json_decref(j);
    j = json_loads("{\"timeout\":1}", 0, NULL);
    assert_int_equal(jx_known_fields(j, top, err, sizeof err), -1);
    assert_non_null(strstr(err, "'timeout'"));
    assert_non_null(strstr(err, "limits, env"));
    json_decref(j);
    /* a nested field that is not an object is left to its own validator */
    j = json_loads("{\"limits\":5}", 0, NULL);
    assert_int_equal(jx_known_fields(j, top, err, sizeof err), 0);
    json_decref(j);
    static const struct jx_field none[] = { { NULL, NULL } };
    j = json_loads("{\"x\":1}", 0, NULL);
    assert_int_equal(jx_known_fields(j, none, err, sizeof err), -1);
    assert_non_null(strstr(err, "known here: none"));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bodies),
        cmocka_unit_test(fields),
        cmocka_unit_test(known_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
