/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the sharding context keeps across the stages of a sweep
 * (context.h): each op's iteration space, the range-independent part of
 * node costs per logical mesh, edge matrices by what they depend on,
 * Pareto sets by stage structure, and the program key that names a
 * stage's program up to its tensors' names.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "sharding/context.h"
#include "sharding/program_int.h"

/* The node-cost table of mesh m (created, or recycled round-robin). */
double *shard_cost_table(ApprofShardContext *ctx, const ShardMesh *m)
{
    size_t n;
    assert(ctx && ctx->g && m);
    n = (ctx->g->n_ops ? ctx->g->n_ops : 1) * (size_t)SHARD_COST_SLOTS;
    for (int i = 0; i < ctx->n_tables; i++)
        if (!memcmp(&ctx->tables[i].mesh, m, sizeof *m))
            return ctx->tables[i].cost;
    NodeCostTable *t;
    if (ctx->n_tables < SHARD_COST_TABLES) {
        t = &ctx->tables[ctx->n_tables];
        t->cost = malloc(n * sizeof(double));
        if (!t->cost)
            return NULL;
        ctx->n_tables++;
    } else {
        t = &ctx->tables[ctx->next_victim];
        ctx->next_victim = (ctx->next_victim + 1) % SHARD_COST_TABLES;
    }
    t->mesh = *m;
    for (size_t i = 0; i < n; i++)
        t->cost[i] = NAN;
    return t->cost;
}

const ApprofIterSpace *shard_cached_iter_space(ApprofShardContext *ctx, int op, int *rc)
{
    assert(ctx && ctx->g && rc && op >= 0 && (size_t)op < ctx->g->n_ops);
    if (!ctx->spaces) {
        size_t n = ctx->g->n_ops ? ctx->g->n_ops : 1;
        ctx->spaces = malloc(n * sizeof *ctx->spaces);
        ctx->space_state = calloc(n, 1);
        if (!ctx->spaces || !ctx->space_state) {
            free(ctx->spaces);
            free(ctx->space_state);
            ctx->spaces = NULL;
            ctx->space_state = NULL;
            *rc = APPROF_ENOMEM;
            return NULL;
        }
    }
    if (!ctx->space_state[op])
        ctx->space_state[op] = approf_op_iter_space(ctx->g, op, &ctx->spaces[op]) ? 2 : 1;
    if (ctx->space_state[op] == 2) {
        *rc = APPROF_EINVAL;
        return NULL;
    }
    *rc = 0;
    return &ctx->spaces[op];
}

/* What an op's node costs, memory and edges depend on, besides the stage
 * boundary: kind, attributes, the shapes, dtypes and roles of its tensors,
 * and what its backward saves. */
static uint64_t op_descriptor(const ApprofGraph *g, int o)
{
    const ApprofOp *op = &g->ops[o];
    ApprofHash128 h;
    approf_hash128_init(&h, 0x5eed);
    int64_t w[4] = {op->kind, op->n_inputs, op->n_outputs, approf_op_saved_mask(g, o)};
    approf_hash128_update(&h, w, sizeof w);
    approf_hash128_update(&h, &op->attrs, sizeof op->attrs);
    for (int side = 0; side < 2; side++) {
        int n = side ? op->n_outputs : op->n_inputs;
        for (int i = 0; i < n; i++) {
            const ApprofTensor *t = &g->tensors[side ? op->outputs[i] : op->inputs[i]];
            int64_t v[4] = {t->ndim, t->dtype, t->role, t->batch_dim};
            approf_hash128_update(&h, v, sizeof v);
            approf_hash128_update(&h, t->dims, (size_t)t->ndim * sizeof t->dims[0]);
        }
    }
    return h.a ^ (h.b * 0x9e3779b97f4a7c15ULL);
}

/* op's descriptor, computed on first use (never 0: 0 marks "not yet"). */
static uint64_t op_desc(ApprofShardContext *ctx, int o)
{
    if (!ctx->op_desc[o])
        ctx->op_desc[o] = op_descriptor(ctx->g, o) | 1;
    return ctx->op_desc[o];
}

/* The part of a structure key that is not the walk over the stage's ops:
 * its op count, forced batch axis, memory levels, method, micro-batches
 * and logical mesh. */
static ApprofHash128 struct_head(int n_ops, int force, int levels, int method, int micro_batches,
                                 const ShardMesh *mesh)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0x57a6e);
    int64_t hdr[6] = {n_ops, force, levels, method, micro_batches, 0};
    approf_hash128_update(&h, hdr, sizeof hdr);
    approf_hash128_update(&h, mesh, sizeof *mesh);
    return h;
}

/* A structure key is its head (struct_head) xor the walk over the stage's
 * ops, which depends on the layer range alone (the ops, and the tensor
 * facts of shard_stage_setup, which read neither the mesh nor the
 * variant): the walk of one stage is the key of another stage of the same
 * range xor that stage's head (stage_key_part). */
static ApprofHash128 struct_combine(ApprofHash128 a, ApprofHash128 b)
{
    ApprofHash128 h = {a.a ^ b.a, a.b ^ b.b};
    return h;
}

ApprofHash128 shard_struct_key(ApprofShardContext *ctx, const ShardStage *st, int levels,
                                int method)
{
    const ApprofGraph *g = st->g;
    ApprofHash128 h;
    approf_hash128_init(&h, 0x57a6f);
    for (int o = st->op_begin; o < st->op_end; o++) {
        const ApprofOp *op = &g->ops[o];
        approf_hash128_word(&h, op_desc(ctx, o));
        for (int i = 0; i < op->n_inputs; i++) {
            int t = op->inputs[i], p = g->tensors[t].producer;
            if (p >= st->op_begin && p < st->op_end) {
                int j = shard_tensor_slot(g->ops[p].outputs, g->ops[p].n_outputs, t);
                approf_hash128_word(&h, ((uint64_t)(o - p) << 8) | (uint64_t)(j + 1));
            } else {
                approf_hash128_word(&h, 0xff00u | (uint64_t)(st->t_first[t] == o) << 4 |
                                        (uint64_t)(st->t_saved[t] != 0) << 2);
            }
        }
        for (int j = 0; j < op->n_outputs; j++) {
            int t = op->outputs[j];
            approf_hash128_word(&h, (uint64_t)st->t_cons[t] << 8 |
                                    (uint64_t)(st->t_out[t] != 0) << 1 |
                                    (uint64_t)(st->t_saved[t] != 0));
        }
    }
    return struct_combine(h, struct_head(st->n_ops, st->force, levels, method,
                                         st->micro_batches, &st->mesh));
}

#define SLOT(base, i, esize) ((MemoSlot *)((unsigned char *)(base) + (i) * (esize)))

/* The entry of key in t (entries of esize bytes), or with insert a free
 * entry for it, the table grown from 64 entries as needed; NULL when
 * absent, or out of memory. */
static void *memo_slot(MemoTable *t, size_t esize, ApprofHash128 key, int insert)
{
    assert(t && esize >= sizeof(MemoSlot) && t->n * 2 <= t->cap);
    if (insert && (t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        void *ne = calloc(ncap, esize);
        if (!ne)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (!SLOT(t->e, i, esize)->used)
                continue;
            size_t k = (size_t)SLOT(t->e, i, esize)->key.a & (ncap - 1);
            while (SLOT(ne, k, esize)->used)
                k = (k + 1) & (ncap - 1);
            memcpy(SLOT(ne, k, esize), SLOT(t->e, i, esize), esize);
        }
        free(t->e);
        t->e = ne;
        t->cap = ncap;
    }
    if (!t->cap)
        return NULL;
    assert((t->cap & (t->cap - 1)) == 0);
    size_t k = (size_t)key.a & (t->cap - 1);
    while (SLOT(t->e, k, esize)->used) {
        if (SLOT(t->e, k, esize)->key.a == key.a && SLOT(t->e, k, esize)->key.b == key.b)
            return SLOT(t->e, k, esize);
        k = (k + 1) & (t->cap - 1);
    }
    return insert ? SLOT(t->e, k, esize) : NULL;
}

static void *memo_find(const MemoTable *t, size_t esize, ApprofHash128 key)
{
    return memo_slot((MemoTable *)t, esize, key, 0);
}

/* A new entry for key in t whose payload holds bytes, marked used and
 * counted; NULL (the caller keeps its payload) when the key is there
 * already, the table would pass max_bytes, or without memory. */
static void *memo_claim(MemoTable *t, size_t esize, ApprofHash128 key, size_t bytes,
                        size_t max_bytes)
{
    if (t->bytes + bytes > max_bytes)
        return NULL;
    MemoSlot *s = memo_slot(t, esize, key, 1);
    if (!s || s->used)
        return NULL;
    s->key = key;
    s->used = 1;
    t->n++;
    t->bytes += bytes;
    return s;
}

const StructEntry *shard_structure_find(const ApprofShardContext *ctx, ApprofHash128 key)
{
    return memo_find(&ctx->smemo, sizeof(StructEntry), key);
}

/* Stores the memo's Pareto set under structure key k (strategy indices fit
 * a byte: at most SHARD_MAX_STRATS); silently skipped past the byte cap or
 * without memory, which only costs a later solve. */
void shard_remember_structure(ApprofShardContext *ctx, ApprofHash128 k, const ParetoMemo *memo,
                               int maxk)
{
    size_t n = (size_t)memo->n_points * (size_t)memo->n_ops;
    unsigned char *c = maxk <= 256 ? malloc(n ? n : 1) : NULL;
    StructEntry *e = c ? memo_claim(&ctx->smemo, sizeof *e, k, n, SHARD_STRUCT_MEMO_BYTES) : NULL;
    if (!e) {
        free(c);
        return;
    }
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)memo->choices[i];
    e->n_ops = memo->n_ops;
    e->n_points = memo->n_points;
    memcpy(e->times, memo->times, sizeof e->times);
    e->choices = c;
}

/* ---- edge matrices ---------------------------------------------------- */

ApprofHash128 shard_edge_key(ApprofShardContext *ctx, const ShardStage *st, int op_p, int op_c,
                             int in_slot)
{
    const ApprofGraph *g;
    int t, j;
    /* an edge of the stage: producer op_p feeds input in_slot of op_c */
    assert(ctx && st && st->g && op_p >= 0 && (size_t)op_p < st->g->n_ops && op_c >= 0 &&
           (size_t)op_c < st->g->n_ops && in_slot >= 0 && in_slot < st->g->ops[op_c].n_inputs);
    g = st->g;
    t = g->ops[op_c].inputs[in_slot];
    j = shard_tensor_slot(g->ops[op_p].outputs, g->ops[op_p].n_outputs, t);
    ApprofHash128 h;
    approf_hash128_init(&h, 0xed6e);
    int64_t w[6] = {(int64_t)op_desc(ctx, op_p), (int64_t)op_desc(ctx, op_c), in_slot, j,
                    st->force, st->t_cons[t] == 1 && !st->t_out[t]};
    approf_hash128_update(&h, w, sizeof w);
    approf_hash128_update(&h, &st->mesh, sizeof st->mesh);
    return h;
}

const double *shard_edge_find(const ApprofShardContext *ctx, ApprofHash128 k, int kp, int kc)
{
    const EdgeEntry *e = memo_find(&ctx->ememo, sizeof *e, k);
    /* a different shape under the same key would be a hash collision */
    return e && e->kp == kp && e->kc == kc ? e->r : NULL;
}

/* Stores r under k; silently skipped past the byte cap or without memory,
 * which only costs a later computation. */
void shard_edge_remember(ApprofShardContext *ctx, ApprofHash128 k, int kp, int kc,
                         const double *r)
{
    size_t n = (size_t)kp * (size_t)kc * sizeof(double);
    double *c;
    assert(ctx && kp > 0 && kc > 0 && r);
    c = malloc(n ? n : 1);
    EdgeEntry *e = c ? memo_claim(&ctx->ememo, sizeof *e, k, n, SHARD_EDGE_MEMO_BYTES) : NULL;
    if (!e) {
        free(c);
        return;
    }
    memcpy(c, r, n);
    e->kp = kp;
    e->kc = kc;
    e->r = c;
}

/* ---- ShardingSpec texts ------------------------------------------------ */

const char *shard_spec_text(ApprofShardContext *ctx, const CostdbLayout *l, char *own,
                            size_t own_len, size_t *len, ApprofHash128 *dig)
{
    ApprofHash128 key;
    approf_hash128_init(&key, 0x5bec);
    int64_t w[3 + COSTDB_MAX_DIMS] = {l->ndim, l->logical_a, l->logical_b};
    for (int d = 0; d < l->ndim && d < COSTDB_MAX_DIMS; d++)
        w[3 + d] = l->mesh_axis_of_dim[d];
    approf_hash128_update(&key, w, sizeof w);
    SpecEntry *e = ctx ? memo_find(&ctx->spmemo, sizeof *e, key) : NULL;
    if (e) {
        *len = e->len;
        *dig = e->dig;
        return e->text;
    }
    costdb_spec_format(l, own, own_len);
    *len = strlen(own);
    approf_hash128_init(dig, 0x5bec7);
    approf_hash128_update(dig, own, *len);
    char *text = ctx ? malloc(*len + 1) : NULL;
    e = text ? memo_claim(&ctx->spmemo, sizeof *e, key, *len + 1, SHARD_SPEC_MEMO_BYTES) : NULL;
    if (!e) {
        free(text);
        return own;
    }
    memcpy(text, own, *len + 1);
    e->len = *len;
    e->dig = *dig;
    e->text = text;
    return text;
}

/* ---- strategies -------------------------------------------------------- */

const ShardStrat *shard_op_strategies(ApprofShardContext *ctx, ShardStage *st, int o, int *k,
                                      KernelEntry **kern, const ShardOpLayouts **lay)
{
    const ShardOp *so;
    assert(ctx && st && k && o >= 0 && o < st->n_ops);
    so = &st->ops[o];
    ApprofHash128 key;
    approf_hash128_init(&key, 0x57a7);
    int64_t w[4] = {(int64_t)op_desc(ctx, so->op), st->mesh.n[0], st->mesh.n[1], st->force};
    approf_hash128_update(&key, w, sizeof w);
    StratEntry *e = memo_find(&ctx->stmemo, sizeof *e, key);
    *kern = NULL;
    *lay = NULL;
    if (e) {
        *k = e->k;
        *kern = e->kern;
        *lay = e->lay;
        return e->v;
    }
    if (!st->strat_block) {
        st->strat_block = malloc((size_t)(st->n_ops > 0 ? st->n_ops : 1) * SHARD_MAX_STRATS *
                                 sizeof(ShardStrat));
        if (!st->strat_block) {
            *k = APPROF_ENOMEM;
            return NULL;
        }
    }
    ShardStrat *own = st->strat_block + (size_t)o * SHARD_MAX_STRATS;
    *k = shard_enum_strategies(so->sp, &st->mesh, st->force, own, SHARD_MAX_STRATS);
    if (*k <= 0)
        return own;
    size_t bytes = (size_t)*k * sizeof(ShardStrat);
    ShardStrat *v = malloc(bytes);
    KernelEntry *kc = calloc((size_t)*k, sizeof *kc);
    ShardOpLayouts *lc = malloc((size_t)*k * sizeof *lc);
    e = v && kc && lc ? memo_claim(&ctx->stmemo, sizeof *e, key,
                                   bytes + (size_t)*k * (sizeof *kc + sizeof *lc),
                                   SHARD_STRAT_MEMO_BYTES)
                      : NULL;
    if (!e) {
        free(v);
        free(kc);
        free(lc);
        return own;
    }
    memcpy(v, own, bytes);
    const ApprofOp *op = &st->g->ops[so->op];
    memset(lc, 0, (size_t)*k * sizeof *lc);
    for (int j = 0; j < *k; j++) {
        for (int i = 0; i < op->n_inputs; i++)
            lc[j].in[i] = shard_operand_layout(&v[j], so->sp->in_map[i],
                                               st->g->tensors[op->inputs[i]].ndim);
        for (int i = 0; i < op->n_outputs; i++)
            lc[j].out[i] = shard_operand_layout(&v[j], so->sp->out_map[i],
                                                st->g->tensors[op->outputs[i]].ndim);
    }
    e->k = *k;
    e->v = v;
    e->kern = kc;
    e->lay = lc;
    *kern = kc;
    *lay = lc;
    return v;
}

/* ---- kernels ----------------------------------------------------------- */

/* Lowers stage op o under s into k (both phases) with the digests. */
static int lower_op(const ShardStage *st, int o, const ShardStrat *s, ApprofKernel *k,
                    ApprofHash128 *dig, int n[2])
{
    const ShardOp *so;
    int64_t local[APPROF_MAX_ITER];
    int tot = 0;
    assert(st && s && k && dig && n && o >= 0 && o < st->n_ops);
    so = &st->ops[o];
    shard_local_sizes(so->sp, s, &st->mesh, local);
    for (int ph = 0; ph < 2; ph++) {
        int c = approf_op_kernels_in(st->g, so->op, so->sp, local, ph, k + tot,
                                     APPROF_MAX_KERNELS);
        if (c < 0)
            return c;
        n[ph] = c;
        tot += c;
    }
    for (int i = 0; i < tot; i++)
        dig[i] = shard_kernel_digest(&k[i]);
    return 0;
}

const KernelEntry *shard_op_kernels(ApprofShardContext *ctx, const ShardStage *st, int o,
                                    const ShardStrat *s, KernelEntry *own, int *rc)
{
    ApprofHash128 key = {0, 0};
    int memo = ctx && ctx->op_desc;
    const ShardOp *so = &st->ops[o];
    KernelEntry *e, *kept = NULL;
    *rc = 0;
    /* s in the memo's strategy list of the op: its entry is that of the
     * kernel memo's key below, a function of the list's own key (the op's
     * descriptor and the mesh's axis sizes) and of s's axes, so it is kept
     * with the list once found (StratEntry.kern) */
    uintptr_t at = (uintptr_t)s - (uintptr_t)so->s;
    if (memo && so->kern && (uintptr_t)s >= (uintptr_t)so->s &&
        at < (uintptr_t)so->k * sizeof *s && at % sizeof *s == 0) {
        kept = &so->kern[at / sizeof *s];
        if (kept->s.used)
            return kept;
    }
    if (memo) {
        approf_hash128_init(&key, 0x6e7e1);
        int64_t w[5] = {(int64_t)op_desc(ctx, so->op), s->ax[0], s->ax[1],
                        st->mesh.n[0], st->mesh.n[1]};
        approf_hash128_update(&key, w, sizeof w);
        e = memo_find(&ctx->kmemo, sizeof *e, key);
        if (e) {
            if (kept)
                *kept = *e;
            return e;
        }
    }
    *rc = lower_op(st, o, s, own->k, own->dig, own->n);
    if (*rc)
        return NULL;
    size_t tot = (size_t)own->n[0] + (size_t)own->n[1];
    size_t bytes = tot * (sizeof(ApprofKernel) + sizeof(ApprofHash128));
    ApprofKernel *kc = memo ? malloc(tot ? tot * sizeof *kc : 1) : NULL;
    ApprofHash128 *dc = memo ? malloc(tot ? tot * sizeof *dc : 1) : NULL;
    e = kc && dc ? memo_claim(&ctx->kmemo, sizeof *e, key, bytes, SHARD_KERNEL_MEMO_BYTES) : NULL;
    if (!e) {
        free(kc);
        free(dc);
        return own;
    }
    memcpy(kc, own->k, tot * sizeof *kc);
    memcpy(dc, own->dig, tot * sizeof *dc);
    e->n[0] = own->n[0];
    e->n[1] = own->n[1];
    e->k = kc;
    e->dig = dc;
    if (kept)
        *kept = *e;
    return e;
}

/* ---- freeing ------------------------------------------------------------ */

/* Each used entry of table t, whose entries are of type type, in turn. */
#define FOR_USED(t, type, e)                                                          \
    for (type *e = (t)->e; e && e < (type *)(t)->e + (t)->cap; e++)                  \
        if (e->s.used)

void shard_memos_free(ApprofShardContext *ctx)
{
    FOR_USED(&ctx->smemo, StructEntry, e)
        free(e->choices);
    FOR_USED(&ctx->ememo, EdgeEntry, e)
        free(e->r);
    FOR_USED(&ctx->kmemo, KernelEntry, e) {
        free(e->k);
        free(e->dig);
    }
    FOR_USED(&ctx->stmemo, StratEntry, e) {
        free(e->v);
        free(e->kern);
        free(e->lay);
    }
    FOR_USED(&ctx->spmemo, SpecEntry, e)
        free(e->text);
    free(ctx->op_facts); /* the per-op facts (shard_op_facts_make) */
    ctx->op_facts = NULL;
    MemoTable *all[] = {&ctx->smemo, &ctx->ememo, &ctx->kmemo, &ctx->stmemo, &ctx->spmemo};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(all[i]->e);
        memset(all[i], 0, sizeof *all[i]);
    }
}

/* Room in pk for n_ops ops' blocks and tensors; 0 or APPROF_ENOMEM. */
static int pkey_reserve(ProgKeyMemo *pk, size_t n_ops)
{
    if (pk->cap >= n_ops)
        return 0;
    free(pk->order);
    free(pk->blk);
    pk->cap = 0;
    pk->order = malloc(n_ops * (APPROF_MAX_INPUTS + APPROF_MAX_OUTPUTS) * sizeof(int));
    pk->blk = malloc(n_ops * sizeof(int));
    if (!pk->order || !pk->blk)
        return APPROF_ENOMEM;
    pk->cap = n_ops;
    return 0;
}

/* Fills pk for stage key `stage` from q, a kept stage of the same layer
 * range: the op count, checkpoint blocks, tensor order and policy parity
 * are the range's (shard_stage_setup reads the range alone for them), and
 * the structure key is q's with q's head exchanged for this stage's
 * (struct_combine). levels and method are this stage's (its key's last
 * word); q's are read from its key. 0 or APPROF_ENOMEM. */
static int same_range_part(ApprofShardContext *ctx, ProgKeyMemo *pk, const ProgKeyMemo *q,
                           const int stage[8], int levels, int method)
{
    ShardMesh mq, mp;
    size_t nops = (size_t)(q->n_ops > 0 ? q->n_ops : 1);
    assert(method >= 0 && method < 16); /* shard_stage_key's last word: levels * 16 + method */
    if (pkey_reserve(pk, nops))
        return APPROF_ENOMEM;
    memset(&mq, 0, sizeof mq); /* as in a set-up's zeroed stage */
    memset(&mp, 0, sizeof mp);
    shard_mesh_init(&mq, q->stage[2], q->stage[3], q->stage[4], q->stage[5]);
    shard_mesh_init(&mp, stage[2], stage[3], stage[4], stage[5]);
    ApprofHash128 walk = struct_combine(q->h, struct_head(q->n_ops, q->stage[6], q->stage[7] / 16,
                                                          q->stage[7] % 16, ctx->micro_batches,
                                                          &mq));
    pk->h = struct_combine(walk, struct_head(q->n_ops, stage[6], levels, method,
                                             ctx->micro_batches, &mp));
    pk->n_ops = q->n_ops;
    pk->op_parity = q->op_parity;
    pk->n_blk = q->n_blk;
    memcpy(pk->blk, q->blk, (size_t)q->n_blk * sizeof *pk->blk);
    pk->n_order = q->n_order;
    memcpy(pk->order, q->order, (size_t)q->n_order * sizeof *pk->order);
    memcpy(pk->stage, stage, sizeof pk->stage);
    pk->valid = 1;
    return 0;
}

/* The part of a program key that does not depend on the variant, for
 * the stage of req (shard_stage_key): its structure hash, checkpoint
 * blocks and tensors in first-touch order, computed once and kept for the
 * last SHARD_PKEY_SLOTS stages (context.h, ProgKeyMemo); *out the slot.
 * Its set-up reads no op's strategies (no ops array); the tensor facts it
 * fills stay in the context's scratch for the build of the same range. */
static int stage_key_part(ApprofShardContext *ctx, const ApprofShardRequest *req, int levels,
                          const ProgKeyMemo **out)
{
    ProgKeyMemo *pk;
    ShardStage st;
    int stage[8], rc, n = 0;
    char err[8];
    shard_stage_key(req, levels, stage);
    for (int i = 0; i < SHARD_PKEY_SLOTS; i++) {
        pk = &ctx->pkey[i];
        if (pk->valid && !memcmp(pk->stage, stage, sizeof stage)) {
            *out = pk;
            return 0;
        }
    }
    pk = &ctx->pkey[ctx->pkey_next];
    ctx->pkey_next = (ctx->pkey_next + 1) % SHARD_PKEY_SLOTS;
    pk->valid = 0;
    /* a stage of the same layer range kept (the sweep asks for a range's
     * logical meshes and forced axes in a row): its range-only parts
     * without a set-up (same_range_part) */
    for (int i = 0; i < SHARD_PKEY_SLOTS; i++) {
        const ProgKeyMemo *q = &ctx->pkey[i];
        if (q != pk && q->valid && q->stage[0] == stage[0] && q->stage[1] == stage[1]) {
            rc = same_range_part(ctx, pk, q, stage, levels, (int)req->method);
            if (!rc)
                *out = pk;
            return rc;
        }
    }
    memset(&st, 0, sizeof st);
    rc = shard_stage_setup(ctx, req, &st, 0, err, sizeof err);
    if (!rc && !ctx->op_desc) {
        ctx->op_desc = calloc(ctx->g->n_ops ? ctx->g->n_ops : 1, sizeof *ctx->op_desc);
        if (!ctx->op_desc)
            rc = APPROF_ENOMEM;
    }
    size_t nops = (size_t)(st.n_ops > 0 ? st.n_ops : 1);
    if (!rc)
        rc = pkey_reserve(pk, nops);
    unsigned char *seen = rc ? NULL : calloc(ctx->g->n_tensors ? ctx->g->n_tensors : 1, 1);
    if (!rc && !seen)
        rc = APPROF_ENOMEM;
    if (!rc) {
        pk->h = shard_struct_key(ctx, &st, levels, (int)req->method);
        pk->n_ops = st.n_ops;
        pk->op_parity = shard_op_policy_parity(ctx->g, st.op_begin);
        pk->n_blk = shard_stage_blocks(&st, pk->blk);
        for (int b = 0; b < pk->n_blk; b++)
            pk->blk[b] -= st.op_begin;
        for (int o = st.op_begin; o < st.op_end; o++) {
            const ApprofOp *op = &ctx->g->ops[o];
            for (int side = 0; side < 2; side++)
                for (int i = 0; i < (side ? op->n_outputs : op->n_inputs); i++) {
                    int t = side ? op->outputs[i] : op->inputs[i];
                    if (!seen[t]) {
                        seen[t] = 1;
                        pk->order[n++] = t;
                    }
                }
        }
        pk->n_order = n;
        memcpy(pk->stage, stage, sizeof stage);
        pk->valid = 1;
        *out = pk;
    }
    free(seen);
    shard_stage_free(&st);
    return rc;
}

int approf_shard_program_key_view(ApprofShardContext *ctx, const ApprofShardRequest *req,
                                  uint64_t key[2], const int **tensors, int *n_tensors)
{
    int rc;
    if (!ctx || !req || !key || !tensors || !n_tensors)
        return APPROF_EINVAL;
    *tensors = NULL;
    *n_tensors = 0;
    int levels = req->memory_levels > 0 ? req->memory_levels : 1;
    if (levels > SHARD_MAX_LEVELS)
        levels = SHARD_MAX_LEVELS;
    const ProgKeyMemo *pk = NULL;
    if ((rc = shard_stage_setup_check(ctx, req)) || (rc = stage_key_part(ctx, req, levels, &pk)))
        return rc;
    ApprofHash128 h = pk->h;
    memcpy(ctx->skey_stage, pk->stage, sizeof pk->stage);
    ctx->skey = h;
    ctx->skey_valid = 1;
    int64_t v[9] = {req->variant.memory_level, req->variant.recompute, req->variant.zero,
                    req->mesh_hosts, req->mesh_gpus, req->logical_a, req->logical_b,
                    req->force_batch_dim, pk->n_ops};
    approf_hash128_update(&h, v, sizeof v);
    /* op: which of the block's mms before the stage the policy saved
     * (only under op, so the other modes' keys stay as they were) */
    if (req->variant.recompute == COSTDB_RECOMPUTE_OP)
        approf_hash128_word(&h, 0x6f70u + (uint64_t)pk->op_parity);
    /* the checkpoint blocks (program.c owns the rule), then the tensors
     * in first-touch order (inputs, then outputs, op by op) */
    for (int b = 0; b < pk->n_blk; b++)
        approf_hash128_word(&h, (uint64_t)pk->blk[b]);
    key[0] = h.a;
    key[1] = h.b;
    /* the memo slot's own array: only a later key of ctx replaces it */
    *tensors = pk->order;
    *n_tensors = pk->n_order;
    return 0;
}

int approf_shard_program_key(ApprofShardContext *ctx, const ApprofShardRequest *req,
                             uint64_t key[2], int **tensors, int *n_tensors)
{
    const int *view = NULL;
    int n = 0, rc, *order;
    if (!tensors || !n_tensors)
        return APPROF_EINVAL;
    *tensors = NULL;
    *n_tensors = 0;
    if ((rc = approf_shard_program_key_view(ctx, req, key, &view, &n)))
        return rc;
    order = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (!order)
        return APPROF_ENOMEM;
    memcpy(order, view, (size_t)n * sizeof(int));
    *tensors = order;
    *n_tensors = n;
    return 0;
}

void approf_shard_note_reuse(ApprofShardContext *ctx)
{
    if (ctx)
        ctx->st.cached++;
}
