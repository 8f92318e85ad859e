/*
 * files.h — paths inside a sandbox's /workspace, resolved so that they never lead out.
 *
 * A path from a request is first normalised as text (files_normalize): absolute paths
 * must lie under /workspace, relative ones are taken under /workspace, and `..`, NUL
 * bytes, over-long paths and over-long names are refused outright — nothing is resolved
 * yet, so this is pure and unit-tested. The result is a path relative to the workspace.
 *
 * Then every operation resolves that relative path from a dirfd of the workspace with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
 * (files_openat2), and acts on the last component only through *at() calls on the
 * parent's fd (unlinkat, renameat, mkdirat, openat with O_NOFOLLOW). The kernel thus
 * checks each step at the moment of the call: a symlink or a directory swapped for a
 * symlink by code in the sandbox — before or during the request — is refused (ELOOP),
 * never followed, and no step leaves the workspace's mount. Files are opened with
 * O_NOFOLLOW | O_NONBLOCK and checked with fstat, so a FIFO never blocks the daemon and a
 * FIFO, socket or device is refused.
 *
 * Hard links: a hard link inside the workspace to a file outside can only be made by
 * someone who can see that file and only on the same filesystem. When the daemon is root
 * the workspace is its own tmpfs mount, so no link to a host file can exist in it; the
 * sandbox's user can only link files it already sees in the workspace. Without root the
 * workspace is a tmpfs too (the sandbox's init mounts it in its user namespace; the
 * daemon reaches it through an fd, /proc/self/fd/N), so again there is nothing to link.
 * Writes through the API never write into an existing inode anyway: they write a new
 * file and rename it over the name, so a planted hard link is replaced, not written.
 *
 * Errors are negative errno values; the helpers that take err fill it with a sentence.
 */
#ifndef SANDBOXD_FILES_H
#define SANDBOXD_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#define FILES_PATH_MAX 4096 /* longest path accepted, as the sandbox writes it */
#define FILES_NAME_MAX 255  /* longest single name */

/* Normalise a sandbox path into rel (relative to the workspace, "" for the workspace
 * itself; no leading or trailing '/', no empty, "." or ".." components). Returns 0, or
 * -EINVAL with err naming the problem. */
int files_normalize(const char *in, char *rel, size_t rellen, char *err, size_t errlen);

/* "/workspace" + "/" + rel, as the sandbox sees it. */
void files_display(const char *rel, char *out, size_t outlen);

/* An O_PATH dirfd of the workspace (the path is the daemon's own, jail_workspace()). */
int files_open_root(const char *workspace);

/* openat2 with the confinement flags above; rel "" means the directory itself.
 * Returns an fd (O_CLOEXEC always added) or -errno (EXDEV/ELOOP for escapes, EAGAIN
 * retried a few times when the kernel saw a concurrent rename). */
int files_openat2(int dirfd, const char *rel, int flags, mode_t mode);

/* The parent directory of rel (which must not be "") as an fd, and the last name in it.
 * With mkparents, missing directories are created (mode 0755, chowned to uid:gid), one
 * component at a time, each opened confined before the next is made. *name points into
 * rel. Returns 0 or -errno. */
int files_open_parent(int root, const char *rel, bool mkparents, uid_t uid, gid_t gid, int *pfd,
                      const char **name);

/* mkdir -p of rel (not ""). *created tells whether the last directory was made now.
 * -EEXIST when something other than a directory is in the way. */
int files_mkdirs(int root, const char *rel, uid_t uid, gid_t gid, bool *created);

/* Remove name in dirfd and, when it is a directory, everything below it, never
 * following a symlink (each directory is opened O_NOFOLLOW from its parent's fd).
 * Blocking: call it off the loop (uv_queue_work). Depth is capped at 256. */
int files_remove_tree(int dirfd, const char *name);

/* Remove name in dirfd (consumed) without blocking the loop: a file or a symlink with
 * one unlink, at once; a directory tree with files_remove_tree on the threadpool. cb gets
 * 0 or -errno, exactly once, at once or later; arg is the caller's. */
typedef void (*files_removed_cb)(int rc, void *arg);
void files_remove(uv_loop_t *loop, int dirfd, const char *name, files_removed_cb cb, void *arg);

/* A Content-Type guessed from the name's extension; application/octet-stream otherwise. */
const char *files_content_type(const char *name);

#endif
