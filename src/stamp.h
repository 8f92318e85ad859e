/*
 * stamp.h — wall-clock timestamps and random ids, as the API shows them: times are
 * ISO 8601 UTC with milliseconds ("2026-11-30T01:02:03.456Z"), ids are a prefix and 16
 * hex digits from getrandom(2) ("ctx-9f2c…"), unguessable so that one client cannot
 * address another's contexts or processes by counting. Once the daemon has set its
 * epoch (stamp_set_epoch: the state dir's generation, see state_lock.h), the first four
 * of those hex digits are the epoch and twelve are random (48 bits), so an id from an
 * earlier run of the daemon is recognisable after a restart.
 */
#ifndef SANDBOXD_STAMP_H
#define SANDBOXD_STAMP_H

#include <stddef.h>
#include <stdint.h>

uint64_t stamp_now_ms(void);                           /* Unix epoch, ms */
void stamp_iso8601(uint64_t ms, char *out, size_t n);  /* n >= 25 */
int stamp_id(char *out, size_t n, const char *prefix); /* 0 or -EIO */
void stamp_set_epoch(uint16_t epoch);
/* The epoch of an id made by stamp_id with this prefix (0 to 65535), or -1 when id does
 * not have that form. */
int stamp_id_epoch(const char *id, const char *prefix);

#endif
