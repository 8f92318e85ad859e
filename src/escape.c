/*
 * escape.c — UTF-8-validating JSON string escaper (see escape.h). Runs of plain ASCII are
 * copied in one append; only bytes that need escaping or validation take the slow path.
 */
#include "escape.h"

#include <string.h>

enum { STEP_INVALID = 0, STEP_VALID = 1, STEP_INCOMPLETE = -1 };

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD in UTF-8 */

/* Decode one sequence at s (n > 0 bytes available). Sets *used to the bytes of a valid
 * sequence, of the maximal ill-formed subpart, or of the incomplete prefix. */
static int utf8_step(const unsigned char *s, size_t n, size_t *used)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;

    if (c < 0x80) {
        *used = 1;
        return STEP_VALID;
    }
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else if (c == 0xE0)
        need = 2, lo = 0xA0; /* no overlong 3-byte forms */
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
        need = 2;
    else if (c == 0xED)
        need = 2, hi = 0x9F; /* no UTF-16 surrogates */
    else if (c == 0xF0)
        need = 3, lo = 0x90; /* no overlong 4-byte forms */
    else if (c >= 0xF1 && c <= 0xF3)
        need = 3;
    else if (c == 0xF4)
        need = 3, hi = 0x8F; /* nothing above U+10FFFF */
    else {
        *used = 1;
        return STEP_INVALID;
    }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n) {
            *used = i;
            return STEP_INCOMPLETE;
        }
        if (s[i] < lo || s[i] > hi) {
            *used = i;
            return STEP_INVALID;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    *used = need + 1;
    return STEP_VALID;
}

static int esc_ascii(buf *out, unsigned char c)
{
    switch (c) {
    case '"': return buf_append(out, "\\\"", 2);
    case '\\': return buf_append(out, "\\\\", 2);
    case '\n': return buf_append(out, "\\n", 2);
    case '\r': return buf_append(out, "\\r", 2);
    case '\t': return buf_append(out, "\\t", 2);
    case '\b': return buf_append(out, "\\b", 2);
    case '\f': return buf_append(out, "\\f", 2);
    default:
        if (c < 0x20 || c == 0x7f)
            return buf_printf(out, "\\u%04x", c);
        return buf_append(out, &c, 1);
    }
}

static bool is_plain(unsigned char c, bool json)
{
    if (!json)
        return c < 0x80;
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* Escape one decoded step: valid sequences are copied, invalid ones replaced. */
static int emit_step(buf *out, const unsigned char *s, size_t used, int st, bool json)
{
    if (st != STEP_VALID)
        return buf_append(out, REPLACEMENT, 3);
    if (used == 1 && json)
        return esc_ascii(out, s[0]);
    return buf_append(out, s, used);
}

/* The one decoder loop behind esc_json (json = true) and esc_utf8 (json = false). */
static int esc_any(buf *out, esc_carry *carry, const void *data, size_t n, bool final, bool json)
{
    const unsigned char *s = data;
    size_t i = 0, used;
    int rc, st;

    /* Finish the sequence the previous chunk left open. */
    while (carry && carry->npend) {
        unsigned char tmp[8];
        size_t take = n < 4 ? n : 4;
        memcpy(tmp, carry->pend, carry->npend);
        memcpy(tmp + carry->npend, s, take);
        st = utf8_step(tmp, carry->npend + take, &used);
        if (st == STEP_INCOMPLETE) {
            if (!final) {
                memcpy(carry->pend + carry->npend, s, take);
                carry->npend += (unsigned)take;
                return 0;
            }
            carry->npend = 0;
            return buf_append(out, REPLACEMENT, 3);
        }
        if ((rc = emit_step(out, tmp, used, st, json)))
            return rc;
        /* The pending prefix was well-formed so far, so used >= npend. */
        i = used - carry->npend;
        carry->npend = 0;
    }

    while (i < n) {
        size_t j = i;
        while (j < n && is_plain(s[j], json))
            j++;
        if (j > i && (rc = buf_append(out, s + i, j - i)))
            return rc;
        if (j >= n)
            break;
        i = j;
        st = utf8_step(s + i, n - i, &used);
        if (st == STEP_INCOMPLETE && !final && carry) {
            memcpy(carry->pend, s + i, used);
            carry->npend = (unsigned)used;
            return 0;
        }
        if ((rc = emit_step(out, s + i, used, st, json)))
            return rc;
        i += used;
    }
    return 0;
}

int esc_json(buf *out, esc_carry *carry, const void *data, size_t n, bool final)
{
    return esc_any(out, carry, data, n, final, true);
}

int esc_utf8(buf *out, esc_carry *carry, const void *data, size_t n, bool final)
{
    return esc_any(out, carry, data, n, final, false);
}

int esc_json_quoted(buf *out, const void *data, size_t n)
{
    int rc = buf_append(out, "\"", 1);
    if (!rc)
        rc = esc_json(out, NULL, data, n, true);
    if (!rc)
        rc = buf_append(out, "\"", 1);
    return rc;
}
