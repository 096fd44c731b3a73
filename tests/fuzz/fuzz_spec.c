/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz harness for the database's ShardingSpec and shape text
 * (costdb_text.h), which the solver and the reports read from placements
 * someone else may have written. Input: the first byte picks the logical
 * mesh (a, b) from the sizes 1, 2, 4, 8; the rest is the text. Properties:
 * a refused spec says "column N: ..." with N inside the text (or one past
 * its end); an accepted one has a rank within bounds, every dimension on
 * no axis, one axis or both, each axis of size > 1 used by at most one
 * dimension, and formats to a text that parses back to the same layout
 * (the writer's canonical form). A shape parses to at most cap
 * non-negative dimensions or is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int sizes[4] = {1, 2, 4, 8};
    char *text, err[256] = "", out[1024], err2[256];
    CostdbLayout l, back;
    int64_t dims[4];
    int a, b, rc, n;

    if (size < 1 || size > 1 << 12)
        return 0;
    a = sizes[data[0] & 3];
    b = sizes[(data[0] >> 2) & 3];
    text = malloc(size);
    FUZZ_CHECK(text != NULL);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';

    rc = costdb_spec_parse(text, a, b, &l, err, sizeof err);
    if (rc != 0) {
        int col = 0;
        FUZZ_CHECK(rc == COSTDB_EPARSE);
        FUZZ_CHECK(sscanf(err, "column %d:", &col) == 1);
        FUZZ_CHECK(col >= 1 && (size_t)col <= strlen(text) + 1);
    } else {
        int used[2] = {0, 0};
        FUZZ_CHECK(l.ndim >= 0 && l.ndim <= COSTDB_MAX_DIMS);
        FUZZ_CHECK(l.logical_a == a && l.logical_b == b);
        for (int d = 0; d < l.ndim; d++) {
            int x = l.mesh_axis_of_dim[d];
            FUZZ_CHECK(x >= -1 && x <= 2);
            used[0] += x == 0 || x == 2;
            used[1] += x == 1 || x == 2;
        }
        FUZZ_CHECK(used[0] <= 1 && used[1] <= 1);
        costdb_spec_format(&l, out, sizeof out);
        FUZZ_CHECK(costdb_spec_parse(out, a, b, &back, err2, sizeof err2) == 0);
        FUZZ_CHECK(back.ndim == l.ndim);
        for (int d = 0; d < l.ndim; d++)
            FUZZ_CHECK(back.mesh_axis_of_dim[d] == l.mesh_axis_of_dim[d]);
    }

    n = costdb_shape_parse(text, dims, 4);
    FUZZ_CHECK(n >= -1 && n <= 4);
    for (int k = 0; k < n; k++)
        FUZZ_CHECK(dims[k] >= 0);
    free(text);
    return 0;
}
