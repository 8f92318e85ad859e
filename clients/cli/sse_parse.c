/*
 * sse_parse.c — incremental Server-Sent Events parsing (see sse_parse.h).
 *
 * Works line by line: bytes are appended to the current line until a terminator, then the
 * line is dispatched (blank: deliver the event; ':' comment; field:value). Memory is
 * bounded by the caps given at init; nothing here trusts the server to be well-behaved.
 */
#include "sse_parse.h"

#include <errno.h>
#include <string.h>

void ssep_init(ssep *p, size_t cap)
{
    memset(p, 0, sizeof(*p));
    buf_init(&p->line, cap);
    buf_init(&p->event, 256);
    buf_init(&p->data, cap);
}

void ssep_free(ssep *p)
{
    if (!p)
        return;
    buf_free(&p->line);
    buf_free(&p->event);
    buf_free(&p->data);
}

bool ssep_pending(const ssep *p)
{
    return p->has_data || p->line.len > 0;
}

/* Deliver the event gathered so far (if it has data) and start a new one. */
static int dispatch(ssep *p, ssep_cb cb, void *ud)
{
    int rc = 0;
    if (p->has_data)
        rc = cb(p->event.len ? p->event.data : "message", p->data.data ? p->data.data : "",
                p->data.len, ud);
    buf_reset(&p->event);
    buf_reset(&p->data);
    p->has_data = false;
    return rc;
}

/* One complete line, without its terminator. */
static int process_line(ssep *p, const char *line, size_t len, ssep_cb cb, void *ud)
{
    if (len == 0)
        return dispatch(p, cb, ud);
    if (line[0] == ':')
        return 0;
    const char *colon = memchr(line, ':', len);
    size_t nlen = colon ? (size_t)(colon - line) : len;
    const char *value = colon ? colon + 1 : line + len;
    size_t vlen = (size_t)(line + len - value);
    if (vlen > 0 && value[0] == ' ') {
        value++;
        vlen--;
    }
    int rc = 0;
    if (nlen == 5 && memcmp(line, "event", 5) == 0) {
        buf_reset(&p->event);
        rc = buf_append(&p->event, value, vlen);
    } else if (nlen == 4 && memcmp(line, "data", 4) == 0) {
        if (p->has_data)
            rc = buf_append(&p->data, "\n", 1);
        if (rc == 0)
            rc = buf_append(&p->data, value, vlen);
        p->has_data = true;
    }
    if (rc < 0)
        p->failed = rc;    /* only buffer errors reach here: the stream is unusable */
    return rc;
}

int ssep_feed(ssep *p, const char *bytes, size_t n, ssep_cb cb, void *ud)
{
    if (p->failed)
        return p->failed;
    size_t i = 0;
    if (p->last_cr && n > 0 && bytes[0] == '\n')
        i = 1;
    p->last_cr = false;
    while (i < n) {
        const char *start = bytes + i;
        size_t rest = n - i, k = 0;
        while (k < rest && start[k] != '\n' && start[k] != '\r')
            k++;
        if (k > 0) {
            int rc = buf_append(&p->line, start, k);
            if (rc < 0)
                return p->failed = rc;
        }
        i += k;
        if (i == n)
            break;               /* line continues in the next chunk */
        if (bytes[i] == '\r') {
            if (i + 1 < n && bytes[i + 1] == '\n')
                i++;
            else if (i + 1 == n)
                p->last_cr = true;
        }
        i++;
        int rc = process_line(p, p->line.data ? p->line.data : "", p->line.len, cb, ud);
        buf_reset(&p->line);
        if (rc != 0)
            return rc;
    }
    return 0;
}
