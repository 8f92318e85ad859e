/*
 * context_proc.c — a context's incarnations (see context_int.h): the process, forked by
 * the zygote (Python) or spawned by the sandbox's init (Node), with its channel and its
 * stdout/stderr pipes; killing it, letting go of it, freeing it.
 *
 * The process, its pipes, its exit and its freeing are a child's (child.h): a proc is
 * freed by the child's freed, once its three pipe handles are closed, its process reaped
 * (or never started), no answer pending from the zygote (a hold) or the init, and no
 * context holding it (the child released). An answer that arrives for a proc its
 * context let go of kills what was started. A start that fails leaves nothing behind
 * (every fd closed).
 */
#include "context_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "lifecycle.h"
#include "zygote_client.h"

static void proc_freed(void *owner)
{
    struct ctx_proc *p = owner;
    buf_free(&p->line);
    ctx_lines_free(p);
    budget_unref(p->bg);
    free(p);
}

void ctx_proc_maybe_free(struct ctx_proc *p)
{
    if (!p->ctx)
        child_release(p->ch); /* again: a no-op; the child frees p when quiet */
}

void ctx_proc_kill(struct ctx_proc *p)
{
    child_kill(p->ch);
}

void ctx_proc_detach(struct ctx_proc *p)
{
    if (p->ctx && p->ctx->proc == p)
        p->ctx->proc = NULL;
    p->ctx = NULL;
    ctx_proc_kill(p);
    child_release(p->ch);
}

static void proc_exited(void *owner, int status)
{
    struct ctx_proc *p = owner;
    p->exited = true;
    p->status = status;
    if (p->ctx)
        ctx_proc_died(p->ctx, p);
}

/* Node: the sandbox's init started the context's process, or could not. */
static void node_spawned(void *owner, int rc, const char *msg)
{
    struct ctx_proc *p = owner;
    if (!rc || !p->ctx)
        return;
    log_warn("context %s: could not start node: %s", p->ctx->id, msg ? msg : "");
    snprintf(p->why, sizeof p->why, "%s", msg ? msg : strerror(-rc));
    ctx_proc_died(p->ctx, p);
}

static const struct child_ops PROC_OPS = {
    .alloc = ctx_chan_alloc,
    .read = ctx_chan_read,
    .started = node_spawned,
    .exited = proc_exited,
    .freed = proc_freed,
};

/* ---- starting an incarnation ---- */

static void zyg_forked(pid_t pid, pid_t ns_pid, const char *msg, void *arg)
{
    struct ctx_proc *p = arg;
    p->zyg_pending = false;
    if (pid > 0) {
        /* let go of while it was being forked: the child kills it instead. Not watched
         * (already gone): its channel's EOF will tell */
        child_adopt(p->ch, p->ctx ? p->ctx->sb->jail : NULL, pid, ns_pid);
    } else if (p->ctx) {
        log_warn("context %s: the zygote could not fork it: %s", p->ctx->id, msg ? msg : "");
        snprintf(p->why, sizeof p->why, "%s", msg ? msg : strerror(-pid));
        p->zyg_lost = pid == -EPIPE || pid == -EAGAIN; /* the zygote died: retried */
        ctx_proc_died(p->ctx, p);
    }
    child_unhold(p->ch); /* may free p */
}

/* Ask the zygote (Python) or the sandbox's init (Node) for the process. */
static int spawn_child(struct context *c, struct ctx_proc *p, char **envp, char *err, size_t errlen)
{
    int rc;
    if (c->lang == LANG_PYTHON) {
        struct jail_entry e;
        int fds[CHILD_NPIPES];
        if ((rc = jail_entry_info(c->sb->jail, &e))) {
            snprintf(err, errlen, "the sandbox is gone");
            return rc;
        }
        child_far_fds(p->ch, fds);
        p->zyg_pending = true;
        child_hold(p->ch);
        rc = zyg_fork(&e, c->cwd, (const char *const *)envp, fds[CHILD_CHAN], fds[CHILD_OUT],
                      fds[CHILD_ERR], zyg_forked, p);
        if (rc) {
            p->zyg_pending = false;
            child_unhold(p->ch); /* not live, not released: nothing is freed */
            snprintf(err, errlen, "the Python zygote is not available: %s", strerror(-rc));
            return rc;
        }
        child_open(p->ch);
        return 0;
    }
    const char *argv[] = { "/usr/bin/node", "/opt/sandboxd/node/kernel.js", NULL };
    return child_spawn(p->ch, c->sb->jail, argv, (const char *const *)envp, c->cwd, err, errlen);
}

int ctx_proc_start(struct context *c, char *err, size_t errlen)
{
    const unsigned mask = CHILD_BIT(CHILD_CHAN) | CHILD_BIT(CHILD_OUT) | CHILD_BIT(CHILD_ERR);
    int rc = -ENOMEM;
    char **envp = NULL;
    struct ctx_proc *p = calloc(1, sizeof *p);
    if (!p || (rc = child_new(ctx_loop, mask, &PROC_OPS, p, &p->ch))) {
        snprintf(err, errlen, "cannot create the context's pipes: %s", strerror(-rc));
        free(p);
        return rc;
    }
    json_t *lang_env = json_pack("{s:s}", "SANDBOXD_LANGUAGE", ctx_lang_name(c->lang));
    envp = sbx_environ(c->sb, c->env, c->lang == LANG_PYTHON ? NULL : lang_env);
    json_decref(lang_env);
    if (!envp) {
        rc = -E2BIG;
        snprintf(err, errlen, "the context's environment is too large");
        goto fail;
    }
    buf_init(&p->line, ctx_cfg->max_result_bytes);
    p->bg = budget_ref(c->sb->budget);
    buf_set_budget(&p->line, p->bg);
    for (int i = 0; i < 2; i++) {
        buf_init(&p->part[i], CTX_LINE_CAP);
        buf_set_budget(&p->part[i], p->bg);
    }
    p->ctx = c;
    p->oom_base = jail_oom_kills(c->sb->jail);
    if ((rc = spawn_child(c, p, envp, err, errlen)))
        goto fail;
    free(envp);
    /* our ends of the pipes are the child's handles, read from now on */
    c->proc = p;
    c->state = CTX_STARTING;
    ctx_set_paused(c, false);
    life_timer_start(c->sb, &c->frozen_mark, &c->timer, ctx_timer_cb,
                     ctx_cfg->context_start_timeout_ms);
    return 0;
fail:
    free(envp);
    child_discard(p->ch);
    buf_free(&p->line);
    ctx_lines_free(p);
    budget_unref(p->bg);
    free(p);
    return rc ? rc : -EIO;
}
