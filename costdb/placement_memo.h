/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared lists a connection has stored, by their pairs (issue 38,
 * wrrows): a placement set's list (placement_tail) is cdb_items_encode's
 * text of its counts and pairs, a function of them alone (placement_codec.h),
 * so a stage whose counts and pairs equal an earlier stage's takes that
 * stage's tail id without encoding the text again and interning it
 * (placement_write.c put_stage). On the llama-3-8b 1x8 full sweep, 1,321
 * distinct lists among 2,596 stage sets. A cache, like placement_write.c's
 * text maps: dropped with them (cdb_placement_cache_clear, after any
 * rollback), and started again empty past CDB_PAIRS_MEMO_MAX_BYTES, which
 * costs only the encoding.
 */
#ifndef COSTDB_PLACEMENT_MEMO_H
#define COSTDB_PLACEMENT_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include "placement_codec.h"

#define CDB_PAIRS_MEMO_MAX_BYTES ((size_t)4 << 20)

typedef struct CdbPairsSlot {
    uint64_t hash;    /* 0: empty */
    int64_t count[3];
    CdbPair *pairs;   /* n of them, owned */
    size_t n;
    int64_t tail;     /* placement_tail.id */
} CdbPairsSlot;

/* Open addressing, cap a power of two, at most half full; bytes: the
 * slots and the pairs held. Zeroed: empty. */
typedef struct CdbPairsMemo {
    CdbPairsSlot *slot;
    size_t n, cap, bytes;
} CdbPairsMemo;

/* The hash of counts and pairs the memo files them under (never 0). */
uint64_t cdb_pairs_hash(const int64_t count[3], const CdbPair *pairs, size_t n);
/* The tail id remembered for exactly these counts and pairs (hash h), or 0. */
int64_t cdb_pairs_memo_get(const CdbPairsMemo *m, uint64_t h, const int64_t count[3],
                           const CdbPair *pairs, size_t n);
/* Remembers them -> tail (> 0); without memory it forgets (a later stage
 * encodes again). */
void cdb_pairs_memo_put(CdbPairsMemo *m, uint64_t h, const int64_t count[3],
                        const CdbPair *pairs, size_t n, int64_t tail);
/* Frees what it holds and leaves it empty. */
void cdb_pairs_memo_free(CdbPairsMemo *m);

#endif
