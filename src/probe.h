/*
 * probe.h — run a program once and take its output: for the questions the daemon asks at
 * start-up (node --version, the Python package inventory) without blocking its loop.
 * The program runs with uv_spawn (no shell), stdin and stderr closed, its stdout read into
 * a buffer of at most max bytes; done is called once, when it has exited.
 */
#ifndef SANDBOXD_PROBE_H
#define SANDBOXD_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* status and sig as uv's exit_cb has them; out (NUL-terminated, len bytes) is the output;
 * overflow: it wrote more than max bytes (out holds the first max). */
typedef void (*probe_done_cb)(int64_t status, int sig, const char *out, size_t len, bool overflow,
                              void *arg);

/* Start argv[0] (an absolute path) with argv and env (NULL: the daemon's). 0: done comes
 * later; else a uv error code (the program did not start; done is never called). */
int probe_run(uv_loop_t *loop, char **argv, char **env, size_t max, probe_done_cb done, void *arg);

#endif
