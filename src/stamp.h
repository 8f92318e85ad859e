/*
 * stamp.h — wall-clock timestamps and random ids, as the API shows them: times are
 * ISO 8601 UTC with milliseconds ("2026-11-30T01:02:03.456Z"), ids are a prefix and 16
 * hex digits from getrandom(2) ("ctx-9f2c…"), unguessable so that one client cannot
 * address another's contexts or processes by counting.
 */
#ifndef SANDBOXD_STAMP_H
#define SANDBOXD_STAMP_H

#include <stddef.h>
#include <stdint.h>

uint64_t stamp_now_ms(void);                           /* Unix epoch, ms */
void stamp_iso8601(uint64_t ms, char *out, size_t n);  /* n >= 25 */
int stamp_id(char *out, size_t n, const char *prefix); /* 0 or -EIO */

#endif
