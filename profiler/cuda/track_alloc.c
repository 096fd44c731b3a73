/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tracking allocator: every device buffer a measurement uses goes
 * through it, so the peak of simultaneously allocated bytes is the entry's
 * peak_memory and, after any error, every live buffer can still be freed.
 * The raw allocator is cudaMalloc/cudaFree in the module and malloc/free
 * (or a fake) in the tests.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "host.h"

void approf_track_init(ApprofTrackAlloc *t, ApprofRawAlloc a, ApprofRawFree f, void *user)
{
    memset(t, 0, sizeof *t);
    t->raw_alloc = a;
    t->raw_free = f;
    t->user = user;
}

int approf_track_alloc(ApprofTrackAlloc *t, size_t bytes, void **ptr)
{
    void *p = NULL;
    int rc;

    if (!t || !ptr || bytes == 0 || !t->raw_alloc)
        return APPROF_EINVAL;
    *ptr = NULL;
    /* Room for the bookkeeping first, so a device block is never orphaned. */
    if (UTIL_GROW(t->live, t->cap_live, t->n_live + 1) < 0)
        return APPROF_ENOMEM;
    rc = t->raw_alloc(t->user, bytes, &p);
    if (rc < 0)
        return rc;
    if (!p)
        return APPROF_ENOMEM;
    t->live[t->n_live].ptr = p;
    t->live[t->n_live].bytes = bytes;
    t->n_live++;
    t->n_allocs++;
    t->current += (int64_t)bytes;
    if (t->current > t->peak)
        t->peak = t->current;
    *ptr = p;
    return APPROF_OK;
}

int approf_track_free(ApprofTrackAlloc *t, void *ptr)
{
    if (!t || !ptr)
        return APPROF_EINVAL;
    for (size_t i = t->n_live; i-- > 0;) {
        if (t->live[i].ptr != ptr)
            continue;
        if (t->raw_free)
            t->raw_free(t->user, ptr);
        t->current -= (int64_t)t->live[i].bytes;
        t->live[i] = t->live[t->n_live - 1];
        t->n_live--;
        return APPROF_OK;
    }
    return APPROF_EINVAL;
}

void approf_track_release_all(ApprofTrackAlloc *t)
{
    if (!t)
        return;
    for (size_t i = t->n_live; i-- > 0;) {
        if (t->raw_free)
            t->raw_free(t->user, t->live[i].ptr);
        t->current -= (int64_t)t->live[i].bytes;
    }
    free(t->live);
    t->live = NULL;
    t->n_live = t->cap_live = 0;
}
