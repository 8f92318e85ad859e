/* Unit tests for files.c: path normalisation (every way out is refused as text) and the
 * confined resolution on a real directory tree with planted symlinks and a FIFO. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "files.h"

static void ok(const char *in, const char *want)
{
    char rel[FILES_PATH_MAX + 1], err[256];
    int rc = files_normalize(in, rel, sizeof rel, err, sizeof err);
    if (rc)
        fail_msg("'%s' refused: %s", in, err);
    if (strcmp(rel, want) != 0)
        fail_msg("'%s' → '%s', want '%s'", in, rel, want);
}

static void bad(const char *in, const char *why)
{
    char rel[FILES_PATH_MAX + 1], err[256];
    int rc = files_normalize(in, rel, sizeof rel, err, sizeof err);
    if (rc != -EINVAL)
        fail_msg("'%.80s' accepted as '%.80s'", in, rel);
    if (!strstr(err, why))
        fail_msg("'%.80s': message '%s' lacks '%s'", in, err, why);
}

static void normalize(void **state)
{
    (void)state;
    ok("", "");
    ok("/workspace", "");
    ok("/workspace/", "");
    ok("/workspace/a.csv", "a.csv");
    ok("a.csv", "a.csv");
    ok("./a//b/./c/", "a/b/c");
    ok("/workspace//x", "x");
    ok("workspace/a", "workspace/a");   /* relative: under /workspace */
    ok("...", "...");
    ok("..a/b..", "..a/b..");
    bad("..", "'..'");
    bad("a/../../etc/passwd", "'..'");
    bad("/workspace/..", "'..'");
    bad("/workspace/a/../b", "'..'");
    bad("/etc/passwd", "outside /workspace");
    bad("/workspacefoo/x", "outside /workspace");
    bad("/", "outside /workspace");
    bad("/proc/self/root", "outside /workspace");
    char longname[300];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    bad(longname, "longer than 255");
    char *huge = malloc(FILES_PATH_MAX + 10);
    assert_non_null(huge);
    for (size_t i = 0; i < FILES_PATH_MAX + 9; i++)
        huge[i] = i % 2 ? '/' : 'a';
    huge[FILES_PATH_MAX + 9] = '\0';
    bad(huge, "longer than 4096");
    free(huge);
    /* a small output buffer is an error, never an overflow */
    char rel[4], err[128];
    assert_int_equal(files_normalize("abcdef", rel, sizeof rel, err, sizeof err), -EINVAL);
}

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sbx-files-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    char p[256];
    snprintf(p, sizeof p, "%s/ws", tmpdir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/ws/dir", tmpdir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/ws/dir/f.txt", tmpdir);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    fputs("inside", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/secret", tmpdir);
    f = fopen(p, "w");
    if (!f)
        return -1;
    fputs("outside", f);
    fclose(f);
    char t[256];
    snprintf(p, sizeof p, "%s/ws/up", tmpdir);
    if (symlink("..", p))
        return -1;
    snprintf(p, sizeof p, "%s/ws/abs", tmpdir);
    snprintf(t, sizeof t, "%s/secret", tmpdir);
    if (symlink(t, p))
        return -1;
    snprintf(p, sizeof p, "%s/ws/inner", tmpdir);
    if (symlink("dir", p))   /* even a link that stays inside is not followed */
        return -1;
    snprintf(p, sizeof p, "%s/ws/fifo", tmpdir);
    if (mkfifo(p, 0644))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "%s", tmpdir);
    /* small fixed tree: remove it with the helper under test */
    int fd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        files_remove_tree(fd, tmpdir + 5);
        close(fd);
    }
    return 0;
}

static int root_fd(void)
{
    char p[256];
    snprintf(p, sizeof p, "%s/ws", tmpdir);
    int fd = files_open_root(p);
    assert_true(fd >= 0);
    return fd;
}

static void confined(void **state)
{
    (void)state;
    int root = root_fd();
    int fd = files_openat2(root, "dir/f.txt", O_RDONLY | O_NOFOLLOW, 0);
    assert_true(fd >= 0);
    char b[16] = { 0 };
    assert_int_equal(read(fd, b, sizeof b - 1), 6);
    assert_string_equal(b, "inside");
    close(fd);
    /* symlinks anywhere in the path: refused, whether they lead out or not */
    assert_int_equal(files_openat2(root, "up/secret", O_RDONLY, 0), -ELOOP);
    assert_int_equal(files_openat2(root, "abs", O_RDONLY | O_NOFOLLOW, 0), -ELOOP);
    assert_int_equal(files_openat2(root, "inner/f.txt", O_RDONLY, 0), -ELOOP);
    /* '..' cannot climb out even if text validation were skipped */
    assert_int_equal(files_openat2(root, "../secret", O_RDONLY, 0), -EXDEV);
    assert_int_equal(files_openat2(root, "dir/../../secret", O_RDONLY, 0), -EXDEV);
    /* an absolute path is refused by RESOLVE_BENEATH */
    char abs[256];
    snprintf(abs, sizeof abs, "%s/secret", tmpdir);
    assert_int_equal(files_openat2(root, abs, O_RDONLY, 0), -EXDEV);
    /* a magic link */
    assert_true(files_openat2(root, "/proc/self/root/etc/passwd", O_RDONLY, 0) < 0);
    /* a FIFO opens at once (O_NONBLOCK), and is recognisable by fstat */
    fd = files_openat2(root, "fifo", O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    close(fd);
    close(root);
}

static void parents_and_mkdirs(void **state)
{
    (void)state;
    int root = root_fd();
    int pfd = -1;
    const char *name = NULL;
    assert_int_equal(files_open_parent(root, "new/a/b/file", true, getuid(), getgid(), &pfd,
                                       &name), 0);
    assert_string_equal(name, "file");
    close(pfd);
    char p[256];
    struct stat st;
    snprintf(p, sizeof p, "%s/ws/new/a/b", tmpdir);
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* creating parents never goes through a symlink */
    assert_int_equal(files_open_parent(root, "up/evil/file", true, getuid(), getgid(), &pfd,
                                       &name), -ELOOP);
    snprintf(p, sizeof p, "%s/evil", tmpdir);
    assert_int_equal(stat(p, &st), -1);
    bool created;
    assert_int_equal(files_mkdirs(root, "dir/f.txt/x", getuid(), getgid(), &created), -EEXIST);
    assert_int_equal(files_mkdirs(root, "m/n", getuid(), getgid(), &created), 0);
    assert_true(created);
    assert_int_equal(files_mkdirs(root, "m/n", getuid(), getgid(), &created), 0);
    assert_false(created);
    /* a parent that does not exist, without mkparents */
    assert_int_equal(files_open_parent(root, "nope/x", false, 0, 0, &pfd, &name), -ENOENT);
    /* remove_tree removes a link, not its target */
    int wfd = files_openat2(root, "", O_RDONLY | O_DIRECTORY, 0);
    assert_int_equal(files_remove_tree(wfd, "up"), 0);
    snprintf(p, sizeof p, "%s/secret", tmpdir);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(files_remove_tree(wfd, "new"), 0);
    close(wfd);
    close(root);
}

static void content_types(void **state)
{
    (void)state;
    assert_string_equal(files_content_type("a/b.CSV"), "text/csv; charset=utf-8");
    assert_string_equal(files_content_type("x.png"), "image/png");
    assert_string_equal(files_content_type("noext"), "application/octet-stream");
    assert_string_equal(files_content_type("dir.d/noext"), "application/octet-stream");
    char out[64];
    files_display("", out, sizeof out);
    assert_string_equal(out, "/workspace");
    files_display("a/b", out, sizeof out);
    assert_string_equal(out, "/workspace/a/b");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(normalize),
        cmocka_unit_test_setup_teardown(confined, setup, teardown),
        cmocka_unit_test_setup_teardown(parents_and_mkdirs, setup, teardown),
        cmocka_unit_test(content_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
