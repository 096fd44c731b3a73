/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Statistics of repeated timings: the median a measurement reports and the
 * relative spread (max - min) / median stored with it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int approf_cuda_stats(const double *samples, int n, double *median, double *spread)
{
    double *s = NULL;
    double med, lo, hi;
    int rc = APPROF_OK;

    if (!samples || n < 1 || !median || !spread)
        return APPROF_EINVAL;
    for (int i = 0; i < n; i++)
        if (!isfinite(samples[i]) || samples[i] < 0)
            return APPROF_EINVAL;
    s = malloc(sizeof *s * (size_t)n);
    if (!s)
        return APPROF_ENOMEM;
    memcpy(s, samples, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    med = (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    lo = s[0];
    hi = s[n - 1];
    *median = med;
    *spread = med > 0 ? (hi - lo) / med : 0.0;
    free(s);
    return rc;
}
