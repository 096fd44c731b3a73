/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The text encodings of a placement set's items (placement_codec.h).
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "grow.h"
#include "placement_codec.h"

char *cdb_put_int(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    assert(p);  /* with room for 21 bytes: cdb_items_reserve's 80 */
    do
        tmp[n++] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

int cdb_items_reserve(char **buf, size_t len, size_t *cap)
{
    assert(buf && cap && (*buf || !*cap) && len <= *cap);
    return util_grow((void **)buf, cap, len + 80, 1) < 0 ? COSTDB_ENOMEM : 0;
}

/* Reads a JSON integer at *p (digits, an optional '-') of magnitude at most
 * 2^53; 0 or -1. */
static int read_int(const char **p, int64_t *v)
{
    const char *s = *p;
    int neg = 0;
    uint64_t u = 0;
    while (*s == ' ')
        s++;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9') {
        u = u * 10 + (uint64_t)(*s++ - '0');
        if (u > (UINT64_C(1) << 53))
            return -1;
    }
    *v = neg ? -(int64_t)u : (int64_t)u;
    *p = s;
    return 0;
}

/* Expects c (after blanks) at *p. */
static int expect(const char **p, char c)
{
    while (**p == ' ')
        (*p)++;
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

static int cmp_items(const void *a, const void *b)
{
    const CdbItem *x = a, *y = b;
    if (x->role != y->role)
        return x->role < y->role ? -1 : 1;
    return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

int cdb_items_decode(const char *s, int shared, int64_t base, CdbItem **out, size_t *n)
{
    CdbItem *it = NULL;
    size_t cnt = 0, cap = 0;
    const char *p = s;
    int64_t v[3];
    *out = NULL;
    *n = 0;
    if (expect(&p, '[') < 0)
        return -1;
    while (*p == ' ')
        p++;
    if (shared && (*p == ']' || *p == '['))           /* a shared list is schema 6's */
        goto bad;
    if (*p == ']') {                                  /* an empty set, schema 3 */
        p++;
    } else if (*p == '[') {                           /* schema 3 */
        for (;;) {
            if (expect(&p, '[') < 0 || read_int(&p, &v[0]) < 0 || expect(&p, ',') < 0 ||
                read_int(&p, &v[1]) < 0 || expect(&p, ',') < 0 || read_int(&p, &v[2]) < 0 ||
                expect(&p, ']') < 0 || v[0] < 0 || v[0] > 2)
                goto bad;
            if (UTIL_GROW(it, cap, cnt + 1) < 0)
                goto bad;
            it[cnt++] = (CdbItem){(int)v[0], v[1], v[2]};
            while (*p == ' ')
                p++;
            if (*p == ']') {
                p++;
                break;
            }
            if (expect(&p, ',') < 0)
                goto bad;
        }
    } else {                                          /* schema 6 */
        int64_t count[3], total, tensor = shared ? base : 0;
        if (tensor < 0 || tensor > INT32_MAX)          /* the base is a tensor index too */
            goto bad;
        for (int k = 0; k < 3; k++)
            if ((k && expect(&p, ',') < 0) || read_int(&p, &count[k]) < 0 || count[k] < 0 ||
                count[k] > (INT64_C(1) << 32))
                goto bad;
        total = count[0] + count[1] + count[2];
        /* each item takes at least four characters (",d,s"): no allocation
         * larger than the text warrants */
        if ((uint64_t)total > strlen(p) / 4 ||
            (total > 0 && !(it = malloc((size_t)total * sizeof *it))))
            goto bad;
        for (int64_t k = 0; k < total; k++) {
            int64_t d, spec;
            if (expect(&p, ',') < 0 || read_int(&p, &d) < 0 || expect(&p, ',') < 0 ||
                read_int(&p, &spec) < 0)
                goto bad;
            /* every partial sum is a tensor index: checked, no overflow past it */
            if (__builtin_add_overflow(tensor, d, &tensor) || tensor < 0 || tensor > INT32_MAX)
                goto bad;
            it[cnt++] = (CdbItem){k < count[0] ? 0 : k < count[0] + count[1] ? 1 : 2, tensor, spec};
        }
        if (expect(&p, ']') < 0)
            goto bad;
    }
    while (*p == ' ')
        p++;
    if (*p)
        goto bad;
    if (cnt > 1)
        qsort(it, cnt, sizeof *it, cmp_items);
    *out = it;
    *n = cnt;
    return 0;
bad:
    free(it);
    return -1;
}

