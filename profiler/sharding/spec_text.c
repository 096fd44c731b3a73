/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Alpa's ShardingSpec text of a placement (sharding.h,
 * approf_sharding_spec_text): what the database stores and the reports
 * parse back (reports/spec.c).
 */
#include <string.h>

#include "sharding/sharding.h"

/* Appends s at *pos, truncating at len - 1 (out stays terminated). */
static void cat(char *out, size_t len, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos + n >= len)
        n = *pos + 1 < len ? len - 1 - *pos : 0;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
}

/* Appends prefix, the decimal n and ")" (the spec's numbers are small and
 * non-negative; no printf machinery per placement). */
static void cat_num(char *out, size_t len, size_t *pos, const char *prefix, int n)
{
    char buf[48];
    size_t k = strlen(prefix), d = 0;
    char digits[12];
    unsigned u = n < 0 ? 0u : (unsigned)n;
    memcpy(buf, prefix, k);
    do {
        digits[d++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && d < sizeof digits);
    while (d)
        buf[k++] = digits[--d];
    buf[k++] = ')';
    buf[k] = '\0';
    cat(out, len, pos, buf);
}

/* Follows Alpa's hlo_sharding_to_sharding_spec: one Chunked(k) per split
 * dimension numbered in tensor order, mesh mapping in mesh-axis order over
 * the axes of size > 1 (ShardedAxis(axis=i) or Replicated(replicas=n); a
 * dimension split over both axes is one chunk and one entry), and a fully
 * replicated tensor is (Replicated(replicas=a*b),). */
void approf_sharding_spec_text(int ndim, const int *axis_of_dim, int a, int b, char *out,
                               size_t len)
{
    size_t pos = 0;
    int n[2] = {a, b}, chunk_of_dim[APPROF_MAX_DIMS], ct = 0;
    if (!out || len == 0)
        return;
    out[0] = '\0';
    cat(out, len, &pos, "ShardingSpec((");
    for (int d = 0; d < ndim; d++) {
        int x = axis_of_dim[d];
        chunk_of_dim[d] = -1;
        if (d)
            cat(out, len, &pos, ", ");
        if (x < 0) {
            cat(out, len, &pos, "NoSharding()");
        } else {
            int k = x == 2 ? a * b : n[x];
            cat_num(out, len, &pos, "Chunked(", k);
            chunk_of_dim[d] = ct++;
        }
    }
    cat(out, len, &pos, ndim == 1 ? ",), (" : "), (");
    int entries = 0;
    if (ct == 0) {
        cat_num(out, len, &pos, "Replicated(replicas=", a * b);
        entries = 1;
    } else {
        for (int x = 0; x < 2; x++) {
            if (n[x] <= 1)
                continue;
            int dim = -1, both = 0;
            for (int d = 0; d < ndim; d++)
                if (axis_of_dim[d] == x || axis_of_dim[d] == 2) {
                    dim = d;
                    both = axis_of_dim[d] == 2;
                }
            if (both && x == 1)
                continue; /* one entry for a dimension over both axes */
            if (entries++)
                cat(out, len, &pos, ", ");
            if (dim >= 0)
                cat_num(out, len, &pos, "ShardedAxis(axis=", chunk_of_dim[dim]);
            else
                cat_num(out, len, &pos, "Replicated(replicas=", n[x]);
        }
    }
    cat(out, len, &pos, entries == 1 ? ",))" : "))");
}
