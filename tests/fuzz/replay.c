/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The main() of a fuzz harness when no fuzzer is linked (dav1d style): it
 * replays every file named on the command line, or every regular file of a
 * named directory in name order, through LLVMFuzzerTestOneInput, so the
 * committed corpora run as ordinary tests in CI (suite 'fuzz'). A harness
 * signals a bug by aborting; this program then dies with the input's name
 * printed just before. Exit 0 when every input ran, 1 when a file could not
 * be read, 2 on usage errors.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int read_file(const char *path, uint8_t **out, size_t *n)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = -1;
    if (!f)
        return -1;
    for (;;) {
        size_t got;
        if (len == cap) {
            uint8_t *nb;
            cap = cap ? cap * 2 : 4096;
            nb = realloc(buf, cap);
            if (!nb)
                goto cleanup;
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                goto cleanup;
            break;
        }
    }
    *out = buf;
    *n = len;
    buf = NULL;
    rc = 0;
cleanup:
    free(buf);
    fclose(f);
    return rc;
}

static int run_one(const char *path, long *count)
{
    uint8_t *data = NULL;
    size_t n = 0;
    if (read_file(path, &data, &n) < 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    (*count)++;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, long *count)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    int rc = 0;
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn;
            cap = cap ? cap * 2 : 64;
            nn = realloc(names, cap * sizeof *names);
            if (!nn) {
                rc = -1;
                goto cleanup;
            }
            names = nn;
        }
        names[n] = strdup(de->d_name);
        if (!names[n]) {
            rc = -1;
            goto cleanup;
        }
        n++;
    }
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    for (i = 0; i < n && rc == 0; i++) {
        char path[4096];
        struct stat st;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) {
            rc = -1;
            break;
        }
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            rc = run_one(path, count);
    }
cleanup:
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    long count = 0;
    int i;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (i = 1; i < argc; i++) {
        struct stat st;
        int rc;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            rc = run_dir(argv[i], &count);
        else
            rc = run_one(argv[i], &count);
        if (rc < 0)
            return 1;
    }
    if (count == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    fprintf(stderr, "replayed %ld inputs\n", count);
    return 0;
}
