/*
 * metrics.h — counters for GET /metrics (Prometheus text format 0.0.4): requests by
 * route and status, request duration sum, open connections, bytes in and out, and
 * gauges other modules register (sandboxes, contexts). Fixed-size tables: a route or
 * status beyond them is counted under "other", so a hostile client cannot grow memory.
 */
#ifndef SANDBOXD_METRICS_H
#define SANDBOXD_METRICS_H

#include <stdint.h>

#include "buf.h"

void metrics_request(const char *route, const char *method, int status, uint64_t duration_ns);
void metrics_bytes_in(uint64_t n);
void metrics_bytes_out(uint64_t n);
void metrics_connection(int delta); /* +1 opened, -1 closed */

/* A gauge read when /metrics is rendered. name must be a static string. */
void metrics_gauge(const char *name, const char *help, uint64_t (*read)(void));

int metrics_render(buf *out);

#endif
