/*
 * config.h — every setting of the daemon: its flag, its environment variable, its default
 * and one line of documentation, all in one table (config.c). Flags override the
 * environment, which overrides the defaults. docs/configuration.md is generated from the
 * same table (`sandboxd --help-markdown`), and a unit test keeps the two in step.
 */
#ifndef SANDBOXD_CONFIG_H
#define SANDBOXD_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "log.h"

struct config {
    /* server */
    char listen[128]; /* HOST:PORT as given */
    char host[64];    /* parsed from listen */
    int port;
    char state_dir[512];
    char token[256];
    char log_level_name[16];
    enum log_level log_level;
    /* HTTP limits */
    uint64_t max_header_bytes;
    uint64_t max_body_bytes;
    uint64_t header_timeout_ms;
    uint64_t first_request_timeout_ms;
    uint64_t idle_timeout_ms;
    uint64_t max_connections;
    uint64_t stream_buffer_bytes;
    /* sandboxes */
    uint64_t max_sandboxes;
    uint64_t memory_mb;
    uint64_t pids;
    double cpus;
    uint64_t disk_mb;
    uint64_t tmp_mb;
    uint64_t exec_timeout_ms;
    uint64_t max_output_bytes;
    uint64_t kill_grace_ms;
    uint64_t max_contexts;
    uint64_t max_result_bytes;
    char runtimes_dir[512];
    char python_preload[512];
    uint64_t host_uid_base;
    /* files and background processes */
    uint64_t max_file_bytes;
    uint64_t process_log_bytes;
    uint64_t max_processes;
    uint64_t process_stdin_bytes; /* --process-stdin-bytes */
    uint64_t max_code_bytes;
    uint64_t max_env_vars;
    uint64_t context_start_timeout_ms;
    uint64_t drain_grace_ms;
    uint64_t max_list_entries;
    uint64_t max_upload_files;
    uint64_t max_followers;
    /* the sandbox's init: nothing waits for it on the loop (jail.h) */
    uint64_t max_pending_spawns;
    uint64_t init_reply_timeout_ms;
    uint64_t sandbox_start_timeout_ms;
    /* operator ceilings on what a request may ask for (sandbox limits, timeouts) */
    uint64_t max_memory_mb;
    double max_cpus;
    uint64_t max_pids;
    uint64_t max_disk_mb;
    uint64_t max_tmp_mb;
    uint64_t max_timeout_ms;
    uint64_t runtimes_tmpfs_mb;
    uint64_t sandbox_buffer_bytes; /* one budget per sandbox (budget.h) */
    /* executions and streams (execution.h, sse.h) */
    uint64_t reattach_grace_ms;
    uint64_t execution_retention_ms;
    uint64_t execution_log_bytes;
    uint64_t max_executions;
    uint64_t sse_heartbeat_ms;
    /* the sandbox's init and the OOM killer (init_serve.c) */
    uint64_t spawn_reserve_kb;
    /* a sandbox's lifecycle defaults (lifecycle.c) */
    uint64_t sandbox_idle_timeout_ms;
    char sandbox_on_idle_name[16]; /* "suspend" or "delete" */
    uint64_t sandbox_max_age_ms;
    uint64_t sandbox_suspend_timeout_ms;
    /* durability and shutdown (docs/lifecycle.md) */
    uint64_t shutdown_grace_ms;
    char uid_registry[512];
    /* code contexts' output (context_lines.c) */
    uint64_t output_line_wait_ms;
    /* the MCP server (api_mcp.c) */
    uint64_t mcp_max_sessions;
    uint64_t mcp_session_idle_ms;
    uint64_t mcp_max_read_bytes;
    /* network and packages (docs/security.md, docs/packages.md) */
    bool allow_host_network;
    char python_site_dirs[1024]; /* colon-separated absolute host paths ("": none) */
};

/* Fill c from defaults, then the environment, then argv. On a bad value or unknown flag
 * returns -EINVAL with a sentence in err. *exit_now is set when the caller should exit 0
 * (after --help or --version printed what was asked). */
int config_load(struct config *c, int argc, char **argv, bool *exit_now, char *err, size_t errlen);

/* True when host is a loopback address (127.0.0.0/8, ::1, localhost). */
bool config_is_loopback(const char *host);

void config_usage(FILE *f);
void config_markdown(FILE *f);

#endif
