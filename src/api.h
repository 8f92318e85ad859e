/*
 * api.h — the HTTP API of API.md: the route table, authentication, the error envelope
 * for unknown routes and methods, and the handlers' shared state.
 *
 * Every handler receives a complete request and must complete it, now or later (see
 * http.h). Handlers never trust the request: ids, paths and bodies are validated, and a
 * bad value gets a 4xx naming it.
 */
#ifndef SANDBOXD_API_H
#define SANDBOXD_API_H

#include <stdbool.h>
#include <uv.h>

#include "config.h"
#include "http.h"
#include "router.h"

/* What a language reports in /v1/health. */
struct lang_status {
    const char *name;
    bool available;
    char version[32];
    char reason[160]; /* why it is unavailable */
};

struct app {
    uv_loop_t *loop;
    const struct config *cfg;
    http_server *server;
    uint64_t started_ns;
    struct lang_status langs[3]; /* python, javascript, typescript */
    char runtimes_dir[600];      /* host dir of runtimes/ */
    bool node_probed;            /* api_probe_node() has an answer */
};

struct sandbox;
/* The sandbox named by the route's {sid}; when there is none, the request has been
 * answered (400 for an invalid id, 404 SANDBOX_NOT_FOUND) and NULL is returned. A request
 * that needs the sandbox (all but GETs of what the daemon holds: processes, logs,
 * contexts) resumes it (lifecycle.h) and counts as its activity. */
struct sandbox *api_sandbox_lookup(http_req *req, const route_params *p);
/* When id (made with prefix: "ctx-", "proc-", "exe-") was one of s's before the daemon
 * restarted, answer 404 code saying so and return true; else false (nothing answered). */
bool api_ended_by_restart(http_req *req, const struct sandbox *s, const char *code,
                          const char *what, const char *prefix, const char *id);
/* Start bringing back every sandbox stored in the state dir (sandbox_store.h), through
 * the same settings parser as a create; *pending counts the restorations under way and
 * drops to 0 as each ends (each is logged). Returns how many were started. */
unsigned api_sandbox_restore_all(struct app *app, unsigned *pending);

typedef void (*api_handler)(struct app *app, http_req *req, const route_params *p);

/* The dispatch function given to the HTTP server (arg is the struct app). */
void api_dispatch(http_req *req, void *arg);
/* The body hook given to the HTTP server: true for the routes whose request body is
 * streamed to the handler as it arrives (file uploads) instead of being buffered. */
bool api_stream_body(const http_req *req, void *arg);
void api_init(struct app *app, uv_loop_t *loop, const struct config *cfg);
/* Find Node's version (node --version, asynchronously) for JavaScript/TypeScript. */
void api_probe_node(struct app *app);
/* Bring app->langs up to date (Python follows the zygote's state). */
void api_update_langs(struct app *app);

/* Shared by api_context.c and api_execute.c: true when lang (enum ctx_lang) can run now,
 * else the request has been answered (501 LANGUAGE_UNAVAILABLE with the reason); and the
 * answer to a context that could not be created or restarted (rc and err of ctx_create). */
bool api_lang_available(struct app *app, http_req *req, int lang);
void api_context_start_error(http_req *req, int rc, const char *err);

/* Make req follow execution e (api_execution.c): streamed (SSE, the events after id
 * `after`, then live) or plain (the document once the run is over). 0, or -errno when the
 * request has been answered with an error instead (429 at --max-followers, 500). */
struct execution;
int api_exe_attach(struct app *app, http_req *req, struct execution *e, bool stream,
                   uint64_t after);

/* Handlers, by module. */
void api_health(struct app *app, http_req *req, const route_params *p);
void api_metrics(struct app *app, http_req *req, const route_params *p);
void api_sandbox_put(struct app *app, http_req *req, const route_params *p);
void api_sandbox_post(struct app *app, http_req *req, const route_params *p);
void api_sandbox_get(struct app *app, http_req *req, const route_params *p);
void api_sandbox_list(struct app *app, http_req *req, const route_params *p);
void api_sandbox_delete(struct app *app, http_req *req, const route_params *p);
void api_sandbox_suspend(struct app *app, http_req *req, const route_params *p);
void api_sandbox_resume(struct app *app, http_req *req, const route_params *p);
void api_context_create(struct app *app, http_req *req, const route_params *p);
void api_context_list(struct app *app, http_req *req, const route_params *p);
void api_context_get(struct app *app, http_req *req, const route_params *p);
void api_context_delete(struct app *app, http_req *req, const route_params *p);
void api_context_interrupt(struct app *app, http_req *req, const route_params *p);
void api_context_restart(struct app *app, http_req *req, const route_params *p);
void api_execute(struct app *app, http_req *req, const route_params *p);
void api_execution_get(struct app *app, http_req *req, const route_params *p);
void api_execution_events(struct app *app, http_req *req, const route_params *p);
void api_execution_delete(struct app *app, http_req *req, const route_params *p);
void api_context_queue(struct app *app, http_req *req, const route_params *p);
void api_exec(struct app *app, http_req *req, const route_params *p);
void api_process_start(struct app *app, http_req *req, const route_params *p);
void api_process_list(struct app *app, http_req *req, const route_params *p);
void api_process_get(struct app *app, http_req *req, const route_params *p);
void api_process_delete(struct app *app, http_req *req, const route_params *p);
void api_process_logs(struct app *app, http_req *req, const route_params *p);
void api_process_stdin(struct app *app, http_req *req, const route_params *p);
void api_files_put(struct app *app, http_req *req, const route_params *p);
/* A file written as PUT writes it (the writer in the sandbox, charged to it; the same
 * checks and error answers), from data that stays valid until req is answered (part of
 * its buffered body). rel is files_normalize's. On success done is called instead of
 * PUT's answer (shown: the path as the sandbox sees it) and must answer req or start
 * another write; on failure the error is answered as PUT's and done is called with req
 * NULL (only to let go of arg). done is called exactly once, now or later. */
typedef void (*api_files_written_cb)(http_req *req, const char *shown, uint64_t size, void *arg);
void api_files_write(struct app *app, http_req *req, struct sandbox *sb, const char *rel,
                     const char *data, size_t len, api_files_written_cb done, void *arg);
void api_files_get(struct app *app, http_req *req, const route_params *p);
void api_files_delete(struct app *app, http_req *req, const route_params *p);
void api_files_move(struct app *app, http_req *req, const route_params *p);
void api_files_mkdir(struct app *app, http_req *req, const route_params *p);

#endif
