/*
 * exec.h — POST /v1/sandboxes/{sid}/exec: run one shell command in a sandbox.
 *
 * The command runs as `/bin/sh -c COMMAND` through jail_spawn (the sandbox user, no
 * capabilities, seccomp, its own session and process group). Its stdout and stderr are
 * pipes read by the daemon:
 *   - plain JSON: each stream is kept up to --max-output-bytes; the rest is read and
 *     dropped, and the response says "truncated": true;
 *   - SSE (Accept: text/event-stream): `stdout`/`stderr` events as the command writes,
 *     under back-pressure (a slow client pauses the reading, so the command blocks on
 *     its own writes; nothing is dropped), then `exit`.
 * On timeout the whole process group gets SIGCONT + SIGKILL and "timedOut" is true. A
 * client that goes away mid-command ends the command the same way. The response comes
 * once the command has exited and its pipes are drained (orphans that keep the pipes
 * open get a short grace, then are ignored).
 */
#ifndef SANDBOXD_EXEC_H
#define SANDBOXD_EXEC_H

#include "api.h"

/* Shared by exec, processes and contexts: "exitCode" for a wait status (128+signal when
 * killed, as shells report it) and the signal's name, or NULL. */
int exec_exit_code(int status, const char **signame);

#endif
