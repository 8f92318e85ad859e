/*
 * b64.h — base64 decoding (RFC 4648, standard alphabet) for image results.
 *
 * Whitespace (the API never sends any, but files may) is skipped; padding is optional;
 * any other byte outside the alphabet is an error. The output never exceeds b64_max().
 */
#ifndef SBX_CLI_B64_H
#define SBX_CLI_B64_H

#include <stddef.h>

static inline size_t b64_max(size_t n) { return n / 4 * 3 + 3; }
/* Decodes in[0..n) into out (at least b64_max(n) bytes); *outlen = bytes written.
 * 0 or -EINVAL. */
int b64_decode(const char *in, size_t n, unsigned char *out, size_t *outlen);

#endif
