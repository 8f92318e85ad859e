/*
 * zygote.c — sandboxd-zygote: a process that imports the Python data stack once and then
 * forks one child per Python context on the daemon's request, so that a context is ready
 * in milliseconds and shares the imported modules' memory copy-on-write.
 *
 * Started by the daemon (zygote_client.c) with its control socket (SOCK_SEQPACKET) on fd
 * 3, as the daemon's user: root, or an ordinary user in non-root mode (then every
 * context is created the double-fork way, see direct_init()). It runs no user code and stays single-threaded: fork()
 * copies only the calling thread, so a thread pool started by an import (numexpr,
 * OpenBLAS) would leave its locks held forever in every child. The thread-count variables
 * are set before Python starts and the thread count is checked after preload; more than
 * one thread is a start-up failure, reported in the ready message.
 *
 * Start-up: environment (thread counts, MPLCONFIGDIR → the pre-built font cache, or a
 * private copy of it when it is read-only for us, IPYTHONDIR), an isolated embedded interpreter (no user site, no PYTHON* variables,
 * sys.executable = /usr/bin/python3, the runtimes dir first on sys.path), the --preload
 * modules, sandboxd_runtime.preload(), gc.freeze() (so a child's collections never write
 * to the shared pages), the seccomp filter compiled once, then malloc_trim() and no free
 * memory left where a child would allocate from shared pages (every free heap chunk and
 * every free block of a used pymalloc pool allocated for good). Before that, every host
 * path the interpreter holds is rewritten to the sandbox's side and argv is cleared
 * (hide_host_paths, hide_argv). Then `ready`.
 *
 * The loop never waits for a child (each runs in its sandbox's cgroups from its first
 * step: waiting for it would run this loop, and every tenant's context creation, at that
 * sandbox's CPU quota). Each request is checked (sizes, NUL termination, exactly three
 * fds, cgroup paths under /sys/fs/cgroup/), then the context is created directly in the
 * sandbox's pid namespace as the daemon's child (one clone3, see "creating the context
 * process" below) and the reply leaves at once, with the pid inside read from the
 * clone's pidfd; the child tells its own success ("ready") or failure ("failed") on the
 * context's channel. Where the direct way is not available (a non-root daemon), the
 * child forks once more inside jail_enter(); the reply then needs the intermediate's
 * report, which is awaited in the same poll() as new requests, each with its own
 * deadline (REPORT_TIMEOUT_MS), and exited intermediates are reaped without blocking.
 * The request is dropped as soon as the child has its copy (zyg_forget_request): no later
 * child inherits another tenant's environment, cwd or cgroup paths.
 * The daemon is trusted (it is our parent and the only peer of the socket), but the
 * checks keep a daemon bug from becoming a zygote crash.
 *
 * Exits 0 when the control socket reaches EOF (the daemon is gone); PR_SET_PDEATHSIG
 * covers a daemon that dies without closing it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zygote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../jail_seccomp.h"

#define REPORT_TIMEOUT_MS 10000
#define PATH_CAP 1024
#define CGROUP_PREFIX "/sys/fs/cgroup/"

struct zyg_python zyg_py;

static struct opts {
    char runtimes[PATH_CAP];        /* host runtimes dir (holds python/) */
    char inside_runtimes[PATH_CAP]; /* where the sandbox sees it */
    char mpl_cache[PATH_CAP];
    char ipython_dir[PATH_CAP];
    char preload[1024];             /* comma-separated module names */
} opt = { .inside_runtimes = "/opt/sandboxd" };

static char host_python_dir[PATH_CAP];
static char host_mpl_cache[PATH_CAP];   /* --mpl-cache as given (before a private copy) */
static struct jail_sc_prog seccomp_prog;
/* The receive buffer: its own mapping (see zyg_forget_request), ZYG_MSG_MAX bytes. */
static char *msgbuf;
static struct zyg_req req;   /* the request being served, parsed in place in msgbuf */
static unsigned unreaped;   /* intermediates forked and not yet waited for */

/* The environment every context starts from is replaced in the child by _enter()
 * (os.environ and the C environment together: clearenv() ran before, os.environ's
 * mapping is emptied directly instead of key by key, which would call unsetenv() and
 * rebuild its key list once per key).
 * Host paths (the runtimes dir, IPython's and matplotlib's dirs) are gone from the
 * interpreter before the first fork (hide_host_paths): a module the runtime package
 * imports lazily in a context is found under the sandbox's path of the runtimes dir.
 * No import cache needs invalidating in the child: no finder for the sandbox's path was
 * created before fork, and the host path's finders are dropped. Measured (before):
 * rewriting the paths and calling importlib.invalidate_caches() in each child wrote to
 * ~4 MiB of the zygote's pages (every cached FileFinder) and took ~2 ms. */
static const char enter_src[] =
    "import os\n"
    "def _enter(env):\n"
    "    os.environ._data.clear()\n"
    "    for item in env:\n"
    "        key, _, value = item.partition('=')\n"
    "        os.environ[key] = value\n";

/* Reply to request id: a = result, b = inside pid, msg optional. */
static void reply(uint32_t id, int32_t a, int32_t b, const char *msg)
{
    struct zyg_hdr h = { .magic = ZYG_MAGIC, .type = ZYG_FORKED, .id = id, .a = a, .b = b };
    size_t n = msg ? strnlen(msg, 1024) : 0;
    char text[1025];
    if (n) {
        memcpy(text, msg, n);
        text[n++] = '\0';
    }
    h.len = (uint32_t)n;
    /* The socket is blocking in the zygote: a full buffer means the daemon is behind;
     * we wait for it (zyg_send uses MSG_DONTWAIT, so poll and retry). */
    for (;;) {
        int rc = zyg_send(ZYG_CTL_FD, &h, text, NULL, 0);
        if (rc != -EAGAIN)
            return;
        struct pollfd p = { .fd = ZYG_CTL_FD, .events = POLLOUT };
        if (poll(&p, 1, 1000) < 0 && errno != EINTR)
            return;
    }
}

static void send_ready(int32_t a, const char *text)
{
    struct zyg_hdr h = { .magic = ZYG_MAGIC, .type = ZYG_READY, .a = a };
    h.len = (uint32_t)strnlen(text, 1023) + 1;
    (void)zyg_send(ZYG_CTL_FD, &h, text, NULL, 0);
}

/* Describe the pending Python exception in buf (and print its traceback to stderr). */
static void python_error(char *buf, size_t n, const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    const char *s = NULL;
    PyObject *str = value ? PyObject_Str(value) : NULL;
    if (str)
        s = PyUnicode_AsUTF8(str);
    const char *tname = type ? ((PyTypeObject *)type)->tp_name : "error";
    snprintf(buf, n, "%s: %s: %s", what, tname, s ? s : "?");
    PyErr_Clear();
    Py_XDECREF(str);
    PyErr_Restore(type, value, tb);
    PyErr_Print();
}

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -errno;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int copy_opt(char *dst, size_t cap, const char *v, const char *name)
{
    int n = snprintf(dst, cap, "%s", v);
    if (n < 0 || (size_t)n >= cap) {
        fprintf(stderr, "sandboxd-zygote: %s too long\n", name);
        return -ENAMETOOLONG;
    }
    return 0;
}

/* dst (PATH_CAP bytes) = a + b; -ENAMETOOLONG when it does not fit. */
static int join_path(char *dst, const char *a, const char *b)
{
    size_t la = strnlen(a, PATH_CAP), lb = strlen(b);
    if (la + lb >= PATH_CAP)
        return -ENAMETOOLONG;
    memcpy(dst, a, la);
    memcpy(dst + la, b, lb + 1);
    return 0;
}

static int parse_args(int argc, char **argv)
{
    static const char *const names[] = {
        "--runtimes", "--inside-runtimes", "--mpl-cache", "--ipython-dir", "--preload",
    };
    char *const dsts[] = { opt.runtimes, opt.inside_runtimes, opt.mpl_cache, opt.ipython_dir,
                           opt.preload };
    const size_t caps[] = { sizeof opt.runtimes, sizeof opt.inside_runtimes,
                            sizeof opt.mpl_cache, sizeof opt.ipython_dir, sizeof opt.preload };
    for (int i = 1; i < argc; i++) {
        size_t k;
        for (k = 0; k < sizeof names / sizeof names[0]; k++)
            if (!strcmp(argv[i], names[k]))
                break;
        if (k == sizeof names / sizeof names[0] || i + 1 >= argc) {
            fprintf(stderr, "sandboxd-zygote: bad argument %s\nusage: sandboxd-zygote "
                    "--runtimes DIR [--inside-runtimes DIR] [--mpl-cache DIR] "
                    "[--ipython-dir DIR] [--preload MOD,MOD]\n", argv[i]);
            return -EINVAL;
        }
        if (copy_opt(dsts[k], caps[k], argv[++i], names[k]))
            return -EINVAL;
    }
    if (!opt.runtimes[0]) {
        fprintf(stderr, "sandboxd-zygote: --runtimes is required\n");
        return -EINVAL;
    }
    return 0;
}

/* Copy the regular files of directory src into directory dst (created 0700 if needed).
 * 0 or -errno (errno set). */
static int copy_dir_files(const char *src, const char *dst)
{
    if (mkdir(dst, 0700) < 0 && errno != EEXIST)
        return -errno;
    int sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
        dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
    int rc = d && dfd >= 0 ? 0 : -errno;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
            continue;
        int in = openat(sfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
            if (in >= 0)
                close(in);
            continue;   /* not a regular file, or unreadable: matplotlib does without */
        }
        int out = openat(dfd, de->d_name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                         0600);
        char buf[16384];
        ssize_t n = out < 0 ? -1 : 0;
        while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) {
                n = -1;
                break;
            }
        if (n < 0)
            rc = -(errno ? errno : EIO);
        close(in);
        if (out >= 0)
            close(out);
    }
    int e = errno;
    if (d)
        closedir(d);   /* closes sfd */
    else if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    errno = e;
    return rc;
}

/* Matplotlib insists on a writable MPLCONFIGDIR (else it warns on stderr and scans the
 * fonts into a fresh temporary directory: the pre-built list would be wasted). When the
 * pre-built cache is read-only for us (a daemon run by an ordinary user, the build dir
 * owned by someone else), copy its files (one font list, ~35 KB) into "matplotlib" in
 * our IPython dir, which is private to this zygote (or the --ipython-dir given), and
 * use that. dir (cap bytes) is replaced by the copy's path. 0 or -errno (errno set). */
static int private_mpl_dir(char *dir, size_t cap)
{
    char copy[PATH_CAP];
    int n = snprintf(copy, sizeof copy, "%s/matplotlib", opt.ipython_dir);
    if (n < 0 || (size_t)n >= sizeof copy || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -ENAMETOOLONG;
    }
    int rc = copy_dir_files(dir, copy);
    if (rc)
        return rc;
    memcpy(dir, copy, (size_t)n + 1);
    return 0;
}

/* The process environment Python starts with (inherited by nothing: every context's
 * environment is replaced from its request). */
static int set_environment(char *err, size_t errlen)
{
    static const char *const threads[] = {
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS",
    };
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++)
        if (setenv(threads[i], "1", 1) < 0)
            goto fail;
    if (!opt.ipython_dir[0]) {
        snprintf(opt.ipython_dir, sizeof opt.ipython_dir, "/tmp/sandboxd-ipython-XXXXXX");
        if (!mkdtemp(opt.ipython_dir))
            goto fail;
    } else if (mkdir(opt.ipython_dir, 0700) < 0 && errno != EEXIST) {
        goto fail;
    }
    if (setenv("IPYTHONDIR", opt.ipython_dir, 1) < 0)
        goto fail;
    memcpy(host_mpl_cache, opt.mpl_cache, sizeof host_mpl_cache);
    if (opt.mpl_cache[0] && access(opt.mpl_cache, W_OK) < 0 &&
        private_mpl_dir(opt.mpl_cache, sizeof opt.mpl_cache) < 0)
        goto fail;
    if (opt.mpl_cache[0] && setenv("MPLCONFIGDIR", opt.mpl_cache, 1) < 0)
        goto fail;
    (void)unsetenv("MPLBACKEND");
    return 0;
fail:
    snprintf(err, errlen, "setting up the environment failed: %s", strerror(errno));
    return -errno;
}

static int start_python(char *err, size_t errlen)
{
    /* UTF-8 mode: open(), stdio and the filesystem use UTF-8 whatever the daemon's locale
     * (contexts run with LANG=C.UTF-8, but the encoding is fixed here, before fork). */
    PyPreConfig pre;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    PyStatus pst = Py_PreInitialize(&pre);
    if (PyStatus_Exception(pst)) {
        snprintf(err, errlen, "Python pre-initialisation failed: %s",
                 pst.err_msg ? pst.err_msg : "?");
        return -EINVAL;
    }
    PyConfig c;
    PyConfig_InitIsolatedConfig(&c);   /* no user site, no PYTHON* vars, no signal handlers */
    c.site_import = 1;                 /* Debian's dist-packages and its .pth files */
    c.write_bytecode = 0;              /* never write .pyc next to the runtimes */
    c.parse_argv = 0;
    PyStatus st = PyConfig_SetBytesString(&c, &c.program_name, "/usr/bin/python3");
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(&c, &c.executable, "/usr/bin/python3");
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&c);
    PyConfig_Clear(&c);
    if (PyStatus_Exception(st)) {
        snprintf(err, errlen, "Python initialisation failed: %s",
                 st.err_msg ? st.err_msg : "?");
        return -EINVAL;
    }
    /* The runtimes dir first on sys.path. */
    PyObject *path = PySys_GetObject("path");   /* borrowed */
    PyObject *dir = PyUnicode_DecodeFSDefault(host_python_dir);
    int rc = path && dir ? PyList_Insert(path, 0, dir) : -1;
    Py_XDECREF(dir);
    if (rc < 0) {
        python_error(err, errlen, "setting sys.path");
        return -EINVAL;
    }
    return 0;
}

static int call_noargs(const char *module, const char *fn, char *err, size_t errlen)
{
    PyObject *m = PyImport_ImportModule(module);
    PyObject *r = m ? PyObject_CallMethod(m, fn, NULL) : NULL;
    Py_XDECREF(m);
    if (!r) {
        char what[160];
        snprintf(what, sizeof what, "%s.%s()", module, fn);
        python_error(err, errlen, what);
        return -EINVAL;
    }
    Py_DECREF(r);
    return 0;
}

/* ---- the heap a child starts from -----------------------------------------------------
 *
 * Measured (bench/zygote_bench.c --smaps): most of what a context copied from the
 * zygote was glibc's heap, ~2.6 MiB after `ready`, and almost none of it was the
 * child's own data: each page differed from the zygote's in one to four words, the
 * headers and list pointers of free chunks. Every malloc() a child served from one of
 * the zygote's ~1400 free chunks (scattered over ~1300 pages) wrote to that chunk's
 * page and, unlinking it from its doubly-linked bin, to the pages of its two
 * neighbours in the list; freeing did the same. So before the first fork every free
 * chunk of the main heap is allocated here and kept (drain_heap): its pages stay
 * shared (malloc_trim() has already given the untouched pages inside large free chunks
 * back to the kernel, and allocating a chunk writes only its header), and a child's
 * allocations come from the top of the heap, packed into fresh pages of its own.
 * Measured: -2.1 MiB private per context (bench/zygote_bench.c, after `ready` and after
 * `import pandas` alike). What is kept is the zygote's free space at that moment
 * (~0.5 MiB, ~1400 chunks), once, on pages that were resident anyway. */

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define DRAIN_MAX 8192
static size_t drain_sizes[DRAIN_MAX];
static void *volatile drain_sink;   /* keeps the compiler from dropping the malloc()s */

/* Start of the [heap] mapping (glibc's main arena: its first chunk), or 0. */
static uintptr_t heap_start(void)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return 0;
    char line[512];
    uintptr_t start = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (strstr(line, "[heap]") && sscanf(line, "%lx-%lx", &a, &b) == 2) {
            start = a;
            break;
        }
    }
    fclose(f);
    return start;
}

/* Walk the main heap's chunks from start to the top chunk (which ends at the program
 * break), storing the sizes of the free ones (in a bin: the next chunk's PREV_INUSE bit
 * is clear) in drain_sizes. Their count, or -1 if the chunks do not add up (then
 * nothing is touched). *top: the top chunk. */
static int free_chunks(uintptr_t start, uintptr_t *top)
{
    uintptr_t end = (uintptr_t)sbrk(0), p = start;
    int n = 0;
    if (!start || end == (uintptr_t)-1 || end <= start || start % 16)
        return -1;
    for (;;) {
        size_t size = *(size_t *)(p + sizeof(size_t)) & ~(size_t)7;
        if (size < 4 * sizeof(size_t) || size % 16 || size > end - p)
            return -1;
        if (p + size == end) {
            *top = p;
            return n;
        }
        size_t next = *(size_t *)(p + size + sizeof(size_t));
        if (!(next & 1) && n < DRAIN_MAX)
            drain_sizes[n++] = size;
        p += size;
    }
}

/* Allocate every free chunk of the main heap (exact-size requests: a bin's chunk of that
 * size is the first choice after the thread cache), then empty the thread cache (up to 7
 * chunks of each size up to 1032 bytes; it stops at the first chunk that comes from the
 * top). Single-threaded, after every other start-up step, right before `ready`. */
static void drain_heap(void)
{
    if (SANITIZED)
        return;   /* not glibc's allocator; and the kept chunks would be reported leaks */
    uintptr_t start = heap_start(), top = 0;
    for (int round = 0; round < 8; round++) {
        int n = free_chunks(start, &top);
        if (n <= 0)
            break;
        for (int i = 0; i < n; i++)
            drain_sink = malloc(drain_sizes[i] - sizeof(size_t));
    }
    if (!top)
        return;
    for (size_t sz = 32; sz <= 1040; sz += 16)
        for (int k = 0; k < 7; k++)
            if ((uintptr_t)(drain_sink = malloc(sz - sizeof(size_t))) >= top)
                break;
}

/* The same for Python's small-object allocator (pymalloc: 16 KiB pools of one block size
 * in 1 MiB arenas): a child's allocation of n bytes takes a free block of the first
 * partially used pool of that size, a page shared with the zygote, and filling or
 * emptying a pool relinks the list of pools (their headers, on other shared pages).
 * fill_pools() allocates (and keeps) every free block of every partially used pool,
 * so that a child's first small objects go to pools of its own. It stops for each size
 * at the first block from a pool that was empty (that pool's count is then 1) and frees
 * that block again. Measured: ~5000 blocks, -0.2 MiB private per context.
 * The pool header is read through its first fields (CPython 3.11's struct pool_header:
 * ref.count at 0, szidx at 36, maxnextoffset at 44); the zygote always runs pymalloc
 * (isolated configuration: PYTHONMALLOC is ignored), and fill_pools() checks the header
 * of its first block before trusting any. */
#define PYM_POOL_SIZE (16 * 1024)
#define PYM_CLASSES 32   /* 16, 32, ... 512 bytes */
static void *volatile pym_sink;

static void fill_pools(void)
{
    if (SANITIZED)
        return;
    for (unsigned idx = 0; idx < PYM_CLASSES; idx++) {
        size_t size = (idx + 1) * 16;
        for (long k = 0; k < 1000000; k++) {
            void *p = PyObject_Malloc(size);
            if (!p)
                return;
            uintptr_t pool = (uintptr_t)p & ~(uintptr_t)(PYM_POOL_SIZE - 1);
            unsigned count = *(unsigned *)pool, szidx = *(unsigned *)(pool + 36),
                     maxnext = *(unsigned *)(pool + 44);
            if (szidx != idx || maxnext != PYM_POOL_SIZE - size) {
                PyObject_Free(p);
                return;   /* not the pool layout this code knows */
            }
            if (count == 1) {
                PyObject_Free(p);
                break;
            }
            pym_sink = p;
        }
    }
}

/* ---- host paths -----------------------------------------------------------------------
 *
 * What the zygote imported and configured names host directories: the runtimes dir (a
 * checkout), IPython's dir (in the daemon's state dir), matplotlib's font cache (in the
 * build dir). A context must show sandbox-side names only (docs/security.md, class 11),
 * so before the first fork every such string the interpreter keeps is rewritten to the
 * sandbox's side: the runtimes dir to where the sandbox mounts it (--inside-runtimes),
 * IPython's and matplotlib's dirs to names below it (they exist only on the host; what
 * was read from them is in memory already, and a context never writes there).
 * sandboxd_runtime.hostpaths.rewrite() does the dicts and lists and returns the code
 * objects whose co_filename must change; that field is set here, in place, because
 * code objects are immutable from Python and replacing them would drop the bytecode
 * the warm-up runs quickened (see preload.py) and leave old references behind.
 * Done once, in the zygote: no cost per context. The zygote's own argv (checkout and
 * state paths, shown by /proc/PID/cmdline of every context) is cleared in main(). */

/* map[host] = inside, and the same for host's canonical path when it differs. */
static int map_path(PyObject *map, const char *host, const char *inside)
{
    if (!host[0])
        return 0;
    char canon[PATH_MAX];
    const char *hosts[2] = { host, realpath(host, canon) };
    for (int i = 0; i < 2; i++) {
        if (!hosts[i] || (i == 1 && !strcmp(hosts[0], hosts[1])))
            continue;
        PyObject *k = PyUnicode_DecodeFSDefault(hosts[i]), *v = PyUnicode_DecodeFSDefault(inside);
        int rc = k && v ? PyDict_SetItem(map, k, v) : -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int hide_host_paths(char *err, size_t errlen)
{
    char ipy[PATH_CAP], mpl[PATH_CAP];
    if (join_path(ipy, opt.inside_runtimes, "/ipython") ||
        join_path(mpl, opt.inside_runtimes, "/mpl-cache")) {
        snprintf(err, errlen, "--inside-runtimes too long");
        return -ENAMETOOLONG;
    }
    PyObject *map = PyDict_New(), *mod = NULL, *pairs = NULL;
    int rc = -1;
    if (!map || map_path(map, opt.runtimes, opt.inside_runtimes) ||
        map_path(map, opt.ipython_dir, ipy) || map_path(map, host_mpl_cache, mpl))
        goto out;
    mod = PyImport_ImportModule("sandboxd_runtime.hostpaths");
    pairs = mod ? PyObject_CallMethod(mod, "rewrite", "O", map) : NULL;
    if (!pairs || !PyList_Check(pairs))
        goto out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pairs); i++) {
        PyObject *pair = PyList_GET_ITEM(pairs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyCode_Check(PyTuple_GET_ITEM(pair, 0)) || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 1)))
            continue;
        PyCodeObject *co = (PyCodeObject *)PyTuple_GET_ITEM(pair, 0);
        PyObject *name = PyTuple_GET_ITEM(pair, 1);
        Py_INCREF(name);
        Py_SETREF(co->co_filename, name);
    }
    rc = 0;
out:
    if (rc)
        python_error(err, errlen, "hiding host paths");
    Py_XDECREF(pairs);
    Py_XDECREF(mod);
    Py_XDECREF(map);
    return rc;
}

/* Import --preload modules, run sandboxd_runtime.preload(), prepare the child's helpers. */
static int preload(char *err, size_t errlen)
{
    /* Split the comma-separated list by hand (no strtok). */
    for (const char *p = opt.preload; *p;) {
        size_t n = strcspn(p, ",");
        char name[128];
        if (n >= sizeof name) {
            snprintf(err, errlen, "--preload: module name too long");
            return -EINVAL;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        p += n + (p[n] == ',');
        if (!name[0])
            continue;
        PyObject *m = PyImport_ImportModule(name);
        if (!m) {
            char what[160];
            snprintf(what, sizeof what, "import %s", name);
            python_error(err, errlen, what);
            return -EINVAL;
        }
        Py_DECREF(m);
    }
    if (call_noargs("sandboxd_runtime", "preload", err, errlen))
        return -EINVAL;
    PyObject *rt = PyImport_ImportModule("sandboxd_runtime");
    zyg_py.serve_fn = rt ? PyObject_GetAttrString(rt, "serve") : NULL;
    Py_XDECREF(rt);
    PyObject *globals = PyDict_New();
    PyObject *builtins = PyEval_GetBuiltins();   /* borrowed */
    PyObject *res = NULL;
    if (globals && PyDict_SetItemString(globals, "__builtins__", builtins) == 0)
        res = PyRun_String(enter_src, Py_file_input, globals, globals);
    Py_XDECREF(res);
    zyg_py.enter_fn = res && globals ? PyDict_GetItemString(globals, "_enter") : NULL;
    Py_XINCREF((PyObject *)zyg_py.enter_fn);
    Py_XDECREF(globals);
    if (!zyg_py.serve_fn || !zyg_py.enter_fn) {
        python_error(err, errlen, "preparing the context entry");
        return -EINVAL;
    }
    if (hide_host_paths(err, errlen))
        return -EINVAL;
    /* Everything alive now is shared by all children: move it out of the collector's
     * generations so that a child's collection never writes to (and copies) its pages. */
    int rc = call_noargs("gc", "freeze", err, errlen);
    return rc;
}

/* Check a request and point r's fields into the datagram. 0 or -EINVAL. */
static int parse_request(const struct zyg_hdr *h, char *payload, struct zyg_req *r)
{
    if (h->len < sizeof r->entry + 1 || h->a < 0 || h->a > ZYG_MAX_ENV)
        return -EINVAL;
    memcpy(&r->entry, payload, sizeof r->entry);
    for (int i = 0; i < 4; i++) {
        const char *cg = r->entry.cgroup_procs[i];
        if (!memchr(cg, '\0', sizeof r->entry.cgroup_procs[i]))
            return -EINVAL;
        if (cg[0] && (strncmp(cg, CGROUP_PREFIX, strlen(CGROUP_PREFIX)) || strstr(cg, "/../")))
            return -EINVAL;
    }
    if (r->entry.ns_pid <= 0 || r->entry.anchor_pid < 0)
        return -EINVAL;
    char *p = payload + sizeof r->entry, *end = payload + h->len;
    char *nul = memchr(p, '\0', (size_t)(end - p));
    if (!nul || nul - p >= ZYG_CWD_MAX || p[0] != '/')
        return -EINVAL;
    r->cwd = p;
    p = nul + 1;
    r->nenv = 0;
    for (int i = 0; i < h->a; i++) {
        nul = p < end ? memchr(p, '\0', (size_t)(end - p)) : NULL;
        if (!nul || !memchr(p, '=', (size_t)(nul - p)) || p[0] == '=')
            return -EINVAL;
        r->env[r->nenv++] = p;
        p = nul + 1;
    }
    r->env[r->nenv] = NULL;
    return p == end ? 0 : -EINVAL;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- creating the context process ----------------------------------------------------
 *
 * The direct way (used whenever direct_init() succeeded): the zygote joins the sandbox's
 * pid namespace for its children only (setns(CLONE_NEWPID) through a pidfd of the
 * sandbox's process; the zygote itself stays where it is), creates the context with one
 * clone3(CLONE_PARENT), and goes back to its own pid namespace for children at once.
 * CLONE_PARENT makes the daemon the context's parent, as the old intermediate's exit did
 * (the daemon, a child subreaper, inherited the orphan), so the daemon still reaps it
 * and gets its real exit status (jail_adopt). Measured on the 2-vCPU VM: the second
 * fork copied the page tables of the ~115 MiB image again and the intermediate's exit
 * tore them down, 3-6 ms of CPU per context on the critical path or next to it.
 *
 * clone3 bypasses glibc's fork(), so its bookkeeping is redone here: the child's
 * pthread tid field is set by CLONE_CHILD_SETTID at the address glibc registered with
 * set_tid_address (PR_GET_TID_ADDRESS), CLONE_CHILD_CLEARTID as glibc does, and the
 * robust-futex list head is registered again (the kernel does not copy it). What is
 * skipped: pthread_atfork handlers (this process is single-threaded and none of them is
 * a thread pool's: only libbsd registers one, for its arc4random, which also checks
 * getpid()) and the re-initialisation of glibc's internal locks, which no other thread
 * can hold. Python's own fork hooks run as before (PyOS_BeforeFork/AfterFork_*).
 * If any piece is missing (old kernel, no PR_GET_TID_ADDRESS) the classic double fork
 * through jail_enter() is used. */

static struct {
    bool on;
    int own_pidns;        /* the zygote's pid namespace, to return to after each clone */
    pid_t *tid_addr;      /* glibc's tid field of this thread */
    void *robust_head;
    size_t robust_len;
} direct = { .own_pidns = -1 };

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

struct zyg_clone_args {   /* struct clone_args, CLONE_ARGS_SIZE_VER0 */
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static void direct_init(void)
{
    pid_t *tid = NULL;
    void *head = NULL;
    size_t len = 0;
    if (prctl(PR_GET_TID_ADDRESS, &tid, 0, 0, 0) < 0 || !tid || *tid != gettid())
        return;
    if (syscall(SYS_get_robust_list, 0, &head, &len) < 0)
        return;
    int fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    /* Joining a pid namespace needs CAP_SYS_ADMIN in our own user namespace as well as
     * in the target's: a daemon run by an ordinary user has the latter (it owns every
     * sandbox's user namespace) but never the former, so setns(CLONE_NEWPID) is EPERM
     * for each request. Probe it once with our own namespace (a no-op when allowed):
     * without it, the child joins the user namespace first and forks (jail_enter). */
    if (setns(fd, CLONE_NEWPID) < 0) {
        close(fd);
        return;
    }
    direct.own_pidns = fd;
    direct.tid_addr = tid;
    direct.robust_head = head;
    direct.robust_len = len;
    direct.on = true;
}

/* Create the context's process in the pid namespace of the process pidfd names: 0 in
 * the child, its host pid in the zygote (*child_pidfd set), or -errno. Exits the zygote
 * if it cannot return to its own pid namespace (every later context would land in the
 * wrong sandbox). */
static pid_t clone_into(int pidfd, int *child_pidfd)
{
    if (setns(pidfd, CLONE_NEWPID) < 0)
        return -errno;
    struct zyg_clone_args ca = {
        .flags = CLONE_PARENT | CLONE_PIDFD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID,
        .pidfd = (uint64_t)(uintptr_t)child_pidfd,
        .child_tid = (uint64_t)(uintptr_t)direct.tid_addr,
        /* exit_signal must be 0 with CLONE_PARENT: the kernel uses the zygote's own
         * (SIGCHLD, to the daemon). */
    };
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid == 0) {
        (void)syscall(SYS_set_robust_list, direct.robust_head, direct.robust_len);
        return 0;
    }
    int err = errno;
    if (setns(direct.own_pidns, CLONE_NEWPID) < 0) {
        fprintf(stderr, "sandboxd-zygote: cannot return to its pid namespace: %s\n",
                strerror(errno));
        _exit(1);
    }
    return pid < 0 ? -err : (pid_t)pid;
}

/* The context's pid inside the sandbox: the last field of the NSpid line in its pidfd's
 * fdinfo (the innermost pid namespace). Readable for a zombie too (the context is the
 * daemon's child, and the daemon reaps only what it was told about). > 0 or -errno. */
static pid_t inside_pid(int child_pidfd)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", child_pidfd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (n <= 0)
        return n < 0 ? -e : -EIO;
    buf[n] = '\0';
    char *l = strstr(buf, "\nNSpid:");
    if (!l)
        return -ENOSYS;
    l += strlen("\nNSpid:");
    long last = -1;
    for (;;) {
        char *end;
        long v = strtol(l, &end, 10);
        if (end == l)
            break;
        last = v;
        l = end;
    }
    return last > 0 ? (pid_t)last : -ESRCH;
}

/* Forget the request once the child has its copy: no later child is forked with this
 * tenant's cgroup paths, cwd or environment (class 1 of docs/security.md). The request
 * is parsed in place (parse_request only points into msgbuf; the Python objects a
 * context needs are built in the child), so the buffer and the parsed struct are all
 * there is. The buffer's pages are dropped (MADV_DONTNEED: the next touch finds zeros)
 * rather than written: zeroing them would first copy each page the child shares with
 * us (16 page copies per context) and leave the child the only owner of the old ones;
 * dropped, they stay the child's until it drops them too (zygote_child.c, once the
 * environment is built), and nothing is copied. explicit_bzero if madvise fails. */
void zyg_forget_request(void)
{
    if (msgbuf && madvise(msgbuf, ZYG_MSG_MAX, MADV_DONTNEED) < 0)
        explicit_bzero(msgbuf, ZYG_MSG_MAX);
    explicit_bzero(&req, sizeof req);
}

static void forget_request(struct zyg_req *r)
{
    (void)r;   /* always &req */
    zyg_forget_request();
}

static void close_request_fds(struct zyg_req *r)
{
    close(r->channel_fd);
    close(r->stdout_fd);
    close(r->stderr_fd);
}

/* The direct way: clone the context into the sandbox's pid namespace and reply at once
 * with its host pid and its pid inside. Nothing here waits for the child, which joins the
 * sandbox's cgroups first thing and would make this loop run at that sandbox's CPU
 * quota: whatever happens to it later (entering the sandbox failed, or it got ready)
 * reaches the daemon on the context's own channel ({"type":"failed"} or "ready") and
 * as its exit status, and the daemon bounds the wait with the context start timeout. */
static void serve_direct(struct zyg_req *r)
{
    char msg[256];
    int child_pidfd = -1;
    uint32_t id = r->id;
    int pidfd = (int)syscall(SYS_pidfd_open, r->entry.ns_pid, 0);
    if (pidfd < 0) {
        int e = errno;
        close_request_fds(r);
        forget_request(r);
        snprintf(msg, sizeof msg, "entering the sandbox failed: %s", strerror(e));
        reply(id, -e, 0, msg);
        return;
    }
    (void)call_noargs("gc", "freeze", msg, sizeof msg);
    PyOS_BeforeFork();
    pid_t pid = clone_into(pidfd, &child_pidfd);
    if (pid == 0) {
        PyOS_AfterFork_Child();
        zyg_child_main(r, -1, pidfd, &seccomp_prog);
    }
    PyOS_AfterFork_Parent();
    close(pidfd);
    close_request_fds(r);
    forget_request(r);
    if (pid < 0) {
        snprintf(msg, sizeof msg, "zygote: clone: %s", strerror(-pid));
        reply(id, pid, 0, msg);
        return;
    }
    pid_t inside = inside_pid(child_pidfd);
    if (inside < 0) {
        /* Not seen in practice (the fdinfo of a pidfd always has NSpid). The child is
         * killed, not waited for: b names it for the daemon to reap. */
        (void)syscall(SYS_pidfd_send_signal, child_pidfd, SIGKILL, NULL, 0);
        snprintf(msg, sizeof msg, "zygote: the context's pid in the sandbox: %s",
                 strerror(-inside));
        reply(id, inside, pid, msg);
    } else {
        reply(id, pid, inside, NULL);
    }
    close(child_pidfd);
}

/* ---- the double-fork way: replies that wait for the intermediate ---------------------
 *
 * Without the direct way (a daemon run by an ordinary user) the context's host pid is
 * known only to the intermediate process of jail_enter(), which already runs in the
 * sandbox's cgroups. Its report (and the context's pid inside) is awaited here, but
 * never by blocking: each request waiting for its records has a slot with its own
 * deadline, and serve_loop() polls the control socket and every slot's report pipe
 * together. A sandbox starved of CPU so delays only its own contexts. A slot holds no
 * tenant data: an id, a descriptor, pids. */
#define MAX_WAITING 256

struct waiting {
    uint32_t id;
    int rp;               /* read end of the report pipe (non-blocking) */
    pid_t mid;            /* the intermediate (our child, reaped by reap_children) */
    int32_t host, inside; /* records received so far (0 = not yet) */
    long long deadline;
};
static struct waiting waiting[MAX_WAITING];
static unsigned nwaiting;

/* Reply for slot i with result (host pid or -errno) and free the slot. On failure the
 * context (if it was created) is killed; b then names it for the daemon to reap. */
static void waiting_done(unsigned i, int32_t result, const char *msg)
{
    struct waiting *w = &waiting[i];
    int32_t b = w->inside;
    if (result < 0) {
        if (w->host > 0)
            kill(w->host, SIGKILL);
        if (w->mid > 0)
            kill(w->mid, SIGKILL);   /* stuck in its sandbox: it is ours to reap */
        b = w->host > 0 ? w->host : 0;
    }
    reply(w->id, result, b, msg);
    close(w->rp);
    waiting[i] = waiting[--nwaiting];
}

/* Read what slot i's report pipe holds. Up to two records, in either order: the
 * intermediate's (host pid or -errno) and the context's (tagged: pid inside or -errno). */
static void waiting_read(unsigned i)
{
    struct waiting *w = &waiting[i];
    char msg[256];
    for (;;) {
        int32_t v;
        ssize_t n = read(w->rp, &v, sizeof v);   /* records are written whole (< PIPE_BUF) */
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n != (ssize_t)sizeof v) {
            snprintf(msg, sizeof msg, "the context died while entering the sandbox (no report)");
            waiting_done(i, -ECHILD, msg);
            return;
        }
        if (ZYG_REPORT_IS_INSIDE(v) && v > 0) {
            w->inside = v & 0x3fffffff;
        } else if (ZYG_REPORT_IS_INSIDE(v)) {
            int32_t e = -(-v - 0x40000000);
            snprintf(msg, sizeof msg, "the context could not drop privileges in the sandbox: %s",
                     strerror(-e));
            waiting_done(i, e, msg);
            return;
        } else if (v > 0) {
            w->host = v;
        } else {
            int32_t e = v ? v : -EIO;
            snprintf(msg, sizeof msg, "entering the sandbox failed: %s", strerror(-e));
            waiting_done(i, e, msg);
            return;
        }
        if (w->host > 0 && w->inside > 0) {
            waiting_done(i, w->host, NULL);
            return;
        }
    }
}

static void serve_forked(struct zyg_req *r)
{
    char msg[256];
    int rp[2];
    uint32_t id = r->id;
    if (nwaiting == MAX_WAITING || pipe2(rp, O_CLOEXEC) < 0) {
        int e = nwaiting == MAX_WAITING ? EAGAIN : errno;
        close_request_fds(r);
        forget_request(r);
        snprintf(msg, sizeof msg, "zygote: %s", nwaiting == MAX_WAITING
                 ? "too many contexts are entering their sandboxes" : strerror(e));
        reply(id, -e, 0, msg);
        return;
    }
    (void)call_noargs("gc", "freeze", msg, sizeof msg);
    PyOS_BeforeFork();
    pid_t pid = fork();
    if (pid == 0) {
        PyOS_AfterFork_Child();
        close(rp[0]);
        zyg_child_main(r, rp[1], -1, &seccomp_prog);
    }
    int fork_errno = errno;
    PyOS_AfterFork_Parent();
    close(rp[1]);
    close_request_fds(r);
    forget_request(r);
    if (pid < 0) {
        close(rp[0]);
        snprintf(msg, sizeof msg, "zygote: fork: %s", strerror(fork_errno));
        reply(id, -fork_errno, 0, msg);
        return;
    }
    unreaped++;
    (void)fcntl(rp[0], F_SETFL, O_NONBLOCK);
    waiting[nwaiting++] = (struct waiting){
        .id = id, .rp = rp[0], .mid = pid, .deadline = now_ms() + REPORT_TIMEOUT_MS,
    };
}

/* Reap exited intermediates, never blocking. */
static void reap_children(void)
{
    while (unreaped > 0) {
        pid_t p = waitpid(-1, NULL, WNOHANG);
        if (p < 0 && errno == EINTR)
            continue;
        if (p <= 0) {
            if (p < 0)
                unreaped = 0;   /* ECHILD: nothing left */
            return;
        }
        unreaped--;
        for (unsigned i = 0; i < nwaiting; i++)
            if (waiting[i].mid == p)
                waiting[i].mid = 0;   /* gone: never signal its pid again */
    }
}

/* Take one request from the control socket, if one is waiting. 1 to go on, 0 when the
 * daemon is gone, -1 on a socket error. */
static int take_request(void)
{
    struct zyg_hdr h;
    int fds[ZYG_MAX_FDS], nfds = 0;
    int rc = zyg_recv(ZYG_CTL_FD, &h, msgbuf, ZYG_MSG_MAX - sizeof h, fds, &nfds, 1);
    if (rc == -EAGAIN)
        return 1;
    if (rc == 0)
        return 0;
    if (rc == -EBADMSG) {
        zyg_forget_request();
        if (h.magic == ZYG_MAGIC && h.type == ZYG_FORK)
            reply(h.id, -EBADMSG, 0, "zygote: malformed request");
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "sandboxd-zygote: control socket: %s\n", strerror(-rc));
        return -1;
    }
    if (h.type != ZYG_FORK || nfds != 3) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        zyg_forget_request();
        if (h.type == ZYG_FORK)
            reply(h.id, -EINVAL, 0, "zygote: a fork request needs exactly 3 fds");
        return 1;
    }
    req.id = h.id;
    req.channel_fd = fds[0];
    req.stdout_fd = fds[1];
    req.stderr_fd = fds[2];
    if (parse_request(&h, msgbuf, &req)) {
        close_request_fds(&req);
        forget_request(&req);
        reply(h.id, -EINVAL, 0, "zygote: invalid fork request");
        return 1;
    }
    /* A request with an anchor (non-root daemon) cannot be served the direct way: only
     * the child, once in the sandbox's user namespace, may join its pid namespace. */
    if (direct.on && !req.entry.anchor_pid)
        serve_direct(&req);
    else
        serve_forked(&req);
    return 1;
}

/* One loop, never blocked by a child: the control socket and the report pipes of the
 * requests still waiting (double-fork way) are polled together; deadlines and exited
 * intermediates are handled on each turn. */
static int serve_loop(void)
{
    static struct pollfd p[1 + MAX_WAITING];
    for (;;) {
        long long now = now_ms(), timeout = -1;
        p[0] = (struct pollfd){ .fd = ZYG_CTL_FD, .events = POLLIN };
        for (unsigned i = 0; i < nwaiting; i++) {
            p[1 + i] = (struct pollfd){ .fd = waiting[i].rp, .events = POLLIN };
            long long left = waiting[i].deadline - now;
            if (timeout < 0 || left < timeout)
                timeout = left < 0 ? 0 : left;
        }
        if (unreaped && (timeout < 0 || timeout > 20))
            timeout = 20;   /* intermediates exit within milliseconds of their report */
        unsigned n = nwaiting;
        int pr = poll(p, 1 + n, (int)timeout);
        if (pr < 0 && errno != EINTR) {
            fprintf(stderr, "sandboxd-zygote: poll: %s\n", strerror(errno));
            return 1;
        }
        reap_children();
        /* Slots move when one is freed (the last takes its place): walk backwards, each
         * slot matched with its pollfd by descriptor. */
        for (unsigned i = n; pr > 0 && i-- > 0;)
            if (p[1 + i].revents && i < nwaiting && waiting[i].rp == p[1 + i].fd)
                waiting_read(i);
        now = now_ms();
        for (unsigned i = nwaiting; i-- > 0;)
            if (waiting[i].deadline <= now)
                waiting_done(i, -ETIMEDOUT, "the context did not report from its sandbox in "
                             "time (killed)");
        if (pr > 0 && p[0].revents) {
            int rc = take_request();
            if (rc <= 0)
                return rc < 0 ? 1 : 0;
        }
    }
}

/* Every context is a copy of this process, and /proc/PID/cmdline shows the memory argv
 * was in: host paths (the checkout, the state dir). Its strings are copied in opt now;
 * the area becomes "sandboxd-zygote" followed by NULs (the kernel shows up to the first
 * NUL when the area ends with one). */
static void hide_argv(int argc, char **argv)
{
    char *start = argv[0], *end = argv[argc - 1] + strlen(argv[argc - 1]);
    static const char name[] = "sandboxd-zygote";
    memset(start, 0, (size_t)(end - start));
    if ((size_t)(end - start) >= sizeof name)
        memcpy(start, name, sizeof name);
}

int main(int argc, char **argv)
{
    char err[512] = "";
    int rc;
    /* Die with the daemon; if it is already gone, the socket read below sees EOF. */
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(ZYG_CTL_FD, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET) {
        fprintf(stderr, "sandboxd-zygote: fd 3 must be the daemon's SOCK_SEQPACKET socket\n");
        return 2;
    }
    (void)fcntl(ZYG_CTL_FD, F_SETFD, FD_CLOEXEC);
    if (parse_args(argc, argv))
        return 2;
    hide_argv(argc, argv);
    if (join_path(host_python_dir, opt.runtimes, "/python")) {
        fprintf(stderr, "sandboxd-zygote: runtimes path too long\n");
        return 2;
    }

    if ((rc = set_environment(err, sizeof err)))
        goto fail;
    if ((rc = start_python(err, sizeof err)))
        goto fail;
    if ((rc = preload(err, sizeof err)))
        goto fail;
    int nthreads = count_threads();
    if (nthreads != 1) {
        rc = nthreads < 0 ? nthreads : -EDEADLK;
        snprintf(err, sizeof err, "the zygote has %d threads after preload (must be 1: fork "
                 "would copy only one of them)", nthreads);
        goto fail;
    }
    direct_init();
    if ((rc = jail_seccomp_compile(&seccomp_prog))) {
        snprintf(err, sizeof err, "compiling the seccomp filter failed: %s", strerror(-rc));
        goto fail;
    }
    /* Return free heap memory and merge glibc's fastbins now, once: otherwise the first
     * larger malloc() in each child consolidates them, writing to (and copying) pages
     * all over the zygote's heap. Then leave no free chunk and no free pymalloc block
     * in a used pool for a child to allocate from (see drain_heap, fill_pools). */
    fill_pools();
    malloc_trim(0);
    drain_heap();
    /* Python's version string: "3.11.2 (main, ...)" → "3.11.2". */
    char version[64];
    snprintf(version, sizeof version, "%s", Py_GetVersion());
    version[strcspn(version, " ")] = '\0';
    /* The host paths given on the command line are not needed any more: every child
     * would carry them in its copy of our data (hide_host_paths covered the interpreter). */
    explicit_bzero(opt.runtimes, sizeof opt.runtimes);
    explicit_bzero(opt.mpl_cache, sizeof opt.mpl_cache);
    explicit_bzero(opt.ipython_dir, sizeof opt.ipython_dir);
    explicit_bzero(host_python_dir, sizeof host_python_dir);
    explicit_bzero(host_mpl_cache, sizeof host_mpl_cache);
    msgbuf = mmap(NULL, ZYG_MSG_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (msgbuf == MAP_FAILED) {
        msgbuf = NULL;
        rc = -errno;
        snprintf(err, sizeof err, "mapping the receive buffer failed: %s", strerror(errno));
        goto fail;
    }
    send_ready(0, version);
    return serve_loop();
fail:
    fprintf(stderr, "sandboxd-zygote: %s\n", err);
    send_ready(rc < 0 ? rc : -EINVAL, err);
    return 1;
}
