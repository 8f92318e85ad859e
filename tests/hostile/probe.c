/*
 * probe.c — runs INSIDE a sandbox and tries one named attack per invocation, printing
 * exactly one line "<name>: <outcome>" so that hostile tests can assert exact results:
 *   "<name>: errno <NAME> (<n>)"   the attempt failed with that errno
 *   "<name>: killed by signal <n>" the attempt (made in a child) was killed (seccomp kill)
 *   "<name>: ALLOWED ..."          the attack worked: always a test failure
 * and, for the "works" probes (something the policy must keep allowing):
 *   "<name>: works"                it did
 *   "<name>: FAILED errno <NAME> (<n>)"
 * Exit status: 0 when the attack was stopped (or the allowed thing worked), 1 when
 * ALLOWED (or FAILED), 2 for usage errors.
 * Built static (-static) so it runs from /workspace whatever libraries are visible.
 * `probe list` prints the names.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static const char *errname(int e)
{
    switch (e) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ENOSYS: return "ENOSYS";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EROFS: return "EROFS";
    case ENOTTY: return "ENOTTY";
    case EBADF: return "EBADF";
    case ESRCH: return "ESRCH";
    case EAGAIN: return "EAGAIN";
    case ENXIO: return "ENXIO";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
    default: return "E?";
    }
}

static const char *g_name;

static int report(long rc, int err)
{
    if (rc < 0) {
        printf("%s: errno %s (%d)\n", g_name, errname(err), err);
        return 0;
    }
    printf("%s: ALLOWED (returned %ld)\n", g_name, rc);
    return 1;
}

static int p_ptrace(void)
{
    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    long rc = ptrace(PTRACE_ATTACH, c, NULL, NULL);
    int e = errno;
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    return report(rc, e);
}

static int p_ptrace_init(void)
{
    long rc = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
    return report(rc, errno);
}

static int p_kill_init(void)
{
    /* Signals to a namespace's init without a handler are dropped by the kernel; EPERM
     * when the uid differs (root mode). Either way init must still be there. */
    long rc = kill(1, SIGKILL);
    int e = errno;
    usleep(100000);
    if (kill(1, 0) == 0 || errno == EPERM) {
        printf("%s: %s, init alive\n", g_name, rc < 0 ? errname(e) : "sent");
        return 0;
    }
    printf("%s: ALLOWED (init gone)\n", g_name);
    return 1;
}

static int p_mount(void)
{
    long rc = mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
    return report(rc, errno);
}

static int p_remount_usr(void)
{
    long rc = mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL);
    return report(rc, errno);
}

static int p_umount(void)
{
    long rc = umount2("/usr", MNT_DETACH);
    return report(rc, errno);
}

static int p_bpf(void)
{
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = BPF_MAP_TYPE_ARRAY;
    a.key_size = 4;
    a.value_size = 4;
    a.max_entries = 1;
    long rc = syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
    return report(rc, errno);
}

static int p_keyctl(void)
{
    long rc = syscall(SYS_add_key, "user", "probe", "x", 1, -3 /* KEY_SPEC_SESSION_KEYRING */);
    return report(rc, errno);
}

static int p_io_uring(void)
{
    char params[120];
    memset(params, 0, sizeof params);
    long rc = syscall(SYS_io_uring_setup, 4, params);
    return report(rc, errno);
}

static int p_tiocsti(void)
{
    char c = 'x';
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    long rc = ioctl(fd >= 0 ? fd : 0, TIOCSTI, &c);
    return report(rc, errno);
}

static int p_tiocsti_high(void)
{
    /* Same request with garbage in the upper 32 bits: the kernel ignores them. */
    char c = 'x';
    long rc = syscall(SYS_ioctl, 0, 0xdead000000000000UL | TIOCSTI, &c);
    return report(rc, errno);
}

static int p_tioclinux(void)
{
    char sub = 2;
    long rc = ioctl(0, TIOCLINUX, &sub);
    return report(rc, errno);
}

static int p_userns(void)
{
    long rc = unshare(CLONE_NEWUSER);
    return report(rc, errno);
}

static int p_clone_newuser(void)
{
    long rc = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
    if (rc == 0)
        _exit(0);
    if (rc > 0)
        waitpid((pid_t)rc, NULL, 0);
    return report(rc, errno);
}

static int p_clone3(void)
{
    struct { unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } a;
    memset(&a, 0, sizeof a);
    a.flags = CLONE_NEWUSER;
    a.exit_signal = SIGCHLD;
    long rc = syscall(SYS_clone3, &a, sizeof a);
    if (rc == 0)
        _exit(0);
    return report(rc, errno);
}

static int p_setns(void)
{
    int fd = open("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);
    long rc = setns(fd, 0);
    return report(rc, errno);
}

static int p_devmem(void)
{
    long rc = open("/dev/mem", O_RDONLY | O_CLOEXEC);
    return report(rc, errno);
}

static int p_kmsg(void)
{
    long rc = open("/dev/kmsg", O_RDONLY | O_CLOEXEC);
    return report(rc, errno);
}

static int p_syslog(void)
{
    char buf[64];
    long rc = syscall(SYS_syslog, 3 /* READ_ALL */, buf, (int)sizeof buf);
    return report(rc, errno);
}

static int p_write_usr(void)
{
    long rc = open("/usr/bin/probe-planted", O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
    return report(rc, errno);
}

static int p_write_etc(void)
{
    long rc = open("/etc/passwd", O_WRONLY | O_APPEND | O_CLOEXEC);
    return report(rc, errno);
}

static int p_shadow(void)
{
    long rc = open("/etc/shadow", O_RDONLY | O_CLOEXEC);
    return report(rc, errno);
}

static int p_host_root(void)
{
    /* Host-only paths must not exist in the sandbox. */
    long rc = open("/var/lib", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return report(rc, errno);
}

static int socket_probe(int family, int type)
{
    long rc = socket(family, type | SOCK_CLOEXEC, 0);
    return report(rc, errno);
}

static int p_netlink(void) { return socket_probe(AF_NETLINK, SOCK_RAW); }
static int p_packet(void) { return socket_probe(AF_PACKET, SOCK_RAW); }
static int p_vsock(void) { return socket_probe(40 /* AF_VSOCK */, SOCK_STREAM); }
static int p_bluetooth(void) { return socket_probe(31 /* AF_BLUETOOTH */, SOCK_RAW); }
static int p_appletalk(void) { return socket_probe(5, SOCK_DGRAM); }

/* socketpair() runs the family's socket creation code too: same rows as socket(). */
static int socketpair_probe(int family, int type, int protocol)
{
    int sv[2];
    long rc = socketpair(family, type | SOCK_CLOEXEC, protocol, sv);
    return report(rc, errno);
}

static int p_sp_netlink(void) { return socketpair_probe(AF_NETLINK, SOCK_RAW, 0); }
static int p_sp_packet(void) { return socketpair_probe(AF_PACKET, SOCK_DGRAM, 0); }
static int p_sp_vsock(void) { return socketpair_probe(40 /* AF_VSOCK */, SOCK_STREAM, 0); }
static int p_sp_alg(void) { return socketpair_probe(38 /* AF_ALG */, SOCK_SEQPACKET, 0); }
static int p_sp_sctp(void) { return socketpair_probe(AF_INET, SOCK_STREAM, IPPROTO_SCTP); }

static int proto_probe(int family, int type, int protocol)
{
    long rc = socket(family, type | SOCK_CLOEXEC, protocol);
    return report(rc, errno);
}

/* Protocol numbers that autoload rarely used protocol modules, and raw sockets. */
static int p_sctp(void) { return proto_probe(AF_INET, SOCK_STREAM, IPPROTO_SCTP); }
static int p_sctp6(void) { return proto_probe(AF_INET6, SOCK_SEQPACKET, 0); }
static int p_dccp(void) { return proto_probe(AF_INET, 6 /* SOCK_DCCP */, 0); }
static int p_l2tp(void) { return proto_probe(AF_INET, SOCK_DGRAM, 115 /* IPPROTO_L2TP */); }
static int p_raw(void) { return proto_probe(AF_INET, SOCK_RAW, IPPROTO_ICMP); }

static int p_modify_ldt(void)
{
    char desc[16];
    memset(desc, 0, sizeof desc);
    long rc = syscall(SYS_modify_ldt, 1, desc, sizeof desc);
    return report(rc, errno);
}

static int p_clone_parent(void)
{
    /* A child of our parent: for a Python context, the daemon. */
    long rc = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
    if (rc == 0)
        _exit(0);
    return report(rc, errno);
}

static int p_clone3_plain(void)
{
    /* Even harmless flags: clone3's flags are in memory, so it is ENOSYS as a whole. */
    struct { unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; } a;
    memset(&a, 0, sizeof a);
    a.exit_signal = SIGCHLD;
    long rc = syscall(SYS_clone3, &a, sizeof a);
    if (rc == 0)
        _exit(0);
    if (rc > 0)
        waitpid((pid_t)rc, NULL, 0);
    return report(rc, errno);
}

static int p_pidfd_getfd(void)
{
    int pidfd = (int)syscall(SYS_pidfd_open, getppid(), 0);
    long rc = syscall(SYS_pidfd_getfd, pidfd, 0, 0);
    return report(rc, errno);
}

/* ---- what must keep working ---- */

static int works(long rc, int err)
{
    if (rc < 0) {
        printf("%s: FAILED errno %s (%d)\n", g_name, errname(err), err);
        return 1;
    }
    printf("%s: works\n", g_name);
    return 0;
}

static int p_ok_socketpair_unix(void)
{
    int sv[2];
    long rc = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    int e = errno;
    if (rc == 0 && (write(sv[0], "x", 1) != 1 || read(sv[1], &(char){ 0 }, 1) != 1)) {
        rc = -1;
        e = EIO;
    }
    return works(rc, e);
}

static int p_ok_inet(void)
{
    long rc = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    int e = errno;
    if (rc >= 0) {
        rc = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
        e = errno;
    }
    return works(rc, e);
}

static void *thread_main(void *arg)
{
    return arg;
}

static int p_ok_threads(void)
{
    /* glibc's pthread_create tries clone3 first and falls back to clone on ENOSYS. */
    static int tags[4];
    pthread_t t[4];
    int n = 0, e = 0;
    for (; n < 4; n++) {
        e = pthread_create(&t[n], NULL, thread_main, &tags[n]);
        if (e)
            break;
    }
    void *ret;
    for (int i = 0; i < n; i++)
        if (pthread_join(t[i], &ret) || ret != &tags[i])
            e = EIO;
    return works(e ? -1 : 0, e);
}

static int p_ok_fork(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(42);
    int st = 0, e = errno;
    if (c > 0 && (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 42)) {
        c = -1;
        e = ECHILD;
    }
    return works(c, e);
}

static int p_socket_high(void)
{
    long rc = syscall(SYS_socket, 0x100000000UL | AF_NETLINK, SOCK_RAW, 0);
    return report(rc, errno);
}

static int p_perf(void)
{
    char attr[128];
    memset(attr, 0, sizeof attr);
    long rc = syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);
    return report(rc, errno);
}

static int p_userfaultfd(void)
{
    long rc = syscall(SYS_userfaultfd, 0);
    return report(rc, errno);
}

static int p_personality(void)
{
    long rc = personality(ADDR_NO_RANDOMIZE);
    if (rc < 0)
        return report(rc, errno);
    /* glibc returns the old persona; check whether the flag stuck. */
    int now = personality(0xffffffff);
    if (now & ADDR_NO_RANDOMIZE)
        return report(1, 0);
    return report(-1, EPERM);
}

static int p_personality_bit31(void)
{
    long rc = syscall(SYS_personality, 0x80000000UL | ADDR_NO_RANDOMIZE);
    return report(rc, errno);
}

static int p_kexec(void)
{
    long rc = syscall(SYS_kexec_load, 0, 0, NULL, 0);
    return report(rc, errno);
}

static int p_module(void)
{
    long rc = syscall(SYS_finit_module, -1, "", 0);
    return report(rc, errno);
}

static int p_reboot(void)
{
    long rc = syscall(SYS_reboot, 0xfee1dead, 672274793, 0x4321FEDC /* POWER_OFF */, NULL);
    return report(rc, errno);
}

static int p_chroot(void)
{
    long rc = chroot("/tmp");
    return report(rc, errno);
}

static int p_setuid(void)
{
    long rc = setuid(0);
    return report(rc, errno);
}

/* Runs fn in a child and reports how it ended: for attacks that seccomp kills. */
static int in_child(long (*fn)(void))
{
    pid_t c = fork();
    if (c == 0) {
        long rc = fn();
        _exit(rc < 0 ? 3 : 4);
    }
    int st;
    waitpid(c, &st, 0);
    if (WIFSIGNALED(st)) {
        printf("%s: killed by signal %d\n", g_name, WTERMSIG(st));
        return 0;
    }
    printf("%s: ALLOWED (exit %d)\n", g_name, WEXITSTATUS(st));
    return 1;
}

static long x32_getpid(void) { return syscall(0x40000000L | 39); }

static long i386_getpid(void)
{
    long rc;
    __asm__ volatile("int $0x80" : "=a"(rc) : "0"(20L) : "memory");
    return rc;
}

static int p_x32(void) { return in_child(x32_getpid); }
static int p_i386(void) { return in_child(i386_getpid); }

static int p_fork_bomb(void)
{
    /* Expect EAGAIN from the pids limit long before the host suffers. */
    int n = 0, e = 0;
    pid_t kids[4096];
    for (; n < 4096; n++) {
        pid_t c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        if (c < 0) {
            e = errno;
            break;
        }
        kids[n] = c;
    }
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    if (e) {
        printf("%s: errno %s (%d) after %d forks\n", g_name, errname(e), e, n);
        return 0;
    }
    printf("%s: ALLOWED (%d forks)\n", g_name, n);
    return 1;
}

static const struct {
    const char *name;
    int (*fn)(void);
} probes[] = {
    { "ptrace", p_ptrace }, { "ptrace-init", p_ptrace_init }, { "kill-init", p_kill_init },
    { "mount", p_mount }, { "remount-usr", p_remount_usr }, { "umount", p_umount },
    { "bpf", p_bpf }, { "keyctl", p_keyctl }, { "io_uring", p_io_uring },
    { "tiocsti", p_tiocsti }, { "tiocsti-high", p_tiocsti_high }, { "tioclinux", p_tioclinux },
    { "userns", p_userns }, { "clone-newuser", p_clone_newuser }, { "clone3", p_clone3 },
    { "setns", p_setns }, { "devmem", p_devmem }, { "kmsg", p_kmsg }, { "syslog", p_syslog },
    { "write-usr", p_write_usr }, { "write-etc", p_write_etc }, { "shadow", p_shadow },
    { "host-root", p_host_root }, { "socket-netlink", p_netlink }, { "socket-packet", p_packet },
    { "socket-vsock", p_vsock }, { "socket-bluetooth", p_bluetooth },
    { "socket-appletalk", p_appletalk }, { "socket-high", p_socket_high },
    { "perf", p_perf }, { "userfaultfd", p_userfaultfd }, { "personality", p_personality },
    { "personality-bit31", p_personality_bit31 }, { "kexec", p_kexec }, { "module", p_module },
    { "reboot", p_reboot }, { "chroot", p_chroot }, { "setuid", p_setuid },
    { "x32", p_x32 }, { "i386", p_i386 }, { "fork-bomb", p_fork_bomb },
    { "socketpair-netlink", p_sp_netlink }, { "socketpair-packet", p_sp_packet },
    { "socketpair-vsock", p_sp_vsock }, { "socketpair-alg", p_sp_alg },
    { "socketpair-sctp", p_sp_sctp }, { "socket-sctp", p_sctp }, { "socket-sctp6", p_sctp6 },
    { "socket-dccp", p_dccp }, { "socket-l2tp", p_l2tp }, { "socket-raw", p_raw },
    { "modify-ldt", p_modify_ldt }, { "clone-parent", p_clone_parent },
    { "clone3-plain", p_clone3_plain }, { "pidfd-getfd", p_pidfd_getfd },
    { "ok-socketpair-unix", p_ok_socketpair_unix }, { "ok-inet", p_ok_inet },
    { "ok-threads", p_ok_threads }, { "ok-fork", p_ok_fork },
};

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: probe <attack> | probe list\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        if (!strcmp(argv[1], "list")) {
            printf("%s\n", probes[i].name);
            continue;
        }
        if (!strcmp(argv[1], probes[i].name)) {
            g_name = probes[i].name;
            return probes[i].fn();
        }
    }
    if (!strcmp(argv[1], "list"))
        return 0;
    fprintf(stderr, "probe: unknown attack %s\n", argv[1]);
    return 2;
}
