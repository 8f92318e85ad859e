/*
 * lineedit.c — raw-mode line editing with history (see lineedit.h).
 *
 * The whole line is redrawn after every key (carriage return, prompt, text, clear to end,
 * then the cursor put back): simple and correct for lines narrower than the terminal.
 */
#include "lineedit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

void le_init(ledit *e)
{
    memset(e, 0, sizeof(*e));
    e->tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
}

void le_free(ledit *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nhist; i++)
        free(e->hist[i]);
    e->nhist = 0;
}

void le_history_add(ledit *e, const char *line)
{
    if (!*line || (e->nhist && strcmp(e->hist[e->nhist - 1], line) == 0))
        return;
    char *copy = strdup(line);
    if (!copy)
        return;
    if (e->nhist == LE_HIST_MAX) {
        free(e->hist[0]);
        memmove(e->hist, e->hist + 1, (LE_HIST_MAX - 1) * sizeof(e->hist[0]));
        e->nhist--;
    }
    e->hist[e->nhist++] = copy;
}

/* Plain read for pipes and files. */
static int read_plain(const char *prompt, buf *out)
{
    if (isatty(STDIN_FILENO)) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    int ch;
    bool any = false;
    while ((ch = getchar()) != EOF) {
        any = true;
        if (ch == '\n')
            return 0;
        char c = (char)ch;
        if (out->len < LE_LINE_MAX)
            buf_append(out, &c, 1);
    }
    if (ferror(stdin) && errno == EINTR) {
        clearerr(stdin);
        return -EINTR;
    }
    return any ? 0 : 1;
}

typedef struct line {
    char text[LE_LINE_MAX + 1];
    size_t len, pos;
} line;

static void write_all(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void refresh(const char *prompt, const line *l)
{
    buf b;
    buf_init(&b, LE_LINE_MAX + 256);
    buf_puts(&b, "\r");
    buf_puts(&b, prompt);
    buf_append(&b, l->text, l->len);
    buf_puts(&b, "\x1b[0K\r");
    size_t col = strlen(prompt) + l->pos;
    if (col > 0)
        buf_printf(&b, "\x1b[%zuC", col);
    if (b.data)
        write_all(b.data, b.len);
    buf_free(&b);
}

static void set_text(line *l, const char *s)
{
    size_t n = strlen(s);
    if (n > LE_LINE_MAX)
        n = LE_LINE_MAX;
    memcpy(l->text, s, n);
    l->len = l->pos = n;
}

/* The editing loop proper; the terminal is already raw. */
static int edit(ledit *e, const char *prompt, line *l, char *saved)
{
    size_t hidx = e->nhist;
    refresh(prompt, l);
    for (;;) {
        char c;
        ssize_t r = read(STDIN_FILENO, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return l->len ? 0 : 1;
        switch (c) {
        case '\r':
        case '\n':
            write_all("\r\n", 2);
            return 0;
        case 3:   /* Ctrl-C */
            write_all("^C\r\n", 4);
            return -EINTR;
        case 4:   /* Ctrl-D: end of input on an empty line, else delete */
            if (l->len == 0) {
                write_all("\r\n", 2);
                return 1;
            }
            if (l->pos < l->len) {
                memmove(l->text + l->pos, l->text + l->pos + 1, l->len - l->pos - 1);
                l->len--;
            }
            break;
        case 127:
        case 8:
            if (l->pos > 0) {
                memmove(l->text + l->pos - 1, l->text + l->pos, l->len - l->pos);
                l->pos--;
                l->len--;
            }
            break;
        case 1: l->pos = 0; break;
        case 5: l->pos = l->len; break;
        case 11: l->len = l->pos; break;
        case 21:
            memmove(l->text, l->text + l->pos, l->len - l->pos);
            l->len -= l->pos;
            l->pos = 0;
            break;
        case 12: write_all("\x1b[H\x1b[2J", 7); break;
        case 27: {
            char seq[3] = { 0 };
            if (read(STDIN_FILENO, &seq[0], 1) != 1 || read(STDIN_FILENO, &seq[1], 1) != 1)
                break;
            if (seq[0] != '[' && seq[0] != 'O')
                break;
            if (seq[1] >= '0' && seq[1] <= '9') {
                if (read(STDIN_FILENO, &seq[2], 1) != 1)
                    break;
                if (seq[1] == '3' && seq[2] == '~' && l->pos < l->len) {
                    memmove(l->text + l->pos, l->text + l->pos + 1, l->len - l->pos - 1);
                    l->len--;
                }
                break;
            }
            switch (seq[1]) {
            case 'A':   /* up: older history; the line being edited is kept in saved */
                if (hidx > 0) {
                    if (hidx == e->nhist) {
                        memcpy(saved, l->text, l->len);
                        saved[l->len] = '\0';
                    }
                    set_text(l, e->hist[--hidx]);
                }
                break;
            case 'B':
                if (hidx < e->nhist) {
                    hidx++;
                    set_text(l, hidx == e->nhist ? saved : e->hist[hidx]);
                }
                break;
            case 'C': if (l->pos < l->len) l->pos++; break;
            case 'D': if (l->pos > 0) l->pos--; break;
            case 'H': l->pos = 0; break;
            case 'F': l->pos = l->len; break;
            default: break;
            }
            break;
        }
        default:
            if ((unsigned char)c >= 32 || c == '\t') {
                if (l->len < LE_LINE_MAX) {
                    memmove(l->text + l->pos + 1, l->text + l->pos, l->len - l->pos);
                    l->text[l->pos++] = c;
                    l->len++;
                }
            }
            break;
        }
        refresh(prompt, l);
    }
}

int le_read(ledit *e, const char *prompt, buf *out)
{
    buf_reset(out);
    if (!e->tty)
        return read_plain(prompt, out);
    struct termios orig, raw;
    if (tcgetattr(STDIN_FILENO, &orig) != 0)
        return read_plain(prompt, out);
    raw = orig;
    raw.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0)
        return read_plain(prompt, out);
    line *l = calloc(1, sizeof(*l));
    char *saved = calloc(1, LE_LINE_MAX + 1);
    int rc = -ENOMEM;
    if (l && saved) {
        rc = edit(e, prompt, l, saved);
        if (rc == 0 && buf_append(out, l->text, l->len) != 0)
            rc = -ENOMEM;
    }
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &orig);
    free(l);
    free(saved);
    return rc;
}
