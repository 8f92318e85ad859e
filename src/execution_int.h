/*
 * execution_int.h — what the files of executions share (execution.c: lifetime, the sink,
 * the log, followers; execution_json.c: the JSON a client reads); nothing else includes it.
 * See execution.h for the contract and execution.c for the data structures.
 */
#ifndef SANDBOXD_EXECUTION_INT_H
#define SANDBOXD_EXECUTION_INT_H

#include "budget.h"
#include "buf.h"
#include "escape.h"
#include "execution.h"

struct ev {
    const char *type; /* static */
    char *data;       /* one line of JSON */
    size_t len;
    size_t raw; /* output bytes carried (stdout/stderr), for max-output-bytes */
};

struct exe_follower {
    execution *e;
    bool events;
    bool paused;
    bool loose;    /* exe_follower_loose: does not hold the run */
    uint64_t next; /* id of the next event to send */
    const struct exe_follower_ops *ops;
    void *arg;
    struct exe_follower *fnext;
};

struct execution {
    char id[40], cid[40];
    sandbox *sb;         /* NULL once no longer listed */
    struct ctx_run *run; /* until the sink's end */
    enum exe_state state;
    json_t *code;
    uint64_t queued_ms, started_ms;
    budget *bg;
    size_t held; /* the request's bytes, then the code's */
    struct ev *evs;
    size_t head, n, alloc;
    uint64_t first_id, next_id;
    size_t log_bytes;
    uint64_t dropped_events;
    bool reading_paused, failing;
    budget_waiter bw;
    esc_carry c_out, c_err;
    /* the end */
    json_t *error;
    int exec_count;
    double duration_ms, cpu_ms;
    int64_t peak_memory;
    bool state_preserved;
    /* followers, and who holds the execution */
    exe_follower *followers;
    unsigned nfollow, nstream, nloose, refs;
    uv_timer_t timer;
    struct execution *lnext;
};

struct exe_set {
    execution *head, *tail;
    unsigned n;
};

/* The sandbox's set of executions (made when make and there is none; NULL when out of
 * memory or none). */
struct exe_set *exe__set_of(sandbox *sb, bool make);
/* {"cpuMs","peakMemoryBytes"} of a finished run into b ("null" for what is unknown). */
void exe__put_usage(buf *b, const execution *e);

#endif
