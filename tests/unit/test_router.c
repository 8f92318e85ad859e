/* Unit tests for router.c: literals, parameters, rests, 404 vs 405, broken escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "router.h"

static const struct route T[] = {
    { "GET", "/v1/health", NULL, 0 },
    { "PUT", "/v1/sandboxes/{sid}", NULL, 0 },
    { "GET", "/v1/sandboxes/{sid}", NULL, 0 },
    { "DELETE", "/v1/sandboxes/{sid}", NULL, 0 },
    { "POST", "/v1/sandboxes/{sid}/files:move", NULL, 0 },
    { "GET", "/v1/sandboxes/{sid}/files/{path...}", NULL, 0 },
    { "GET", "/v1/sandboxes/{sid}/contexts/{cid}", NULL, 0 },
    /* the E2B surface: root paths and Connect's "/package.Service/Method" */
    { "POST", "/contexts/{cid}/restart", NULL, 0 },
    { "POST", "/process.Process/Start", NULL, 0 },
};
#define N (sizeof T / sizeof T[0])

static int match(const char *method, const char *path, const struct route **r, route_params *p,
                 char *allow)
{
    return router_match(T, N, method, path, r, p, allow, 128);
}

static void literal_and_params(void **state)
{
    (void)state;
    const struct route *r;
    route_params p;
    char allow[128];
    assert_int_equal(match("GET", "/v1/health", &r, &p, allow), ROUTE_FOUND);
    assert_ptr_equal(r, &T[0]);
    route_params_free(&p);
    assert_int_equal(match("GET", "/v1/sandboxes/abc/contexts/c1", &r, &p, allow), ROUTE_FOUND);
    assert_string_equal(route_param(&p, "sid"), "abc");
    assert_string_equal(route_param(&p, "cid"), "c1");
    assert_null(route_param(&p, "nope"));
    route_params_free(&p);
    assert_int_equal(match("POST", "/v1/sandboxes/abc/files:move", &r, &p, allow), ROUTE_FOUND);
    assert_ptr_equal(r, &T[4]);
    route_params_free(&p);
}

/* Connect's service paths are plain literals, dots included; nothing else matches them. */
static void connect_service_paths(void **state)
{
    (void)state;
    const struct route *r;
    route_params p;
    char allow[128];
    assert_int_equal(match("POST", "/process.Process/Start", &r, &p, allow), ROUTE_FOUND);
    assert_ptr_equal(r, &T[8]);
    route_params_free(&p);
    assert_int_equal(match("POST", "/process.Process/Stop", &r, &p, allow), ROUTE_NO_PATH);
    assert_int_equal(match("POST", "/processXProcess/Start", &r, &p, allow), ROUTE_NO_PATH);
    assert_int_equal(match("GET", "/process.Process/Start", &r, &p, allow), ROUTE_NO_METHOD);
    assert_string_equal(allow, "POST");
    assert_int_equal(match("POST", "/contexts/ctx-1/restart", &r, &p, allow), ROUTE_FOUND);
    assert_string_equal(route_param(&p, "cid"), "ctx-1");
    route_params_free(&p);
}

static void rest_parameter(void **state)
{
    (void)state;
    const struct route *r;
    route_params p;
    char allow[128];
    assert_int_equal(match("GET", "/v1/sandboxes/s/files/a/b%20c.txt", &r, &p, allow), ROUTE_FOUND);
    assert_string_equal(route_param(&p, "path"), "a/b c.txt");
    route_params_free(&p);
    assert_int_equal(match("GET", "/v1/sandboxes/s/files", &r, &p, allow), ROUTE_FOUND);
    assert_string_equal(route_param(&p, "path"), "");
    route_params_free(&p);
}

static void not_found_and_not_allowed(void **state)
{
    (void)state;
    const struct route *r;
    route_params p;
    char allow[128];
    assert_int_equal(match("GET", "/v1/nothing", &r, &p, allow), ROUTE_NO_PATH);
    assert_int_equal(match("GET", "/v1/sandboxes/", &r, &p, allow), ROUTE_NO_PATH);
    assert_int_equal(match("GET", "/v1/health/x", &r, &p, allow), ROUTE_NO_PATH);
    assert_int_equal(match("POST", "/v1/sandboxes/x", &r, &p, allow), ROUTE_NO_METHOD);
    assert_string_equal(allow, "PUT, GET, DELETE");
}

static void broken_escapes(void **state)
{
    (void)state;
    const struct route *r;
    route_params p;
    char allow[128];
    assert_int_equal(match("GET", "/v1/sandboxes/a%zz", &r, &p, allow), ROUTE_BAD_PATH);
    assert_int_equal(match("GET", "/v1/sandboxes/a%2", &r, &p, allow), ROUTE_BAD_PATH);
    assert_int_equal(match("GET", "/v1/sandboxes/a%00b", &r, &p, allow), ROUTE_BAD_PATH);
    assert_int_equal(match("GET", "/v1/sandboxes/a%2Fb", &r, &p, allow), ROUTE_FOUND);
    assert_string_equal(route_param(&p, "sid"), "a/b");
    route_params_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(literal_and_params),    cmocka_unit_test(rest_parameter),
        cmocka_unit_test(connect_service_paths), cmocka_unit_test(not_found_and_not_allowed),
        cmocka_unit_test(broken_escapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
