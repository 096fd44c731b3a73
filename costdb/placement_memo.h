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

/* ---- sets by their caller's key (issue 38, wrmemo) -----------------------
 *
 * costdb_placements_put_keyed's memo: a caller's key for a stage's rows
 * (costdb.h: its roles, tensor indexes less a base tensor and specs, in
 * order) -> what storing them gave: the set's first tensor and shared list
 * (placement_tail id), and the tensors the set names, relative to the
 * base, so that a stage of other tensors with the same key can be told
 * whether the sweep holds them all. A cache like the others: dropped with
 * them (cdb_placement_cache_clear), started again empty past
 * CDB_KEY_MEMO_MAX_BYTES (a later stage expands its rows again). */

/* The 405B full sweep (384,049 sets, 20,967 lists) at 8 / 16 / 32 MiB:
 * 74.6 / 92.4 / 93.9 % of its sets found, 49.1 / 15.1 / 12.9 M rows
 * expanded (of 148 M), peak RSS +8 / +16 / +32 MB (docs/perf-wrmemo.md). */
#define CDB_KEY_MEMO_MAX_BYTES ((size_t)16 << 20)

typedef struct CdbKeySlot {
    uint64_t hash;          /* 0: empty */
    unsigned char *key;     /* len bytes, owned, then the n tensors (int, aligned) */
    size_t len;
    const int *tensors;     /* the set's tensors less base, in key's block */
    size_t n;
    int64_t sweep_id;       /* the sweep and base the set was last stored for */
    int base;
    int first;              /* the set's first tensor less base */
    int64_t tail;           /* placement_tail.id */
} CdbKeySlot;

/* Open addressing, cap a power of two, at most half full; bytes: the
 * slots and the blocks held. Zeroed: empty. */
typedef struct CdbKeyMemo {
    CdbKeySlot *slot;
    size_t n, cap, bytes;
} CdbKeyMemo;

/* The hash the memo files key (len bytes) under (never 0). */
uint64_t cdb_key_hash(const void *key, size_t len);
/* The slot of exactly this key (hash h), or NULL. */
CdbKeySlot *cdb_key_memo_get(const CdbKeyMemo *m, uint64_t h, const void *key, size_t len);
/* Remembers key -> the set stored for sweep_id at base: its first tensor
 * and tail (> 0), its n tensors (all less base); replaces what the key
 * held. Without memory it forgets (a later stage expands again). */
void cdb_key_memo_put(CdbKeyMemo *m, uint64_t h, const void *key, size_t len, int64_t sweep_id,
                      int base, int first, int64_t tail, const int *tensors, size_t n);
/* Frees what it holds and leaves it empty. */
void cdb_key_memo_free(CdbKeyMemo *m);

#endif
