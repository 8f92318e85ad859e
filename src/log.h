/*
 * log.h — one-line log records to stderr: "2026-11-30T01:02:03.456Z level message".
 * Lines are written with a single write(2) so they never interleave with a child's.
 */
#ifndef SANDBOXD_LOG_H
#define SANDBOXD_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level l);
int log_parse_level(const char *s, enum log_level *out); /* 0 or -EINVAL */
void log_msg(enum log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
