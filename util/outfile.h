/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Output files and standard output written safely, shared by apsolve,
 * apreport and approf (all three link the solver library). A file is
 * written to a temporary file in its own directory and renamed over the
 * destination only when every write, the flush, fsync and close succeeded,
 * so a full disk or a kill never leaves a truncated output; an existing
 * symbolic link at the destination is refused rather than followed. A
 * character device or FIFO at the destination (/dev/null, a pipe) is
 * written in place. Nothing here prints: failures come back as -1 with a
 * message naming the path in err.
 */
#ifndef APSOLVE_OUTFILE_H
#define APSOLVE_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ApsolveOutfile ApsolveOutfile;

/* Opens an output for path: *f is the stream to write to, *out the handle
 * that apsolve_outfile_commit or apsolve_outfile_abort consumes. Returns 0,
 * or -1 with "PATH: why" in err (a symbolic link or a directory at path, a
 * directory that cannot take a new file). */
int apsolve_outfile_open(const char *path, ApsolveOutfile **out, FILE **f, char *err,
                         size_t errlen);
/* Finishes the output: checks the stream's error flag, flushes, fsyncs and
 * closes it and renames the temporary file to the destination. On any
 * failure the temporary file is removed, the destination is left as it
 * was, and -1 comes back with "PATH: why" in err. Frees *o and sets it to
 * NULL either way. */
int apsolve_outfile_commit(ApsolveOutfile **o, char *err, size_t errlen);
/* Abandons the output: closes the stream and removes the temporary file.
 * NULL-safe; sets *o to NULL. */
void apsolve_outfile_abort(ApsolveOutfile **o);

/* Flushes standard output and checks its error flag: 0, or -1 with
 * "write error on standard output: why" in err. Every CLI calls it before
 * exiting 0, so 'apsolve > /dev/full' fails (exit 1) instead of losing its
 * output silently. */
int apsolve_stdout_check(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
