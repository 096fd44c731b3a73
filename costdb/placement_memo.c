/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared lists a connection has stored, by their pairs
 * (placement_memo.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "placement_memo.h"

/* Both memos' slots begin with their hash, 0 when empty (slots_grown). */
_Static_assert(offsetof(CdbPairsSlot, hash) == 0, "a pairs slot begins with its hash");
_Static_assert(offsetof(CdbKeySlot, hash) == 0, "a key slot begins with its hash");

static uint64_t slot_hash(const unsigned char *slot)
{
    uint64_t h;
    memcpy(&h, slot, sizeof h);
    return h;
}

/* A table of twice the slots (256 at first), zeroed, holding the cap
 * slots of size bytes each of slot at their probes; NULL: no memory (slot
 * is kept). The one rehash of both memos. */
static void *slots_grown(const void *slot, size_t cap, size_t size, size_t *ncap)
{
    size_t n2 = cap ? cap * 2 : 256, k;
    unsigned char *ns = calloc(n2, size);
    if (!ns)
        return NULL;
    for (size_t i = 0; i < cap; i++) {
        const unsigned char *s = (const unsigned char *)slot + i * size;
        uint64_t h = slot_hash(s);
        if (!h)
            continue;
        for (k = (size_t)h & (n2 - 1); slot_hash(ns + k * size); k = (k + 1) & (n2 - 1))
            ;
        memcpy(ns + k * size, s, size);
    }
    *ncap = n2;
    return ns;
}

uint64_t cdb_pairs_hash(const int64_t count[3], const CdbPair *pairs, size_t n)
{
    uint64_t h = cdb_mem_hash(cdb_mem_hash(0, count, 3 * sizeof *count), pairs,
                              n * sizeof *pairs);
    return h ? h : 1; /* 0 marks an empty slot */
}

static int same(const CdbPairsSlot *s, uint64_t h, const int64_t count[3], const CdbPair *pairs,
                size_t n)
{
    return s->hash == h && s->n == n && !memcmp(s->count, count, sizeof s->count) &&
           (!n || !memcmp(s->pairs, pairs, n * sizeof *pairs));
}

int64_t cdb_pairs_memo_get(const CdbPairsMemo *m, uint64_t h, const int64_t count[3],
                           const CdbPair *pairs, size_t n)
{
    if (!m->cap)
        return 0;
    for (size_t k = (size_t)h & (m->cap - 1); m->slot[k].hash; k = (k + 1) & (m->cap - 1))
        if (same(&m->slot[k], h, count, pairs, n))
            return m->slot[k].tail;
    return 0;
}

void cdb_pairs_memo_free(CdbPairsMemo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slot[i].pairs);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

void cdb_pairs_memo_put(CdbPairsMemo *m, uint64_t h, const int64_t count[3],
                        const CdbPair *pairs, size_t n, int64_t tail)
{
    size_t need = n * sizeof *pairs + 2 * sizeof *m->slot, k;
    CdbPair *copy;
    if (tail <= 0 || cdb_pairs_memo_get(m, h, count, pairs, n))
        return;
    if (m->bytes + need > CDB_PAIRS_MEMO_MAX_BYTES)
        cdb_pairs_memo_free(m);
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap;
        CdbPairsSlot *ns = slots_grown(m->slot, m->cap, sizeof *ns, &ncap);
        if (!ns)
            return;
        free(m->slot);
        m->slot = ns;
        m->cap = ncap;
    }
    if (!(copy = malloc(n ? n * sizeof *pairs : 1)))
        return;
    if (n)
        memcpy(copy, pairs, n * sizeof *pairs);
    for (k = (size_t)h & (m->cap - 1); m->slot[k].hash; k = (k + 1) & (m->cap - 1))
        ;
    m->slot[k] = (CdbPairsSlot){h, {count[0], count[1], count[2]}, copy, n, tail};
    m->n++;
    m->bytes += need;
}

/* ---- sets by their caller's key ------------------------------------------ */

uint64_t cdb_key_hash(const void *key, size_t len)
{
    uint64_t h = cdb_mem_hash(0, key, len);
    return h ? h : 1; /* 0 marks an empty slot */
}

CdbKeySlot *cdb_key_memo_get(const CdbKeyMemo *m, uint64_t h, const void *key, size_t len)
{
    if (!m->cap)
        return NULL;
    for (size_t k = (size_t)h & (m->cap - 1); m->slot[k].hash; k = (k + 1) & (m->cap - 1)) {
        CdbKeySlot *s = &m->slot[k];
        if (s->hash == h && s->len == len && !memcmp(s->key, key, len))
            return s;
    }
    return NULL;
}

void cdb_key_memo_free(CdbKeyMemo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slot[i].key);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

/* The slot's block: the key, padded to an int, then the tensors. */
static size_t tensors_at(size_t len)
{
    return (len + sizeof(int) - 1) / sizeof(int) * sizeof(int);
}

void cdb_key_memo_put(CdbKeyMemo *m, uint64_t h, const void *key, size_t len, int64_t sweep_id,
                      int base, int first, int64_t tail, const int *tensors, size_t n)
{
    size_t at = tensors_at(len), block = at + n * sizeof *tensors,
           need = block + 2 * sizeof *m->slot, k;
    CdbKeySlot *s = tail > 0 ? cdb_key_memo_get(m, h, key, len) : NULL;
    unsigned char *copy;
    if (tail <= 0)
        return;
    if (s && s->n == n) {
        /* the same list over other tensors: the last stored wins (a
         * sweep's stages move from layer to layer) */
        memcpy(s->key + at, tensors, n * sizeof *tensors);
        s->sweep_id = sweep_id;
        s->base = base;
        s->first = first;
        s->tail = tail;
        return;
    }
    if (s)
        return; /* not expected (one key, one list); kept as it was */
    if (m->bytes + need > CDB_KEY_MEMO_MAX_BYTES)
        cdb_key_memo_free(m);
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap;
        CdbKeySlot *ns = slots_grown(m->slot, m->cap, sizeof *ns, &ncap);
        if (!ns)
            return;
        free(m->slot);
        m->slot = ns;
        m->cap = ncap;
    }
    if (!(copy = malloc(block ? block : 1)))
        return;
    memcpy(copy, key, len);
    if (n)
        memcpy(copy + at, tensors, n * sizeof *tensors);
    for (k = (size_t)h & (m->cap - 1); m->slot[k].hash; k = (k + 1) & (m->cap - 1))
        ;
    m->slot[k] = (CdbKeySlot){h, copy, len, (const int *)(copy + at), n, sweep_id, base, first,
                              tail};
    m->n++;
    m->bytes += need;
}
