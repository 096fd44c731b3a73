/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-memory figures kept once per distinct value (unfit_share.h).
 */
#include <stdlib.h>
#include <string.h>

#include "unfit_share.h"

/* The figures as seven 64-bit words (no padding: 3 doubles, 4 int64). */
enum { WORDS = sizeof(ApsolveUnfit) / sizeof(uint64_t) };
_Static_assert(sizeof(ApsolveUnfit) == WORDS * sizeof(uint64_t), "ApsolveUnfit has padding");

static void words_of(const ApsolveUnfit *u, uint64_t w[WORDS])
{
    memcpy(w, u, sizeof *u);
}

/* An in-process hash of the words (multiply and fold; never stored). */
static uint64_t words_hash(const uint64_t w[WORDS])
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < WORDS; i++)
        h = (h ^ w[i]) * 0xff51afd7ed558ccdULL + (h >> 29);
    /* MurmurHash3's finalizer: every bit of h moves the low bits */
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static int same_words(const ApsolveUnfit *f, const uint64_t w[WORDS])
{
    uint64_t v[WORDS], d = 0;
    words_of(f, v);
    for (int i = 0; i < WORDS; i++)
        d |= v[i] ^ w[i];
    return d == 0;
}

/* Where the figures with words w are indexed in s, or the empty slot
 * they would take. */
static size_t find(const ApsolveUnfitShare *s, const ApsolveUnfitTable *t, const uint64_t w[WORDS],
                   uint64_t h)
{
    size_t mask = s->cap - 1, i = (size_t)h & mask;
    while (s->slot[i] && !same_words(&t->figs[s->slot[i] - 1], w))
        i = (i + 1) & mask;
    return i;
}

/* Twice the slots (or 4096 at first), every held figure placed again. */
static int rehash(ApsolveUnfitShare *s, const ApsolveUnfitTable *t)
{
    size_t cap = s->cap ? 2 * s->cap : 4096;
    uint32_t *old = s->slot;
    size_t ocap = s->cap;
    if (cap > SIZE_MAX / sizeof *s->slot || !(s->slot = calloc(cap, sizeof *s->slot))) {
        s->slot = old;
        return APSOLVE_ENOMEM;
    }
    s->cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i]) {
            uint64_t w[WORDS];
            words_of(&t->figs[old[i] - 1], w);
            s->slot[find(s, t, w, words_hash(w))] = old[i];
        }
    free(old);
    return APSOLVE_OK;
}

/* Entry k of p gets the figures with words w and hash h: the held ones,
 * or new ones (apsolve_unfit_put writes no figure another entry holds). */
static int put_one(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k, const ApsolveUnfit *u,
                   uint64_t h)
{
    ApsolveUnfitTable *t = p->unfit_table;
    uint64_t w[WORDS];
    size_t i;
    int rc;
    words_of(u, w);
    i = find(s, t, w, h);
    if (s->slot[i]) { /* held: entry k points at them */
        t->slot[k] = s->slot[i];
        return APSOLVE_OK;
    }
    if ((rc = apsolve_unfit_put(p, k, u)) != APSOLVE_OK)
        return rc;
    s->slot[i] = t->slot[k];
    s->n++;
    return APSOLVE_OK;
}

/* Where key is in the caller's keys, or the empty slot it would take. */
static size_t memo_find(const ApsolveUnfitShare *s, uint64_t key)
{
    size_t mask = s->mcap - 1;
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    size_t i = (size_t)(h ^ h >> 32) & mask;
    while (s->memo[i].key && s->memo[i].key != key)
        i = (i + 1) & mask;
    return i;
}

/* key's figures got slot value v (the first put of the key's figures
 * decides it: a later one of the same figures finds them held). A cache:
 * without memory for it, the keys not held are put by their figures. */
static void memo_set(ApsolveUnfitShare *s, uint64_t key, uint32_t v)
{
    size_t i;
    if (2 * (s->mn + 1) > s->mcap) {
        size_t cap = s->mcap ? 2 * s->mcap : 4096, ocap = s->mcap;
        ApsolveUnfitShareKey *old = s->memo, *nm = calloc(cap, sizeof *nm);
        if (!nm)
            return;
        s->memo = nm;
        s->mcap = cap;
        for (size_t j = 0; j < ocap; j++)
            if (old[j].key)
                s->memo[memo_find(s, old[j].key)] = old[j];
        free(old);
    }
    i = memo_find(s, key);
    if (s->memo[i].key)
        return; /* held: the same figures, the same value */
    s->memo[i].key = key;
    s->memo[i].v = v;
    s->mn++;
}

/* One waiting put. A known key's entry gets the slot value its figures
 * got, which is what put_one finds for them: the figures with those bytes
 * that the index holds (or none: slot 0, as apsolve_unfit_put). */
static int put_pending(ApsolveUnfitShare *s, ApsolveProblem *p, const ApsolveUnfitSharePending *q)
{
    int rc;
    if (q->known) {
        if (p->unfit_table) /* a value > 0 was given by a put into it */
            p->unfit_table->slot[q->k] = q->v;
        return APSOLVE_OK;
    }
    rc = q->u.fwd >= 0 ? put_one(s, p, q->k, &q->u, q->h) : apsolve_unfit_put(p, q->k, &q->u);
    if (rc == APSOLVE_OK && q->key)
        memo_set(s, q->key, p->unfit_table ? p->unfit_table->slot[q->k] : 0);
    return rc;
}

int apsolve_unfit_share_flush(ApsolveUnfitShare *s, ApsolveProblem *p)
{
    size_t n = s->npending, mask, some = 0;
    int rc = APSOLVE_OK;
    s->npending = 0;
    for (size_t j = 0; j < n; j++)
        some += s->pending[j].known ? s->pending[j].v > 0 : s->pending[j].u.fwd >= 0;
    if (!some) /* only entries without figures: no table made for them */
        for (size_t j = 0; j < n && rc == APSOLVE_OK; j++)
            rc = put_pending(s, p, &s->pending[j]);
    if (!some)
        return rc;
    /* room for the batch: the index at most half full after it */
    if ((rc = apsolve_unfit_table_new(p)) != APSOLVE_OK)
        return rc;
    while (2 * (s->n + n) > s->cap)
        if ((rc = rehash(s, p->unfit_table)) != APSOLVE_OK)
            return rc;
    mask = s->cap - 1;
    /* the index slots, then the figures they hold, asked for ahead */
    for (size_t j = 0; j < n; j++) {
        uint64_t w[WORDS];
        if (s->pending[j].known)
            continue;
        words_of(&s->pending[j].u, w);
        s->pending[j].h = words_hash(w);
        __builtin_prefetch(&s->slot[s->pending[j].h & mask]);
    }
    for (size_t j = 0; j < n; j++) {
        uint32_t v = s->pending[j].known ? 0 : s->slot[s->pending[j].h & mask];
        if (v)
            __builtin_prefetch(&p->unfit_table->figs[v - 1]);
    }
    for (size_t j = 0; j < n && rc == APSOLVE_OK; j++)
        rc = put_pending(s, p, &s->pending[j]);
    return rc;
}

int apsolve_unfit_share_put_keyed(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                                  uint64_t key, const ApsolveUnfit *u)
{
    ApsolveUnfitSharePending *q = &s->pending[s->npending];
    q->k = k;
    q->u = *u;
    q->key = key;
    q->known = 0;
    if (++s->npending == APSOLVE_UNFIT_SHARE_BATCH)
        return apsolve_unfit_share_flush(s, p);
    return APSOLVE_OK;
}

int apsolve_unfit_share_put(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                            const ApsolveUnfit *u)
{
    return apsolve_unfit_share_put_keyed(s, p, k, 0, u);
}

int apsolve_unfit_share_put_known(ApsolveUnfitShare *s, ApsolveProblem *p, size_t k,
                                  uint64_t key)
{
    ApsolveUnfitSharePending *q;
    size_t i;
    int rc;
    if (!key || !s->mcap || s->memo[i = memo_find(s, key)].key != key)
        return 0;
    q = &s->pending[s->npending];
    q->k = k;
    q->known = 1;
    q->v = s->memo[i].v;
    q->key = 0;
    if (++s->npending == APSOLVE_UNFIT_SHARE_BATCH &&
        (rc = apsolve_unfit_share_flush(s, p)) != APSOLVE_OK)
        return rc;
    return 1;
}

void apsolve_unfit_share_free(ApsolveUnfitShare *s)
{
    free(s->slot);
    free(s->memo);
    s->slot = NULL;
    s->memo = NULL;
    s->cap = s->n = s->npending = s->mcap = s->mn = 0;
}
