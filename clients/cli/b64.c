/*
 * b64.c — base64 decoder (see b64.h). Table-free: the alphabet is mapped arithmetically.
 */
#include "b64.h"

#include <errno.h>

static int value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

int b64_decode(const char *in, size_t n, unsigned char *out, size_t *outlen)
{
    unsigned acc = 0;
    int bits = 0;
    size_t o = 0;
    int pad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = value(c);
        if (v < 0 || pad)
            return -EINVAL;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (pad > 2)
        return -EINVAL;
    *outlen = o;
    return 0;
}
