/*
 * pysite.h — the operator's read-only Python site directories (--python-site-dir) and the
 * Python packages contexts can import, listed once at start for /v1/health. pysite.c.
 */
#ifndef SANDBOXD_PYSITE_H
#define SANDBOXD_PYSITE_H

#include <stdbool.h>
#include <uv.h>

#define PYSITE_MAX 8                     /* site directories at most */
#define PYSITE_PATH_MAX 512              /* bytes of one host path, NUL included */
#define PYSITE_INSIDE "/opt/python-site" /* directory i is shown at PYSITE_INSIDE/i */

/* Parse and check the colon-separated list (config's python_site_dirs). 0, or -errno with
 * a sentence in err naming the directory. */
int pysite_init(const char *list, char *err, size_t errlen);
unsigned pysite_count(void);
/* Host path of directory i (NULL past the end). */
const char *pysite_host_dir(unsigned i);
/* "PYTHONPATH=/opt/python-site/0:…" for every sandboxed process, or NULL without dirs. */
const char *pysite_pythonpath(void);

/* Start the one-off inventory of importable packages (a child process); 0 or -errno. */
int pysite_probe_start(uv_loop_t *loop, const char *runtimes_dir);
bool pysite_probing(void);
/* `"packages":{…}` for the health document, or NULL (not known). */
const char *pysite_health_fragment(void);
void pysite_shutdown(void);

#endif
