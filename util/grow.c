/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable arrays (grow.h): realloc with the capacity doubled and every
 * size checked before it is multiplied.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

static int grow(void **arr, size_t *cap, size_t need, size_t elem, int zero)
{
    size_t max, ncap;
    unsigned char *p;
    assert(arr && cap && elem > 0 && (*arr || !*cap));
    if (need <= *cap)
        return 0;
    /* no object may be larger than PTRDIFF_MAX bytes (pointer differences) */
    max = (size_t)PTRDIFF_MAX / elem;
    if (need > max) {
        errno = ENOMEM;
        return -1;
    }
    ncap = *cap <= max / 2 ? 2 * *cap : need;
    if (ncap < UTIL_GROW_MIN)
        ncap = UTIL_GROW_MIN <= max ? UTIL_GROW_MIN : max;
    if (ncap < need)
        ncap = need;
    p = realloc(*arr, ncap * elem);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    if (zero)
        memset(p + *cap * elem, 0, (ncap - *cap) * elem);
    *arr = p;
    *cap = ncap;
    return 0;
}

int util_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    return grow(arr, cap, need, elem, 0);
}

int util_grow_zero(void **arr, size_t *cap, size_t need, size_t elem)
{
    return grow(arr, cap, need, elem, 1);
}
