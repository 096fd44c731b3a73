/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sorts of the exact search's tables (dp_int.h): a block's items by
 * (cost, config) for the shared table (dp_prep.c, shared_build), with an
 * earlier block's order tried first, and the radix sort of non-negative
 * doubles (the candidates, dp.c dp_prepare, and the apply limits).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp_int.h"

/* (cost, config) ascending: a total order on a block's items (finite
 * costs, one item per config), so any sort gives the one sequence. */
static int item_before(const DpItem *x, const DpItem *y)
{
    return x->cost != y->cost ? x->cost < y->cost : x->config < y->config;
}

/* dp_int.h. Sorts a[0..n) by item_before, tmp holding n items: insertion
 * sort on runs of 8, then merges bottom up (qsort's indirect compares were
 * a tenth of a full-space search's table build, which every solve makes). */
void apsolve_dp_sort_items(DpItem *a, DpItem *tmp, int n)
{
    enum { RUN = 8 };
    DpItem *src = a, *dst = tmp;
    for (int lo = 0; lo < n; lo += RUN) {
        int hi = lo + RUN < n ? lo + RUN : n;
        for (int k = lo + 1; k < hi; k++) {
            DpItem x = a[k];
            int q = k;
            for (; q > lo && item_before(&x, &a[q - 1]); q--)
                a[q] = a[q - 1];
            a[q] = x;
        }
    }
    for (int w = RUN; w < n; w *= 2) {
        DpItem *t;
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int x = lo, y = mid, k = lo;
            while (x < mid && y < hi)
                dst[k++] = item_before(&src[y], &src[x]) ? src[y++] : src[x++];
            while (x < mid)
                dst[k++] = src[x++];
            while (y < hi)
                dst[k++] = src[y++];
        }
        t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sizeof *a);
}

/* dp_int.h. apsolve_dp_sort_items with the order of an earlier block tried
 * first (dp_prep.c, shared_build): hint[0 .. *hint_n) the configs of the
 * last block sorted of the same length j - i and submesh, in their sorted
 * order (a uniform model's ranges of one length mostly order their configs
 * alike; on the 126-layer 405B the sort then ran for 2,745 blocks, 0.18 G
 * instructions less). a[0 .. n) holds distinct configs with no NaN cost,
 * so item_before is a strict total order on them and the one sequence
 * whose neighbours are all in order is the sorted one, the sort's own: the
 * hint's order of a's configs is taken when it holds every one of them and
 * passes that check, else a is sorted and its order becomes the hint.
 * pos: C slots of -1, left so. */
void apsolve_dp_sort_items_hinted(DpItem *a, DpItem *tmp, int n, int *hint, int *hint_n,
                                  int *pos)
{
    int m = 0, ok;
    for (int k = 0; k < n; k++)
        pos[a[k].config] = k;
    for (int h = 0; h < *hint_n; h++)
        if (pos[hint[h]] >= 0)
            tmp[m++] = a[pos[hint[h]]];
    ok = m == n;
    for (int k = 1; ok && k < n; k++)
        ok = item_before(&tmp[k - 1], &tmp[k]);
    for (int k = 0; k < n; k++)
        pos[a[k].config] = -1;
    if (ok) {
        memcpy(a, tmp, (size_t)n * sizeof *a);
        return;
    }
    apsolve_dp_sort_items(a, tmp, n);
    for (int k = 0; k < n; k++)
        hint[k] = a[k].config;
    *hint_n = n;
}

/* dp_int.h: an LSD radix sort on the bit patterns (8-bit digits, a pass
 * skipped where every key shares its digit), in O(n) rather than the
 * O(n log n) indirect compares that made qsort the search's top cost on a
 * full-space database. */
int apsolve_dp_sort_nonneg(double *v, size_t n)
{
    uint64_t *a, *b, *t;
    size_t hist[8][256];
    if (n < 2)
        return 0;
    a = malloc(n * sizeof *a);
    b = malloc(n * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    memcpy(a, v, n * sizeof *a);
    /* every digit's counts in one read of the keys: a pass moves the keys
     * but not their multiset, so its counts are the ones a read before it
     * would give */
    memset(hist, 0, sizeof hist);
    for (size_t k = 0; k < n; k++)
        for (unsigned d = 0; d < 8; d++)
            hist[d][(a[k] >> (8 * d)) & 0xff]++;
    for (unsigned sh = 0; sh < 64; sh += 8) {
        size_t pos = 0, *cnt = hist[sh / 8];
        if (cnt[(a[0] >> sh) & 0xff] == n)
            continue;
        for (int d = 0; d < 256; d++) {
            size_t c = cnt[d];
            cnt[d] = pos;
            pos += c;
        }
        for (size_t k = 0; k < n; k++)
            b[cnt[(a[k] >> sh) & 0xff]++] = a[k];
        t = a;
        a = b;
        b = t;
    }
    memcpy(v, a, n * sizeof *v);
    free(a);
    free(b);
    return 0;
}
