/*
 * api_command.h — what POST …/exec and POST …/processes share in the API layer: reading
 * a command's request fields, answering a start that failed, and api_sink, the cmd_sink
 * (command.h) that delivers an engine's output over one HTTP request (SSE events, or one
 * JSON answer).
 */
#ifndef SANDBOXD_API_COMMAND_H
#define SANDBOXD_API_COMMAND_H

#include <jansson.h>

#include "api.h"
#include "command.h"
#include "sse.h"

/* Read "command" (required, not empty, at most --max-code-bytes), "cwd" and "env" (at
 * most --max-env-vars) from body. 0, or -1 with err naming the bad field (the request
 * should get 400 VALIDATION_FAILED). */
int api_cmd_parse(const json_t *body, const struct config *cfg, struct cmd_request *c, char *err,
                  size_t errlen);

/* Answer a failed start (cmd_spawn's rc and err): 429 at the process limit, when too many
 * starts wait for the sandbox's init (-EBUSY) or when it did not answer in time
 * (-ETIMEDOUT: the sandbox is starved of CPU), 507 when the sandbox's memory is full,
 * 404 when the sandbox was deleted first (-ECANCELED), 400 for a bad cwd, else 500.
 * what names the thing ("command", "process"). */
void api_cmd_respond_error(http_req *req, int rc, const char *cwd, const char *err,
                           const char *what);

/* A cmd_sink over req. begin charges what is queued to the budget and opens an SSE
 * stream when the client asked for one; events are SSE events; end ends the stream;
 * answer is the 200 JSON answer (500 "the command's result does not fit" without one);
 * failed is api_cmd_respond_error with what. Its final operation frees it. */
struct api_sink {
    cmd_sink sink; /* first: the engine holds &sink */
    http_req *req;
    sse sse;
    const char *what;
};

/* The head every cmd_sink over one HTTP request starts with (api_sink, and the
 * compatibility surfaces' own sinks), and its queued/gone/wait_drain operations: the
 * bytes the request has queued, whether its client went away, and pausing until the
 * request's queue has drained (http calls its on_drain then). */
struct api_req_sink {
    cmd_sink sink;
    http_req *req;
};
size_t api_sink_queued(const cmd_sink *s);
bool api_sink_gone(const cmd_sink *s);
void api_sink_wait_drain(cmd_sink *s);

/* A request's on_drain and on_abort (http.h) when it streams a command (arg: the
 * exec_run) or follows a process (arg: the proc_follower): resume it, or abort it. */
void api_exec_drained(http_req *req, void *arg);
void api_exec_aborted(http_req *req, void *arg);
void api_follower_drained(http_req *req, void *arg);
void api_follower_aborted(http_req *req, void *arg);

/* NULL when out of memory. */
struct api_sink *api_sink_new(http_req *req, const char *what);
/* For a sink the engine never took (its start was refused at once). */
void api_sink_free(struct api_sink *s);

#endif
