/* Unit tests for config.c: defaults, environment, flags, refusals, and that
 * docs/configuration.md lists every setting exactly as the table says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"

static int load(struct config *c, int argc, const char **argv, char *err)
{
    bool exit_now;
    return config_load(c, argc, (char **)argv, &exit_now, err, 256);
}

static void defaults_env_flags(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    unsetenv("SANDBOXD_LISTEN");
    const char *a0[] = { "sandboxd" };
    assert_int_equal(load(&c, 1, a0, err), 0);
    assert_string_equal(c.host, "127.0.0.1");
    assert_int_equal(c.port, 7878);
    assert_int_equal(c.max_header_bytes, 16384);

    setenv("SANDBOXD_MAX_BODY_BYTES", "2048", 1);
    const char *a1[] = { "sandboxd", "--listen", "[::1]:9000", "--idle-timeout-ms=500" };
    assert_int_equal(load(&c, 4, a1, err), 0);
    assert_string_equal(c.host, "::1");
    assert_int_equal(c.port, 9000);
    assert_int_equal(c.max_body_bytes, 2048);
    assert_int_equal(c.idle_timeout_ms, 500);
    const char *a2[] = { "sandboxd", "--max-body-bytes", "4096" };
    assert_int_equal(load(&c, 3, a2, err), 0);
    assert_int_equal(c.max_body_bytes, 4096);   /* the flag beats the environment */
    unsetenv("SANDBOXD_MAX_BODY_BYTES");
}

static void refusals(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    const char *a1[] = { "sandboxd", "--listen", "0.0.0.0:7878" };
    assert_int_not_equal(load(&c, 3, a1, err), 0);
    assert_non_null(strstr(err, "without a token"));
    const char *a2[] = { "sandboxd", "--listen", "0.0.0.0:7878", "--token", "t" };
    assert_int_equal(load(&c, 5, a2, err), 0);
    const char *a3[] = { "sandboxd", "--max-header-bytes", "12abc" };
    assert_int_not_equal(load(&c, 3, a3, err), 0);
    assert_non_null(strstr(err, "--max-header-bytes"));
    const char *a4[] = { "sandboxd", "--bogus" };
    assert_int_not_equal(load(&c, 2, a4, err), 0);
    assert_non_null(strstr(err, "unknown option '--bogus'"));
    const char *a5[] = { "sandboxd", "--listen", "nocolon" };
    assert_int_not_equal(load(&c, 3, a5, err), 0);
    const char *a6[] = { "sandboxd", "--log-level", "loud" };
    assert_int_not_equal(load(&c, 3, a6, err), 0);
    const char *a7[] = { "sandboxd", "--cpus", "0" };
    assert_int_not_equal(load(&c, 3, a7, err), 0);
    const char *a8[] = { "sandboxd", "--token" };
    assert_int_not_equal(load(&c, 2, a8, err), 0);
}

/* A boolean flag alone is true; a paths flag repeats, and replaces the environment's list. */
static void booleans_and_paths(void **state)
{
    (void)state;
    struct config c;
    char err[256];
    const char *a0[] = { "sandboxd" };
    assert_int_equal(load(&c, 1, a0, err), 0);
    assert_false(c.allow_host_network);
    assert_string_equal(c.python_site_dirs, "");
    const char *a1[] = { "sandboxd", "--allow-host-network", "--python-site-dir", "/a",
                         "--python-site-dir=/b c" };
    assert_int_equal(load(&c, 5, a1, err), 0);
    assert_true(c.allow_host_network);
    assert_string_equal(c.python_site_dirs, "/a:/b c");
    setenv("SANDBOXD_PYTHON_SITE_DIRS", "/e1:/e2", 1);
    setenv("SANDBOXD_ALLOW_HOST_NETWORK", "1", 1);
    const char *a2[] = { "sandboxd", "--allow-host-network=false" };
    assert_int_equal(load(&c, 2, a2, err), 0);
    assert_false(c.allow_host_network);
    assert_string_equal(c.python_site_dirs, "/e1:/e2");
    const char *a3[] = { "sandboxd", "--python-site-dir", "/f" };
    assert_int_equal(load(&c, 3, a3, err), 0);
    assert_string_equal(c.python_site_dirs, "/f");
    assert_true(c.allow_host_network);
    unsetenv("SANDBOXD_PYTHON_SITE_DIRS");
    unsetenv("SANDBOXD_ALLOW_HOST_NETWORK");
    const char *b1[] = { "sandboxd", "--allow-host-network=yes" };
    assert_int_not_equal(load(&c, 2, b1, err), 0);
    assert_non_null(strstr(err, "--allow-host-network"));
    const char *b2[] = { "sandboxd", "--python-site-dir", "rel" };
    assert_int_not_equal(load(&c, 3, b2, err), 0);
    assert_non_null(strstr(err, "absolute"));
    const char *b3[] = { "sandboxd", "--python-site-dir", "/a:/b" };
    assert_int_not_equal(load(&c, 3, b3, err), 0);
    assert_non_null(strstr(err, "without ':'"));
}

static void docs_in_sync(void **state)
{
    (void)state;
    char *gen = NULL, *doc = NULL;
    size_t genlen = 0;
    FILE *m = open_memstream(&gen, &genlen);
    config_markdown(m);
    fclose(m);
    FILE *f = fopen(SOURCE_DIR "/docs/configuration.md", "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    doc = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(doc, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    /* every generated row must appear verbatim in the docs */
    char *save = NULL;
    for (char *line = strtok_r(gen, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strstr(doc, line))
            fail_msg("docs/configuration.md lacks: %s (regenerate with sandboxd --help-markdown)",
                     line);
    }
    free(gen);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_env_flags),
        cmocka_unit_test(refusals),
        cmocka_unit_test(booleans_and_paths),
        cmocka_unit_test(docs_in_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
