/*
 * execute.h — run code through POST /v1/sandboxes/{id}/execute (SSE) and show it live.
 *
 * Shared by `sbx run` and the REPL. stdout/stderr events are written to the terminal as
 * they arrive; results are printed as text, or written as files (png, jpeg, svg, pdf) when
 * a save directory is set; the error event is printed to stderr as name, message and
 * traceback. The view records what happened so the caller can choose its exit code.
 */
#ifndef SBX_CLI_EXECUTE_H
#define SBX_CLI_EXECUTE_H

#include <stdbool.h>

#include <jansson.h>

#include "client.h"

typedef struct exec_view {
    const char *save_dir;   /* NULL: image results are announced, not written */
    int nsaved;             /* files written so far (names result-<n>.<ext>), across runs */
    bool raised;            /* an error event arrived */
    bool ended;             /* the terminal end event arrived */
    bool out_open;          /* the last stdout byte was not '\n' */
    long long exec_count;   /* from the end event, -1 if unknown */
    const sbx_resp *resp;   /* while streaming: the response (resp->exec_id names the run) */
} exec_view;

/* Streams one run; body is the request object (code, context, language, …).
 * 0 when the stream completed (check v->raised), else SBX_EXIT_API (error printed). */
int execute_stream(sbx_client *c, const char *sandbox, json_t *body, exec_view *v);

#endif
