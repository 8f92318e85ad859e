/*
 * Unit tests for the sbx client's SSE parser (clients/cli/sse_parse.c), base64 decoder and
 * REPL input rule: events split at every possible byte, CR/LF/CRLF line ends (also a CRLF
 * split across chunks), comments, multi-line data, the caps, and callback stops.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "b64.h"
#include "repl.h"
#include "sse_parse.h"

typedef struct seen {
    char log[4096];
    size_t len;
    int count;
    int stop_at;     /* return 7 from this event number (1-based), 0 = never */
} seen;

static int record(const char *event, const char *data, size_t len, void *ud)
{
    seen *s = ud;
    s->count++;
    int n = snprintf(s->log + s->len, sizeof(s->log) - s->len, "[%s|%.*s]", event, (int)len, data);
    if (n > 0)
        s->len += (size_t)n;
    return s->stop_at == s->count ? 7 : 0;
}

static const char k_stream[] =
    "event: stdout\nid: 1\ndata: {\"text\":\"hi\"}\n\n"
    ": a comment\n"
    "event: result\r\nid: 2\r\ndata: {\"text\":\"a\"}\r\n\r\n"
    "event:end\rdata:{}\r\r"
    "data: one\ndata: two\n\n";
static const char k_expect[] =
    "[stdout|{\"text\":\"hi\"}][result|{\"text\":\"a\"}][end|{}][message|one\ntwo]";

static void whole_stream(void **state)
{
    (void)state;
    ssep p;
    seen s = { 0 };
    ssep_init(&p, 1024);
    assert_int_equal(ssep_feed(&p, k_stream, strlen(k_stream), record, &s), 0);
    assert_string_equal(s.log, k_expect);
    assert_false(ssep_pending(&p));
    ssep_free(&p);
}

/* Every split point into two chunks, and byte by byte, gives the same events. */
static void any_split(void **state)
{
    (void)state;
    size_t n = strlen(k_stream);
    for (size_t cut = 0; cut <= n; cut++) {
        ssep p;
        seen s = { 0 };
        ssep_init(&p, 1024);
        assert_int_equal(ssep_feed(&p, k_stream, cut, record, &s), 0);
        assert_int_equal(ssep_feed(&p, k_stream + cut, n - cut, record, &s), 0);
        assert_string_equal(s.log, k_expect);
        ssep_free(&p);
    }
    ssep p;
    seen s = { 0 };
    ssep_init(&p, 1024);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ssep_feed(&p, k_stream + i, 1, record, &s), 0);
    assert_string_equal(s.log, k_expect);
    ssep_free(&p);
}

static void no_data_no_event(void **state)
{
    (void)state;
    ssep p;
    seen s = { 0 };
    ssep_init(&p, 1024);
    const char *in = "event: x\nid: 3\n\n\n\nretry: 5\n\ndata\n\n";
    assert_int_equal(ssep_feed(&p, in, strlen(in), record, &s), 0);
    assert_string_equal(s.log, "[message|]");   /* "data" with no colon: empty data */
    ssep_free(&p);
}

static void pending_at_end(void **state)
{
    (void)state;
    ssep p;
    seen s = { 0 };
    ssep_init(&p, 1024);
    const char *in = "event: stdout\ndata: {\"text\":\"x\"}\n";
    assert_int_equal(ssep_feed(&p, in, strlen(in), record, &s), 0);
    assert_int_equal(s.count, 0);
    assert_true(ssep_pending(&p));
    ssep_free(&p);
}

static void line_cap_is_reported_and_sticky(void **state)
{
    (void)state;
    ssep p;
    seen s = { 0 };
    ssep_init(&p, 16);
    const char *ok = "data: 0123456789\n\n";            /* 16 bytes of line: fits */
    assert_int_equal(ssep_feed(&p, ok, strlen(ok), record, &s), 0);
    assert_int_equal(s.count, 1);
    const char *big = "data: 0123456789A";              /* 17 bytes */
    assert_int_equal(ssep_feed(&p, big, strlen(big), record, &s), -E2BIG);
    assert_int_equal(ssep_feed(&p, "\n\n", 2, record, &s), -E2BIG);
    assert_int_equal(s.count, 1);
    ssep_free(&p);
}

static void data_cap_across_lines(void **state)
{
    (void)state;
    ssep p;
    seen s = { 0 };
    ssep_init(&p, 16);
    const char *in = "data: 0123456789\ndata: 0123456789\n\n";   /* 21 bytes of data */
    assert_int_equal(ssep_feed(&p, in, strlen(in), record, &s), -E2BIG);
    assert_int_equal(s.count, 0);
    ssep_free(&p);
}

static void callback_stops(void **state)
{
    (void)state;
    ssep p;
    seen s = { .stop_at = 2 };
    ssep_init(&p, 1024);
    assert_int_equal(ssep_feed(&p, k_stream, strlen(k_stream), record, &s), 7);
    assert_int_equal(s.count, 2);
    ssep_free(&p);
}

static void base64(void **state)
{
    (void)state;
    unsigned char out[64];
    size_t n = 0;
    assert_int_equal(b64_decode("aGVsbG8=", 8, out, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(out, "hello", 5);
    assert_int_equal(b64_decode("aGVsbG8", 7, out, &n), 0);   /* padding optional */
    assert_int_equal(n, 5);
    assert_int_equal(b64_decode("iVBO\nRw0K", 9, out, &n), 0);
    assert_int_equal(n, 6);
    assert_memory_equal(out, "\x89PNG\r\n", 6);
    assert_int_equal(b64_decode("a$==", 4, out, &n), -EINVAL);
    assert_int_equal(b64_decode("aa=a", 4, out, &n), -EINVAL);
    assert_int_equal(b64_decode("", 0, out, &n), 0);
    assert_int_equal(n, 0);
}

static bool more(const char *s, bool py)
{
    return repl_needs_more(s, strlen(s), py);
}

static void repl_rule(void **state)
{
    (void)state;
    assert_false(more("print(1)", true));
    assert_true(more("for i in range(3):", true));
    assert_true(more("for i in range(3):  ", true));
    assert_false(more("x = 1  # note:", true));
    assert_true(more("f(1,", true));
    assert_false(more("s = '(('", true));
    assert_true(more("x = 1 + \\", true));
    assert_true(more("s = \"\"\"abc", true));
    assert_false(more("s = \"\"\"abc\n(\"\"\"", true));
    assert_true(more("d = {\n 'a': 1,", true));
    assert_false(more("if x == '#': pass", true));
    assert_true(more("if x == '#':", true));
    assert_true(more("function f() {", false));
    assert_false(more("function f() { return 1 }", false));
    assert_true(more("const s = `a", false));
    assert_false(more("const o = {a: 1} // {", false));
    assert_true(more("/* (", false));
    assert_false(more("label:", false));
    assert_false(more("", true));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whole_stream),
        cmocka_unit_test(any_split),
        cmocka_unit_test(no_data_no_event),
        cmocka_unit_test(pending_at_end),
        cmocka_unit_test(line_cap_is_reported_and_sticky),
        cmocka_unit_test(data_cap_across_lines),
        cmocka_unit_test(callback_stops),
        cmocka_unit_test(base64),
        cmocka_unit_test(repl_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
