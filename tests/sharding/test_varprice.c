/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The variants' pricing from one pass (issue 38, varprice;
 * docs/performance.md, "The variants' pricing from one pass"):
 * approf_phase_price_memo's pass over a phase's kernels also gives the
 * backward's weight-gradient kernels and embedding gradient elements, and
 * the sweep's apply-grad and weight-gradient prices read them
 * (approf_stage_apply_seconds_priced, approf_wgrad_seconds_priced) with
 * the apply collectives priced through the memo: bit for bit the prices
 * that go over the kernels again (approf_stage_apply_seconds,
 * approf_wgrad_seconds), for the ZeRO stages of a GPT stage derived from
 * one build (shared arrays and heads, so the memo's kept sums answer),
 * with and without recomputation, on a device where they fit and one
 * where they do not, the apply collectives hidden whole and in part. The
 * memo's collective key packed in two words: every field it keys on
 * gives another price where approf_collective_cost does, and a field
 * outside its bits is priced without the table. A memory-bound kernel's
 * price kept by kind and bytes.
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "backend.h"
#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

static int same_bits(double a, double b)
{
    return !memcmp(&a, &b, sizeof a);
}

/* p priced as the sweep does (one memo for all) against the prices that
 * go over its kernels again; *emb_seen when its backward holds an
 * embedding gradient. */
static void check_program(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                          const ApprofStageProgram *p, int *emb_seen, int *oom_seen)
{
    ApprofMeasurement m[2];
    ApprofPhasePrice price[2];
    for (int ph = 0; ph < 2; ph++) {
        CU_ASSERT_FATAL(approf_analytic_measure_priced(memo, p, ph, hw, &m[ph], &price[ph]) == 0);
        CU_ASSERT(same_bits(price[ph].seconds, approf_phase_seconds(hw, p, ph)));
        CU_ASSERT(same_bits(price[ph].seconds, m[ph].status == COSTDB_STATUS_OK
                                                   ? m[ph].compute_cost
                                                   : m[ph].unfit_cost));
        *oom_seen |= m[ph].status == COSTDB_STATUS_OOM;
    }
    /* the pass's sums: the backward's kernels read one by one */
    double emb = 0.0;
    for (size_t i = 0, nk = approf_phase_kernel_count(p, 1); i < nk; i++) {
        const ApprofKernel *k = approf_phase_kernel(p, 1, i);
        if (approf_kernel_is_embedding_grad(k))
            emb += (double)k->extent * (double)k->cols;
    }
    CU_ASSERT(same_bits(price[1].embedding_elements, emb));
    *emb_seen |= emb > 0;
    ApprofPriceMemo *ready = approf_price_memo_ready(memo, hw);
    CU_ASSERT_FATAL(ready != NULL);
    double apply = approf_stage_apply_seconds_priced(hw, p, price, ready);
    CU_ASSERT(same_bits(apply, approf_stage_apply_seconds(hw, p)));
    /* priced again: every collective from the table */
    uint64_t n = approf_price_memo_collectives_priced(ready);
    CU_ASSERT(same_bits(approf_stage_apply_seconds_priced(hw, p, price, ready), apply));
    CU_ASSERT(same_bits(approf_stage_apply_seconds_priced(hw, p, NULL, ready), apply));
    CU_ASSERT_EQUAL(approf_price_memo_collectives_priced(ready), n);
    for (int k = 0; k < 3; k++) {
        double bwd = k == 0 ? price[1].seconds : k == 1 ? 0.75 * price[1].seconds : -1.0;
        CU_ASSERT(same_bits(approf_wgrad_seconds_priced(bwd, &price[1]),
                            approf_wgrad_seconds(hw, p, bwd)));
    }
}

/* ZeRO 0..3 of the whole GPT on (a, b), derived from one build with kernel
 * views as the sweep asks for them. */
static void check_family(const ApprofGraph *g, const ApprofHardwareSpec *hw,
                         ApprofPriceMemo **memo, int a, int b, int recompute, int *emb_seen,
                         int *oom_seen, int *built)
{
    ApprofLayering l;
    int begin = 0, end = (int)g->n_ops;
    ApprofShardContext *ctx = NULL;
    ApprofStageProgram p[4];
    char err[256];
    memset(&l, 0, sizeof l);
    l.n_layers = 1;
    l.op_begin = &begin;
    l.op_end = &end;
    memset(p, 0, sizeof p);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, hw, 4, &ctx) == 0);
    for (int z = 0; z <= 3; z++) {
        ApprofShardRequest req;
        memset(&req, 0, sizeof req);
        req.mesh_hosts = 1;
        req.mesh_gpus = a * b;
        req.logical_a = a;
        req.logical_b = b;
        req.method = APPROF_ILP_SERIES_PARALLEL;
        req.memory_levels = 1;
        req.variant.recompute = recompute;
        req.variant.zero = z;
        req.zero_family = z ? 0u : 0xEu;
        req.kernel_views = 1;
        if (approf_shard_stage(ctx, &req, &p[z], err, sizeof err) == 0) {
            check_program(hw, memo, &p[z], emb_seen, oom_seen);
            (*built)++;
        }
    }
    for (int z = 0; z <= 3; z++)
        approf_stage_program_clear(&p[z]);
    approf_shard_context_free(&ctx);
}

static void test_priced_from_one_pass(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    int emb_seen = 0, oom_seen = 0, built = 0;
    for (int k = 0; k < 8; k++) {
        ApprofHardwareSpec hw;
        ApprofPriceMemo *memo = NULL;
        CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
        hw.grad_overlap = k & 1 ? 1e-3 : 1.0; /* hidden in part, whole */
        if (k & 2)
            hw.device_memory = 64LL << 20; /* out of memory: unfit_cost */
        if (k & 4)
            hw.grad_bucket_bytes = 4096; /* the last bucket is the embedding's */
        for (int r = 0; r < COSTDB_RECOMPUTE_COUNT; r++) {
            check_family(g, &hw, &memo, 8, 1, r, &emb_seen, &oom_seen, &built);
            check_family(g, &hw, &memo, 2, 4, r, &emb_seen, &oom_seen, &built);
        }
        approf_price_memo_free(memo);
    }
    CU_ASSERT(built >= 8 * 2 * 4 * (COSTDB_RECOMPUTE_COUNT - 1));
    CU_ASSERT(emb_seen);
    CU_ASSERT(oom_seen);
    approf_graph_free(&g);
}

/* One collective per field the key holds, each differing from the first
 * in that field only, priced through one table (twice) and without it. */
static void test_collective_key(void)
{
    ApprofHardwareSpec hw;
    ApprofPriceMemo *memo = NULL, *m;
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    hw.scaleup_gpus = 16; /* span_hosts read (costdb_collective_domains) */
    hw.zero3_rank_copies = 1; /* zero3_unit read (rank_copies_seconds) */
    ApprofCollective c[9];
    memset(c, 0, sizeof c);
    c[0].kind = APPROF_COLL_ALL_GATHER;
    c[0].group_size = 16;
    c[0].hosts = 2;
    c[0].crosses_hosts = 1;
    c[0].bytes = 1 << 24;
    for (int i = 1; i < 9; i++)
        c[i] = c[0];
    c[1].kind = APPROF_COLL_REDUCE_SCATTER;
    c[2].group_size = 32;
    c[3].hosts = 4;
    c[4].crosses_hosts = 0;
    c[5].span_hosts = 3;
    c[6].zero3_unit = 2;
    c[7].bytes = 1 << 25;
    c[8].bytes = nextafter(c[0].bytes, 0.0); /* the last bit of the bytes */
    m = approf_price_memo_ready(&memo, &hw);
    CU_ASSERT_FATAL(m != NULL);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 9; i++)
            CU_ASSERT(same_bits(approf_price_memo_collective(m, &hw, &c[i]),
                                approf_collective_cost(&hw, &c[i])));
    CU_ASSERT_EQUAL(approf_price_memo_collectives_priced(m), 9);
    int differ = 0;
    for (int i = 1; i < 9; i++)
        differ += !same_bits(approf_collective_cost(&hw, &c[i]), approf_collective_cost(&hw, &c[0]));
    CU_ASSERT(differ >= 6); /* the fields matter to the price */
    /* outside the key's bits: priced, not kept */
    ApprofCollective big = c[0], neg = c[0];
    big.group_size = 1 << 21;
    big.hosts = 1 << 18;
    neg.span_hosts = -1;
    CU_ASSERT(same_bits(approf_price_memo_collective(m, &hw, &big),
                        approf_collective_cost(&hw, &big)));
    CU_ASSERT(same_bits(approf_price_memo_collective(m, &hw, &neg),
                        approf_collective_cost(&hw, &neg)));
    CU_ASSERT_EQUAL(approf_price_memo_collectives_priced(m), 9);
    approf_price_memo_free(memo);
}

/* Memory-bound kernels kept by kind and bytes: a phase of them priced
 * twice through one memo prices each distinct (kind, bytes) once, a
 * cross-entropy's kernel every time, and gives approf_phase_seconds' bits. */
static void test_stream_kernels(void)
{
    ApprofHardwareSpec hw;
    ApprofPriceMemo *memo = NULL;
    ApprofKernel k[8];
    ApprofStageProgram p;
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    hw.reduction_efficiency = 0.5; /* a reduction's price is not an elementwise one's */
    memset(k, 0, sizeof k);
    for (int i = 0; i < 8; i++) {
        k[i].kind = APPROF_K_ELEMENTWISE;
        k[i].dtype = APPROF_BF16;
        k[i].bytes = 3e8;
        k[i].elements = 1 << 20;
    }
    k[1].kind = APPROF_K_REDUCTION;              /* another kind */
    k[2].bytes = nextafter(3e8, 0.0);            /* the bytes' last bit */
    k[3].elements = 1 << 22;                     /* not read: the same price */
    k[4].kind = APPROF_K_GATHER;                 /* another kind */
    k[5].loss = 2;                               /* a cross-entropy's backward: not kept */
    k[5].kind = APPROF_K_REDUCTION;
    k[6].kind = APPROF_K_COPY;
    k[7] = k[0];
    memset(&p, 0, sizeof p);
    p.kernels[0] = k;
    p.n_kernels[0] = 8;
    double want = approf_phase_seconds(&hw, &p, 0);
    CU_ASSERT(same_bits(approf_phase_seconds_memo(&hw, &p, 0, &memo), want));
    /* 0, 1, 2, 4, 6 and the loss kernel */
    CU_ASSERT_EQUAL(approf_price_memo_kernels_priced(memo), 6);
    CU_ASSERT(same_bits(approf_phase_seconds_memo(&hw, &p, 0, &memo), want));
    CU_ASSERT_EQUAL(approf_price_memo_kernels_priced(memo), 7);
    double e0 = approf_kernel_seconds(&hw, &k[0]);
    CU_ASSERT(!same_bits(approf_kernel_seconds(&hw, &k[1]), e0));
    CU_ASSERT(!same_bits(approf_kernel_seconds(&hw, &k[2]), e0));
    CU_ASSERT(same_bits(approf_kernel_seconds(&hw, &k[3]), e0));
    approf_price_memo_free(memo);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"apply-grad and wgrad prices from the phases' one pass equal the full ones",
         test_priced_from_one_pass},
        {"the packed collective key: one price per field, outside its bits not kept",
         test_collective_key},
        {"memory-bound kernels kept by kind and bytes, a cross-entropy's not",
         test_stream_kernels},
    };
    return CUNIT_RUN("the variants' pricing from one pass", tests);
}
