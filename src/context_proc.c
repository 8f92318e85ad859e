/*
 * context_proc.c — a context's incarnations (see context_int.h): the process, forked by
 * the zygote (Python) or spawned by the sandbox's init (Node), with its channel and its
 * stdout/stderr pipes; killing it, letting go of it, freeing it.
 *
 * A proc is freed only when nothing refers to it any more: its three pipe handles closed,
 * its process reaped (or never started), no answer pending from the zygote or the init,
 * and no context holding it. An answer that arrives for a proc its context let go of
 * kills what was started. A start that fails leaves nothing behind (every fd closed).
 */
#include "context_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "zygote_client.h"

void ctx_proc_maybe_free(struct ctx_proc *p)
{
    if (p->handles == 0 && !p->jp && !p->ctx && !p->zyg_pending && !p->spawn_req) {
        buf_free(&p->line);
        ctx_lines_free(p);
        budget_unref(p->bg);
        free(p);
    }
}

void ctx_proc_handle_closed(uv_handle_t *h)
{
    struct ctx_proc *p = h->data;
    p->handles--;
    ctx_proc_maybe_free(p);
}

static void proc_close_pipes(struct ctx_proc *p)
{
    if (p->chan_open) {
        p->chan_open = false;
        uv_close((uv_handle_t *)&p->chan, ctx_proc_handle_closed);
    }
    if (p->out_open) {
        p->out_open = false;
        uv_close((uv_handle_t *)&p->out, ctx_proc_handle_closed);
    }
    if (p->err_open) {
        p->err_open = false;
        uv_close((uv_handle_t *)&p->err, ctx_proc_handle_closed);
    }
}

void ctx_proc_kill(struct ctx_proc *p)
{
    if (p->exited)
        return;
    if (p->jp)
        jail_proc_kill(p->jp, SIGKILL);
    else if (p->host_pid > 0)
        kill(p->host_pid, SIGKILL); /* a zygote child not adopted yet */
    else if (p->spawn_req) {
        jail_cancel(p->spawn_req); /* not started yet: the jail ends it if it starts */
        p->spawn_req = NULL;
    }
}

void ctx_proc_detach(struct ctx_proc *p)
{
    if (p->ctx && p->ctx->proc == p)
        p->ctx->proc = NULL;
    p->ctx = NULL;
    ctx_proc_kill(p);
    proc_close_pipes(p);
}

static void proc_exit_cb(jail_proc *jp, int status, void *arg)
{
    struct ctx_proc *p = arg;
    (void)jp;
    p->jp = NULL;
    p->exited = true;
    p->status = status;
    if (p->ctx)
        ctx_proc_died(p->ctx, p);
    ctx_proc_maybe_free(p);
}

/* ---- starting an incarnation ---- */

static void zyg_forked(pid_t pid, pid_t ns_pid, const char *msg, void *arg)
{
    struct ctx_proc *p = arg;
    p->zyg_pending = false;
    if (pid > 0) {
        p->host_pid = pid;
        p->nspid = ns_pid;
        if (!p->ctx)
            ctx_proc_kill(p); /* deleted while it was being forked */
        else if (jail_adopt_child(p->ctx->sb->jail, pid, ns_pid, proc_exit_cb, p, &p->jp))
            p->jp = NULL; /* already gone: its channel's EOF will tell */
    } else if (p->ctx) {
        log_warn("context %s: the zygote could not fork it: %s", p->ctx->id, msg ? msg : "");
        snprintf(p->why, sizeof p->why, "%s", msg ? msg : strerror(-pid));
        p->zyg_lost = pid == -EPIPE || pid == -EAGAIN; /* the zygote died: retried */
        ctx_proc_died(p->ctx, p);
    }
    ctx_proc_maybe_free(p);
}

/* Node: the sandbox's init started the context's process, or could not. */
static void node_spawned(jail_proc *jp, int rc, const char *msg, void *arg)
{
    struct ctx_proc *p = arg;
    p->spawn_req = NULL;
    if (!rc) {
        p->jp = jp;
        if (!p->ctx)
            ctx_proc_kill(p); /* let go of while it was being started */
    } else if (p->ctx) {
        log_warn("context %s: could not start node: %s", p->ctx->id, msg ? msg : "");
        snprintf(p->why, sizeof p->why, "%s", msg ? msg : strerror(-rc));
        ctx_proc_died(p->ctx, p);
    }
    ctx_proc_maybe_free(p);
}

/* The process's ends of the pipes: the channel (its fd 3), stdout, stderr. */
struct child_fds {
    int chan, out, err;
};

/* Ask the zygote (Python) or the sandbox's init (Node) for the process. */
static int spawn_child(struct context *c, struct ctx_proc *p, char **envp,
                       const struct child_fds *fds, char *err, size_t errlen)
{
    int rc;
    if (c->lang == LANG_PYTHON) {
        struct jail_entry e;
        if ((rc = jail_entry_info(c->sb->jail, &e))) {
            snprintf(err, errlen, "the sandbox is gone");
            return rc;
        }
        p->zyg_pending = true;
        rc = zyg_fork(&e, c->cwd, (const char *const *)envp, fds->chan, fds->out, fds->err,
                      zyg_forked, p);
        if (rc) {
            p->zyg_pending = false;
            snprintf(err, errlen, "the Python zygote is not available: %s", strerror(-rc));
        }
        return rc;
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const char *argv[] = { "/usr/bin/node", "/opt/sandboxd/node/kernel.js", NULL };
    struct jail_spawn_opts so = {
        .argv = argv,
        .envp = (const char *const *)envp,
        .cwd = c->cwd,
        .stdin_fd = devnull,
        .stdout_fd = fds->out,
        .stderr_fd = fds->err,
        .extra_fd = fds->chan,
    };
    rc = jail_spawn(c->sb->jail, &so, node_spawned, proc_exit_cb, p, &p->spawn_req, err, errlen);
    close(devnull);
    return rc;
}

/* Our ends of the pipes become the proc's handles, read from now on. */
static void open_pipes(struct context *c, struct ctx_proc *p, int chan, int out, int err)
{
    uv_pipe_init(ctx_loop, &p->chan, 0);
    uv_pipe_init(ctx_loop, &p->out, 0);
    uv_pipe_init(ctx_loop, &p->err, 0);
    p->chan.data = p->out.data = p->err.data = p;
    uv_pipe_open(&p->chan, chan);
    uv_pipe_open(&p->out, out);
    uv_pipe_open(&p->err, err);
    p->chan_open = p->out_open = p->err_open = true;
    p->handles = 3;
    c->proc = p;
    c->state = CTX_STARTING;
    ctx_set_paused(c, false);
    uv_timer_start(&c->timer, ctx_timer_cb, ctx_cfg->context_start_timeout_ms, 0);
}

int ctx_proc_start(struct context *c, char *err, size_t errlen)
{
    int sv[2] = { -1, -1 }, po[2] = { -1, -1 }, pe[2] = { -1, -1 };
    int rc = 0;
    char **envp = NULL;
    struct ctx_proc *p = calloc(1, sizeof *p);
    if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || pipe2(po, O_CLOEXEC) ||
        pipe2(pe, O_CLOEXEC)) {
        rc = -errno;
        snprintf(err, errlen, "cannot create the context's pipes: %s", strerror(errno));
        goto fail;
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
    p->started_ns = uv_hrtime();
    p->oom_base = jail_oom_kills(c->sb->jail);
    const struct child_fds fds = { sv[1], po[1], pe[1] };
    if ((rc = spawn_child(c, p, envp, &fds, err, errlen)))
        goto fail;
    free(envp);
    close(sv[1]);
    close(po[1]);
    close(pe[1]);
    open_pipes(c, p, sv[0], po[0], pe[0]);
    return 0;
fail:
    free(envp);
    for (int i = 0; i < 2; i++) {
        if (sv[i] >= 0)
            close(sv[i]);
        if (po[i] >= 0)
            close(po[i]);
        if (pe[i] >= 0)
            close(pe[i]);
    }
    if (p) {
        buf_free(&p->line);
        ctx_lines_free(p);
        budget_unref(p->bg);
    }
    free(p);
    return rc ? rc : -EIO;
}
