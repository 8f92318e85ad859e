/*
 * context.h — code contexts: persistent Python / JavaScript / TypeScript interpreters
 * inside a sandbox, and the runs queued on them (API.md "Code contexts", "Running code").
 *
 * A context is one process at a time (an "incarnation"): a Python child forked from the
 * zygote, or a Node kernel spawned in the sandbox. The daemon talks to it over the
 * channel of docs/protocol.md and reads its stdout/stderr pipes. When the process dies —
 * crash, OOM, a kill after a timeout's grace — the context gets a new, empty incarnation
 * with the same id, and the run that was in flight says statePreserved:false.
 *
 * Runs on one context execute one at a time, in arrival order; contexts run in parallel.
 * Output reaches a streaming client as it is written; a slow client pauses the reading
 * of the context's pipes (back-pressure), so the context blocks instead of the daemon
 * buffering without bound.
 */
#ifndef SANDBOXD_CONTEXT_H
#define SANDBOXD_CONTEXT_H

#include "api.h"
#include "sandbox.h"

enum ctx_lang { LANG_PYTHON = 0, LANG_JAVASCRIPT = 1, LANG_TYPESCRIPT = 2 };

/* Daemon-wide set-up (registers the sandbox destroy hook). */
void ctx_init(struct app *app);

/* Parses "python" | "javascript" | "typescript" (and the aliases Cloudflare's client
 * accepts: python3, js, node, ts). -1 when unknown. */
int ctx_parse_lang(const char *s);

void api_context_create(struct app *app, http_req *req, const route_params *p);
void api_context_list(struct app *app, http_req *req, const route_params *p);
void api_context_get(struct app *app, http_req *req, const route_params *p);
void api_context_delete(struct app *app, http_req *req, const route_params *p);
void api_context_interrupt(struct app *app, http_req *req, const route_params *p);
void api_context_restart(struct app *app, http_req *req, const route_params *p);
void api_execute(struct app *app, http_req *req, const route_params *p);

#endif
