/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared utilities of the per-device stage program (stage.h): freeing and
 * deep-copying its arrays, kernel arrays several programs share, and the names of collective kinds as the cost
 * database spells them (CostdbCommPoint.collective).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stage.h"

/* A kernel array and how many programs (and builders) hold it. Holders
 * are counted without atomics: a share lives in the sharding context of
 * one thread (a sweep worker's) and in the programs it hands out there. */
struct ApprofKernelShare {
    int holders;
    ApprofKernel *k;
    size_t n;
    uint64_t id; /* unique in the process: a price kept for it is never another's */
};

/* ids from 1 (0: no share), across threads */
static atomic_uint_fast64_t share_ids;

uint64_t approf_kernel_share_id(const ApprofKernelShare *s)
{
    return s ? s->id : 0;
}

void approf_kernel_share_release(ApprofKernelShare *s)
{
    if (!s || --s->holders > 0)
        return;
    free(s->k);
    free(s);
}

ApprofKernelShare *approf_kernel_share(ApprofStageProgram *p, int ph)
{
    ApprofKernelShare *s = p->kernel_share[ph];
    if (!s) {
        if (!(s = malloc(sizeof *s)))
            return NULL;
        s->holders = 1;
        s->id = (uint64_t)atomic_fetch_add(&share_ids, 1) + 1;
        s->k = p->kernels[ph];
        s->n = p->n_kernels[ph];
        p->kernel_share[ph] = s;
    }
    s->holders++;
    return s;
}

void approf_kernel_share_hold(ApprofStageProgram *q, int ph, ApprofKernelShare *s)
{
    if (q->kernel_share[ph])
        approf_kernel_share_release(q->kernel_share[ph]);
    else
        free(q->kernels[ph]);
    s->holders++;
    q->kernel_share[ph] = s;
    q->kernels[ph] = s->k;
    q->n_kernels[ph] = s->n;
}

void approf_stage_program_clear(ApprofStageProgram *p)
{
    if (!p)
        return;
    for (int ph = 0; ph < 2; ph++) {
        if (p->kernel_share[ph])
            approf_kernel_share_release(p->kernel_share[ph]);
        else
            free(p->kernels[ph]);
        free(p->colls[ph]);
    }
    free(p->placements);
    memset(p, 0, sizeof *p);
}

/* malloc'd copy of n elements of size sz; NULL with *rc untouched for
 * n == 0, NULL with *rc set on failure. */
static void *dup_array(const void *src, size_t n, size_t sz, int *rc)
{
    void *dst;
    if (n == 0)
        return NULL;
    if (!src || n > SIZE_MAX / sz) {
        *rc = APPROF_EINVAL;
        return NULL;
    }
    dst = malloc(n * sz);
    if (!dst) {
        *rc = APPROF_ENOMEM;
        return NULL;
    }
    memcpy(dst, src, n * sz);
    return dst;
}

int approf_stage_program_copy(ApprofStageProgram *dst, const ApprofStageProgram *src)
{
    ApprofStageProgram tmp;
    int rc = APPROF_OK;

    if (!dst || !src)
        return APPROF_EINVAL;
    tmp = *src;
    tmp.kernels[0] = tmp.kernels[1] = NULL;
    tmp.kernel_share[0] = tmp.kernel_share[1] = NULL;
    tmp.colls[0] = tmp.colls[1] = NULL;
    tmp.placements = NULL;
    for (int ph = 0; ph < 2; ph++) {
        tmp.kernels[ph] = dup_array(src->kernels[ph], src->n_kernels[ph], sizeof(ApprofKernel), &rc);
        if (rc < 0)
            goto cleanup;
        tmp.colls[ph] = dup_array(src->colls[ph], src->n_colls[ph], sizeof(ApprofCollective), &rc);
        if (rc < 0)
            goto cleanup;
    }
    tmp.placements = dup_array(src->placements, src->n_placements, sizeof(ApprofPlacement), &rc);
cleanup:
    if (rc < 0) {
        approf_stage_program_clear(&tmp);
        return rc;
    }
    *dst = tmp;
    return APPROF_OK;
}

const char *approf_coll_kind_name(ApprofCollKind k)
{
    switch (k) {
    case APPROF_COLL_ALL_REDUCE:
        return "all-reduce";
    case APPROF_COLL_ALL_GATHER:
        return "all-gather";
    case APPROF_COLL_REDUCE_SCATTER:
        return "reduce-scatter";
    case APPROF_COLL_ALL_TO_ALL:
        return "all-to-all";
    case APPROF_COLL_SEND_RECV:
        return "send-recv";
    default:
        return "unknown";
    }
}
