/*
 * lineedit.h — a small line editor for the REPL, without readline.
 *
 * On a terminal: raw mode while a line is read, left/right/home/end, backspace/delete,
 * Ctrl-A/E/K/U/L, and up/down through an in-memory history (LE_HIST_MAX lines, the
 * oldest dropped first). Otherwise (a pipe, a file) it reads plain lines. Lines are capped
 * at LE_LINE_MAX bytes; longer input is cut there. The terminal mode is restored before
 * le_read() returns, whatever happens. Cursor movement counts bytes, so a line with
 * multi-byte UTF-8 text may show the cursor off by a few columns (the text is intact).
 */
#ifndef SBX_CLI_LINEEDIT_H
#define SBX_CLI_LINEEDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define LE_HIST_MAX 500
#define LE_LINE_MAX 65536

typedef struct ledit {
    char *hist[LE_HIST_MAX];   /* oldest first; owned */
    size_t nhist;
    bool tty;
} ledit;

void le_init(ledit *e);
void le_free(ledit *e);
/* Reads one line (no trailing newline) into out (reset first).
 * 0 a line; 1 end of input (Ctrl-D on an empty line); -EINTR Ctrl-C; -EIO read error. */
int le_read(ledit *e, const char *prompt, buf *out);
/* Appends a line to the history (not when empty or equal to the last one). */
void le_history_add(ledit *e, const char *line);

#endif
