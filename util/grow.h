/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable arrays: the one way every part makes room in an array it holds
 * as a pointer and a capacity counted in elements (grow.c). The capacity
 * at least doubles, so n appends cost O(n) copies; every size is checked
 * before it is multiplied, so no element count read from a file can wrap
 * an allocation.
 */
#ifndef UTIL_GROW_H
#define UTIL_GROW_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The capacity of a first allocation, in elements. */
#define UTIL_GROW_MIN 16

/* Makes room for need elements of elem > 0 bytes in *arr, which holds *cap
 * of them (NULL with 0 at first; the caller owns and frees it). Nothing
 * happens when need <= *cap; else *arr is reallocated to the largest of
 * need, twice *cap and UTIL_GROW_MIN elements, and *cap set to that. The
 * elements added are not initialized. Returns 0, or -1 with errno ENOMEM
 * when need * elem bytes exceed PTRDIFF_MAX or realloc fails: *arr and
 * *cap are then unchanged, the array still the caller's. */
int util_grow(void **arr, size_t *cap, size_t need, size_t elem);
/* util_grow with the elements added (from the old *cap to the new) zeroed,
 * for arrays indexed before they are filled or sent whole. */
int util_grow_zero(void **arr, size_t *cap, size_t need, size_t elem);

/* util_grow for a typed array lvalue arr with a size_t capacity lvalue
 * cap: the element size is the array's own. */
#define UTIL_GROW(arr, cap, need) util_grow((void **)&(arr), &(cap), (need), sizeof *(arr))

#ifdef __cplusplus
}
#endif

#endif
