/*
 * zygote_client.h — the daemon's side of the Python zygote: start it, ask it to fork
 * Python contexts into sandboxes, restart it when it dies.
 *
 * One zygote per daemon (module state, not an object). Everything runs on the daemon's
 * libuv loop thread. zyg_start() blocks, bounded by cfg->ready_timeout_ms, until the
 * zygote has imported its modules (about 0.5 s); after that no call blocks: fork requests
 * are written to a non-blocking socket (queued when it is full) and answered through
 * callbacks. When the zygote dies, every request in flight fails with -EPIPE and the
 * zygote is restarted after a backoff (100 ms doubling to 30 s; reset after a minute of
 * good health); zyg_fork() fails with -EAGAIN until it is ready again.
 */
#ifndef SANDBOXD_ZYGOTE_CLIENT_H
#define SANDBOXD_ZYGOTE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "jail_enter.h"

struct zyg_config {
    const char *zygote_path;     /* the sandboxd-zygote binary */
    const char *runtimes_dir;    /* host runtimes dir (holds python/sandboxd_runtime) */
    const char *inside_runtimes; /* the same dir inside a sandbox; NULL = /opt/sandboxd */
    const char *mpl_cache;       /* pre-built matplotlib font cache dir; NULL = none */
    const char *ipython_dir;     /* IPYTHONDIR for the zygote; NULL = a private temp dir */
    const char *preload;         /* modules to import, "IPython,numpy,pandas,matplotlib";
                                      NULL = only what sandboxd_runtime.preload() imports */
    unsigned ready_timeout_ms;   /* wait for `ready` at (re)start; 0 = 20000 */
    unsigned max_pending;        /* fork requests in flight at once; 0 = 256 */
};

/* Called exactly once per accepted request, on the loop. pid is the context's host pid
 * (> 0) or -errno (-EPIPE when the zygote died, -ECANCELED at zyg_stop()); ns_pid is its
 * pid inside the sandbox (for jail_adopt()) when pid > 0; msg is a sentence when pid < 0,
 * else NULL. pid > 0 means the process exists, not that it entered the sandbox: the
 * context then sends `ready` (or `failed`, and exits 127) on its channel by itself, and
 * the caller bounds that wait (the zygote never waits for a context). */
typedef void (*zyg_fork_cb)(pid_t pid, pid_t ns_pid, const char *msg, void *arg);

/* Spawn the zygote (its control socket on fd 3) and wait for its `ready`. 0, or -errno
 * with a sentence in err. The configuration's strings are copied. */
int zyg_start(uv_loop_t *loop, const struct zyg_config *cfg, char *err, size_t errlen);

/* Ask for a Python context in the sandbox e: cwd inside the sandbox, envp its whole
 * environment (NULL-terminated), channel_fd becomes its fd 3, stdout_fd/stderr_fd its
 * fds 1 and 2. The fds are duplicated: the caller keeps (and closes) its own.
 * Returns 0 (cb will be called exactly once, never from inside this call) or -errno
 * (cb is never called): -EAGAIN when the zygote is not available or max_pending requests
 * are in flight, -E2BIG when cwd + envp exceed the request cap (64 KiB, 1024 vars),
 * -EINVAL for a bad argument. */
int zyg_fork(const struct jail_entry *e, const char *cwd, const char *const *envp, int channel_fd,
             int stdout_fd, int stderr_fd, zyg_fork_cb cb, void *arg);

/* Python's version as the zygote reported it ("3.11.2"); "" before the first ready. */
const char *zyg_version(void);

/* True while a zygote is ready to take requests. */
bool zyg_available(void);

/* True while the zygote is being restarted after it died (a fork fails with -EAGAIN
 * until it is ready again): a transient state, unlike a zygote that never started. */
bool zyg_restarting(void);

/* Fork requests sent and not answered yet: their contexts may already exist as the
 * daemon's children, not adopted by any sandbox yet (for the reaper, reaper.h). */
unsigned zyg_forks_in_flight(void);

/* Host pid of the current zygote process, or 0 (for tests and /v1/health). */
pid_t zyg_pid(void);

/* Stop: pending requests fail with -ECANCELED, the zygote gets EOF and exits, no restart.
 * Handles are closed asynchronously: run the loop until it has nothing left to do. */
void zyg_stop(void);

#endif
