/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's program templates under a byte cap (sweep_template.h): two
 * generations of open-addressing tables, and a template's placements as
 * runs of a repeated block of rows.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "sweep_template.h"
#include "table_alloc.h"

/* Each malloc'ed block counted with a word of the allocator's own. */
#define BLOCK_OVERHEAD 16
/* The longest block of rows looked for (a transformer layer holds a few
 * dozen placement rows). */
#define RUN_PERIOD_MAX 128

/* A stored template and its two entries in one block: a hit reads both,
 * and the entries' lines are known (and fetched) with the template's,
 * not only once its e pointer has come from memory. */
typedef struct TemplateBlock {
    ProgTemplate t;
    TemplateEntry e[2];
} TemplateBlock;

/* Whether tp's entries live in its own block (template_store_put);
 * compared as integers, tp being possibly a lone ProgTemplate. */
static int entries_inline(const ProgTemplate *tp)
{
    return (uintptr_t)tp->e == (uintptr_t)tp + offsetof(TemplateBlock, e);
}

size_t template_cap_default(void)
{
    const char *v = getenv("APPROF_TEMPLATE_CAP_BYTES");
    if (v && *v) {
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end == '\0')
            return n ? (size_t)n : 1;
    }
    return (size_t)16 << 20;
}

void template_free(ProgTemplate *tp)
{
    if (tp->e) {
        free(tp->e[0].error);
        free(tp->e[1].error);
        if (!entries_inline(tp))
            free(tp->e);
    }
    free(tp->run);
    tp->e = NULL;
    tp->run = NULL;
    tp->rows = NULL;
}

/* ---- placements as runs ------------------------------------------------ */

static int rows_alike(const TemplatePlacement *a, const TemplatePlacement *b, int shift)
{
    return a->role == b->role && a->spec == b->spec && b->ordinal - a->ordinal == shift;
}

/* How many times rows[i .. i + p) occurs from i on, each time with the
 * ordinals shifted by *delta more (i + p < n). */
static int block_reps(const TemplatePlacement *r, int n, int i, int p, int *delta)
{
    int d = r[i + p].ordinal - r[i].ordinal, reps = 1;
    *delta = d;
    for (;;) {
        int b = i + reps * p, q = 0;
        if (b + p > n)
            return reps;
        while (q < p && rows_alike(&r[b - p + q], &r[b + q], d))
            q++;
        if (q < p)
            return reps;
        reps++;
    }
}

int template_set_placements(ProgTemplate *tp, const TemplatePlacement *rows, int n)
{
    TemplateRun *run;
    TemplatePlacement *lit;
    int nr = 0, nl = 0;
    free(tp->run);
    tp->run = NULL;
    tp->rows = NULL;
    tp->n_pl = tp->n_runs = 0;
    if (n <= 0)
        return 0;
    run = malloc((size_t)n * sizeof *run);
    lit = malloc((size_t)n * sizeof *lit);
    if (!run || !lit) {
        free(run);
        free(lit);
        return APPROF_ENOMEM;
    }
    for (int i = 0; i < n;) {
        int bp = 0, br = 1, bd = 0;
        for (int p = 1; p <= RUN_PERIOD_MAX && i + 2 * p <= n; p++) {
            int d, r;
            if (rows[i + p].role != rows[i].role || rows[i + p].spec != rows[i].spec)
                continue;
            r = block_reps(rows, n, i, p, &d);
            if (r >= 2 && (long)r * p > (long)br * bp) {
                bp = p;
                br = r;
                bd = d;
            }
        }
        if (br >= 2) {
            run[nr++] = (TemplateRun){nl, bp, br, bd};
            memcpy(lit + nl, rows + i, (size_t)bp * sizeof *lit);
            nl += bp;
            i += br * bp;
            continue;
        }
        /* a row that starts no repeat: onto the last run of single rows */
        if (nr && run[nr - 1].reps == 1 && run[nr - 1].at + run[nr - 1].len == nl)
            run[nr - 1].len++;
        else
            run[nr++] = (TemplateRun){nl, 1, 1, 0};
        lit[nl++] = rows[i++];
    }
    /* one block: the runs, then their rows */
    size_t rb = (size_t)nr * sizeof *run;
    rb = (rb + _Alignof(TemplatePlacement) - 1) / _Alignof(TemplatePlacement) *
         _Alignof(TemplatePlacement);
    unsigned char *blk = malloc(rb + (size_t)nl * sizeof *lit);
    if (blk) {
        memcpy(blk, run, (size_t)nr * sizeof *run);
        memcpy(blk + rb, lit, (size_t)nl * sizeof *lit);
        tp->run = (TemplateRun *)(void *)blk;
        tp->rows = (const TemplatePlacement *)(void *)(blk + rb);
        tp->n_pl = n;
        tp->n_runs = nr;
    }
    free(run);
    free(lit);
    return blk ? 0 : APPROF_ENOMEM;
}

TemplatePlacement template_placement_next(const ProgTemplate *tp, TemplateCursor *c)
{
    const TemplateRun *r = &tp->run[c->run];
    TemplatePlacement x = tp->rows[r->at + c->q];
    x.ordinal += c->rep * r->delta;
    if (++c->q == r->len) {
        c->q = 0;
        if (++c->rep == r->reps) {
            c->rep = 0;
            c->run++;
        }
    }
    c->k++;
    return x;
}

/* ---- the store --------------------------------------------------------- */

static size_t template_bytes(const ProgTemplate *tp)
{
    size_t b = 0;
    if (tp->e) {
        b += 2 * sizeof *tp->e + BLOCK_OVERHEAD;
        for (int i = 0; i < 2; i++)
            if (tp->e[i].error)
                b += strlen(tp->e[i].error) + 1 + BLOCK_OVERHEAD;
    }
    if (tp->run)
        b += (size_t)tp->n_runs * sizeof(TemplateRun) + BLOCK_OVERHEAD +
             (size_t)(tp->n_runs ? tp->run[tp->n_runs - 1].at + tp->run[tp->n_runs - 1].len : 0) *
                 sizeof(TemplatePlacement);
    return b;
}

/* The slot of key in t: its template's, or the free slot that ends the
 * probe; NULL for an empty table. */
static TemplateSlot *table_slot(TemplateTable *t, const uint64_t key[2])
{
    if (!t->cap)
        return NULL;
    size_t k = (size_t)key[0] & (t->cap - 1);
    while (t->slot[k].t || t->slot[k].moved) {
        if (t->slot[k].key[0] == key[0] && t->slot[k].key[1] == key[1])
            return &t->slot[k];
        k = (k + 1) & (t->cap - 1);
    }
    return &t->slot[k];
}

/* Room for one more template in t (the table doubled at half full); 0 or
 * APPROF_ENOMEM. */
static int table_reserve(TemplateTable *t)
{
    if ((t->n + 1) * 2 <= t->cap)
        return 0;
    size_t ncap = t->cap ? t->cap * 2 : 64;
    TemplateSlot *ns = costdb_table_alloc(ncap, sizeof *ns);
    if (!ns)
        return APPROF_ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slot[i].t)
            continue;
        size_t k = (size_t)t->slot[i].key[0] & (ncap - 1);
        while (ns[k].t)
            k = (k + 1) & (ncap - 1);
        ns[k] = t->slot[i];
    }
    free(t->slot);
    t->slot = ns;
    t->bytes += (ncap - t->cap) * sizeof *ns;
    t->cap = ncap;
    return 0;
}

static size_t table_free(TemplateTable *t)
{
    size_t freed = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i].t) {
            template_free(t->slot[i].t);
            free(t->slot[i].t);
            freed++;
        }
    free(t->slot);
    memset(t, 0, sizeof *t);
    return freed;
}

/* Past half the cap, the young generation becomes the old one and the
 * old one is freed. */
static void rotate_if_full(TemplateStore *s)
{
    if (!s->cap_bytes)
        s->cap_bytes = template_cap_default();
    if (s->young.bytes <= s->cap_bytes / 2)
        return;
    s->dropped += table_free(&s->old);
    s->old = s->young;
    memset(&s->young, 0, sizeof s->young);
}

void template_store_prefetch(const TemplateStore *s, const uint64_t key[2])
{
    if (s->young.cap)
        __builtin_prefetch(&s->young.slot[(size_t)key[0] & (s->young.cap - 1)]);
    if (s->old.cap)
        __builtin_prefetch(&s->old.slot[(size_t)key[0] & (s->old.cap - 1)]);
}

ProgTemplate *template_store_find(TemplateStore *s, const uint64_t key[2])
{
    TemplateSlot *y = table_slot(&s->young, key), *o;
    ProgTemplate *t;
    if (y && y->t) {
        /* the caller reads the entries next: their lines with the
         * template's (one block, template_store_put) */
        const char *b = (const char *)y->t;
        for (size_t at = 64; at < sizeof(TemplateBlock); at += 64)
            __builtin_prefetch(b + at);
        return y->t;
    }
    o = table_slot(&s->old, key);
    if (!o || !o->t)
        return NULL;
    t = o->t;
    /* asked for again: into the young generation (without memory for its
     * slot it stays where it is) */
    if (table_reserve(&s->young) < 0)
        return t;
    y = table_slot(&s->young, key);
    y->key[0] = key[0];
    y->key[1] = key[1];
    y->t = t;
    o->t = NULL;
    o->moved = 1;
    s->old.bytes -= t->bytes;
    s->young.bytes += t->bytes;
    s->young.n++;
    rotate_if_full(s);
    return t;
}

int template_store_put(TemplateStore *s, ProgTemplate *tp)
{
    TemplateSlot *slot;
    ProgTemplate *t;
    TemplateBlock *b;
    int have = template_store_find(s, tp->key) != NULL;
    if (have || table_reserve(&s->young) < 0 || !(b = malloc(sizeof *b))) {
        template_free(tp);
        memset(tp, 0, sizeof *tp);
        return have ? 0 : APPROF_ENOMEM;
    }
    t = &b->t;
    *t = *tp;
    if (tp->e) {
        memcpy(b->e, tp->e, sizeof b->e);
        free(tp->e);
        t->e = b->e;
    }
    /* counted as when the entries had a block of their own (the cap's
     * generations turn over where they did) */
    t->bytes = sizeof *t + BLOCK_OVERHEAD + template_bytes(t);
    slot = table_slot(&s->young, t->key);
    slot->key[0] = t->key[0];
    slot->key[1] = t->key[1];
    slot->t = t;
    s->young.n++;
    s->young.bytes += t->bytes;
    memset(tp, 0, sizeof *tp);
    rotate_if_full(s);
    return 0;
}

size_t template_store_bytes(const TemplateStore *s)
{
    return s->young.bytes + s->old.bytes;
}

void template_store_clear(TemplateStore *s)
{
    table_free(&s->young);
    table_free(&s->old);
}
