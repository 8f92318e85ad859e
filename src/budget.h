/*
 * budget.h — one byte budget per sandbox for everything the daemon holds on its behalf.
 *
 * A sandbox's memory cgroup bounds what its own processes use, but not what the daemon
 * buffers for it: channel lines and results of its contexts, captured command output,
 * background-process log rings, responses waiting in a slow client's socket queue. Each of
 * those charges the sandbox's budget with the bytes it actually holds (allocation sizes,
 * after JSON escaping) before it holds them, and releases them when it frees them, so the
 * daemon's memory on a sandbox's behalf never exceeds --sandbox-buffer-bytes, however many
 * contexts, commands or streams the sandbox runs at once.
 *
 * What happens when a charge is refused is the caller's documented outcome (see
 * docs/configuration.md): streamed output stops reading the sandbox's pipes until bytes
 * are released (the sandbox blocks on its own writes; a waiter is woken then), a plain
 * capture is cut and says why, a channel message fails its run. Nothing is dropped
 * silently; every refusal is counted.
 *
 * A budget is reference counted: the sandbox holds one reference and every holder of
 * charged bytes that can outlive the sandbox (a command whose response is still being
 * written, a stream queued to a slow client) holds its own. A NULL budget is unlimited:
 * every call accepts NULL, so code and tests without a sandbox work unchanged.
 * Single-threaded: the daemon's event loop is the only user.
 */
#ifndef SANDBOXD_BUDGET_H
#define SANDBOXD_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct budget budget;

/* Woken by budget_release once at least `need` bytes are free again. */
typedef struct budget_waiter {
    struct budget_waiter *next; /* private to budget.c */
    bool queued;                /* private to budget.c */
    unsigned pass;              /* private to budget.c */
    size_t need;
    void (*cb)(struct budget_waiter *w);
    void *arg;
} budget_waiter;

/* A budget of cap bytes with one reference; NULL when out of memory. */
budget *budget_new(uint64_t cap);
budget *budget_ref(budget *b); /* returns b */
void budget_unref(budget *b);  /* frees at the last reference; queued waiters are dropped */

/* Charge n bytes about to be held: 0, or -ENOBUFS (nothing charged, refusal counted)
 * when fewer than n bytes are left. */
int budget_charge(budget *b, size_t n);
/* Charge n bytes that are held already and cannot be refused (may go past the cap). */
void budget_force(budget *b, size_t n);
/* Give back n charged bytes; wakes the waiters whose need now fits, oldest first. */
void budget_release(budget *b, size_t n);

uint64_t budget_used(const budget *b);
uint64_t budget_cap(const budget *b);
uint64_t budget_room(const budget *b);     /* cap - used, 0 when at or past the cap */
uint64_t budget_peak(const budget *b);     /* the most ever used */
uint64_t budget_refusals(const budget *b); /* refused charges, and waits for room */

/* Queue w until w->need bytes are free (w->cb runs from budget_release); a waiter already
 * queued is left where it is. budget_cancel takes it off (no-op when not queued). */
void budget_wait(budget *b, budget_waiter *w);
void budget_cancel(budget *b, budget_waiter *w);

/* Across every live budget (for /metrics). */
uint64_t budget_total_used(void);
uint64_t budget_total_refusals(void);

#endif
