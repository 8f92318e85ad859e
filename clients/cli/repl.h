/*
 * repl.h — the input rule of the interactive REPL, exposed for unit tests.
 *
 * repl_needs_more() says whether a cell typed so far is unfinished: a bracket ( [ { still
 * open, a string that spans lines still open (Python triple quotes, JavaScript template
 * literals, a block comment), or a last line that ends with '\' or (Python) ':'.
 * Brackets inside strings and comments do not count. It only reads code[0..len).
 */
#ifndef SBX_CLI_REPL_H
#define SBX_CLI_REPL_H

#include <stdbool.h>
#include <stddef.h>

bool repl_needs_more(const char *code, size_t len, bool python);

#endif
