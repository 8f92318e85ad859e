/*
 * init_main.c — sandboxd-init's entry: the outer process and the inner's start-up.
 *
 * The daemon starts one sandboxd-init per sandbox with uv_spawn (the daemon never forks
 * itself), with the sandbox's workspace as current directory and the control socket as
 * fd 3. Two processes result:
 *
 *   outer  host namespaces, host root (or the daemon's user). Joins the sandbox cgroup,
 *          clone()s the inner into new user, pid, mount, net (unless host network), ipc,
 *          uts and cgroup namespaces in one call, writes the inner's uid/gid maps (only
 *          a process outside the new user namespace may map arbitrary host ids), tells
 *          the daemon the inner's host pid (JP_HELLO), releases the inner, then waits
 *          for it and exits with its status. It dies with the daemon (PDEATHSIG).
 *          Non-root mode: it also keeps a descriptor of each of the inner's namespaces
 *          (keep_namespaces), the zygote's only way in (see jail_enter.h).
 *   inner  pid 1 of the sandbox, uid 0 inside (a dedicated host uid, never host root).
 *          Builds the root filesystem (init_root.c), brings loopback up, sets the
 *          hostname, becomes non-dumpable, says JP_READY and serves (init_serve.c).
 *
 * A third use, once per daemon: --make-runtimes makes the private runtimes tmpfs
 * (init_runtimes.c) and exits. Each sandbox's init then gets that detached mount as fd
 * --runtimes-fd (close-on-exec here, closed by the outer after the clone and by the inner
 * once it is attached), so no process of the sandbox ever holds it.
 *
 * uid mapping: root mode maps inside 0 → host_root_uid and inside 1000 → host_user_uid
 * (two host uids per sandbox slot, so sandboxes cannot signal or ptrace each other and
 * files they create on the host are attributable). Non-root mode maps only the daemon's
 * own uid to 1000 and denies setgroups; init and user code then share a uid.
 * Arguments come from the daemon only (trusted); they are still parsed with bounds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "init.h"
#include "../jail_enter.h"
#include "../jail_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage_exit(const char *why)
{
    fprintf(stderr, "sandboxd-init: %s\n", why);
    _exit(2);
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end)
        return false;
    *v = x;
    return true;
}

/* "--uid=A:B" → a, b */
static bool parse_pair(const char *s, uint64_t *a, uint64_t *b)
{
    char tmp[64];
    const char *colon = strchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof tmp)
        return false;
    memcpy(tmp, s, (size_t)(colon - s));
    tmp[colon - s] = '\0';
    return parse_u64(tmp, a) && parse_u64(colon + 1, b);
}

static void parse_args(int argc, char **argv, struct init_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->runtimes_fd = -1;
    cfg->mem_usage_fd = cfg->mem_limit_fd = cfg->mem_stat_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t x, y;
        if (strncmp(a, "--cg=", 5) == 0) {
            if (cfg->ncg >= 4)
                usage_exit("too many --cg");
            cfg->cgroup_procs[cfg->ncg++] = a + 5;
        } else if (strncmp(a, "--uid=", 6) == 0 && parse_pair(a + 6, &x, &y)) {
            cfg->host_root_uid = (uid_t)x;
            cfg->host_user_uid = (uid_t)y;
        } else if (strncmp(a, "--gid=", 6) == 0 && parse_pair(a + 6, &x, &y)) {
            cfg->host_root_gid = (gid_t)x;
            cfg->host_user_gid = (gid_t)y;
        } else if (strcmp(a, "--rootless") == 0) {
            cfg->rootless = true;
        } else if (strcmp(a, "--net=host") == 0) {
            cfg->network_host = true;
        } else if (strncmp(a, "--tmp=", 6) == 0 && parse_u64(a + 6, &x)) {
            cfg->tmp_bytes = x;
        } else if (strncmp(a, "--runtimes=", 11) == 0) {
            cfg->runtimes_dir = a + 11;
        } else if (strncmp(a, "--runtimes-fd=", 14) == 0 && parse_u64(a + 14, &x) &&
                   x > INIT_CTL_FD && x < 64) {
            cfg->runtimes_fd = (int)x;
        } else if (strncmp(a, "--make-runtimes=", 16) == 0) {
            cfg->make_runtimes = a + 16;
        } else if (strncmp(a, "--mpl-cache=", 12) == 0) {
            cfg->mpl_cache = a + 12;
        } else if (strncmp(a, "--runtimes-bytes=", 17) == 0 && parse_u64(a + 17, &x)) {
            cfg->runtimes_bytes = x;
        } else if (strncmp(a, "--spawn-reserve=", 16) == 0 && parse_u64(a + 16, &x)) {
            cfg->spawn_reserve = x;
        } else if (strncmp(a, "--ws-image=", 11) == 0 && parse_u64(a + 11, &x)) {
            cfg->ws_image_bytes = x;
        } else if (strcmp(a, "--ws-format") == 0) {
            cfg->ws_format = true;
        } else if (strncmp(a, "--ws-bytes=", 11) == 0 && parse_u64(a + 11, &x)) {
            cfg->ws_bytes = x;
        } else if (strncmp(a, "--site-dirs=", 12) == 0) {
            cfg->site_dirs = a + 12;
        } else {
            usage_exit("bad argument");
        }
    }
}

/* Write s to path (a /proc or cgroup file: one write). 0 or -errno. */
int init_write_file(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = strlen(s);
    int rc = write(fd, s, len) == (ssize_t)len ? 0 : -errno;
    close(fd);
    return rc;
}

static int write_maps(const struct init_cfg *cfg, pid_t pid)
{
    char path[64], map[128];
    int rc;
    if (cfg->rootless) {
        snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
        if ((rc = init_write_file(path, "deny")))
            return rc;
        snprintf(map, sizeof map, "%d %u 1\n", INIT_USER_UID, (unsigned)getuid());
    } else {
        snprintf(map, sizeof map, "0 %u 1\n%d %u 1\n", (unsigned)cfg->host_root_uid, INIT_USER_UID,
                 (unsigned)cfg->host_user_uid);
    }
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    if ((rc = init_write_file(path, map)))
        return rc;
    if (cfg->rootless)
        snprintf(map, sizeof map, "%d %u 1\n", INIT_USER_GID, (unsigned)getgid());
    else
        snprintf(map, sizeof map, "0 %u 1\n%d %u 1\n", (unsigned)cfg->host_root_gid, INIT_USER_GID,
                 (unsigned)cfg->host_user_gid);
    snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
    return init_write_file(path, map);
}

/* Non-root mode: keep a descriptor of each of the inner's namespaces at
 * JAIL_ANCHOR_FD + enum jail_ns, for the zygote's children (see struct jail_entry in
 * jail_enter.h). Opened now, while the inner is still dumpable: once it is not, only a
 * process with CAP_SYS_PTRACE over the host user namespace could open them. We stay in
 * the host namespaces as the daemon's user, so /proc/<outer>/fd/N is open to the daemon's
 * user only; the sandbox cannot see this process. 0 or -errno. */
static int keep_namespaces(const struct init_cfg *cfg, pid_t pid, int *sync_fd)
{
    static const char *const names[JAIL_NS_COUNT] = {
        [JAIL_NS_USER] = "user", [JAIL_NS_MNT] = "mnt", [JAIL_NS_PID] = "pid",
        [JAIL_NS_IPC] = "ipc",   [JAIL_NS_UTS] = "uts", [JAIL_NS_CGROUP] = "cgroup",
        [JAIL_NS_NET] = "net",
    };
    /* The targets may hold descriptors we inherited by mistake (dup3 closes them), but
     * not ours: 0-3 are below the range; move the sync pipe out of it if needed. */
    if (*sync_fd >= JAIL_ANCHOR_FD && *sync_fd < JAIL_ANCHOR_FD + JAIL_NS_COUNT) {
        int moved = fcntl(*sync_fd, F_DUPFD_CLOEXEC, JAIL_ANCHOR_FD + JAIL_NS_COUNT);
        if (moved < 0)
            return -errno;
        close(*sync_fd);
        *sync_fd = moved;
    }
    int n = cfg->network_host ? JAIL_NS_NET : JAIL_NS_COUNT;
    for (int i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, names[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        if (fd != JAIL_ANCHOR_FD + i) {
            int rc = dup3(fd, JAIL_ANCHOR_FD + i, O_CLOEXEC) < 0 ? -errno : 0;
            close(fd);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The inner (pid 1 of the sandbox) is never the OOM killer's victim either, where we may
 * say so: lowering a score needs CAP_SYS_RESOURCE over the host, which the inner never
 * has and we have only when the daemon runs as a root that kept it (not everywhere: some
 * hosts drop it from root's bounding set; then EACCES, and what protects the inner is
 * that every other process of the sandbox raises its own score, see JAIL_OOM_SCORE_ADJ).
 * Through the legacy oom_adj file on purpose: the new file would also lower the inner's
 * oom_score_adj_min, which its children inherit, and sandbox code could then take -1000
 * for itself; the legacy one leaves the floor where it was (the daemon's). Called before
 * the inner is released, so it has no child yet. 0 or -errno. */
static int protect_inner(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/oom_adj", (int)pid);
    return init_write_file(path, "-17");
}

/* Open the usage and limit files of the memory cgroup among the ones we joined (v1:
 * memory.usage_in_bytes and memory.limit_in_bytes; v2: memory.current and memory.max), for
 * the inner, which cannot reach the host's cgroup tree: it inherits the descriptors at the
 * clone (close-on-exec, and closed in every child by jail_drop_privileges). None: -1. */
static void open_memory_files(struct init_cfg *cfg)
{
    static const char *const names[2][2] = {
        { "memory.usage_in_bytes", "memory.limit_in_bytes" },
        { "memory.current", "memory.max" },
    };
    for (int i = 0; i < cfg->ncg && cfg->mem_usage_fd < 0; i++) {
        const char *slash = strrchr(cfg->cgroup_procs[i], '/');
        int dir = -1;
        if (slash && slash - cfg->cgroup_procs[i] < 4000) {
            char d[4096];
            memcpy(d, cfg->cgroup_procs[i], (size_t)(slash - cfg->cgroup_procs[i]));
            d[slash - cfg->cgroup_procs[i]] = '\0';
            dir = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
        for (int v = 0; dir >= 0 && v < 2 && cfg->mem_usage_fd < 0; v++) {
            int u = openat(dir, names[v][0], O_RDONLY | O_CLOEXEC);
            int l = u >= 0 ? openat(dir, names[v][1], O_RDONLY | O_CLOEXEC) : -1;
            if (l >= 0) {
                cfg->mem_usage_fd = u;
                cfg->mem_limit_fd = l;
                cfg->mem_stat_fd = openat(dir, "memory.stat", O_RDONLY | O_CLOEXEC);
            } else if (u >= 0) {
                close(u);
            }
        }
        if (dir >= 0)
            close(dir);
    }
}

static void send_fail(int rc, const char *what)
{
    struct jp_hdr h = { .type = JP_FAIL, .a = rc, .len = (uint32_t)strlen(what) + 1 };
    (void)jp_send(INIT_CTL_FD, &h, what, NULL, 0);
}

static int loopback_up(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, "lo", 3);
    int rc = 0;
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
        rc = -errno;
    } else {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
            rc = -errno;
    }
    close(fd);
    return rc;
}

static __attribute__((noreturn)) void inner_main(const struct init_cfg *cfg, int syncfd)
{
    char err[256];
    char c;
    int rc;
    /* Wait until the outer has written our uid/gid maps. EOF means it died. */
    if (read(syncfd, &c, 1) != 1)
        _exit(1);
    close(syncfd);
    if (!cfg->rootless) {
        if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) {
            send_fail(-errno, "init: could not become root of the sandbox user namespace");
            _exit(1);
        }
    }
    /* Set after the uid change (which clears it). Our parent is the outer. */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    /* Not dumpable: /proc/1 is then owned by inside-root only, and sandbox code (uid
     * 1000, no caps) cannot open init's memory, fds or environment. */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    rc = init_setup_root(cfg, err, sizeof err);
    if (rc) {
        send_fail(rc, err);
        _exit(1);
    }
    if (cfg->runtimes_fd >= 0)
        close(cfg->runtimes_fd); /* attached (a clone): the original stays the daemon's */
    if (!cfg->network_host && (rc = loopback_up())) {
        send_fail(rc, "init: could not bring up loopback in the sandbox network namespace");
        _exit(1);
    }
    if (sethostname("sandbox", 7) < 0) {
        send_fail(-errno, "init: sethostname failed");
        _exit(1);
    }
    static struct jail_sc_prog prog;
    rc = jail_seccomp_compile(&prog);
    if (rc) {
        send_fail(rc, "init: could not compile the seccomp filter");
        _exit(1);
    }
    /* A workspace tmpfs of our own (rootless): the daemon reaches it through this fd. */
    int ws = cfg->ws_bytes ? open("/workspace", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    if (cfg->ws_bytes && ws < 0) {
        send_fail(-errno, "init: could not open the workspace tmpfs");
        _exit(1);
    }
    struct jp_hdr h = { .type = JP_READY };
    if (jp_send(INIT_CTL_FD, &h, NULL, ws >= 0 ? &ws : NULL, ws >= 0 ? 1 : 0))
        _exit(1);
    if (ws >= 0)
        close(ws);
    init_serve(cfg, &prog);
}

/* The daemon passes each argument as one SANDBOXD_INIT_ARG=<arg> environment entry
 * (argv would be visible inside the sandbox through /proc/1/cmdline). Command-line
 * arguments are accepted too, for manual runs. */
static char *env_args[32];

static int collect_args(int argc, char **argv)
{
    static const char key[] = "SANDBOXD_INIT_ARG=";
    int n = 0;
    env_args[n++] = argv[0];
    for (int i = 1; i < argc && n < 31; i++)
        env_args[n++] = argv[i];
    for (char **e = environ; *e && n < 31; e++)
        if (strncmp(*e, key, sizeof key - 1) == 0)
            env_args[n++] = *e + sizeof key - 1;
    env_args[n] = NULL;
    return n;
}

/* /proc/1/cmdline is readable inside the sandbox: show our name, not the host path we
 * were started from (the build dir). Only argv[0]: cfg points into the others (the daemon
 * passes none, see jail_create.c: the arguments travel in the environment). */
static void hide_argv0(char **argv)
{
    size_t arg0 = strlen(argv[0]);
    memset(argv[0], 0, arg0);
    if (arg0 >= sizeof "sandboxd-init" - 1)
        memcpy(argv[0], "sandboxd-init", sizeof "sandboxd-init" - 1);
}

/* Join the sandbox's cgroups before anything else runs, so that everything after (the
 * clone, the inner's set-up) is under the sandbox's limits. 0, or -1 after send_fail. */
static int join_cgroups(const struct init_cfg *cfg)
{
    char pidstr[24];
    snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());
    for (int i = 0; i < cfg->ncg; i++) {
        int rc = init_write_file(cfg->cgroup_procs[i], pidstr);
        if (rc) {
            send_fail(rc, "init: could not join the sandbox cgroup");
            return -1;
        }
    }
    return 0;
}

/* Create the inner (pid 1 of the sandbox) in every new namespace at once; it waits on
 * sync until the maps are written. The inner's pid, or -1 after send_fail. Never returns
 * in the inner. */
static pid_t clone_inner(struct init_cfg *cfg, int sync[2])
{
    if (pipe2(sync, O_CLOEXEC) < 0) {
        send_fail(-errno, "init: pipe failed");
        return -1;
    }
    int flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
                CLONE_NEWCGROUP | (cfg->network_host ? 0 : CLONE_NEWNET);
    /* A raw clone with a NULL stack behaves like fork() in this single-threaded program
     * and creates every namespace at once (one copy of the page tables, not two). */
    pid_t pid = (pid_t)syscall(SYS_clone, (unsigned long)flags | SIGCHLD, NULL, NULL, NULL, 0UL);
    if (pid < 0) {
        send_fail(-errno, "init: clone with new namespaces failed (user namespaces disabled?)");
        return -1;
    }
    if (pid == 0) {
        close(sync[1]);
        inner_main(cfg, sync[0]);
    }
    close(sync[0]);
    return pid;
}

/* Right after the clone: drop the fds that were the inner's, and keep the OOM killer off
 * the outer and the inner. */
static void outer_after_clone(struct init_cfg *cfg, pid_t pid)
{
    if (cfg->runtimes_fd >= 0)
        close(cfg->runtimes_fd); /* the inner has its copy */
    if (cfg->mem_usage_fd >= 0) {
        close(cfg->mem_usage_fd); /* the inner's, likewise */
        close(cfg->mem_limit_fd);
        if (cfg->mem_stat_fd >= 0)
            close(cfg->mem_stat_fd);
    }
    /* Root mode: we sit in the sandbox's memory cgroup with a few hundred KiB of RSS, so
     * when the sandbox fills its memory with tmpfs pages (which no kill frees) the OOM
     * killer may well pick us, and the sandbox dies with us. We are never its victim
     * (set after the clone, so the inner does not inherit it; the inner gets the legacy
     * -17 instead, see protect_inner). Both need CAP_SYS_RESOURCE: where root lacks it,
     * what keeps us and the inner alive is that every sandbox process scores higher. */
    if (!cfg->rootless) {
        (void)init_write_file("/proc/self/oom_score_adj", "-1000");
        (void)protect_inner(pid);
    }
}

/* Give the inner its identity (uid/gid maps; rootless: the namespaces kept open for the
 * daemon), tell the daemon its pid (HELLO), then let it go on. 0, or -1 with the inner
 * killed. */
static int release_inner(const struct init_cfg *cfg, pid_t pid, int *sync_w)
{
    int rc = write_maps(cfg, pid);
    if (rc) {
        send_fail(rc, "init: could not write the uid/gid maps of the sandbox");
        kill(pid, SIGKILL);
        return -1;
    }
    if (cfg->rootless && (rc = keep_namespaces(cfg, pid, sync_w))) {
        send_fail(rc, "init: could not open the sandbox's namespaces");
        kill(pid, SIGKILL);
        return -1;
    }
    struct jp_hdr h = { .type = JP_HELLO, .a = pid };
    if (jp_send(INIT_CTL_FD, &h, NULL, NULL, 0)) {
        kill(pid, SIGKILL);
        return -1;
    }
    if (write(*sync_w, "g", 1) != 1) {
        kill(pid, SIGKILL);
        return -1;
    }
    close(*sync_w);
    return 0;
}

int main(int argc, char **argv)
{
    struct init_cfg cfg;
    parse_args(collect_args(argc, argv), env_args, &cfg);
    if (cfg.make_runtimes)
        return init_make_runtimes(&cfg);
    /* The runtimes mount is for the inner's mount table only: never for a child. */
    if (cfg.runtimes_fd >= 0 && fcntl(cfg.runtimes_fd, F_SETFD, FD_CLOEXEC) < 0)
        cfg.runtimes_fd = -1;
    hide_argv0(argv);
    /* Die with the daemon: a sandbox without its daemon has nobody to report to. */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() == 1)
        _exit(1);
    if (join_cgroups(&cfg))
        return 1;
    if (cfg.ws_image_bytes) { /* under the sandbox's limits already, before the clone */
        char why[256];
        int rc = init_workspace_mount(&cfg, why, sizeof why);
        if (rc) {
            send_fail(rc, why);
            return 1;
        }
    }
    if (cfg.spawn_reserve)
        open_memory_files(&cfg);
    int sync[2];
    pid_t pid = clone_inner(&cfg, sync);
    if (pid < 0)
        return 1;
    outer_after_clone(&cfg, pid);
    if (release_inner(&cfg, pid, &sync[1]))
        return 1;
    close(INIT_CTL_FD);
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return 1;
    }
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}
