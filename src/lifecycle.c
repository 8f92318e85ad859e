/*
 * lifecycle.c — see lifecycle.h. Each sandbox gets one struct life (s->life): a timer for
 * its deadlines (idle, maximum age) and a timer that polls a freeze under way, both
 * closed by the destroy hook; the struct is freed in the last close callback.
 *
 * The idle timer sleeps until the earliest deadline. When it wakes and the sandbox is
 * busy (code, a command or a context start running), that is activity: it then looks
 * again every BUSY_POLL_MS while the work lasts, so the idle time is counted from about
 * when the work ended, not from when it was first seen. A freeze is polled every
 * FREEZE_POLL_MIN_MS FREEZE_POLL_FAST times, then doubling to FREEZE_POLL_MAX_MS, within
 * --sandbox-suspend-timeout-ms;
 * one that does not complete by then is undone (thawed) and reported.
 */
#include "lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "stamp.h"

#define BUSY_POLL_MS 1000     /* while busy at its idle deadline: look again this often */
#define FREEZE_POLL_MIN_MS 1  /* first poll of a freeze under way */
#define FREEZE_POLL_FAST 20   /* polls at the first wait before they double */
#define FREEZE_POLL_MAX_MS 50 /* polls double up to this */
#define FREEZE_KICK_POLLS 10  /* slow polls between a thaw-and-freeze of a stuck freeze */
#define DEFER_MIN_MS 250      /* a deferred run timeout sleeps at least this while frozen */

static uv_loop_t *loop;
static const struct config *cfg;
static bool (*busy)(sandbox *s); /* something runs in s (life_init) */

/* Who waits for a suspension to complete. */
struct waiter {
    struct waiter *next;
    life_suspended_cb cb;
    void *arg;
};

struct life {
    sandbox *s;           /* NULL once the sandbox is being destroyed */
    uv_timer_t timer;     /* idle and max-age deadlines */
    uv_timer_t poll;      /* a freeze under way */
    int handles;          /* open timers; freed at 0 */
    uint64_t active;      /* uv_now() of the last activity */
    uint64_t frozen_at;   /* uv_now() when the current suspension began */
    uint64_t frozen_ms;   /* ms of the suspensions that ended */
    uint64_t poll_ms;     /* the next poll's wait */
    unsigned polls;       /* polls of the freeze under way */
    bool freezing;        /* suspended, not frozen yet */
    bool watching_busy;   /* its idle deadline found it busy: polled until it is not */
    struct waiter *waits; /* of the freeze under way */
};

static void on_timer(uv_timer_t *t);

/* Sleep until the earliest deadline: maximum age (from createdAt, wall clock), idle
 * (from the last activity, monotonic; not while suspended). */
static void arm(struct life *l)
{
    const sandbox *s = l->s;
    uint64_t wait = UINT64_MAX;
    if (s->lifecycle.max_age_ms) {
        uint64_t end = s->created_ms + s->lifecycle.max_age_ms, now = stamp_now_ms();
        wait = end > now ? end - now : 0;
    }
    if (s->lifecycle.idle_timeout_ms && !s->suspended) {
        uint64_t end = l->active + s->lifecycle.idle_timeout_ms, now = uv_now(loop);
        uint64_t w = end > now ? end - now : 0;
        wait = w < wait ? w : wait;
    }
    if (wait == UINT64_MAX)
        uv_timer_stop(&l->timer);
    else
        uv_timer_start(&l->timer, on_timer, wait, 0);
}

static void touch(struct life *l)
{
    l->active = uv_now(loop);
    l->s->last_activity_ms = stamp_now_ms();
}

/* The idle deadline passed with nothing running: suspend or delete. */
static void went_idle(struct life *l)
{
    sandbox *s = l->s;
    if (s->lifecycle.on_idle == SBX_IDLE_DELETE) {
        log_info("sandbox %s: idle for %llu ms (idleTimeoutMs): deleting it", s->id,
                 (unsigned long long)s->lifecycle.idle_timeout_ms);
        sbx_destroy(s, NULL, NULL);
        return;
    }
    log_info("sandbox %s: idle for %llu ms (idleTimeoutMs): suspending it", s->id,
             (unsigned long long)s->lifecycle.idle_timeout_ms);
    int rc = life_suspend(s, NULL, NULL);
    if (rc)
        log_warn("sandbox %s: cannot suspend it when idle: %s", s->id, strerror(-rc));
    if (rc)
        touch(l); /* try again one idle timeout later, not at once */
    arm(l);
}

static void on_timer(uv_timer_t *t)
{
    struct life *l = t->data;
    sandbox *s = l->s;
    if (!s)
        return;
    const struct sbx_lifecycle *lc = &s->lifecycle;
    if (lc->max_age_ms && stamp_now_ms() >= s->created_ms + lc->max_age_ms) {
        log_info("sandbox %s: older than %llu ms (maxAgeMs): deleting it", s->id,
                 (unsigned long long)lc->max_age_ms);
        sbx_destroy(s, NULL, NULL);
        return;
    }
    if (lc->idle_timeout_ms && !s->suspended &&
        (l->watching_busy || uv_now(loop) >= l->active + lc->idle_timeout_ms)) {
        if (busy && busy(s)) {
            touch(l);
            l->watching_busy = true;
            uint64_t w = lc->idle_timeout_ms < BUSY_POLL_MS ? lc->idle_timeout_ms : BUSY_POLL_MS;
            uv_timer_start(&l->timer, on_timer, w, 0);
            return;
        }
        if (l->watching_busy) {
            l->watching_busy = false; /* the work just ended: idle from now */
            touch(l);
        } else {
            went_idle(l);
            return;
        }
    }
    arm(l);
}

/* Tell every waiter of the freeze under way. Callbacks may call back in (resume, delete). */
static void answer(struct life *l, int rc, const char *msg)
{
    while (l->waits) {
        struct waiter *w = l->waits;
        l->waits = w->next;
        w->cb(l->s, rc, msg, w->arg);
        free(w);
    }
}

/* The end of a suspension: thaw, account its time. A thaw that failed leaves it marked
 * suspended (its processes may still be frozen). */
static int thaw(struct life *l)
{
    sandbox *s = l->s;
    int rc = jail_thaw(s->jail);
    if (rc)
        return rc;
    l->frozen_ms += uv_now(loop) - l->frozen_at;
    s->suspended = false;
    uv_timer_stop(&l->poll);
    return rc;
}

static void on_poll(uv_timer_t *t)
{
    struct life *l = t->data;
    if (!l->s || !l->freezing)
        return;
    int rc = jail_frozen(l->s->jail);
    if (rc == 1) {
        l->freezing = false;
        log_info("sandbox %s suspended in %llu ms", l->s->id,
                 (unsigned long long)(uv_now(loop) - l->frozen_at));
        arm(l);
        answer(l, 0, NULL);
        return;
    }
    uint64_t waited = uv_now(loop) - l->frozen_at;
    if (rc == 0 && waited < cfg->sandbox_suspend_timeout_ms) {
        uv_timer_start(&l->poll, on_poll, l->poll_ms, 0);
        if (++l->polls > FREEZE_POLL_FAST) /* most freezes take a few ms: then back off */
            l->poll_ms = l->poll_ms * 2 > FREEZE_POLL_MAX_MS ? FREEZE_POLL_MAX_MS : l->poll_ms * 2;
        /* slow: a task may have been missed half-way (a fork, an exec under way); ask the
         * freezer again, and every FREEZE_KICK_POLLS slow polls thaw and freeze anew */
        unsigned slow = l->polls > FREEZE_POLL_FAST ? l->polls - FREEZE_POLL_FAST : 0;
        if (slow && jail_refreeze(l->s->jail, slow % FREEZE_KICK_POLLS == 0))
            log_warn("sandbox %s: asking its freezer again failed", l->s->id);
        return;
    }
    char msg[160];
    if (rc < 0)
        snprintf(msg, sizeof msg, "cannot read its freezer state: %s", strerror(-rc));
    else
        snprintf(msg, sizeof msg,
                 "its processes did not all freeze within %llu ms "
                 "(--sandbox-suspend-timeout-ms); it was resumed",
                 (unsigned long long)cfg->sandbox_suspend_timeout_ms);
    log_warn("sandbox %s: suspend failed: %s", l->s->id, msg);
    l->freezing = false;
    (void)thaw(l);
    touch(l);
    arm(l);
    answer(l, rc < 0 ? rc : -ETIMEDOUT, msg);
}

int life_suspend(sandbox *s, life_suspended_cb cb, void *arg)
{
    struct life *l = s->life;
    if (!l)
        return -ESRCH;
    if (s->suspended && !l->freezing) {
        if (cb)
            cb(s, 0, NULL, arg);
        return 0;
    }
    struct waiter *w = NULL;
    if (cb && !(w = malloc(sizeof *w)))
        return -ENOMEM;
    if (!s->suspended) {
        int rc = jail_freeze(s->jail);
        if (rc) {
            free(w);
            return rc;
        }
        s->suspended = l->freezing = true;
        l->watching_busy = false;
        l->frozen_at = uv_now(loop);
        l->poll_ms = FREEZE_POLL_MIN_MS;
        l->polls = 0;
        uv_timer_start(&l->poll, on_poll, 0, 0);
        arm(l); /* only the maximum age counts while suspended */
    }
    if (w) {
        *w = (struct waiter){ l->waits, cb, arg };
        l->waits = w;
    }
    return 0;
}

int life_resume(sandbox *s)
{
    struct life *l = s->life;
    if (!l)
        return 0;
    touch(l);
    if (!s->suspended) {
        if (!uv_is_active((uv_handle_t *)&l->timer))
            arm(l);
        return 0;
    }
    bool was_freezing = l->freezing;
    int rc = thaw(l);
    if (rc) {
        log_error("sandbox %s: cannot resume it: %s", s->id, strerror(-rc));
        return rc;
    }
    l->freezing = false;
    log_info("sandbox %s resumed", s->id);
    arm(l);
    if (was_freezing)
        answer(l, -ECANCELED, "it was resumed before it was frozen");
    return 0;
}

void life_touch(sandbox *s)
{
    if (s && s->life)
        touch(s->life);
}

uint64_t life_frozen_ms(const sandbox *s)
{
    const struct life *l = s ? s->life : NULL;
    if (!l)
        return 0;
    return l->frozen_ms + (s->suspended ? uv_now(loop) - l->frozen_at : 0);
}

void life_timer_start(const sandbox *s, uint64_t *mark, uv_timer_t *t, uv_timer_cb cb, uint64_t ms)
{
    *mark = life_frozen_ms(s);
    uv_timer_start(t, cb, ms, 0);
}

bool life_timer_defer(const sandbox *s, uint64_t *mark, uv_timer_t *t, uv_timer_cb cb)
{
    if (!s || !s->life)
        return false;
    uint64_t now = life_frozen_ms(s), lost = now - *mark;
    if (lost == 0 && !s->suspended)
        return false;
    *mark = now;
    if (s->suspended && lost < DEFER_MIN_MS)
        lost = DEFER_MIN_MS;
    uv_timer_start(t, cb, lost, 0);
    return true;
}

static void life_closed(uv_handle_t *h)
{
    struct life *l = h->data;
    if (--l->handles == 0)
        free(l);
}

void life_attach(sandbox *s)
{
    if (!loop)
        return; /* no life_init (the registry's unit tests): no deadlines, no suspend */
    struct life *l = calloc(1, sizeof *l);
    if (!l) {
        log_error("sandbox %s: out of memory: no idle timeout or suspend for it", s->id);
        return;
    }
    l->s = s;
    uv_timer_init(loop, &l->timer);
    uv_timer_init(loop, &l->poll);
    l->timer.data = l->poll.data = l;
    /* Deadlines never keep the daemon alive: at shutdown the loop ends without them. */
    uv_unref((uv_handle_t *)&l->timer);
    uv_unref((uv_handle_t *)&l->poll);
    l->handles = 2;
    s->life = l;
    touch(l);
    arm(l);
}

/* The sandbox goes: thaw it (so that its processes can be killed), tell who waits. */
static void on_destroy(sandbox *s)
{
    struct life *l = s->life;
    if (!l)
        return;
    if (s->suspended)
        (void)thaw(l);
    l->freezing = false;
    answer(l, -ESRCH, "the sandbox was deleted");
    s->life = NULL;
    l->s = NULL;
    uv_timer_stop(&l->timer);
    uv_close((uv_handle_t *)&l->timer, life_closed);
    uv_close((uv_handle_t *)&l->poll, life_closed);
}

void life_init(uv_loop_t *lp, const struct config *c, bool (*is_busy)(sandbox *s))
{
    loop = lp;
    cfg = c;
    busy = is_busy;
    (void)sbx_on_destroy(on_destroy);
}
