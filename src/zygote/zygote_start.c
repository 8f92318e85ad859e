/*
 * zygote_start.c — the zygote's start-up, everything before `ready`: the command line,
 * the environment Python starts with (thread counts, matplotlib's font cache or a private
 * copy of it, IPython's dir), an isolated embedded interpreter, the --preload modules and
 * sandboxd_runtime.preload(), the helpers each child calls, host paths rewritten to the
 * sandbox's side, gc.freeze(), and the heap left with nothing free for a child to
 * allocate from shared pages (fill_pools, malloc_trim, drain_heap).
 *
 * Order matters and is kept in zyg_start_up: the heap is trimmed and drained last, after
 * every allocation start-up makes (the seccomp filter included), so that a child's first
 * allocations come from fresh pages of its own. The host paths given on the command line
 * are zeroed at the end: every child would carry them in its copy of our data. Runs once,
 * single-threaded, before the first fork; any failure is reported and the zygote exits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zygote_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_CAP 1024

struct zyg_python zyg_py;

static struct opts {
    char runtimes[PATH_CAP];        /* host runtimes dir (holds python/) */
    char inside_runtimes[PATH_CAP]; /* where the sandbox sees it */
    char mpl_cache[PATH_CAP];
    char ipython_dir[PATH_CAP];
    char preload[1024]; /* comma-separated module names */
} opt = { .inside_runtimes = "/opt/sandboxd" };

static char host_python_dir[PATH_CAP];
static char host_mpl_cache[PATH_CAP]; /* --mpl-cache as given (before a private copy) */

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
static const char enter_src[] = "import os\n"
                                "def _enter(env):\n"
                                "    os.environ._data.clear()\n"
                                "    for item in env:\n"
                                "        key, _, value = item.partition('=')\n"
                                "        os.environ[key] = value\n";

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
    const size_t caps[] = { sizeof opt.runtimes, sizeof opt.inside_runtimes, sizeof opt.mpl_cache,
                            sizeof opt.ipython_dir, sizeof opt.preload };
    for (int i = 1; i < argc; i++) {
        size_t k;
        for (k = 0; k < sizeof names / sizeof names[0]; k++)
            if (!strcmp(argv[i], names[k]))
                break;
        if (k == sizeof names / sizeof names[0] || i + 1 >= argc) {
            fprintf(stderr,
                    "sandboxd-zygote: bad argument %s\nusage: sandboxd-zygote "
                    "--runtimes DIR [--inside-runtimes DIR] [--mpl-cache DIR] "
                    "[--ipython-dir DIR] [--preload MOD,MOD]\n",
                    argv[i]);
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
            continue; /* not a regular file, or unreadable: matplotlib does without */
        }
        int out =
            openat(dfd, de->d_name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
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
        closedir(d); /* closes sfd */
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
        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",     "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",  "NUMEXPR_MAX_THREADS",
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
    PyConfig_InitIsolatedConfig(&c); /* no user site, no PYTHON* vars, no signal handlers */
    c.site_import = 1;               /* Debian's dist-packages and its .pth files */
    c.write_bytecode = 0;            /* never write .pyc next to the runtimes */
    c.parse_argv = 0;
    PyStatus st = PyConfig_SetBytesString(&c, &c.program_name, "/usr/bin/python3");
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(&c, &c.executable, "/usr/bin/python3");
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&c);
    PyConfig_Clear(&c);
    if (PyStatus_Exception(st)) {
        snprintf(err, errlen, "Python initialisation failed: %s", st.err_msg ? st.err_msg : "?");
        return -EINVAL;
    }
    /* The runtimes dir first on sys.path. */
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    PyObject *dir = PyUnicode_DecodeFSDefault(host_python_dir);
    int rc = path && dir ? PyList_Insert(path, 0, dir) : -1;
    Py_XDECREF(dir);
    if (rc < 0) {
        python_error(err, errlen, "setting sys.path");
        return -EINVAL;
    }
    return 0;
}

int zyg_call_noargs(const char *module, const char *fn, char *err, size_t errlen)
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
static void *volatile drain_sink; /* keeps the compiler from dropping the malloc()s */

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
        return; /* not glibc's allocator; and the kept chunks would be reported leaks */
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
#define PYM_CLASSES 32 /* 16, 32, ... 512 bytes */
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
                return; /* not the pool layout this code knows */
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
    if (zyg_call_noargs("sandboxd_runtime", "preload", err, errlen))
        return -EINVAL;
    PyObject *rt = PyImport_ImportModule("sandboxd_runtime");
    zyg_py.serve_fn = rt ? PyObject_GetAttrString(rt, "serve") : NULL;
    Py_XDECREF(rt);
    PyObject *globals = PyDict_New();
    PyObject *builtins = PyEval_GetBuiltins(); /* borrowed */
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
    int rc = zyg_call_noargs("gc", "freeze", err, errlen);
    return rc;
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

/* The command line: options copied (parse_args), argv cleared (hide_argv), the host
 * python dir derived. Non-zero (after a message on stderr) when the zygote must exit 2. */
int zyg_start_args(int argc, char **argv)
{
    if (parse_args(argc, argv))
        return 2;
    hide_argv(argc, argv);
    if (join_path(host_python_dir, opt.runtimes, "/python")) {
        fprintf(stderr, "sandboxd-zygote: runtimes path too long\n");
        return 2;
    }
    return 0;
}

/* The host paths given on the command line are not needed any more: every child would
 * carry them in its copy of our data (hide_host_paths covered the interpreter). */
static void forget_host_paths(void)
{
    explicit_bzero(opt.runtimes, sizeof opt.runtimes);
    explicit_bzero(opt.mpl_cache, sizeof opt.mpl_cache);
    explicit_bzero(opt.ipython_dir, sizeof opt.ipython_dir);
    explicit_bzero(host_python_dir, sizeof host_python_dir);
    explicit_bzero(host_mpl_cache, sizeof host_mpl_cache);
}

int zyg_start_up(char *version, size_t vcap, char *err, size_t errlen)
{
    int rc;
    /* The environment first: the interpreter and the thread pools read it as they start. */
    if ((rc = set_environment(err, errlen)))
        return rc;
    if ((rc = start_python(err, errlen)))
        return rc;
    if ((rc = preload(err, errlen)))
        return rc;
    /* After preload: an import is what would have started a thread. */
    int nthreads = count_threads();
    if (nthreads != 1) {
        snprintf(err, errlen,
                 "the zygote has %d threads after preload (must be 1: fork "
                 "would copy only one of them)",
                 nthreads);
        return nthreads < 0 ? nthreads : -EDEADLK;
    }
    /* Before the heap is drained: the seccomp filter is allocated once, here. */
    if ((rc = zyg_spawn_init(err, errlen)))
        return rc;
    /* Return free heap memory and merge glibc's fastbins now, once: otherwise the first
     * larger malloc() in each child consolidates them, writing to (and copying) pages
     * all over the zygote's heap. Then leave no free chunk and no free pymalloc block
     * in a used pool for a child to allocate from (see drain_heap, fill_pools). */
    fill_pools();
    malloc_trim(0);
    drain_heap();
    /* Python's version string: "3.11.2 (main, ...)" → "3.11.2". */
    snprintf(version, vcap, "%s", Py_GetVersion());
    version[strcspn(version, " ")] = '\0';
    forget_host_paths();
    return 0;
}
