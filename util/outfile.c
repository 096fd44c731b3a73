/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Output files written to a temporary file beside the destination and
 * renamed into place (outfile.h), and the standard-output check of the
 * CLIs. The temporary name is ".<base>.<pid>.<n>.tmp" in the destination's
 * directory, created with O_EXCL | O_NOFOLLOW so that nothing planted there
 * is followed either; rename() replaces a directory entry and never follows
 * a link at the destination, and a link found there before writing is
 * refused with a message.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

struct ApsolveOutfile {
    FILE *f;
    char *path;                       /* the destination */
    char *tmp;                        /* NULL: written in place (device, FIFO) */
};

static void outfile_free(ApsolveOutfile *o)
{
    if (!o)
        return;
    free(o->path);
    free(o->tmp);
    free(o);
}

int apsolve_outfile_open(const char *path, ApsolveOutfile **out, FILE **f, char *err,
                         size_t errlen)
{
    ApsolveOutfile *o = NULL;
    struct stat st;
    const char *slash;
    size_t dirlen, len;
    int fd = -1, exists;
    static unsigned counter;
    if (!path || !*path || !out || !f) {
        snprintf(err, errlen, "no output path");
        return -1;
    }
    *out = NULL;
    *f = NULL;
    exists = lstat(path, &st) == 0;
    if (exists) {
        if (S_ISLNK(st.st_mode)) {
            snprintf(err, errlen, "%s: is a symbolic link: refusing to write through it "
                     "(remove it or choose another path)", path);
            return -1;
        }
        if (S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "%s: is a directory", path);
            return -1;
        }
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
            snprintf(err, errlen, "%s: not a regular file, device or FIFO", path);
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    o = calloc(1, sizeof(*o));
    if (!o || !(o->path = strdup(path)))
        goto nomem;
    if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        /* /dev/null, a pipe: nothing to replace, write in place */
        fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
            goto fail;
        }
    } else {
        slash = strrchr(path, '/');
        dirlen = slash ? (size_t)(slash - path) + 1 : 0;
        len = strlen(path) + 64;
        if (!(o->tmp = malloc(len)))
            goto nomem;
        for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
            snprintf(o->tmp, len, "%.*s.%s.%ld.%u.tmp", (int)dirlen, path, path + dirlen,
                     (long)getpid(), counter++);
            fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
            if (fd < 0 && errno != EEXIST)
                break;
        }
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot create a file in its directory: %s", path,
                     strerror(errno));
            goto fail;
        }
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        close(fd);
        if (o->tmp)
            unlink(o->tmp);
        goto nomem;
    }
    *out = o;
    *f = o->f;
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of memory", path);
fail:
    outfile_free(o);
    return -1;
}

int apsolve_outfile_commit(ApsolveOutfile **op, char *err, size_t errlen)
{
    ApsolveOutfile *o = op ? *op : NULL;
    int rc = 0, e = 0;
    if (!o)
        return -1;
    *op = NULL;
    if (ferror(o->f))
        rc = -1, e = EIO;
    if (fflush(o->f) != 0 && !rc)
        rc = -1, e = errno;
    if (!rc && o->tmp && fsync(fileno(o->f)) != 0 && errno != EINVAL)
        rc = -1, e = errno;
    if (fclose(o->f) != 0 && !rc)
        rc = -1, e = errno;
    if (!rc && o->tmp && rename(o->tmp, o->path) != 0)
        rc = -1, e = errno;
    if (rc) {
        snprintf(err, errlen, "%s: cannot write: %s%s", o->path, strerror(e ? e : EIO),
                 o->tmp ? " (the previous file, if any, is unchanged)" : "");
        if (o->tmp)
            unlink(o->tmp);
    }
    outfile_free(o);
    return rc;
}

void apsolve_outfile_abort(ApsolveOutfile **op)
{
    ApsolveOutfile *o = op ? *op : NULL;
    if (!o)
        return;
    *op = NULL;
    fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    outfile_free(o);
}

int apsolve_stdout_check(char *err, size_t errlen)
{
    /* a write that failed earlier left its errno (nothing since reset it) */
    int failed = ferror(stdout), e = failed && errno ? errno : EIO;
    errno = 0;
    if (fflush(stdout) != 0) {
        failed = 1;
        e = errno ? errno : EIO;
    }
    if (failed) {
        snprintf(err, errlen, "write error on standard output: %s", strerror(e));
        return -1;
    }
    return 0;
}
