/* Unit tests for escape.c: valid UTF-8 passes, invalid becomes U+FFFD per maximal
 * subpart, controls are escaped, and chunk boundaries never change the result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "escape.h"

#define FFFD "\xEF\xBF\xBD"

static void check(const char *in, size_t n, const char *want)
{
    buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(esc_json(&b, NULL, in, n, true), 0);
    assert_string_equal(b.data ? b.data : "", want);
    buf_free(&b);

    /* the same bytes fed one at a time through a carry give the same text */
    esc_carry c = { { 0 }, 0 };
    buf_init(&b, 1 << 16);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(esc_json(&b, &c, in + i, 1, false), 0);
    assert_int_equal(esc_json(&b, &c, "", 0, true), 0);
    assert_string_equal(b.data ? b.data : "", want);
    buf_free(&b);
}

#define CHECK(lit, want) check(lit, sizeof(lit) - 1, want)

static void ascii_and_escapes(void **state)
{
    (void)state;
    CHECK("hello", "hello");
    CHECK("a\"b\\c", "a\\\"b\\\\c");
    CHECK("l1\nl2\r\t", "l1\\nl2\\r\\t");
    CHECK("\x01\x1f\x7f", "\\u0001\\u001f\\u007f");
    CHECK("nul\0byte", "nul\\u0000byte");
}

static void valid_multibyte(void **state)
{
    (void)state;
    CHECK("caf\xC3\xA9", "caf\xC3\xA9");
    CHECK("\xE2\x82\xAC", "\xE2\x82\xAC");             /* € */
    CHECK("\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80");     /* 😀 */
}

static void invalid_sequences(void **state)
{
    (void)state;
    CHECK("\x80", FFFD);                                /* lone continuation */
    CHECK("\xC0\x80", FFFD FFFD);                       /* overlong NUL: C0 never valid */
    CHECK("\xED\xA0\x80", FFFD FFFD FFFD);              /* UTF-16 surrogate */
    CHECK("\xF5\x80", FFFD FFFD);                       /* beyond U+10FFFF */
    CHECK("\xE2\x82", FFFD);                            /* truncated at the end */
    CHECK("\xE2\x82x", FFFD "x");                       /* truncated in the middle */
    CHECK("a\xFFz", "a" FFFD "z");
    CHECK("\xF0\x9F\x98", FFFD);
}

static void carry_across_chunks(void **state)
{
    (void)state;
    buf b;
    esc_carry c = { { 0 }, 0 };
    buf_init(&b, 1024);
    assert_int_equal(esc_json(&b, &c, "x\xF0\x9F", 3, false), 0);
    assert_string_equal(b.data, "x");
    assert_int_equal(c.npend, 2);
    assert_int_equal(esc_json(&b, &c, "\x98\x80y", 3, false), 0);
    assert_string_equal(b.data, "x\xF0\x9F\x98\x80y");
    assert_int_equal(c.npend, 0);
    buf_free(&b);
}

static void quoted(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 64);
    assert_int_equal(esc_json_quoted(&b, "a\"", 2), 0);
    assert_string_equal(b.data, "\"a\\\"\"");
    buf_free(&b);
}

static void utf8_only(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 64);
    assert_int_equal(esc_utf8(&b, NULL, "a\"\n\xff\xC3\xA9", 6, true), 0);
    assert_string_equal(b.data, "a\"\n" FFFD "\xC3\xA9");
    buf_free(&b);
}

static void respects_cap(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 4);
    assert_int_not_equal(esc_json(&b, NULL, "\x01\x02", 2, true), 0);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ascii_and_escapes),
        cmocka_unit_test(valid_multibyte),
        cmocka_unit_test(invalid_sequences),
        cmocka_unit_test(carry_across_chunks),
        cmocka_unit_test(quoted),
        cmocka_unit_test(utf8_only),
        cmocka_unit_test(respects_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
