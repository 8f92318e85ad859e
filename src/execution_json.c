/*
 * execution_json.c — the JSON of executions (see execution.h): a summary, a context's queue
 * and the plain document of a finished run, built from the run's log (its output events
 * become logs.stdout / logs.stderr, its result events the results).
 */
#include "execution_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stamp.h"

/* "null" or the number. */
void exe__put_usage(buf *b, const execution *e)
{
    buf_puts(b, "{\"cpuMs\":");
    if (e->cpu_ms >= 0)
        buf_printf(b, "%.0f", e->cpu_ms);
    else
        buf_puts(b, "null");
    buf_puts(b, ",\"peakMemoryBytes\":");
    if (e->peak_memory >= 0)
        buf_printf(b, "%lld", (long long)e->peak_memory);
    else
        buf_puts(b, "null");
    buf_puts(b, "}");
}

static const char *const STATE_NAMES[] = { "queued", "running", "done" };

json_t *exe_summary_json(const execution *e)
{
    char q[32], st[32];
    stamp_iso8601(e->queued_ms, q, sizeof q);
    stamp_iso8601(e->started_ms, st, sizeof st);
    return json_pack("{s:s, s:s, s:O, s:s, s:s, s:s?}", "id", e->id, "contextId", e->cid, "code",
                     e->code, "state", STATE_NAMES[e->state], "queuedAt", q, "startedAt",
                     e->started_ms ? st : NULL);
}

int exe_queue_json(sandbox *sb, const char *cid, json_t **running, json_t **queued)
{
    struct exe_set *s = exe__set_of(sb, false);
    *running = NULL;
    *queued = json_array();
    if (!*queued)
        return -ENOMEM;
    for (execution *e = s ? s->head : NULL; e; e = e->lnext) {
        if (strcmp(e->cid, cid) != 0 || e->state == EXE_DONE)
            continue;
        if (e->state == EXE_RUNNING && !*running)
            *running = exe_summary_json(e);
        else
            json_array_append_new(*queued, exe_summary_json(e));
    }
    return 0;
}

/* The output events of one stream as a JSON array of strings, each stream cut (at an
 * event) at max bytes of output. */
static void put_stream(buf *b, const execution *e, const char *type, uint64_t max, bool *cut)
{
    size_t used = 0;
    bool first = true;
    buf_puts(b, "[");
    for (size_t i = 0; i < e->n; i++) {
        const struct ev *v = &e->evs[e->head + i];
        if (strcmp(v->type, type) != 0)
            continue;
        if (used + v->raw > max) {
            *cut = true;
            break;
        }
        used += v->raw;
        /* {"text":"…"}: the string literal is all but the first 8 and the last byte */
        if (!first)
            buf_puts(b, ",");
        buf_append(b, v->data + 8, v->len - 9);
        first = false;
    }
    buf_puts(b, "]");
}

int exe_document(const execution *e, uint64_t max_output_bytes, buf *b)
{
    if (e->state != EXE_DONE)
        return -EAGAIN;
    /* at most: the log's JSON, the error once more, the code escaped, the fields */
    buf_init(b, 2 * e->log_bytes + json_string_length(e->code) * 6 + 65536);
    buf_printf(b, "{\"id\":\"%s\",\"contextId\":\"%s\",\"code\":", e->id, e->cid);
    esc_json_quoted(b, json_string_value(e->code), json_string_length(e->code));
    buf_printf(b, ",\"state\":\"done\",\"executionCount\":%d,\"results\":[", e->exec_count);
    bool first = true;
    for (size_t i = 0; i < e->n; i++) {
        const struct ev *v = &e->evs[e->head + i];
        if (strcmp(v->type, "result") != 0)
            continue;
        if (!first)
            buf_puts(b, ",");
        buf_append(b, v->data, v->len);
        first = false;
    }
    bool cut = false;
    buf_puts(b, "],\"logs\":{\"stdout\":");
    put_stream(b, e, "stdout", max_output_bytes, &cut);
    buf_puts(b, ",\"stderr\":");
    put_stream(b, e, "stderr", max_output_bytes, &cut);
    buf_puts(b, "},\"error\":");
    char *err = e->error ? json_dumps(e->error, JSON_COMPACT) : NULL;
    buf_puts(b, err ? err : "null");
    free(err);
    buf_printf(b, ",\"statePreserved\":%s,\"truncated\":%s", e->state_preserved ? "true" : "false",
               cut || e->dropped_events ? "true" : "false");
    if (e->dropped_events)
        buf_printf(b, ",\"truncatedBy\":\"execution-log-bytes\",\"droppedEvents\":%llu",
                   (unsigned long long)e->dropped_events);
    else if (cut)
        buf_puts(b, ",\"truncatedBy\":\"max-output-bytes\"");
    buf_puts(b, ",\"usage\":");
    exe__put_usage(b, e);
    return buf_printf(b, ",\"durationMs\":%.3f}", e->duration_ms);
}
