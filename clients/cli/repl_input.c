/*
 * repl_input.c — when is a REPL cell complete? (see repl.h)
 *
 * A small scanner over the cell: it tracks string and comment state well enough for a
 * prompt's purposes (not a parser: a stray quote in odd code may ask for one more line,
 * and an empty line always runs what is there once the user is continuing).
 */
#include "repl.h"

bool repl_needs_more(const char *s, size_t n, bool python)
{
    long depth = 0;
    char quote = 0;          /* ' " ` or 0 */
    bool triple = false;     /* a Python triple-quoted string */
    bool block = false;      /* a JavaScript block comment */
    char last = 0;           /* the last non-blank character outside comments */
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!block && c != ' ' && c != '\t' && c != '\n' && c != '\r')
            last = c;        /* a comment's '#' or '/' stands in for the whole comment */
        if (block) {
            if (c == '*' && i + 1 < n && s[i + 1] == '/') {
                block = false;
                i++;
            }
            continue;
        }
        if (quote) {
            if (c == '\\') {
                i++;
            } else if (triple) {
                if (c == quote && i + 2 < n && s[i + 1] == quote && s[i + 2] == quote) {
                    quote = 0;
                    triple = false;
                    i += 2;
                }
            } else if (c == quote) {
                quote = 0;
            } else if (c == '\n' && quote != '`') {
                quote = 0;   /* an unterminated one-line string: the interpreter will say */
            }
            continue;
        }
        if (python && c == '#') {
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (!python && c == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (!python && c == '/' && i + 1 < n && s[i + 1] == '*') {
            block = true;
            i++;
            continue;
        }
        if (c == '\'' || c == '"' || (!python && c == '`')) {
            quote = c;
            if (python && i + 2 < n && s[i + 1] == c && s[i + 2] == c) {
                triple = true;
                i += 2;
            }
            continue;
        }
        if (c == '(' || c == '[' || c == '{')
            depth++;
        else if ((c == ')' || c == ']' || c == '}') && depth > 0)
            depth--;
    }
    if (depth > 0 || block || triple || quote == '`')
        return true;
    return last == '\\' || (python && last == ':');
}
