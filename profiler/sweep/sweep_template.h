/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's program templates (program key -> a stage's two entries and
 * placements; docs/architecture.md "No rework per tuple"), kept within a
 * byte cap (docs/performance.md, "Bounded memory: templates under a byte
 * cap"). A template is a cache: one not found is built again from the
 * stage, with the same entries and placements, so what the cap drops only
 * costs time.
 */
#ifndef APPROF_SWEEP_TEMPLATE_H
#define APPROF_SWEEP_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "costdb.h"

/* A placement row of a template: the tensor as its ordinal in the stage's
 * tensor order (approf_shard_program_key), the spec interned in the reuse
 * table's spec pool. */
typedef struct {
    unsigned short role;
    unsigned short spec_len;      /* strlen(spec) (below 512: ApprofPlacement.spec) */
    int ordinal;
    const char *spec;             /* interned in the table's spec pool */
} TemplatePlacement;

/* rows[at .. at + len) of a template's distinct rows, taken reps times,
 * the r-th time with every ordinal plus r * delta: a range of k alike
 * layers holds one layer's block of rows k times, so its placements take
 * one block and a run, not k blocks. */
typedef struct {
    int at, len, reps, delta;
} TemplateRun;

/* An entry as a template keeps it: every field of a CostdbEntry but the
 * error text's fixed buffer (COSTDB_TEXT_MAX bytes, most of the entry),
 * the text, when there is one, in a block of its own (sweep_tuple.c packs
 * and unpacks them). */
typedef struct TemplateEntry {
    unsigned char head[offsetof(CostdbEntry, error)];
    unsigned char tail[sizeof(CostdbEntry) - offsetof(CostdbEntry, error) -
                       sizeof(((CostdbEntry *)0)->error)];
    char *error;                  /* NULL: none */
} TemplateEntry;

/* A template, in a block of its own (the table's slots hold its key and
 * a pointer, so that the table, probed across many slots, stays small);
 * the entries and the placements in blocks of their own too. */
typedef struct {
    uint64_t key[2];
    int measured;                 /* the entries came from a program (not an error) */
    int pl_kept;                  /* 0: the program's placements were not kept (its config
                                   * owns no sharding group): no use to an owner */
    TemplateEntry *e;             /* [2] */
    int n_pl;                     /* placement rows */
    int n_runs;
    TemplateRun *run;             /* n_runs runs, then their rows (one block) */
    const TemplatePlacement *rows;
    size_t bytes;                 /* its blocks' bytes, the error texts included */
} ProgTemplate;

/* A slot of a generation's table: t NULL is free; moved, a template that
 * went to the young generation (the slot still ends no probe). */
typedef struct {
    uint64_t key[2];
    ProgTemplate *t;
    int moved;
} TemplateSlot;

/* One generation: open addressing, cap a power of two, at most half full. */
typedef struct {
    TemplateSlot *slot;
    size_t cap, n;
    size_t bytes;                 /* the slots and what their templates hold */
} TemplateTable;

/* Two generations: templates go into the young one; once it holds half of
 * cap_bytes, the old one is freed and the young one becomes old. A
 * template found in the old one moves to the young one, so whatever the
 * sweep keeps asking for stays (the sweep takes the ranges of a start
 * layer in a row, and the next start asks for their alike ranges again). */
typedef struct {
    TemplateTable young, old;
    size_t cap_bytes;             /* 0: template_cap_default() on first use */
    size_t dropped;               /* templates freed by the cap */
} TemplateStore;

/* The default cap: APPROF_TEMPLATE_CAP_BYTES from the environment when
 * set (an internal knob for tests), else 16 MiB. */
size_t template_cap_default(void);

/* The template of key, or NULL (the pointer stays valid until the
 * template is dropped: by a later put, or a clear). */
ProgTemplate *template_store_find(TemplateStore *s, const uint64_t key[2]);
/* Prefetches the slots where template_store_find starts its probes for
 * key (reads nothing into the store). */
void template_store_prefetch(const TemplateStore *s, const uint64_t key[2]);
/* Keeps *tp (its blocks moved in, *tp zeroed) under its key unless a
 * template of that key is there (then *tp is freed); 0, or
 * APPROF_ENOMEM with *tp freed. */
int template_store_put(TemplateStore *s, ProgTemplate *tp);
/* What the store holds, in bytes (the slots included). */
size_t template_store_bytes(const TemplateStore *s);
/* Frees every template (the cap stays). */
void template_store_clear(TemplateStore *s);
/* Frees what a template holds (not the template's own block). */
void template_free(ProgTemplate *tp);

/* Sets tp's placements from rows[0 .. n) (runs found, rows copied); 0 or
 * APPROF_ENOMEM. */
int template_set_placements(ProgTemplate *tp, const TemplatePlacement *rows, int n);
/* Row k of tp's placements, k < tp->n_pl, in order: calls in increasing k
 * with the same *cursor (zeroed before the first) cost O(1) each. */
typedef struct {
    int run, rep, q, k;
} TemplateCursor;
TemplatePlacement template_placement_next(const ProgTemplate *tp, TemplateCursor *c);

#endif
