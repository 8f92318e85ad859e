/*
 * config.c — the settings table and its parsers (see config.h). Numbers are parsed with
 * strtoull/strtod and range-checked; nothing here uses atoi.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* OPT_BOOL: "--flag" alone is true; a value must be true/false/1/0. OPT_PATHS: a list of
 * absolute paths kept colon-separated; each --flag adds one, and the flags together replace
 * the environment's list. */
enum opt_type { OPT_STR, OPT_U64, OPT_DOUBLE, OPT_BOOL, OPT_PATHS };

struct opt {
    const char *flag; /* without the leading "--" */
    const char *env;
    enum opt_type type;
    size_t off;        /* field in struct config */
    size_t size;       /* for OPT_STR: size of the char array */
    const char *def;   /* default, as text */
    uint64_t min, max; /* for OPT_U64 */
    const char *doc;
};

#define STR(f) OPT_STR, offsetof(struct config, f), sizeof(((struct config *)0)->f)
#define U64(f) OPT_U64, offsetof(struct config, f), 0
#define DBL(f) OPT_DOUBLE, offsetof(struct config, f), 0
#define BOOLEAN(f) OPT_BOOL, offsetof(struct config, f), 0
#define PATHS(f) OPT_PATHS, offsetof(struct config, f), sizeof(((struct config *)0)->f)

/* One row per setting. Limits have a default and a range. */
/* clang-format off */
static const struct opt OPTS[] = {
    { "listen", "SANDBOXD_LISTEN", STR(listen), "127.0.0.1:7878", 0, 0,
      "Address to serve HTTP on, HOST:PORT. Beyond loopback a token is required." },
    { "state-dir", "SANDBOXD_STATE_DIR", STR(state_dir), "/var/lib/sandboxd", 0, 0,
      "Directory for sandbox workspaces and runtime state; created when missing." },
    { "token", "SANDBOXD_TOKEN", STR(token), "", 0, 0,
      "Bearer token every request except GET /v1/health must carry. Empty: no auth (loopback only)." },
    { "log-level", "SANDBOXD_LOG_LEVEL", STR(log_level_name), "info", 0, 0,
      "error, warn, info (one line per request) or debug." },
    { "max-header-bytes", "SANDBOXD_MAX_HEADER_BYTES", U64(max_header_bytes), "16384", 1024, 1 << 20,
      "Largest request line plus headers; larger gets 431." },
    { "max-body-bytes", "SANDBOXD_MAX_BODY_BYTES", U64(max_body_bytes), "16777216", 1024, UINT64_C(1) << 34,
      "Largest request body the daemon buffers (JSON requests); larger gets 413." },
    { "header-timeout-ms", "SANDBOXD_HEADER_TIMEOUT_MS", U64(header_timeout_ms), "10000", 100, 3600000,
      "Time a client has to send a whole request once it started one; then the connection is closed." },
    { "idle-timeout-ms", "SANDBOXD_IDLE_TIMEOUT_MS", U64(idle_timeout_ms), "60000", 100, 86400000,
      "Time an idle keep-alive connection stays open." },
    { "max-connections", "SANDBOXD_MAX_CONNECTIONS", U64(max_connections), "4096", 1, 1000000,
      "Open client connections at most. When full, a new one closes the longest-waiting connection no handler holds (never used, then headers unfinished, idle keep-alive, draining, closing, body arriving); if a handler holds every one, it gets 429." },
    { "first-request-timeout-ms", "SANDBOXD_FIRST_REQUEST_TIMEOUT_MS", U64(first_request_timeout_ms), "10000", 100, 3600000,
      "Time a new connection has, from accept, to send its whole first request; then it is closed (408 if it began one)." },
    { "stream-buffer-bytes", "SANDBOXD_STREAM_BUFFER_BYTES", U64(stream_buffer_bytes), "262144", 4096, 1 << 30,
      "Unsent bytes queued for one streaming client before the producer is paused (back-pressure)." },
    { "max-sandboxes", "SANDBOXD_MAX_SANDBOXES", U64(max_sandboxes), "256", 1, 65536,
      "Sandboxes alive at once; creating one more gets 429." },
    { "memory-mb", "SANDBOXD_MEMORY_MB", U64(memory_mb), "2048", 16, 1 << 24,
      "Default memory limit of a sandbox (cgroup), MiB." },
    { "pids", "SANDBOXD_PIDS", U64(pids), "512", 8, 1 << 22,
      "Default limit on processes and threads in a sandbox (cgroup pids.max)." },
    { "cpus", "SANDBOXD_CPUS", DBL(cpus), "1.0", 0, 0,
      "Default CPU quota of a sandbox, in CPUs (0.01 to 1024)." },
    { "disk-mb", "SANDBOXD_DISK_MB", U64(disk_mb), "1024", 1, 1 << 24,
      "Default size of a sandbox's /workspace, MiB (when root an ext4 file system in a sparse image in the state dir, on disk, kept across restarts; rootless a tmpfs, i.e. RAM)." },
    { "tmp-mb", "SANDBOXD_TMP_MB", U64(tmp_mb), "256", 1, 1 << 24,
      "Size of a sandbox's private /tmp and /dev/shm, MiB each." },
    { "exec-timeout-ms", "SANDBOXD_EXEC_TIMEOUT_MS", U64(exec_timeout_ms), "60000", 0, 86400000,
      "Default wall-clock timeout of a command or code run (0 = none); a request may set its own." },
    { "max-output-bytes", "SANDBOXD_MAX_OUTPUT_BYTES", U64(max_output_bytes), "10485760", 1024, UINT64_C(1) << 32,
      "Output kept per stream of a non-streamed command or run; the rest is cut and marked truncated." },
    { "kill-grace-ms", "SANDBOXD_KILL_GRACE_MS", U64(kill_grace_ms), "2000", 0, 600000,
      "After a timeout's SIGINT, how long code has to stop before its process is killed." },
    { "max-contexts", "SANDBOXD_MAX_CONTEXTS", U64(max_contexts), "64", 1, 100000,
      "Code contexts alive at once in one sandbox; creating one more gets 429." },
    { "max-result-bytes", "SANDBOXD_MAX_RESULT_BYTES", U64(max_result_bytes), "67108864", 65536, UINT64_C(1) << 32,
      "Largest message a context may send (one result, e.g. a PNG); a larger one ends the context." },
    { "max-code-bytes", "SANDBOXD_MAX_CODE_BYTES", U64(max_code_bytes), "4194304", 1024, 1 << 28,
      "Largest cell of code (execute) or shell command (exec, processes), bytes; larger gets 400." },
    { "max-env-vars", "SANDBOXD_MAX_ENV_VARS", U64(max_env_vars), "256", 1, 65536,
      "Environment variables one request may set (envVars, env); more gets 400." },
    { "context-start-timeout-ms", "SANDBOXD_CONTEXT_START_TIMEOUT_MS", U64(context_start_timeout_ms), "30000", 100, 600000,
      "Time a new code context has to get ready; then it is marked dead." },
    { "drain-grace-ms", "SANDBOXD_DRAIN_GRACE_MS", U64(drain_grace_ms), "300", 0, 60000,
      "After a command exits, how long processes it left behind may keep its output pipes open." },
    { "max-list-entries", "SANDBOXD_MAX_LIST_ENTRIES", U64(max_list_entries), "10000", 1, 10000000,
      "Entries of a directory listing (files API); the rest is cut and marked truncated." },
    { "max-followers", "SANDBOXD_MAX_FOLLOWERS", U64(max_followers), "256", 1, 100000,
      "Clients following one background process's output at once; one more gets 429." },
    { "runtimes-dir", "SANDBOXD_RUNTIMES_DIR", STR(runtimes_dir), "", 0, 0,
      "Host directory with the runtimes (python, node), shown read-only at /opt/sandboxd (a private copy made at start, see --runtimes-tmpfs-mb). Empty: next to the binary's source tree." },
    { "python-preload", "SANDBOXD_PYTHON_PRELOAD", STR(python_preload), "IPython,numpy,pandas,matplotlib", 0, 0,
      "Modules the Python zygote imports once, so every context starts with them loaded." },
    { "host-uid-base", "SANDBOXD_HOST_UID_BASE", U64(host_uid_base), "1000000", 1000, UINT32_MAX - 200000,
      "When root: the lowest host uid; the state dir's range (see --uid-registry) starts at or above it, and sandbox n runs as the range's base+2n and base+2n+1 (never shared between sandboxes)." },
    { "max-file-bytes", "SANDBOXD_MAX_FILE_BYTES", U64(max_file_bytes), "4294967296", 1, UINT64_C(1) << 40,
      "Largest file PUT /v1/sandboxes/{id}/files/... accepts (streamed to disk, never held in memory); larger gets 413." },
    { "process-log-bytes", "SANDBOXD_PROCESS_LOG_BYTES", U64(process_log_bytes), "1048576", 4096, UINT64_C(1) << 30,
      "Output a background process keeps per stream (a ring: the oldest bytes are dropped and counted)." },
    { "max-processes", "SANDBOXD_MAX_PROCESSES", U64(max_processes), "64", 1, 100000,
      "Background processes a sandbox keeps (running or exited); past it the oldest exited one is forgotten, or 429." },
    { "max-pending-spawns", "SANDBOXD_MAX_PENDING_SPAWNS", U64(max_pending_spawns), "64", 1, 100000,
      "Requests per sandbox waiting for its init to answer (commands, processes and JS contexts being started) or for it to be created (PUT of the same id); one more gets 429." },
    { "init-reply-timeout-ms", "SANDBOXD_INIT_REPLY_TIMEOUT_MS", U64(init_reply_timeout_ms), "10000", 100, 600000,
      "Time a sandbox's init has to start a process (it runs under the sandbox's CPU quota); then the request fails with 429." },
    { "sandbox-start-timeout-ms", "SANDBOXD_SANDBOX_START_TIMEOUT_MS", U64(sandbox_start_timeout_ms), "10000", 100, 600000,
      "Time a new sandbox's init has to build the sandbox and report ready; then the creation fails." },
    { "output-line-wait-ms", "SANDBOXD_OUTPUT_LINE_WAIT_MS", U64(output_line_wait_ms), "100", 0, 60000,
      "How long a code context's stdout/stderr pipe output after its last newline is held for the rest of the line before it is passed on as it is (0: at once); lines are never split by other output while held." },
    /* background processes' stdin (process.c) */
    { "process-stdin-bytes", "SANDBOXD_PROCESS_STDIN_BYTES", U64(process_stdin_bytes), "1048576", 1, UINT64_C(1) << 30,
      "Stdin bytes the daemon holds for one background process that has not read them yet; a write past it gets 429 (a single write larger than it, 413)." },
    /* the E2B surface (api_e2b*.c) */
    { "max-upload-files", "SANDBOXD_MAX_UPLOAD_FILES", U64(max_upload_files), "64", 1, 100000,
      "Files in one multipart upload (E2B's POST /files); one more gets 400." },
    /* the MCP server (api_mcp*.c, docs/mcp.md) */
    { "mcp-max-sessions", "SANDBOXD_MCP_MAX_SESSIONS", U64(mcp_max_sessions), "64", 1, 100000,
      "MCP sessions (POST /mcp initialize) alive at once; one more gets HTTP 429 with JSON-RPC error -32000." },
    { "mcp-session-idle-ms", "SANDBOXD_MCP_SESSION_IDLE_MS", U64(mcp_session_idle_ms), "1800000", 1000, UINT64_C(2592000000),
      "An MCP session unused this long ends (its default contexts are deleted); its id then gets 404." },
    { "mcp-max-read-bytes", "SANDBOXD_MCP_MAX_READ_BYTES", U64(mcp_max_read_bytes), "1048576", 1024, UINT64_C(1) << 28,
      "Largest file the MCP read_file tool returns; a larger one is a tool error naming the size." },
    /* Ceilings: the most a client may ask for, per sandbox (sized for a 24 GiB, 2-core
     * host; /tmp and /dev/shm are tmpfs, i.e. RAM, charged to the sandbox; the workspace is
     * on disk when root, docs/lifecycle.md). */
    { "max-memory-mb", "SANDBOXD_MAX_MEMORY_MB", U64(max_memory_mb), "8192", 16, 1 << 24,
      "Largest memoryMb a sandbox may ask for; above gets 400. At least --memory-mb." },
    { "max-cpus", "SANDBOXD_MAX_CPUS", DBL(max_cpus), "2.0", 0, 0,
      "Largest cpus a sandbox may ask for (0.01 to 1024); above gets 400. At least --cpus." },
    { "max-pids", "SANDBOXD_MAX_PIDS", U64(max_pids), "4096", 8, 1 << 22,
      "Largest pids a sandbox may ask for; above gets 400. At least --pids." },
    { "max-disk-mb", "SANDBOXD_MAX_DISK_MB", U64(max_disk_mb), "4096", 1, 1 << 24,
      "Largest diskMb (size of the /workspace file system) a sandbox may ask for; above gets 400. At least --disk-mb." },
    { "max-tmp-mb", "SANDBOXD_MAX_TMP_MB", U64(max_tmp_mb), "1024", 1, 1 << 24,
      "Largest tmpMb (/tmp and /dev/shm, RAM) a sandbox may ask for; above gets 400. At least --tmp-mb." },
    { "max-timeout-ms", "SANDBOXD_MAX_TIMEOUT_MS", U64(max_timeout_ms), "86400000", 1, 86400000,
      "Largest timeoutMs a sandbox, command or run may ask for; above gets 400 (0, no timeout, stays allowed: CPU, memory and pids stay capped). At least --exec-timeout-ms." },
    { "runtimes-tmpfs-mb", "SANDBOXD_RUNTIMES_TMPFS_MB", U64(runtimes_tmpfs_mb), "256", 1, 1 << 16,
      "Size of the private read-only tmpfs copy of --runtimes-dir (and the matplotlib cache) shown at /opt/sandboxd, MiB; made once at start." },
    { "sandbox-buffer-bytes", "SANDBOXD_SANDBOX_BUFFER_BYTES", U64(sandbox_buffer_bytes), "67108864", 1 << 20, UINT64_C(1) << 40,
      "Daemon memory one sandbox may fill (channel messages, results, captured output, log rings, queued responses, counted after escaping); past it streams pause, captures are cut (truncatedBy), a channel message fails its run." },
    /* Executions (execution.h): a run outlives its request; and every stream's heartbeat. */
    { "reattach-grace-ms", "SANDBOXD_REATTACH_GRACE_MS", U64(reattach_grace_ms), "30000", 0, 86400000,
      "How long a run goes on after its last client went away (plain or streamed) for someone to re-attach (GET .../executions/{id}/events); then it is cancelled (queued) or interrupted (running)." },
    { "execution-retention-ms", "SANDBOXD_EXECUTION_RETENTION_MS", U64(execution_retention_ms), "300000", 0, 86400000,
      "How long a finished execution (its document and events) is kept for GET .../executions/{id}; then 404." },
    { "execution-log-bytes", "SANDBOXD_EXECUTION_LOG_BYTES", U64(execution_log_bytes), "16777216", 1 << 20, UINT64_C(1) << 32,
      "Events one execution keeps for re-attach, bytes (charged to the sandbox's buffer budget); past it the oldest events already sent to every streaming client are dropped, and a replay or document says so (dropped, truncatedBy)." },
    { "max-executions", "SANDBOXD_MAX_EXECUTIONS", U64(max_executions), "1024", 1, 1000000,
      "Executions a sandbox keeps (queued, running or finished within the retention); past it the oldest finished one nobody reads is forgotten, or a new run gets 429." },
    { "sse-heartbeat-ms", "SANDBOXD_SSE_HEARTBEAT_MS", U64(sse_heartbeat_ms), "15000", 100, 3600000,
      "An SSE comment line (': keep-alive') is sent on every stream after this long without an event, so proxies keep it open." },
    /* A fork by a sandbox's init is charged to the sandbox: in a memory cgroup full of
     * tmpfs pages, the OOM killer would have only the init to take. */
    { "spawn-reserve-kb", "SANDBOXD_SPAWN_RESERVE_KB", U64(spawn_reserve_kb), "1024", 0, 1 << 20,
      "Memory a sandbox must have free for its init to start a command or process (the fork is charged to the sandbox, and in a memory cgroup full of files the OOM killer could only take the init); with less, 507 MEMORY_LIMIT. KiB; 0: no check." },
    /* Lifecycle of a sandbox (lifecycle.c): each may set its own ("lifecycle" on create). */
    { "sandbox-idle-timeout-ms", "SANDBOXD_SANDBOX_IDLE_TIMEOUT_MS", U64(sandbox_idle_timeout_ms), "0", 0, UINT64_C(2592000000),
      "Default idleTimeoutMs of a sandbox: after this long without a request, running code, command or process output it is suspended or deleted (--sandbox-on-idle). 0: never." },
    { "sandbox-on-idle", "SANDBOXD_SANDBOX_ON_IDLE", STR(sandbox_on_idle_name), "suspend", 0, 0,
      "Default onIdle of a sandbox: suspend (freeze every process, memory kept; the next request resumes it) or delete." },
    { "sandbox-max-age-ms", "SANDBOXD_SANDBOX_MAX_AGE_MS", U64(sandbox_max_age_ms), "0", 0, UINT64_C(31536000000),
      "Default maxAgeMs of a sandbox: it is deleted this long after its creation, busy or not. 0: never." },
    { "sandbox-suspend-timeout-ms", "SANDBOXD_SANDBOX_SUSPEND_TIMEOUT_MS", U64(sandbox_suspend_timeout_ms), "5000", 10, 600000,
      "Time every process of a sandbox has to freeze when it is suspended; then it is resumed and the suspend fails (500)." },
    /* Durability and shutdown (docs/lifecycle.md): sandboxes outlive the daemon. */
    { "shutdown-grace-ms", "SANDBOXD_SHUTDOWN_GRACE_MS", U64(shutdown_grace_ms), "5000", 100, 600000,
      "On SIGTERM/SIGINT: the daemon stops accepting, ends every run, command and stream (ContextDied: the daemon is shutting down), keeps every sandbox on disk and exits within this time (past it, at once with status 1)." },
    { "uid-registry", "SANDBOXD_UID_REGISTRY", STR(uid_registry), "/var/lib/sandboxd-uid-ranges", 0, 0,
      "When root: the machine-wide file (locked with flock) in which each state dir reserves its range of host uids (2 x --max-sandboxes from --host-uid-base up), so that daemons with different state dirs never share a uid; a range is freed when its state dir is gone." },
    /* Network and packages (docs/security.md, docs/packages.md). */
    { "allow-host-network", "SANDBOXD_ALLOW_HOST_NETWORK", BOOLEAN(allow_host_network), "false", 0, 0,
      "Let a sandbox ask for network \"host\" (the host's own network stack: every address the host reaches, its loopback services included); without it such a create gets 400." },
    { "python-site-dir", "SANDBOXD_PYTHON_SITE_DIRS", PATHS(python_site_dirs), "", 0, 0,
      "Host directory of Python packages shown read-only in every sandbox (at /opt/python-site/N, on sys.path of every context, command and process); repeat the flag for more (at most 8; the environment variable takes a colon-separated list). Must be readable by everyone." },
};
/* clang-format on */
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

static int set_opt(struct config *c, const struct opt *o, const char *v, char *err, size_t errlen)
{
    char *field = (char *)c + o->off;
    char *end;

    switch (o->type) {
    case OPT_STR:
        if (strlen(v) >= o->size) {
            snprintf(err, errlen, "--%s is too long (at most %zu bytes)", o->flag, o->size - 1);
            return -EINVAL;
        }
        memcpy(field, v, strlen(v) + 1);
        return 0;
    case OPT_U64: {
        errno = 0;
        if (!isdigit((unsigned char)v[0])) {
            snprintf(err, errlen, "--%s: '%s' is not a non-negative integer", o->flag, v);
            return -EINVAL;
        }
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || *end || x < o->min || x > o->max) {
            snprintf(err, errlen, "--%s: '%s' is not an integer from %llu to %llu", o->flag, v,
                     (unsigned long long)o->min, (unsigned long long)o->max);
            return -EINVAL;
        }
        memcpy(field, &(uint64_t){ x }, sizeof(uint64_t));
        return 0;
    }
    case OPT_DOUBLE: {
        errno = 0;
        double d = strtod(v, &end);
        if (errno || *end || end == v || !(d >= 0.01 && d <= 1024)) {
            snprintf(err, errlen, "--%s: '%s' is not a number from 0.01 to 1024", o->flag, v);
            return -EINVAL;
        }
        memcpy(field, &d, sizeof d);
        return 0;
    }
    case OPT_BOOL: {
        bool t = strcmp(v, "true") == 0 || strcmp(v, "1") == 0;
        if (!t && strcmp(v, "false") && strcmp(v, "0")) {
            snprintf(err, errlen, "--%s: '%s' is not true, false, 1 or 0", o->flag, v);
            return -EINVAL;
        }
        memcpy(field, &t, sizeof t);
        return 0;
    }
    case OPT_PATHS:
        for (const char *p = v; *p; p += strcspn(p, ":"), p += *p == ':')
            if (*p != '/') {
                snprintf(err, errlen, "--%s: '%s' is not a list of absolute paths", o->flag, v);
                return -EINVAL;
            }
        if (strlen(v) >= o->size) {
            snprintf(err, errlen, "--%s is too long (at most %zu bytes in all)", o->flag,
                     o->size - 1);
            return -EINVAL;
        }
        memcpy(field, v, strlen(v) + 1);
        return 0;
    }
    return -EINVAL;
}

bool config_is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

/* Split "HOST:PORT" or "[V6]:PORT". */
static int parse_listen(struct config *c, char *err, size_t errlen)
{
    const char *s = c->listen, *colon, *hs = s;
    size_t hl;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            goto bad;
        hs = s + 1;
        hl = (size_t)(rb - hs);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            goto bad;
        hl = (size_t)(colon - s);
    }
    if (hl == 0 || hl >= sizeof c->host)
        goto bad;
    memcpy(c->host, hs, hl);
    c->host[hl] = '\0';
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (errno || *end || colon[1] == '\0' || p > 65535)
        goto bad;
    c->port = (int)p;
    return 0;
bad:
    snprintf(err, errlen, "--listen: '%s' is not HOST:PORT", s);
    return -EINVAL;
}

static const struct opt *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(OPTS[i].flag) == len && strncmp(OPTS[i].flag, name, len) == 0)
            return &OPTS[i];
    return NULL;
}

/* Every default a sandbox gets must be one a client could ask for. */
static int check_ceilings(const struct config *c, char *err, size_t errlen)
{
    static const struct {
        const char *def, *max;
        size_t doff, moff;
    } PAIRS[] = {
        { "memory-mb", "max-memory-mb", offsetof(struct config, memory_mb),
          offsetof(struct config, max_memory_mb) },
        { "pids", "max-pids", offsetof(struct config, pids), offsetof(struct config, max_pids) },
        { "disk-mb", "max-disk-mb", offsetof(struct config, disk_mb),
          offsetof(struct config, max_disk_mb) },
        { "tmp-mb", "max-tmp-mb", offsetof(struct config, tmp_mb),
          offsetof(struct config, max_tmp_mb) },
        { "exec-timeout-ms", "max-timeout-ms", offsetof(struct config, exec_timeout_ms),
          offsetof(struct config, max_timeout_ms) },
    };
    for (size_t i = 0; i < sizeof PAIRS / sizeof PAIRS[0]; i++) {
        uint64_t d, m;
        memcpy(&d, (const char *)c + PAIRS[i].doff, sizeof d);
        memcpy(&m, (const char *)c + PAIRS[i].moff, sizeof m);
        if (d > m) {
            snprintf(err, errlen, "--%s %llu is above its ceiling --%s %llu", PAIRS[i].def,
                     (unsigned long long)d, PAIRS[i].max, (unsigned long long)m);
            return -EINVAL;
        }
    }
    if (c->cpus > c->max_cpus) {
        snprintf(err, errlen, "--cpus %g is above its ceiling --max-cpus %g", c->cpus, c->max_cpus);
        return -EINVAL;
    }
    return 0;
}

/* One --flag of an OPT_PATHS setting: the first one replaces the environment's list, the
 * next ones append (seen: the settings already given on the command line, one bit each). */
static int add_path(struct config *c, const struct opt *o, const char *v, uint64_t *seen, char *err,
                    size_t errlen)
{
    uint64_t bit = UINT64_C(1) << ((size_t)(o - OPTS) % 64);
    char *field = (char *)c + o->off, joined[4096];
    if (strchr(v, ':') || v[0] == '\0') {
        snprintf(err, errlen, "--%s: '%s' is not one absolute path without ':'", o->flag, v);
        return -EINVAL;
    }
    int n = (*seen & bit) && field[0] ? snprintf(joined, sizeof joined, "%s:%s", field, v)
                                      : snprintf(joined, sizeof joined, "%s", v);
    *seen |= bit;
    if (n < 0 || (size_t)n >= sizeof joined) {
        snprintf(err, errlen, "--%s: too many paths", o->flag);
        return -EINVAL;
    }
    return set_opt(c, o, joined, err, errlen);
}

int config_load(struct config *c, int argc, char **argv, bool *exit_now, char *err, size_t errlen)
{
    int rc;
    uint64_t paths_seen = 0;
    memset(c, 0, sizeof *c);
    *exit_now = false;
    for (size_t i = 0; i < NOPTS; i++)
        if ((rc = set_opt(c, &OPTS[i], OPTS[i].def, err, errlen)))
            return rc;
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv(OPTS[i].env);
        if (v && (rc = set_opt(c, &OPTS[i], v, err, errlen)))
            return rc;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            config_usage(stdout);
            *exit_now = true;
            return 0;
        }
        if (strcmp(a, "--help-markdown") == 0) {
            config_markdown(stdout);
            *exit_now = true;
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            printf("sandboxd %s\n", SANDBOXD_VERSION);
            *exit_now = true;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (see --help)", a);
            return -EINVAL;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        const struct opt *o = find_flag(name, eq ? (size_t)(eq - name) : strlen(name));
        if (!o) {
            snprintf(err, errlen, "unknown option '%s' (see --help)", a);
            return -EINVAL;
        }
        const char *v = eq                    ? eq + 1
                        : o->type == OPT_BOOL ? "true"
                                              : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            snprintf(err, errlen, "option '%s' needs a value", a);
            return -EINVAL;
        }
        if ((rc = o->type == OPT_PATHS ? add_path(c, o, v, &paths_seen, err, errlen)
                                       : set_opt(c, o, v, err, errlen)))
            return rc;
    }
    if ((rc = parse_listen(c, err, errlen)))
        return rc;
    if (log_parse_level(c->log_level_name, &c->log_level)) {
        snprintf(err, errlen, "--log-level: '%s' is not one of error, warn, info, debug",
                 c->log_level_name);
        return -EINVAL;
    }
    if ((rc = check_ceilings(c, err, errlen)))
        return rc;
    if (strcmp(c->sandbox_on_idle_name, "suspend") && strcmp(c->sandbox_on_idle_name, "delete")) {
        snprintf(err, errlen, "--sandbox-on-idle: '%s' is not suspend or delete",
                 c->sandbox_on_idle_name);
        return -EINVAL;
    }
    if (!config_is_loopback(c->host) && c->token[0] == '\0') {
        snprintf(err, errlen,
                 "refusing to listen on %s without a token: set --token or "
                 "SANDBOXD_TOKEN, or listen on 127.0.0.1",
                 c->host);
        return -EINVAL;
    }
    return 0;
}

void config_usage(FILE *f)
{
    fprintf(f, "usage: sandboxd [--option value | --option=value]...\n\n"
               "Runs the sandboxd code interpreter service in the foreground.\n\n");
    for (size_t i = 0; i < NOPTS; i++)
        fprintf(f, "  --%-22s %s\n  %-24s  [env %s, default '%s']\n", OPTS[i].flag, OPTS[i].doc, "",
                OPTS[i].env, OPTS[i].def);
    fprintf(f, "\n  --help, --help-markdown, --version\n");
}

void config_markdown(FILE *f)
{
    fprintf(f, "| flag | environment | default | what it sets |\n|---|---|---|---|\n");
    for (size_t i = 0; i < NOPTS; i++)
        fprintf(f, "| `--%s` | `%s` | `%s` | %s |\n", OPTS[i].flag, OPTS[i].env,
                OPTS[i].def[0] ? OPTS[i].def : "(empty)", OPTS[i].doc);
}
