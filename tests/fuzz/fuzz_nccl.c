/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for nccl-tests outputs (approf_nccl_tests_parse, the reader
 * behind `approf hardware curves import`). Properties: a refused input
 * leaves a message that names the file (and, for a bad line, path:line);
 * an accepted one gives at least one point, every point with a positive
 * size, a finite positive time, a known collective, a HOSTSxGPUS group and
 * a dtype, and no two points of one (size, dtype).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "fuzz.h"
#include "hardware.h"

static int known_collective(const char *c)
{
    static const char *const names[] = {"all-reduce", "all-gather", "reduce-scatter",
                                        "all-to-all", "send-recv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(c, names[i]))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    CostdbCommPoint *pts = NULL;
    size_t n = 0;
    char err[1024] = "";
    const char *path;
    FILE *f;
    int rc;

    if (size > 1 << 18)
        return 0;
    path = fuzz_write_file("in.log", data, size);
    f = fopen(path, "rb");
    FUZZ_CHECK(f != NULL);
    rc = approf_nccl_tests_parse(f, path, NULL, NULL, &pts, &n, err, sizeof err);
    fclose(f);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0);
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0);
        return 0;
    }
    FUZZ_CHECK(n > 0 && pts != NULL);
    for (size_t i = 0; i < n; i++) {
        int h = 0, g = 0;
        char tail;
        FUZZ_CHECK(pts[i].bytes > 0);
        FUZZ_CHECK(isfinite(pts[i].seconds) && pts[i].seconds > 0);
        FUZZ_CHECK(known_collective(pts[i].collective));
        FUZZ_CHECK(sscanf(pts[i].group_desc, "%dx%d%c", &h, &g, &tail) == 2 && h >= 1 && g >= 1);
        FUZZ_CHECK(pts[i].dtype[0] != '\0');
        for (size_t j = i + 1; j < n; j++)
            FUZZ_CHECK(pts[i].bytes != pts[j].bytes || strcmp(pts[i].dtype, pts[j].dtype));
    }
    free(pts);
    return 0;
}
