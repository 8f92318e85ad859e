/*
 * api_mcp_int.h — internal to the MCP tools (api_mcp_tools.c: the table, arguments,
 * sandboxes, files and contexts; api_mcp_run.c: run_code and exec). Nothing else
 * includes it. Loop thread only.
 */
#ifndef SANDBOXD_API_MCP_INT_H
#define SANDBOXD_API_MCP_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "api_mcp.h"
#include "sandbox.h"

/* One tools/call once its sandbox exists: args is the call's "arguments" (a reference
 * held by the job). Every tool answers it exactly once with mcp_job_done, which frees it. */
struct mcp_job {
    struct app *app;
    mcp_call *call;
    json_t *args;
    sandbox *sb; /* valid during the tool's first call only (it may be deleted later) */
};

/* Answer the job's call with a tool result (handed over) and free the job. */
void mcp_job_done(struct mcp_job *j, json_t *result);
/* A tool result of one text content; is_error makes it a tool error. */
json_t *mcp_text_result(bool is_error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The tools of api_mcp_run.c. */
void mcp_tool_run_code(struct mcp_job *j);
void mcp_tool_exec(struct mcp_job *j);
void mcp_tool_write_file(struct mcp_job *j);

#endif
