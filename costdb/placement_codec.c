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

const char *const cdb_placement_roles[3] = {"param", "input", "output"};

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

/* The role of item k of a list with these counts: by position. */
static int role_at(int64_t k, const int64_t count[3])
{
    return k < count[0] ? 0 : k < count[0] + count[1] ? 1 : 2;
}

/* Room for want items in *it (util_grow: at least doubling, overflow
 * checked); 0 or -1. */
static int grow_items(CdbItem **it, size_t *cap, size_t want)
{
    return UTIL_GROW(*it, *cap, want);
}

int cdb_items_decode(const char *s, int shared, int64_t base, size_t max_items, CdbItem **out,
                     size_t *n)
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
    } else {                                          /* schemas 6 and 13 */
        int64_t count[3], total, tensor = shared ? base : 0;
        size_t run = 0;                               /* literal pairs since the last repeat */
        if (tensor < 0 || tensor > INT32_MAX)          /* the base is a tensor index too */
            goto bad;
        for (int k = 0; k < 3; k++)
            if ((k && expect(&p, ',') < 0) || read_int(&p, &count[k]) < 0 || count[k] < 0 ||
                count[k] > (INT64_C(1) << 32))
                goto bad;
        total = count[0] + count[1] + count[2];
        /* a literal item takes at least four characters (",d,s"), and a
         * repeat makes items of tensors the caller holds: no allocation
         * larger than the text or max_items warrants */
        if ((uint64_t)total > strlen(p) / 4 && (uint64_t)total > max_items)
            goto bad;
        while (cnt < (size_t)total) {
            int64_t d, spec;
            if (expect(&p, ',') < 0 || read_int(&p, &d) < 0 || expect(&p, ',') < 0 ||
                read_int(&p, &spec) < 0)
                goto bad;
            if (spec < 0) {                           /* (r, -p): the p pairs before, r more times */
                int64_t blk = -spec;
                if (d < 1 || blk > (int64_t)run || d > ((int64_t)total - (int64_t)cnt) / blk ||
                    grow_items(&it, &cap, cnt + (size_t)(d * blk)) < 0)
                    goto bad;
                for (int64_t r = 0; r < d; r++)
                    for (int64_t q = 0; q < blk; q++) {
                        size_t src = cnt - (size_t)blk;
                        int64_t dq = it[src].tensor - (src ? it[src - 1].tensor : (shared ? base : 0));
                        if (__builtin_add_overflow(tensor, dq, &tensor) || tensor < 0 ||
                            tensor > INT32_MAX)
                            goto bad;
                        it[cnt] = (CdbItem){role_at((int64_t)cnt, count), tensor, it[src].spec};
                        cnt++;
                    }
                run = 0;
                continue;
            }
            /* every partial sum is a tensor index: checked, no overflow past it */
            if (__builtin_add_overflow(tensor, d, &tensor) || tensor < 0 || tensor > INT32_MAX ||
                grow_items(&it, &cap, cnt + 1) < 0)
                goto bad;
            it[cnt] = (CdbItem){role_at((int64_t)cnt, count), tensor, spec};
            cnt++;
            run++;
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


/* Whether the n pairs at a and b are the same. */
static int same_pairs(const CdbPair *a, const CdbPair *b, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (a[k].d != b[k].d || a[k].spec != b[k].spec)
            return 0;
    return 1;
}

/* How many times the block of p pairs at i follows itself back to back. */
static size_t repeats_at(const CdbPair *pr, size_t n, size_t i, size_t p)
{
    size_t r = 0;
    while (i + (r + 2) * p <= n && same_pairs(pr + i, pr + i + (r + 1) * p, p))
        r++;
    return r;
}

static char *put_pair(char *p, int64_t a, int64_t b)
{
    *p++ = ',';
    p = cdb_put_int(p, a);
    *p++ = ',';
    return cdb_put_int(p, b);
}

int cdb_items_encode(const int64_t count[3], const CdbPair *pr, size_t n, char **buf,
                     size_t *cap, size_t *len)
{
    size_t *next = NULL, *head = NULL, hcap = 16, i = 0, l = 0;
    int rc = COSTDB_ENOMEM;
    char *p;
    while (hcap < 2 * n)
        hcap *= 2;
    if (n && (!(next = malloc(n * sizeof *next)) || !(head = malloc(hcap * sizeof *head))))
        goto out;
    /* next[k]: the next position with the same pair (SIZE_MAX: none), by a
     * table of the last position of each pair seen from the end */
    for (size_t k = 0; n && k < hcap; k++)
        head[k] = SIZE_MAX;
    for (size_t k = n; k-- > 0;) {
        uint64_t h = ((uint64_t)pr[k].d * UINT64_C(0x9E3779B97F4A7C15)) ^
                     ((uint64_t)pr[k].spec * UINT64_C(0xC2B2AE3D27D4EB4F));
        size_t s = (size_t)(h >> 17) & (hcap - 1);
        /* linear probing over the slots of other pairs */
        while (head[s] != SIZE_MAX && (pr[head[s]].d != pr[k].d || pr[head[s]].spec != pr[k].spec))
            s = (s + 1) & (hcap - 1);
        next[k] = head[s];
        head[s] = k;
    }
    if (cdb_items_reserve(buf, l, cap) < 0)
        goto out;
    p = *buf;
    *p++ = '[';
    p = cdb_put_int(p, count[0]);
    *p++ = ',';
    p = cdb_put_int(p, count[1]);
    *p++ = ',';
    p = cdb_put_int(p, count[2]);
    l = (size_t)(p - *buf);
    while (i < n) {
        size_t best_p = 0, best_r = 0, tries = 0;
        /* the block at i that covers the most pairs by repeating: its
         * length is the distance to a later copy of pair i */
        for (size_t j = next[i]; j != SIZE_MAX && tries < CDB_REPEAT_TRIES; j = next[j], tries++) {
            size_t blk = j - i, r;
            if (2 * blk > n - i)
                break;
            r = repeats_at(pr, n, i, blk);
            if (r * blk > best_r * best_p) {
                best_p = blk;
                best_r = r;
            }
        }
        if (best_r * best_p < 2) {                    /* a pair as it is */
            best_p = 1;
            best_r = 0;
        }
        for (size_t k = 0; k < best_p; k++) {
            if (cdb_items_reserve(buf, l, cap) < 0)
                goto out;
            l = (size_t)(put_pair(*buf + l, pr[i + k].d, pr[i + k].spec) - *buf);
        }
        if (best_r) {
            if (cdb_items_reserve(buf, l, cap) < 0)
                goto out;
            l = (size_t)(put_pair(*buf + l, (int64_t)best_r, -(int64_t)best_p) - *buf);
        }
        i += best_p * (best_r + 1);
    }
    if (cdb_items_reserve(buf, l, cap) < 0)
        goto out;
    (*buf)[l++] = ']';
    (*buf)[l] = '\0';
    *len = l;
    rc = 0;
out:
    free(next);
    free(head);
    return rc;
}
