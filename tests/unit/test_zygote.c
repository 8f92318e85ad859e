/*
 * test_zygote.c — end-to-end test of the Python zygote: a real sandbox (jail.h), the real
 * sandboxd-zygote (zygote_client.h), contexts forked into the sandbox and driven over the
 * context channel protocol (docs/protocol.md).
 *
 * Proves: the zygote starts and reports its Python version; a context answers 1+1 with a
 * result whose text is "2"; it runs as the sandbox user (uid 1000) in /workspace with
 * seccomp in filter mode (Seccomp: 2) and no effective capabilities; its environment is
 * exactly the requested one; the runtime package is importable from the sandbox's path;
 * two contexts share no variables and draw different random numbers; the zygote has one
 * thread; a malformed request is refused without harming the zygote; a killed zygote
 * fails its requests with -EPIPE and comes back.
 *
 * Needs root (namespaces, cgroups): exits 77 (skipped) otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "jail.h"
#include "jail_wait.h"
#include "zygote_client.h"

static uv_loop_t *loop;
static jail *sbx;
static char state_dir[] = "/tmp/sbx-zygtest-XXXXXX";

struct ctx {
    int chan, out, err;          /* our ends */
    pid_t pid, ns_pid;
    bool forked, exited;
    int fork_rc;
    char msg[256];
    jail_proc *proc;
    char rbuf[1 << 16];
    size_t rlen;
};

static void on_forked(pid_t pid, pid_t ns_pid, const char *msg, void *arg)
{
    struct ctx *c = arg;
    c->forked = true;
    c->fork_rc = pid > 0 ? 0 : pid;
    c->pid = pid;
    c->ns_pid = ns_pid;
    snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "");
}

static void on_ctx_exit(jail_proc *p, int status, void *arg)
{
    (void)p;
    (void)status;
    struct ctx *c = arg;
    c->exited = true;
    c->proc = NULL;
}

static void run_until(bool *flag, int timeout_ms)
{
    uint64_t end = uv_hrtime() + (uint64_t)timeout_ms * 1000000;
    while (!*flag && uv_hrtime() < end)
        uv_run(loop, UV_RUN_NOWAIT), usleep(200);
}

/* Read one channel line (blocking, bounded); returns a parsed object or NULL. */
static json_t *read_msg(struct ctx *c, int timeout_ms)
{
    for (;;) {
        char *nl = memchr(c->rbuf, '\n', c->rlen);
        if (nl) {
            size_t n = (size_t)(nl - c->rbuf);
            json_t *j = json_loadb(c->rbuf, n, 0, NULL);
            memmove(c->rbuf, nl + 1, c->rlen - n - 1);
            c->rlen -= n + 1;
            return j;
        }
        struct pollfd p = { .fd = c->chan, .events = POLLIN };
        if (poll(&p, 1, timeout_ms) <= 0)
            return NULL;
        ssize_t r = read(c->chan, c->rbuf + c->rlen, sizeof c->rbuf - c->rlen);
        if (r <= 0)
            return NULL;
        c->rlen += (size_t)r;
        uv_run(loop, UV_RUN_NOWAIT);
    }
}

static const char *const ctx_env[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/workspace", "LANG=C.UTF-8",
    "SANDBOXD_LANGUAGE=python", "ZYGTEST=hello", NULL,
};

/* Fork a context into the sandbox and wait for its ready message. */
static void ctx_open(struct ctx *c)
{
    memset(c, 0, sizeof *c);
    int sv[2], po[2], pe[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(pipe2(po, O_CLOEXEC), 0);
    assert_int_equal(pipe2(pe, O_CLOEXEC), 0);
    struct jail_entry e;
    assert_int_equal(jail_entry_info(sbx, &e), 0);
    assert_int_equal(zyg_fork(&e, "/workspace", ctx_env, sv[1], po[1], pe[1], on_forked, c), 0);
    close(sv[1]);
    close(po[1]);
    close(pe[1]);
    c->chan = sv[0];
    c->out = po[0];
    c->err = pe[0];
    run_until(&c->forked, 10000);
    assert_true(c->forked);
    if (c->fork_rc)
        fail_msg("fork failed: %s (%s)", c->msg, strerror(-c->fork_rc));
    assert_true(c->ns_pid > 0);
    assert_int_equal(jail_adopt_wait(loop, sbx, c->ns_pid, on_ctx_exit, c, &c->proc), 0);
    json_t *m = read_msg(c, 10000);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "type")), "ready");
    assert_string_equal(json_string_value(json_object_get(m, "language")), "python");
    assert_int_equal(json_integer_value(json_object_get(m, "pid")), c->ns_pid);
    json_decref(m);
}

static void ctx_close(struct ctx *c)
{
    close(c->chan);
    close(c->out);
    close(c->err);
    run_until(&c->exited, 10000);
    assert_true(c->exited);
}

/* Run code; return the text of the main result (malloc'd, "" when none) or the error. */
static char *ctx_run(struct ctx *c, const char *code)
{
    static unsigned seq;
    char id[16];
    snprintf(id, sizeof id, "e%u", ++seq);
    json_t *req = json_pack("{s:s, s:s, s:s}", "type", "execute", "id", id, "code", code);
    char *line = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    size_t n = strlen(line);
    line = realloc(line, n + 2);
    line[n] = '\n';
    assert_int_equal(write(c->chan, line, n + 1), (ssize_t)(n + 1));
    free(line);
    char *text = strdup("");
    for (;;) {
        json_t *m = read_msg(c, 20000);
        assert_non_null(m);
        const char *type = json_string_value(json_object_get(m, "type"));
        if (!strcmp(type, "result")) {
            const char *t = json_string_value(json_object_get(json_object_get(m, "result"), "text"));
            free(text);
            text = strdup(t ? t : "");
        } else if (!strcmp(type, "error")) {
            json_t *er = json_object_get(m, "error");
            char buf[512];
            snprintf(buf, sizeof buf, "ERROR %s: %s", json_string_value(json_object_get(er, "name")),
                     json_string_value(json_object_get(er, "message")));
            free(text);
            text = strdup(buf);
        } else if (!strcmp(type, "end")) {
            json_decref(m);
            return text;
        }
        json_decref(m);
    }
}

static void expect(struct ctx *c, const char *code, const char *want)
{
    char *got = ctx_run(c, code);
    if (strcmp(got, want))
        fail_msg("%s\n  want %s\n  got  %s", code, want, got);
    free(got);
}

static int count_tasks(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int setup(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "test_zygote: needs root; skipped\n");
        exit(77);
    }
    loop = uv_default_loop();
    assert_non_null(mkdtemp(state_dir));
    char err[512];
    struct jail_global g = {
        .state_dir = state_dir, .init_path = ZYG_BUILD_DIR "/sandboxd-init",
        .runtimes_dir = ZYG_SOURCE_DIR "/runtimes", .max_sandboxes = 4,
    };
    int rc = jail_global_init(loop, &g, err, sizeof err);
    if (rc) {
        fprintf(stderr, "test_zygote: jail_global_init: %s; skipped\n", err);
        exit(77);
    }
    struct zyg_config zc = {
        .zygote_path = ZYG_BUILD_DIR "/sandboxd-zygote",
        .runtimes_dir = ZYG_SOURCE_DIR "/runtimes",
        .mpl_cache = ZYG_BUILD_DIR "/mpl-cache",
        .preload = "IPython,numpy,pandas,matplotlib",
    };
    uint64_t t0 = uv_hrtime();
    rc = zyg_start(loop, &zc, err, sizeof err);
    if (rc)
        fail_msg("zyg_start: %s", err);
    fprintf(stderr, "zygote ready in %.0f ms, Python %s\n", (double)(uv_hrtime() - t0) / 1e6,
            zyg_version());
    struct jail_opts o = { .id = "zygtest",
                           .limits = { .memory_bytes = 1ULL << 30, .pids = 256,
                                       .tmp_bytes = 64ULL << 20 } };
    rc = jail_create_wait(loop, &o, &sbx, err, sizeof err);
    if (rc)
        fail_msg("jail_create: %s", err);
    return 0;
}

static void on_gone(void *arg)
{
    *(bool *)arg = true;
}

static int teardown(void **state)
{
    (void)state;
    bool gone = false;
    jail_destroy(sbx, on_gone, &gone);
    run_until(&gone, 10000);
    zyg_stop();
    uint64_t end = uv_hrtime() + 5000000000ULL;   /* let libuv reap the zygote */
    while (zyg_pid() && uv_hrtime() < end)
        uv_run(loop, UV_RUN_NOWAIT), usleep(1000);
    jail_global_shutdown();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "%s", state_dir);
    rmdir(cmd);
    return 0;
}

static void version_reported(void **state)
{
    (void)state;
    assert_true(zyg_available());
    assert_true(strncmp(zyg_version(), "3.", 2) == 0);
}

static void zygote_single_threaded(void **state)
{
    (void)state;
    assert_true(zyg_pid() > 0);
    assert_int_equal(count_tasks(zyg_pid()), 1);
}

static void one_plus_one(void **state)
{
    (void)state;
    struct ctx c;
    ctx_open(&c);
    expect(&c, "1+1", "2");
    ctx_close(&c);
}

static void runs_inside_the_sandbox(void **state)
{
    (void)state;
    struct ctx c;
    ctx_open(&c);
    expect(&c, "import os; (os.getuid(), os.getgid(), os.geteuid())", "(1000, 1000, 1000)");
    expect(&c, "os.getcwd(), os.path.isdir('/workspace'), os.access('/workspace', os.W_OK)",
           "('/workspace', True, True)");
    expect(&c, "status = open('/proc/self/status').read().splitlines()\n"
               "[l.split()[1] for l in status if l.startswith(('Seccomp:', 'CapEff:', 'NoNewPrivs:'))]",
           "['0000000000000000', '1', '2']");
    expect(&c, "os.path.exists('/work'), os.path.exists('/root/.bashrc')", "(False, False)");
    expect(&c, "len([f for f in os.listdir('/proc/self/fd')])", "5");   /* 0-3 + listdir's */
    /* the environment is exactly the requested one */
    expect(&c, "sorted(k for k in os.environ if k not in ('PWD',))",
           "['HOME', 'LANG', 'PATH', 'SANDBOXD_LANGUAGE', 'ZYGTEST']");
    expect(&c, "import subprocess; subprocess.run(['sh', '-c', 'echo $ZYGTEST'], "
               "capture_output=True, text=True).stdout", "'hello\\n'");
    /* a runtime module not imported before fork loads from the sandbox's path */
    expect(&c, "import sandboxd_runtime.fontcache as f; f.__file__",
           "'/opt/sandboxd/python/sandboxd_runtime/fontcache.py'");
    expect(&c, "import pandas as pd; int(pd.DataFrame({'a': [1, 2, 3]}).a.sum())", "6");
    ctx_close(&c);
}

static void contexts_are_independent(void **state)
{
    (void)state;
    struct ctx a, b;
    ctx_open(&a);
    ctx_open(&b);
    expect(&a, "x = 42", "");
    expect(&a, "x", "42");
    expect(&b, "'x' in globals()", "False");
    char *ra = ctx_run(&a, "import random; random.random()");
    char *rb = ctx_run(&b, "import random; random.random()");
    assert_string_not_equal(ra, rb);
    free(ra);
    free(rb);
    ra = ctx_run(&a, "import numpy; numpy.random.rand()");
    rb = ctx_run(&b, "import numpy; numpy.random.rand()");
    assert_string_not_equal(ra, rb);
    free(ra);
    free(rb);
    assert_int_not_equal(a.pid, b.pid);
    ctx_close(&a);
    ctx_close(&b);
    assert_int_equal(count_tasks(zyg_pid()), 1);
}

static void bad_requests_are_refused(void **state)
{
    (void)state;
    struct jail_entry e;
    assert_int_equal(jail_entry_info(sbx, &e), 0);
    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    const char *const bad_env[] = { "NOEQUALS", NULL };
    assert_int_equal(zyg_fork(&e, "/workspace", bad_env, fds[0], fds[1], fds[1], on_forked, NULL),
                     -EINVAL);
    assert_int_equal(zyg_fork(&e, "relative", NULL, fds[0], fds[1], fds[1], on_forked, NULL),
                     -EINVAL);
    /* a sandbox whose namespaces are gone: the zygote reports the error, stays up */
    struct ctx c;
    memset(&c, 0, sizeof c);
    e.ns_pid = 0x3ffffe;
    assert_int_equal(zyg_fork(&e, "/workspace", ctx_env, fds[0], fds[1], fds[1], on_forked, &c), 0);
    run_until(&c.forked, 10000);
    assert_true(c.forked);
    assert_int_equal(c.fork_rc, -ESRCH);
    /* a cwd that does not exist inside: the zygote replied when the process existed
     * (it waits for no child); the process says why on its channel and exits 127 */
    assert_int_equal(jail_entry_info(sbx, &e), 0);
    memset(&c, 0, sizeof c);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(zyg_fork(&e, "/nonexistent", ctx_env, sv[1], fds[1], fds[1], on_forked, &c), 0);
    close(sv[1]);
    c.chan = sv[0];
    run_until(&c.forked, 10000);
    assert_true(c.forked);
    assert_int_equal(c.fork_rc, 0);
    assert_true(c.pid > 0 && c.ns_pid > 0);
    assert_int_equal(jail_adopt_child(sbx, c.pid, c.ns_pid, on_ctx_exit, &c, &c.proc), 0);
    json_t *m = read_msg(&c, 10000);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "type")), "failed");
    assert_int_equal(json_integer_value(json_object_get(m, "errno")), ENOENT);
    json_decref(m);
    run_until(&c.exited, 10000);
    assert_true(c.exited);
    close(sv[0]);
    close(fds[0]);
    close(fds[1]);
    assert_true(zyg_available());
    struct ctx ok;
    ctx_open(&ok);
    expect(&ok, "1+1", "2");
    ctx_close(&ok);
}

static void zygote_death_and_restart(void **state)
{
    (void)state;
    struct jail_entry e;
    assert_int_equal(jail_entry_info(sbx, &e), 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    struct ctx c;
    memset(&c, 0, sizeof c);
    pid_t old = zyg_pid();
    assert_int_equal(zyg_fork(&e, "/workspace", ctx_env, sv[1], sv[1], sv[1], on_forked, &c), 0);
    kill(old, SIGKILL);
    run_until(&c.forked, 10000);
    assert_true(c.forked);   /* exactly once: either forked in time or -EPIPE */
    assert_true(c.fork_rc == 0 || c.fork_rc == -EPIPE);
    if (c.fork_rc == 0) {   /* we are its subreaper: reap it ourselves */
        kill(c.pid, SIGKILL);
        (void)waitpid(c.pid, NULL, 0);
    }
    close(sv[0]);
    close(sv[1]);
    bool up = false;
    uint64_t end = uv_hrtime() + 20000000000ULL;
    while (!(up = zyg_available() && zyg_pid() != old) && uv_hrtime() < end)
        uv_run(loop, UV_RUN_NOWAIT), usleep(1000);
    assert_true(up);
    struct ctx ok;
    ctx_open(&ok);
    expect(&ok, "1+1", "2");
    ctx_close(&ok);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_reported),
        cmocka_unit_test(zygote_single_threaded),
        cmocka_unit_test(one_plus_one),
        cmocka_unit_test(runs_inside_the_sandbox),
        cmocka_unit_test(contexts_are_independent),
        cmocka_unit_test(bad_requests_are_refused),
        cmocka_unit_test(zygote_death_and_restart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
