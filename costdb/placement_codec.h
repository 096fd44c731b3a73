/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The text encodings of a placement set's items (schemas/README.md,
 * "placement"), shared by placement.c's writer and reader: decimal output
 * without printf, and the decoder of every stored form.
 */
#ifndef COSTDB_PLACEMENT_CODEC_H
#define COSTDB_PLACEMENT_CODEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct CdbItem {
    int role;                      /* 0 param, 1 input, 2 output */
    int64_t tensor, spec;
} CdbItem;

/* Writes v in decimal at p (as %lld does); returns the end. */
char *cdb_put_int(char *p, int64_t v);
/* Makes room for 80 more bytes after len in *buf (grown by doubling);
 * 0 or COSTDB_ENOMEM. */
int cdb_items_reserve(char **buf, size_t len, size_t *cap);
/* The items of text s in schema 3's form ([[role, tensor, spec], ...]) or
 * schema 6's ([n_param, n_input, n_output, d1, spec1, ...]; tensor k is
 * d1 + ... + dk), sorted by role then tensor, in *out (the caller frees
 * it); -1 when the text is neither or a tensor index (base included)
 * leaves [0, INT32_MAX]. shared: s is a list of placement_tail (schema 7), which only
 * schema 6's form may be, its tensors counted from base (first_tensor). */
int cdb_items_decode(const char *s, int shared, int64_t base, CdbItem **out, size_t *n);

#endif
