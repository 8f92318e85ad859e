/* Unit tests for api_e2b.c and api_e2b_files.c's pure parts: the Connect envelope (every
 * malformed frame refused before it is read), frames out, base64 both ways, the query. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "api_e2b.h"

/* A request whose buffered body is the n bytes of data. */
static http_req *req_with(const void *data, size_t n)
{
    http_req *r = calloc(1, sizeof *r);
    buf_init(&r->body, 1u << 22);
    buf_append(&r->body, data, n);
    return r;
}

static void req_free(http_req *r)
{
    buf_free(&r->body);
    free(r);
}

static json_t *parse(const void *data, size_t n, bool streaming, char *err)
{
    http_req *r = req_with(data, n);
    json_t *j = e2b_connect_request(r, streaming, err, 256);
    req_free(r);
    return j;
}

static void envelope_ok(void **state)
{
    (void)state;
    char err[256];
    static const char msg[] = "\x00\x00\x00\x00\x0b{\"path\":\"a\"}";
    json_t *j = parse(msg, sizeof msg - 1 - 1, true, err); /* 11-byte JSON: {"path":"a"} */
    assert_null(j);                                        /* one byte short: refused */
    j = parse("\x00\x00\x00\x00\x0c{\"path\":\"a\"}", 17, true, err);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "path")), "a");
    json_decref(j);
    j = parse("\x00\x00\x00\x00\x00", 5, true, err); /* an empty message is {} */
    assert_true(json_is_object(j));
    json_decref(j);
    j = parse("{\"a\":1}", 7, false, err); /* unary: the body itself */
    assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
    json_decref(j);
}

static void envelope_refused(void **state)
{
    (void)state;
    char err[256];
    assert_null(parse("\x00\x00\x00", 3, true, err)); /* truncated prefix */
    assert_non_null(strstr(err, "not one enveloped"));
    assert_null(parse("\x00\xff\xff\xff\xff{}", 7, true, err)); /* huge declared length */
    assert_non_null(strstr(err, "declares 4294967295 bytes but 2 follow"));
    assert_null(parse("\x00\x00\x00\x00\x02{}{}", 9, true, err)); /* trailing bytes */
    assert_non_null(strstr(err, "but 4 follow"));
    assert_null(parse("\x01\x00\x00\x00\x02{}", 7, true, err)); /* compressed */
    assert_non_null(strstr(err, "flags"));
    assert_null(parse("\x02\x00\x00\x00\x02{}", 7, true, err)); /* end-of-stream */
    assert_null(parse("\x00\x00\x00\x00\x02[]", 7, true, err)); /* not an object */
    assert_non_null(strstr(err, "object"));
    assert_null(parse("\x00\x00\x00\x00\x02{x", 7, true, err)); /* bad JSON */
    assert_non_null(strstr(err, "not valid JSON"));
    assert_null(parse("{\"a\":1,\"a\":2}", 13, false, err)); /* duplicate keys */
}

static void frame_out(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 1024);
    assert_int_equal(e2b_connect_frame(&b, 2, "{}", 2), 0);
    assert_int_equal(b.len, 7);
    assert_memory_equal(b.data, "\x02\x00\x00\x00\x02{}", 7);
    buf_free(&b);
}

static void base64_both_ways(void **state)
{
    (void)state;
    buf b, d;
    buf_init(&b, 1024);
    buf_init(&d, 1024);
    static const char *const IN[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
    static const char *const OUT[] = { "",         "Zg==",     "Zm8=",    "Zm9v",
                                       "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
    for (size_t i = 0; i < 7; i++) {
        buf_reset(&b);
        buf_reset(&d);
        e2b_base64(&b, IN[i], strlen(IN[i]));
        assert_int_equal(b.len, strlen(OUT[i]));
        assert_memory_equal(b.data ? b.data : "", OUT[i], b.len);
        assert_int_equal(e2b_unbase64(&d, OUT[i], strlen(OUT[i])), 0);
        assert_int_equal(d.len, strlen(IN[i]));
        assert_memory_equal(d.data ? d.data : "", IN[i], d.len);
    }
    buf_reset(&d);
    assert_int_equal(e2b_unbase64(&d, "Zm9v!", 5), -EINVAL);
    assert_int_equal(e2b_unbase64(&d, "Z", 1), -EINVAL);
    buf_free(&b);
    buf_free(&d);
}

static void query_values(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(e2b_query("path=%2Fa%20b+c&username=u", "path", out, sizeof out), 1);
    assert_string_equal(out, "/a b c");
    assert_int_equal(e2b_query("xpath=1&path=2", "path", out, sizeof out), 1);
    assert_string_equal(out, "2");
    assert_int_equal(e2b_query("username=u", "path", out, sizeof out), 0);
    assert_int_equal(e2b_query("", "path", out, sizeof out), 0);
    assert_int_equal(e2b_query("path=%2", "path", out, sizeof out), -1);    /* cut escape */
    assert_int_equal(e2b_query("path=%zz", "path", out, sizeof out), -1);   /* not hex */
    assert_int_equal(e2b_query("path=a%00b", "path", out, sizeof out), -1); /* NUL */
    assert_int_equal(e2b_query("path=0123456789abcdef", "path", out, sizeof out), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(envelope_ok),  cmocka_unit_test(envelope_refused),
        cmocka_unit_test(frame_out),    cmocka_unit_test(base64_both_ways),
        cmocka_unit_test(query_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
