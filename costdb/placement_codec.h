/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The text encodings of a placement set's items (schemas/README.md,
 * "placement"), shared by the writer (placement_write.c) and the reader
 * (placement_read.c): the role names, decimal output without printf, and
 * the decoder of every stored form.
 */
#ifndef COSTDB_PLACEMENT_CODEC_H
#define COSTDB_PLACEMENT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "fnv.h"

typedef struct CdbItem {
    int role;                      /* 0 param, 1 input, 2 output */
    int64_t tensor, spec;
} CdbItem;

/* The names of the roles, by code (CdbItem.role): "param", "input",
 * "output", schema 1's role column. */
extern const char *const cdb_placement_roles[3];

/* Writes v in decimal at p (as %lld does); returns the end. */
char *cdb_put_int(char *p, int64_t v);
/* Makes room for 80 more bytes after len in *buf (grown by doubling);
 * 0 or COSTDB_ENOMEM. */
int cdb_items_reserve(char **buf, size_t len, size_t *cap);
/* One item of schema 6's encoding: the tensor's delta from the item before
 * and the spec's text id (> 0). */
typedef struct CdbPair {
    int64_t d, spec;
} CdbPair;

/* The blocks the encoder tries at each pair: one per later copy of that
 * pair, the nearest first (a layer's block is the distance to the same
 * pair of the next layer; a pair that recurs inside a layer takes a few
 * more). Bounds the work on a list without repeats. */
#define CDB_REPEAT_TRIES 32

/* The items of text s in schema 3's form ([[role, tensor, spec], ...]) or
 * schema 6's ([n_param, n_input, n_output, d1, spec1, ...]; tensor k is
 * d1 + ... + dk, with schema 13's repeats: a pair (r, -p) stands for the p
 * pairs before it, all literal, r more times), sorted by role then tensor,
 * in *out (the caller frees it); -1 when the text is neither, a repeat is
 * malformed, the counts are more items than the text holds literally and
 * than max_items (a repeat's expansion is bounded by it: three per tensor
 * the caller holds), or a tensor index (base included) leaves
 * [0, INT32_MAX]. shared: s is a list of placement_tail (schema 7), which
 * only schema 6's form may be, its tensors counted from base
 * (first_tensor). */
int cdb_items_decode(const char *s, int shared, int64_t base, size_t max_items, CdbItem **out,
                     size_t *n);
/* Writes [count0, count1, count2, pairs...] at the start of *buf (grown as
 * cdb_items_reserve does), NUL-terminated, its length in *len: each run of
 * a block of pairs repeated back to back as the block and one repeat pair
 * (schema 13). Deterministic: equal lists give equal texts, which is what
 * placement_tail shares by. 0 or COSTDB_ENOMEM. */
int cdb_items_encode(const int64_t count[3], const CdbPair *pairs, size_t n, char **buf,
                     size_t *cap, size_t *len);

/* The hash a shared list (placement_tail) is stored and found under:
 * FNV-1a of its text. */
static inline uint64_t cdb_tail_hash(const char *items)
{
    return costdb_fnv1a_str(COSTDB_FNV_BASIS_V1, items);
}

#endif
