/*
 * api_files_int.h — internal to the files routes (api_files.c, api_files_upload.c): the
 * helpers both use to answer. Nothing else includes it. Loop thread only.
 */
#ifndef SANDBOXD_API_FILES_INT_H
#define SANDBOXD_API_FILES_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"

/* Answer an errno from resolving or acting on path with the fitting status (404 for a
 * missing file, 400 for a link or a way out of the workspace, 409, 507, 500 …). */
void api_files_respond_errno(http_req *req, int rc, const char *path, const char *what);
/* Normalise the route's {path...} into rel; false once the request has been answered. */
bool api_files_take_path(http_req *req, const char *in, char *rel, size_t rellen);

#endif
