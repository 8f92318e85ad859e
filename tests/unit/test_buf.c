/* Unit tests for buf.c: the cap is never exceeded and failures leave the buffer intact. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buf.h"

static void append_within_cap(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_append(&b, "abcd", 4), 0);
    assert_int_equal(buf_append(&b, "efgh", 4), 0);
    assert_string_equal(b.data, "abcdefgh");
    assert_int_equal(buf_append(&b, "i", 1), -E2BIG);
    assert_int_equal(b.len, 8);
    assert_string_equal(b.data, "abcdefgh");
    buf_free(&b);
}

static void printf_respects_cap(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 10);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "abc"), 0);
    assert_string_equal(b.data, "42-abc");
    assert_int_equal(buf_printf(&b, "%s", "toolong"), -E2BIG);
    assert_string_equal(b.data, "42-abc");
    buf_free(&b);
}

static void consume_and_steal(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 100);
    buf_puts(&b, "hello world");
    buf_consume(&b, 6);
    assert_string_equal(b.data, "world");
    buf_consume(&b, 100);
    assert_int_equal(b.len, 0);
    buf_puts(&b, "x");
    char *s = buf_steal(&b);
    assert_string_equal(s, "x");
    assert_null(b.data);
    free(s);
}

static void grows_past_initial_allocation(void **state)
{
    (void)state;
    buf b;
    buf_init(&b, 1 << 20);
    char chunk[1000];
    memset(chunk, 'a', sizeof chunk);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(buf_append(&b, chunk, sizeof chunk), 0);
    assert_int_equal(b.len, 1000000);
    assert_true(b.alloc <= (1 << 20) + 1);
    assert_int_equal(buf_append(&b, chunk, 100000), -E2BIG);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(append_within_cap),
        cmocka_unit_test(printf_respects_cap),
        cmocka_unit_test(consume_and_steal),
        cmocka_unit_test(grows_past_initial_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
