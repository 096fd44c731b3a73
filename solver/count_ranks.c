/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory rule's ranks over a search's stage counts (dp_int.h,
 * apsolve_count_ranks): the one rule the threshold DPs' count family
 * (dp_prep.c apsolve_dp_family_init) and ZB-V's device paths under the
 * memory rule (chunk_floor_mem.c) read an entry's successor bound from.
 * An entry that fits the u least distinct in-flight counts is bounded at
 * count n by apsolve_entry_mnss's bisection (evaluate.c) with "fits"
 * read as rank < u; docs/solver.md has the memory rule.
 */
#include <math.h>
#include <stdlib.h>

#include "dp_int.h"
#include "solver_int.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int apsolve_count_ranks(const ApsolveOptions *opt, const int *ns, int count, int nmax, int unset,
                        double **fvp, int *nfp, int **rankp, int **boundp)
{
    int nf = 0, kept = 0, *rank, *bound = NULL;
    double *fv = malloc((size_t)nmax * (size_t)count * sizeof *fv);
    rank = malloc(((size_t)nmax + 1) * (size_t)nmax * sizeof *rank);
    if (!fv || !rank)
        goto fail;
    for (int q = 0; q < count; q++)
        for (int k = 0; k < ns[q]; k++) {
            double x = apsolve_in_flight(opt, ns[q], k);
            if (isnan(x)) {
                free(fv);
                free(rank);
                return 1;
            }
            fv[nf++] = x;
        }
    qsort(fv, (size_t)nf, sizeof *fv, cmp_double);
    for (int k = 0; k < nf; k++)
        if (kept == 0 || fv[k] != fv[kept - 1])
            fv[kept++] = fv[k];
    for (int q = 0; q < count; q++)
        for (int k = 0; k < ns[q]; k++) {
            double x = apsolve_in_flight(opt, ns[q], k);
            const double *hit = bsearch(&x, fv, (size_t)kept, sizeof *fv, cmp_double);
            rank[(size_t)ns[q] * (size_t)nmax + (size_t)k] = (int)(hit - fv);
        }
    /* each n's bisection, replayed once per prefix length u: the bound of
     * every entry that fits u counts (apsolve_entry_mnss's bisection,
     * "fits" read as rank < u) */
    bound = malloc(((size_t)nmax + 1) * ((size_t)kept + 1) * sizeof *bound);
    if (!bound)
        goto fail;
    for (size_t k = 0; k < ((size_t)nmax + 1) * ((size_t)kept + 1); k++)
        bound[k] = unset;
    for (int q = 0; q < count; q++) {
        int n = ns[q];
        const int *r = rank + (size_t)n * (size_t)nmax;
        for (int u = 0; u <= kept; u++) {
            int lo = 1, hi = n, m;
            if (r[n - 1] >= u) {
                m = -1;
            } else {
                while (lo < hi) {
                    int mid = lo + (hi - lo + 1) / 2;
                    if (r[n - mid] < u)
                        lo = mid;
                    else
                        hi = mid - 1;
                }
                m = lo == n ? APSOLVE_UNBOUNDED : lo - 1;
            }
            bound[(size_t)n * ((size_t)kept + 1) + (size_t)u] = m;
        }
    }
    *fvp = fv;
    *nfp = kept;
    *rankp = rank;
    *boundp = bound;
    return APSOLVE_OK;
fail:
    free(fv);
    free(rank);
    return APSOLVE_ENOMEM;
}
