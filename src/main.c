/*
 * main.c — sandboxd's entry point: read the configuration, lock the state dir (before
 * anything in it is touched: a second daemon on it exits at once, naming the first),
 * reserve the host uid range, start the modules, bring back the sandboxes stored in the
 * state dir, start the HTTP server on the libuv loop, run until SIGTERM or SIGINT.
 *
 * Shutdown (docs/lifecycle.md): stop accepting; end what runs in every sandbox, so that
 * every open stream gets its terminal event (ContextDied: the daemon is shutting down)
 * while its connection is still open; keep every sandbox on disk; then close the
 * connections and stop the other modules, and exit 0. All of it within
 * --shutdown-grace-ms: past it, or on a second signal, the daemon exits at once (1).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "api.h"
#include "config.h"
#include "http.h"
#include "jail.h"
#include "lifecycle.h"
#include "log.h"
#include "budget.h"
#include "metrics.h"
#include "context.h"
#include "execution.h"
#include "process.h"
#include "pysite.h"
#include "reaper.h"
#include "sandbox.h"
#include "sandbox_store.h"
#include "state_lock.h"
#include "uid_range.h"
#include "zygote_client.h"

static struct config cfg;
static struct app app;
static uv_signal_t sig_term, sig_int;
static uv_timer_t grace_timer;
static bool stopping;
static uint64_t uid_base; /* the state dir's host uid range (uid_range.h) */

/* Paths of the helper programs and data next to this executable, set before the modules
 * start. */
static char bindir[512], init_path[600], runtimes[600], mpl_dir[600];

static void shutdown_modules(void (*last)(void));

static void signals_close(void)
{
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
}

/* The grace is over: whatever has not ended by now is left to the kernel (the sandboxes'
 * inits die with us) and the next daemon (their records and files are on disk). */
static void on_grace_over(uv_timer_t *t)
{
    (void)t;
    log_warn("shutdown took longer than --shutdown-grace-ms %llu: exiting now",
             (unsigned long long)cfg.shutdown_grace_ms);
    exit(1);
}

/* Every sandbox is stopped (streams ended): now the modules, HTTP first. */
static void sandboxes_stopped(void *arg)
{
    (void)arg;
    shutdown_modules(signals_close);
}

static void on_signal(uv_signal_t *h, int signum)
{
    (void)h;
    if (stopping) {
        log_warn("second %s: exiting now", strsignal(signum));
        exit(1);
    }
    stopping = true;
    log_info("%s: shutting down", strsignal(signum));
    uv_timer_init(h->loop, &grace_timer);
    uv_timer_start(&grace_timer, on_grace_over, cfg.shutdown_grace_ms, 0);
    uv_unref((uv_handle_t *)&grace_timer); /* the loop may end before it */
    if (app.server)
        http_server_stop_accepting(app.server);
    sbx_stop_all(sandboxes_stopped, NULL);
}

/* mkdir -p for the state directory, private to the daemon. */
static int make_dirs(const char *path)
{
    char tmp[sizeof cfg.state_dir];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0700) && errno != EEXIST)
        return -errno;
    return 0;
}

/* Gauges for /metrics. */
static uint64_t gauge_sandboxes(void)
{
    return sbx_count();
}

static uint64_t gauge_contexts(void)
{
    uint64_t n = 0;
    for (sandbox *s = sbx_first(); s; s = s->lnext)
        n += s->ncontexts;
    return n;
}

static uint64_t gauge_zygote(void)
{
    return zyg_available() ? 1 : 0;
}

static uint64_t gauge_strays(void)
{
    return reap_strays_total();
}

/* A context the zygote is creating is our child before a sandbox adopts it. */
static bool children_settling(void)
{
    return zyg_forks_in_flight() > 0;
}

static uint64_t gauge_shed(void)
{
    return app.server ? http_connections_shed(app.server) : 0;
}

/* One descriptor per client connection, plus a few per sandbox and context: raise the
 * soft RLIMIT_NOFILE (within the hard one) so that --max-connections can be reached with
 * FD_HEADROOM to spare; short of descriptors, newcomers would be dropped before the
 * connection table could shed an idle connection for them. Only as far as needed: the
 * limit is inherited by sandboxes, and some programs close every possible descriptor. */
#define FD_HEADROOM 4096
static void raise_fd_limit(uint64_t max_connections)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    rlim_t want = (rlim_t)max_connections + FD_HEADROOM;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < want)
            log_warn("RLIMIT_NOFILE allows %llu descriptors: fewer than --max-connections %llu "
                     "plus %d; raise the hard limit",
                     (unsigned long long)rl.rlim_cur, (unsigned long long)max_connections,
                     FD_HEADROOM);
    }
}

/* Directory of this executable: the helper binaries are built next to it. */
static int exe_dir(char *out, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", out, n - 1);
    if (len <= 0)
        return -errno;
    out[len] = '\0';
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    return 0;
}

/*
 * The modules, one row each, in start-up order (nginx's module table): init runs in this
 * order once the configuration is read; a failing init stops the daemon with a message
 * naming the module. On SIGTERM/SIGINT the shutdown hooks run in the reverse order, each
 * after the one before it has finished (some finish later, on the loop). Rows with
 * "(optional)" log a failure and go on: the daemon then serves without that part.
 *
 * Why this order: the reaper watches SIGCHLD before anything forks, and still reaps
 * while the jail layer ends what is left at shutdown; the zygote is spawned after
 * jail_global_init (the daemon must already be a subreaper) and stopped only once every
 * sandbox (and so every context) is gone; the stored sandboxes are restored once every
 * module they use is up, before the HTTP server starts; it starts last, once every route
 * has what it needs, and stops first (after on_signal stopped every sandbox, so that
 * streams got their terminal events), aborting requests in flight.
 */
struct module {
    const char *name;
    int (*init)(uv_loop_t *loop, char *err, size_t errlen); /* 0, or -1/-errno + err */
    void (*shutdown)(void (*done)(void)); /* NULL: nothing to do; calls done once */
};

/* Children no module owns are killed and reaped (reaper.h): we are their subreaper. */
static int reaper_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    const struct reap_hooks rh = { .known = jail_for_each_owned, .settling = children_settling };
    int rc = reap_start(loop, &rh);
    if (rc) /* (optional) */
        log_error("cannot watch SIGCHLD for stray children: %s", uv_strerror(rc));
    return 0;
}

static void reaper_shutdown(void (*done)(void))
{
    reap_stop();
    done();
}

static int jail_init(uv_loop_t *loop, char *err, size_t errlen)
{
    struct jail_global jg = {
        .state_dir = cfg.state_dir,
        .init_path = init_path,
        .runtimes_dir = runtimes,
        .mpl_cache_dir = mpl_dir,
        .runtimes_bytes = cfg.runtimes_tmpfs_mb << 20,
        .host_uid_base = (uid_t)uid_base,
        .max_sandboxes = (unsigned)cfg.max_sandboxes,
        .start_timeout_ms = (unsigned)cfg.sandbox_start_timeout_ms,
        .reply_timeout_ms = (unsigned)cfg.init_reply_timeout_ms,
        .max_pending = (unsigned)cfg.max_pending_spawns,
        .spawn_reserve = cfg.spawn_reserve_kb << 10,
        .keep_file = STORE_FILE,
        .site_dirs = cfg.python_site_dirs,
    };
    char why[400];
    int rc = jail_global_init(loop, &jg, why, sizeof why);
    if (rc)
        snprintf(err, errlen, "cannot set up sandboxing: %s", why);
    return rc;
}

static void jail_shutdown(void (*done)(void))
{
    jail_global_shutdown();
    done();
}

/* Python contexts (optional): the zygote. */
static int zygote_init(uv_loop_t *loop, char *err, size_t errlen)
{
    char zygote_path[600], ipython_dir[600];
    snprintf(zygote_path, sizeof zygote_path, "%s/sandboxd-zygote", bindir);
    snprintf(ipython_dir, sizeof ipython_dir, "%s/ipython", cfg.state_dir);
    struct zyg_config zc = {
        .zygote_path = zygote_path,
        .runtimes_dir = runtimes,
        .mpl_cache = mpl_dir,
        .ipython_dir = ipython_dir,
        .preload = cfg.python_preload,
    };
    if (zyg_start(loop, &zc, err, errlen))
        log_error("Python contexts are unavailable: %s", err);
    return 0;
}

static void zygote_shutdown(void (*done)(void))
{
    zyg_stop();
    done();
}

static int sandbox_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)loop, (void)err, (void)errlen;
    sbx_init(&cfg);
    return 0;
}

static void (*sandboxes_done)(void);

static void sandboxes_gone(void *arg)
{
    (void)arg;
    sandboxes_done();
}

/* Every sandbox ends (and with it every command, context and process), kept on disk;
 * on_signal did it already, so this finds none but those a request made since. */
static void sandbox_shutdown(void (*done)(void))
{
    sandboxes_done = done;
    sbx_stop_all(sandboxes_gone, NULL);
}

static int metrics_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)loop, (void)err, (void)errlen;
    metrics_gauge("sandboxd_http_connections_shed_total",
                  "Idle client connections closed to make room for new ones (a full table).",
                  gauge_shed);
    metrics_gauge("sandboxd_stray_children_reaped_total",
                  "Children of the daemon that no sandbox owned, reaped by it.", gauge_strays);
    metrics_gauge("sandboxd_sandboxes", "Sandboxes alive.", gauge_sandboxes);
    metrics_gauge("sandboxd_contexts", "Code contexts alive, all sandboxes.", gauge_contexts);
    metrics_gauge("sandboxd_python_zygote_up", "1 while the Python zygote takes requests.",
                  gauge_zygote);
    metrics_gauge("sandboxd_sandbox_buffer_bytes",
                  "Bytes the daemon holds for sandboxes "
                  "(charged to their --sandbox-buffer-bytes budgets).",
                  budget_total_used);
    metrics_gauge("sandboxd_sandbox_buffer_refusals",
                  "Charges refused and waits for room "
                  "on sandbox buffer budgets since start (a count that only grows).",
                  budget_total_refusals);
    return 0;
}

static int api_module_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    api_init(&app, loop, &cfg);
    snprintf(app.runtimes_dir, sizeof app.runtimes_dir, "%s", runtimes);
    return 0;
}

/* For the idle timeout: a command, a run, a context start, or a process that init is
 * asked to start (a command, a background process, an upload's writer) in s counts as
 * activity. */
static bool sandbox_busy(sandbox *s)
{
    if (s->nexec || jail_waiting(s->jail))
        return true;
    for (struct context *c = ctx_first(s); c; c = ctx_next(c)) {
        struct ctx_info i;
        ctx_get_info(c, &i);
        if (i.state == CTX_BUSY || i.state == CTX_STARTING)
            return true;
    }
    return false;
}

static int life_module_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    life_init(loop, &cfg, sandbox_busy);
    return 0;
}

static int ctx_module_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)loop, (void)err, (void)errlen;
    ctx_init(uv_default_loop(), &cfg);
    exe_init(uv_default_loop(), &cfg); /* after ctx_init: its destroy hook runs after */
    return 0;
}

static int proc_module_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)loop, (void)err, (void)errlen;
    proc_init(&cfg);
    return 0;
}

/* Answer health and context requests only once Node's availability is known (at most
 * 5 s: then Node counts as missing). */
static int node_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    api_probe_node(&app);
    for (uint64_t t0 = uv_hrtime(); !app.node_probed && uv_hrtime() - t0 < 5000000000ULL;)
        uv_run(loop, UV_RUN_ONCE);
    return 0;
}

/* The operator's Python site dirs (checked before any sandbox is made) and the package
 * list of /v1/health, made once by a child process (at most 10 s; then health says null). */
static int pysite_module_init(uv_loop_t *loop, char *err, size_t errlen)
{
    int rc = pysite_init(cfg.python_site_dirs, err, errlen);
    if (rc)
        return rc;
    if (pysite_probe_start(loop, runtimes) == 0)
        for (uint64_t t0 = uv_hrtime(); pysite_probing() && uv_hrtime() - t0 < 10000000000ULL;)
            uv_run(loop, UV_RUN_ONCE);
    return 0;
}

static void pysite_module_shutdown(void (*done)(void))
{
    pysite_shutdown();
    done();
}

/* Bring back the sandboxes stored in the state dir before the first request is served
 * (a client must find its sandbox, not a 404 while it comes back): their inits build
 * them in parallel; bounded by --sandbox-start-timeout-ms plus a margin. */
static int restore_init(uv_loop_t *loop, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    unsigned pending = 0;
    uint64_t t0 = uv_hrtime();
    unsigned n = api_sandbox_restore_all(&app, &pending);
    uint64_t limit = (cfg.sandbox_start_timeout_ms + 5000) * 1000000ULL;
    while (pending > 0 && uv_hrtime() - t0 < limit)
        uv_run(loop, UV_RUN_ONCE);
    if (n)
        log_info("%u sandboxes restored of %u stored, in %llu ms", sbx_count(), n,
                 (unsigned long long)((uv_hrtime() - t0) / 1000000));
    return 0;
}

static int http_init(uv_loop_t *loop, char *err, size_t errlen)
{
    struct http_limits lim = {
        .max_header_bytes = cfg.max_header_bytes,
        .max_body_bytes = cfg.max_body_bytes,
        .header_timeout_ms = cfg.header_timeout_ms,
        .idle_timeout_ms = cfg.idle_timeout_ms,
        .max_connections = cfg.max_connections,
        .stream_buffer_bytes = cfg.stream_buffer_bytes,
        .first_request_timeout_ms = cfg.first_request_timeout_ms,
    };
    int rc = http_server_start(&app.server, loop, cfg.host, cfg.port, &lim, api_dispatch, &app, err,
                               errlen);
    if (rc)
        return rc;
    http_server_set_body_hook(app.server, api_stream_body); /* file uploads stream */
    return 0;
}

static void (*server_done)(void);

static void server_stopped(void *arg)
{
    (void)arg;
    server_done();
}

/* Connections are closed, requests in flight aborted. */
static void http_shutdown(void (*done)(void))
{
    server_done = done;
    http_server_stop(app.server, server_stopped, NULL);
}

/* clang-format off */
static const struct module MODULES[] = {
    { "reaper", reaper_init, reaper_shutdown },
    { "jail", jail_init, jail_shutdown },
    { "zygote", zygote_init, zygote_shutdown },
    { "sandbox", sandbox_init, sandbox_shutdown },
    { "lifecycle", life_module_init, NULL },
    { "metrics", metrics_init, NULL },
    { "api", api_module_init, NULL },
    { "ctx_init", ctx_module_init, NULL },
    { "proc_init", proc_module_init, NULL },
    { "node", node_init, NULL },
    { "pysite", pysite_module_init, pysite_module_shutdown },
    { "restore", restore_init, NULL },
    { "http", http_init, http_shutdown },
};
/* clang-format on */
#define NMODULES (sizeof MODULES / sizeof MODULES[0])

static size_t nstarted; /* modules whose init succeeded */
static void (*after_shutdown)(void);

/* Start every module in order; 0, or -1 when one failed (message printed). */
static int start_modules(uv_loop_t *loop)
{
    char err[512];
    for (size_t i = 0; i < NMODULES; i++) {
        err[0] = '\0';
        if (MODULES[i].init(loop, err, sizeof err)) {
            fprintf(stderr, "sandboxd: %s (module %s)\n", err[0] ? err : "cannot start",
                    MODULES[i].name);
            return -1;
        }
        nstarted = i + 1;
    }
    return 0;
}

/* The next shutdown hook down the table; each asynchronous one calls us back. */
static void shutdown_next(void)
{
    while (nstarted > 0) {
        const struct module *m = &MODULES[--nstarted];
        if (m->shutdown) {
            m->shutdown(shutdown_next);
            return;
        }
    }
    if (after_shutdown)
        after_shutdown();
}

/* Shut every started module down in reverse order; then last() runs. */
static void shutdown_modules(void (*last)(void))
{
    after_shutdown = last;
    shutdown_next();
}

int main(int argc, char **argv)
{
    char err[512];
    bool exit_now;
    if (config_load(&cfg, argc, argv, &exit_now, err, sizeof err)) {
        fprintf(stderr, "sandboxd: %s\n", err);
        return 2;
    }
    if (exit_now)
        return 0;
    log_set_level(cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit(cfg.max_connections);

    int rc = make_dirs(cfg.state_dir);
    if (rc) {
        fprintf(stderr, "sandboxd: cannot create state dir %s: %s\n", cfg.state_dir, strerror(-rc));
        return 1;
    }
    /* Before anything in the state dir is touched (jail_init cleans it up). */
    if (slock_acquire(cfg.state_dir, err, sizeof err)) {
        fprintf(stderr, "sandboxd: %s\n", err);
        return 1;
    }
    int64_t gen = slock_next_generation(cfg.state_dir);
    if (gen < 0) {
        fprintf(stderr, "sandboxd: cannot write %s/generation: %s\n", cfg.state_dir,
                strerror((int)-gen));
        return 1;
    }
    store_init(cfg.state_dir, gen);
    uid_base = cfg.host_uid_base;
    if (geteuid() == 0 && uidr_reserve(cfg.uid_registry, cfg.state_dir, cfg.host_uid_base,
                                       2 * cfg.max_sandboxes, &uid_base, err, sizeof err)) {
        fprintf(stderr, "sandboxd: host uids: %s\n", err);
        return 1;
    }
    if (exe_dir(bindir, sizeof bindir)) {
        fprintf(stderr, "sandboxd: cannot find its own directory\n");
        return 1;
    }
    snprintf(init_path, sizeof init_path, "%s/sandboxd-init", bindir);
    snprintf(runtimes, sizeof runtimes, "%s",
             cfg.runtimes_dir[0] ? cfg.runtimes_dir : SANDBOXD_SOURCE_DIR "/runtimes");
    snprintf(mpl_dir, sizeof mpl_dir, "%s/mpl-cache", bindir);

    uv_loop_t *loop = uv_default_loop();
    if (start_modules(loop))
        return 1;
    uv_signal_init(loop, &sig_term);
    uv_signal_init(loop, &sig_int);
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);

    const char *h = cfg.host;
    bool v6 = strchr(h, ':') != NULL;
    char url[160];
    snprintf(url, sizeof url, "http://%s%s%s:%d", v6 ? "[" : "", h, v6 ? "]" : "",
             http_server_port(app.server));
    (void)slock_publish(url); /* named by a second daemon on this state dir */
    /* the banner is printed whatever the log level: scripts wait for it */
    fprintf(stderr, "sandboxd %s listening on http://%s%s%s:%d (state in %s%s)\n", SANDBOXD_VERSION,
            v6 ? "[" : "", h, v6 ? "]" : "", http_server_port(app.server), cfg.state_dir,
            cfg.token[0] ? ", token required" : "");
    fprintf(stderr, "try: curl http://%s%s%s:%d/v1/health\n", v6 ? "[" : "", h, v6 ? "]" : "",
            http_server_port(app.server));

    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    log_info("stopped");
    return 0;
}
