/*
 * init.h — shared between the parts of sandboxd-init (one program per sandbox).
 *
 *   init_main.c   the outer process (host namespaces) and the inner's start-up
 *   init_root.c   the sandbox's root filesystem, built from a static mount table
 *   init_serve.c  pid 1 of the sandbox: serves the daemon's control socket, spawns,
 *                 reaps every process and reports each exit
 *   init_runtimes.c  the --make-runtimes mode, run once per daemon: the private
 *                 read-only tmpfs with a copy of the runtimes, as a detached mount
 *   init_workspace.c  root mode: the workspace's ext4 image, made and mounted by the outer
 */
#ifndef SANDBOXD_INIT_H
#define SANDBOXD_INIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../jail_seccomp.h"

#define INIT_CTL_FD 3
#define INIT_USER_UID 1000 /* the sandbox user, inside */
#define INIT_USER_GID 1000

struct init_cfg {
    const char *cgroup_procs[4]; /* host cgroup.procs files the outer joins (root mode) */
    int ncg;
    bool rootless;                      /* daemon not root: one uid mapped, setgroups denied */
    uid_t host_root_uid, host_user_uid; /* host uids for inside 0 and 1000 (root mode) */
    gid_t host_root_gid, host_user_gid;
    bool network_host;
    uint64_t tmp_bytes;             /* size of /tmp and /dev/shm */
    const char *runtimes_dir;       /* host dir bound read-only at /opt/sandboxd (or NULL) */
    int runtimes_fd;                /* a detached mount to attach there instead (or -1) */
    uint64_t ws_bytes;              /* rootless: /workspace is a tmpfs this big, not a bind */
    int mem_usage_fd, mem_limit_fd; /* the sandbox's memory cgroup usage and limit files,
                                      opened by the outer (or -1): see init_serve.c */
    int mem_stat_fd;                /* its memory.stat: file pages are reclaimable (or -1) */
    uint64_t spawn_reserve;         /* fork only with this much of that memory free (0: any) */
    /* --make-runtimes mode (init_runtimes.c) */
    const char *make_runtimes; /* the dir to copy (NULL: normal mode) */
    const char *mpl_cache;     /* copied to mpl-cache/ in it (or NULL) */
    uint64_t runtimes_bytes;   /* size of the tmpfs */
    /* Root mode: the workspace is an ext4 file system in ./workspace.img, mounted on
     * ./workspace by the outer (init_workspace.c), then the outer's current directory. */
    uint64_t ws_image_bytes; /* its size (0: no image; the current directory is the workspace) */
    bool ws_format;          /* make the image first (a new sandbox) */
    /* The operator's Python site dirs: colon-separated host paths, bound read-only at
     * /opt/python-site/0, 1, … (NULL: none). */
    const char *site_dirs;
    /* The workspace is the outer's current directory at start (the daemon sets it). */
};

/* Build the sandbox root and pivot into it. err gets a sentence on failure. 0 / -errno. */
/* Write s to path (a /proc or cgroup file: one write). 0 or -errno. (init_main.c) */
int init_write_file(const char *path, const char *s);

int init_setup_root(const struct init_cfg *cfg, char *err, size_t errlen);

/* The --make-runtimes mode: make the tmpfs, copy, send its fd on INIT_CTL_FD. Exit code. */
int init_make_runtimes(const struct init_cfg *cfg);

/* Root mode with an image: make it (ws_format), attach it to a free loop device, mount it
 * on ./workspace and make that the current directory. 0, or -errno with err set. */
int init_workspace_mount(const struct init_cfg *cfg, char *err, size_t errlen);

/* Serve the control socket as pid 1; never returns. */
void init_serve(const struct init_cfg *cfg, const struct jail_sc_prog *prog)
    __attribute__((noreturn));

#endif
