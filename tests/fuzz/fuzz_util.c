/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the fuzz harnesses (see fuzz.h): a per-process scratch
 * directory under $TMPDIR (or /dev/shm when it exists, to spare the disk
 * during long fuzzing runs), writing an input there, and the failure hook.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "fuzz.h"

static char tmpdir[512];

void fuzz_fail(const char *what, const char *file, int line)
{
    fprintf(stderr, "fuzz: check failed: %s (%s:%d)\n", what, file, line);
    abort();
}

static void remove_tmpdir(void)
{
    DIR *d;
    struct dirent *de;
    if (!tmpdir[0])
        return;
    d = opendir(tmpdir);
    if (d) {
        while ((de = readdir(d)) != NULL) {
            char path[1024];
            if (de->d_name[0] == '.')
                continue;
            if ((size_t)snprintf(path, sizeof path, "%s/%s", tmpdir, de->d_name) < sizeof path)
                unlink(path);
        }
        closedir(d);
    }
    rmdir(tmpdir);
}

const char *fuzz_tmpdir(void)
{
    const char *base;
    struct stat st;
    if (tmpdir[0])
        return tmpdir;
    base = getenv("TMPDIR");
    if (!base || !*base)
        base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    if ((size_t)snprintf(tmpdir, sizeof tmpdir, "%s/approf-fuzz-XXXXXX", base) >= sizeof tmpdir)
        fuzz_fail("TMPDIR too long", __FILE__, __LINE__);
    if (!mkdtemp(tmpdir))
        fuzz_fail("mkdtemp", __FILE__, __LINE__);
    atexit(remove_tmpdir);
    return tmpdir;
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[1024];
    FILE *f;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", fuzz_tmpdir(), name) >= sizeof path)
        fuzz_fail("path too long", __FILE__, __LINE__);
    f = fopen(path, "wb");
    if (!f)
        fuzz_fail("cannot create scratch file", __FILE__, __LINE__);
    if (size && fwrite(data, 1, size, f) != size)
        fuzz_fail("cannot write scratch file", __FILE__, __LINE__);
    if (fclose(f) != 0)
        fuzz_fail("cannot close scratch file", __FILE__, __LINE__);
    return path;
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        fuzz_fail("out of memory", __FILE__, __LINE__);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
