/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one rule for a counted word in messages ("1 micro-batch", "2
 * micro-batches"): English plural by the count, the caller giving both
 * forms (no suffix guessing). Header-only, like clock.h, so that every
 * part and the CUDA module can use it.
 */
#ifndef COSTDB_PLURAL_H
#define COSTDB_PLURAL_H

/* one when n is 1 (or -1), else many; both are the caller's strings. */
static inline const char *costdb_plural(long long n, const char *one, const char *many)
{
    return n == 1 || n == -1 ? one : many;
}

#endif
