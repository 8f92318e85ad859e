/*
 * process.h — background processes of a sandbox (API.md "Background processes"):
 * POST/GET /v1/sandboxes/{sid}/processes, GET/DELETE …/processes/{id}, GET …/{id}/logs.
 *
 * A background process is `/bin/sh -c COMMAND` spawned into the sandbox like an exec
 * command (jail_spawn: the sandbox user, its own session and process group), but owned by
 * the sandbox instead of a request: it runs until it exits, DELETE kills its process
 * group, or the sandbox is deleted. Its stdout and stderr are read all the time into one
 * ring buffer per stream (--process-log-bytes each); when a ring is full the oldest bytes
 * are dropped and counted, so a process is never blocked by its log, whoever reads it.
 *
 * Logs are read whole (JSON: what the rings hold plus how much was dropped) or followed
 * (SSE): a follower first gets what the rings still hold, then output as it arrives, then
 * an `exit` event. Followers are independent and any number of them may follow a process
 * (up to --max-followers). A slow follower never slows the process or the others: it reads
 * from the ring at its own pace, and when it falls so far behind that the ring has
 * overwritten what it had not read yet, it skips to the oldest byte still held and gets a
 * `dropped` event {"stream","bytes"} saying how much it missed.
 */
#ifndef SANDBOXD_PROCESS_H
#define SANDBOXD_PROCESS_H

#include "api.h"

/* Daemon start-up: registers the sandbox destroy hook (main.c's module table). */
void proc_init(void);

void api_process_start(struct app *app, http_req *req, const route_params *p);
void api_process_list(struct app *app, http_req *req, const route_params *p);
void api_process_get(struct app *app, http_req *req, const route_params *p);
void api_process_delete(struct app *app, http_req *req, const route_params *p);
void api_process_logs(struct app *app, http_req *req, const route_params *p);

#endif
