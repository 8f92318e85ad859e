/*
 * metrics.c — see metrics.h. Routes are the router's static pattern strings, compared by
 * pointer first and by content after, so a lookup is a short scan of a small table.
 */
#include "metrics.h"

#include <assert.h>
#include <string.h>

#define MAX_SERIES 256
#define MAX_GAUGES 16

struct series {
    const char *route;
    const char *method;
    int status;
    uint64_t count;
    uint64_t duration_ns;
};

static struct series series[MAX_SERIES];
static unsigned nseries;
static uint64_t overflow_count;
static uint64_t bytes_in, bytes_out, conns_open, conns_total;

struct gauge {
    const char *name, *help;
    uint64_t (*read)(void);
};
static struct gauge gauges[MAX_GAUGES];
static unsigned ngauges;

void metrics_request(const char *route, const char *method, int status, uint64_t duration_ns)
{
    if (!route)
        route = "unmatched";
    for (unsigned i = 0; i < nseries; i++) {
        struct series *s = &series[i];
        if (s->status == status && (s->route == route || strcmp(s->route, route) == 0) &&
            (s->method == method || strcmp(s->method, method) == 0)) {
            s->count++;
            s->duration_ns += duration_ns;
            return;
        }
    }
    if (nseries == MAX_SERIES) {
        overflow_count++;
        return;
    }
    series[nseries++] = (struct series){ route, method, status, 1, duration_ns };
}

void metrics_bytes_in(uint64_t n)
{
    bytes_in += n;
}

void metrics_bytes_out(uint64_t n)
{
    bytes_out += n;
}

void metrics_connection(int delta)
{
    if (delta > 0)
        conns_total++;
    conns_open += (uint64_t)(int64_t)delta;
}

void metrics_gauge(const char *name, const char *help, uint64_t (*read)(void))
{
    assert(ngauges < MAX_GAUGES); /* a fixed set, registered at start-up: raise MAX_GAUGES */
    if (ngauges < MAX_GAUGES)
        gauges[ngauges++] = (struct gauge){ name, help, read };
}

int metrics_render(buf *o)
{
    int rc = 0;
    rc |= buf_puts(
        o, "# HELP sandboxd_http_requests_total HTTP requests by route, method and status.\n"
           "# TYPE sandboxd_http_requests_total counter\n");
    for (unsigned i = 0; i < nseries; i++)
        rc |= buf_printf(
            o, "sandboxd_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} %llu\n",
            series[i].route, series[i].method, series[i].status,
            (unsigned long long)series[i].count);
    rc |= buf_printf(
        o, "sandboxd_http_requests_total{route=\"other\",method=\"other\",status=\"0\"} %llu\n",
        (unsigned long long)overflow_count);
    rc |= buf_puts(o, "# HELP sandboxd_http_request_duration_seconds_sum Time spent answering, by "
                      "route, method and status.\n"
                      "# TYPE sandboxd_http_request_duration_seconds_sum counter\n");
    for (unsigned i = 0; i < nseries; i++)
        rc |= buf_printf(o,
                         "sandboxd_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\","
                         "status=\"%d\"} %.6f\n",
                         series[i].route, series[i].method, series[i].status,
                         (double)series[i].duration_ns / 1e9);
    rc |= buf_printf(o,
                     "# HELP sandboxd_http_connections_open Client connections open now.\n"
                     "# TYPE sandboxd_http_connections_open gauge\n"
                     "sandboxd_http_connections_open %llu\n"
                     "# HELP sandboxd_http_connections_total Client connections accepted.\n"
                     "# TYPE sandboxd_http_connections_total counter\n"
                     "sandboxd_http_connections_total %llu\n"
                     "# HELP sandboxd_http_received_bytes_total Bytes read from clients.\n"
                     "# TYPE sandboxd_http_received_bytes_total counter\n"
                     "sandboxd_http_received_bytes_total %llu\n"
                     "# HELP sandboxd_http_sent_bytes_total Bytes written to clients.\n"
                     "# TYPE sandboxd_http_sent_bytes_total counter\n"
                     "sandboxd_http_sent_bytes_total %llu\n",
                     (unsigned long long)conns_open, (unsigned long long)conns_total,
                     (unsigned long long)bytes_in, (unsigned long long)bytes_out);
    for (unsigned i = 0; i < ngauges; i++)
        rc |= buf_printf(o, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", gauges[i].name,
                         gauges[i].help, gauges[i].name, gauges[i].name,
                         (unsigned long long)gauges[i].read());
    return rc ? -1 : 0;
}
