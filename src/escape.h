/*
 * escape.h — JSON string escaping for bytes that come from a sandbox.
 *
 * Output of user code is arbitrary bytes. These functions turn it into the contents of a
 * JSON string that is always valid UTF-8: every ill-formed sequence becomes U+FFFD (one per
 * maximal subpart, as the Unicode standard and WHATWG decoders do), control characters are
 * escaped, and a sequence split across two chunks of a stream is carried over, not broken.
 */
#ifndef SANDBOXD_ESCAPE_H
#define SANDBOXD_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* The bytes of an incomplete UTF-8 sequence left at the end of the previous chunk. */
typedef struct esc_carry {
    unsigned char pend[4];
    unsigned npend;
} esc_carry;

/* Append the escaped form of data (no surrounding quotes) to out. With final, a sequence
 * still incomplete at the end becomes U+FFFD; otherwise it waits in carry for the next
 * chunk. carry may be NULL when data is a whole string. Returns 0 or buf's error. */
int esc_json(buf *out, esc_carry *carry, const void *data, size_t n, bool final);

/* Append data as valid UTF-8 without JSON escaping: ill-formed sequences become U+FFFD,
 * everything else is copied (for strings handed to jansson, which requires UTF-8). */
int esc_utf8(buf *out, esc_carry *carry, const void *data, size_t n, bool final);

/* Append "..." — a whole JSON string literal of data. */
int esc_json_quoted(buf *out, const void *data, size_t n);

#endif
