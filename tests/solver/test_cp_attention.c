/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A cp stage's ring attention (solver/cp_attention.c; docs/context-
 * parallel.md, "The ring's attention kernels"): the built-in b200 and
 * gb200-nvl72 rows (and h100-sxm, h200) carry their attention figures by key length into the
 * fabric the solver reads, and the ring's kernels over seq / cp keys are
 * priced at that length's figure, by hand; cards without the table, a2a
 * (no ring) and a ring of one add nothing.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "collective.h"
#include "costdb.h"
#include "cp_attention.h"
#include "cunit_run.h"
#include "hardware.h"

#define REL(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

/* f as apsolve reads it: the built-in spec's hardware row */
static int fabric(const char *name, CostdbFabric *f)
{
    ApprofHardwareSpec hw;
    static CostdbHardware row;
    if (approf_hardware_builtin(name, &hw))
        return -1;
    memset(&row, 0, sizeof row);
    approf_hardware_to_costdb(&hw, &row);
    costdb_fabric_from_hardware(&row, f);
    return 0;
}

/* h100-sxm with its table cleared: one figure (0.4) at every length, the
 * card these checks were written on before the built-in carried NVIDIA's
 * cuDNN figures by key length */
static int fabric_flat(CostdbFabric *f)
{
    if (fabric("h100-sxm", f))
        return -1;
    memset(f->attention_eff_seq, 0, sizeof f->attention_eff_seq);
    return 0;
}

static void test_row_carries_table(void)
{
    CostdbFabric f;
    CU_ASSERT_EQUAL_FATAL(fabric("b200", &f), 0);
    CU_ASSERT(REL(f.peak_flops16, 2250e12));
    CU_ASSERT(REL(f.attention_eff_seq[0], 0.176));
    CU_ASSERT(REL(f.attention_eff_seq[1], 0.329));
    CU_ASSERT(REL(f.attention_eff_seq[2], 0.444));
    CU_ASSERT(REL(f.attention_eff_seq[4], 0.526));
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 8192), 0.444));
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 4096), 0.329));
    /* log2 halfway between 4096 and 8192 */
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 5793), 0.329 + (0.444 - 0.329) * log2(5793.0 / 4096)));
    CU_ASSERT_EQUAL_FATAL(fabric("gb200-nvl72", &f), 0);
    CU_ASSERT(REL(f.peak_flops16, 2500e12));
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 4096), 0.452));
    /* h100-sxm and h200 carry cuDNN 9.19's H200 growth from 0.4 at 4096 */
    CU_ASSERT_EQUAL_FATAL(fabric("h100-sxm", &f), 0);
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 4096), 0.4));
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 8192), 0.451));
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 2048), 0.316));
    CU_ASSERT_EQUAL_FATAL(fabric("h200", &f), 0);
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 32768), 0.484));
    /* without the table, one figure at every length */
    CU_ASSERT_EQUAL_FATAL(fabric_flat(&f), 0);
    CU_ASSERT(apsolve_cp_attention_eff(&f, 4096) > 0);
    CU_ASSERT(REL(apsolve_cp_attention_eff(&f, 4096), apsolve_cp_attention_eff(&f, 8192)));
}

/* Llama 3 70B's attention on 8 B200s at tp 2, cp 2: 8192 tokens, one
 * sample a GPU of the entry, 64 query heads of 128 (8192 wide, 4096 a tp
 * rank), 4 layers. A forward GEMM of the entry: 2 x 1 x 4096 x 8192 x
 * 4096 flops; the stage's half of it at 0.329 of 2250 TFLOP/s instead of
 * 0.444. */
static void test_ring_by_hand(void)
{
    CostdbFabric f;
    double fwd, bwd, g = 2.0 * 4096 * 8192 * 4096.0;
    double x = 4 * g / 2 / 2250e12 * (1 / 0.329 - 1 / 0.444);
    CU_ASSERT_EQUAL_FATAL(fabric("b200", &f), 0);
    apsolve_cp_ring_attention(&f, 8192, 2, 2, 1.0, 4096.0, 4, 0, &fwd, &bwd);
    CU_ASSERT(REL(fwd, 2 * x));
    CU_ASSERT(REL(bwd, 5 * x));
    /* 0.385 ms: 35 % on the entry's half, 1.10 ms (0.444 / 0.329 = 1.35) */
    CU_ASSERT(fwd > 0.000384 && fwd < 0.000385);
    CU_ASSERT(REL(fwd / (4 * g / 2250e12 / 0.444), 0.444 / 0.329 - 1));
    /* recomputation reruns the forward's kernels in the backward */
    apsolve_cp_ring_attention(&f, 8192, 2, 2, 1.0, 4096.0, 4, 1, &fwd, &bwd);
    CU_ASSERT(REL(bwd, 7 * x));
    /* a2a+p2p with an inner group of 2 at cp 4: a ring of 2 over 4096 keys
     * each, the stage's quarter */
    apsolve_cp_ring_attention(&f, 8192, 2, 4, 1.0, 4096.0, 4, 0, &fwd, &bwd);
    CU_ASSERT(REL(fwd, x));
    /* cp 4, a ring of 4: 2048 keys */
    apsolve_cp_ring_attention(&f, 8192, 4, 4, 1.0, 4096.0, 4, 0, &fwd, &bwd);
    CU_ASSERT(REL(fwd, 2 * 4 * g / 4 / 2250e12 * (1 / 0.176 - 1 / 0.444)));
}

static void test_nothing_added(void)
{
    CostdbFabric f;
    double fwd = -1, bwd = -1;
    CU_ASSERT_EQUAL_FATAL(fabric_flat(&f), 0);
    apsolve_cp_ring_attention(&f, 8192, 2, 2, 1.0, 4096.0, 4, 0, &fwd, &bwd);
    CU_ASSERT(fwd == 0 && bwd == 0);
    CU_ASSERT_EQUAL_FATAL(fabric("b200", &f), 0);
    fwd = bwd = -1;
    apsolve_cp_ring_attention(&f, 8192, 1, 2, 1.0, 4096.0, 4, 0, &fwd, &bwd); /* a2a: no ring */
    CU_ASSERT(fwd == 0 && bwd == 0);
    fwd = bwd = -1;
    apsolve_cp_ring_attention(&f, 8192, 2, 2, 1.0, 0.0, 4, 0, &fwd, &bwd); /* no query width */
    CU_ASSERT(fwd == 0 && bwd == 0);
    /* past the table's top both lengths clamp to 32768's figure */
    fwd = bwd = -1;
    apsolve_cp_ring_attention(&f, 131072, 2, 2, 1.0, 4096.0, 4, 0, &fwd, &bwd);
    CU_ASSERT(fwd == 0 && bwd == 0);
}

/* TE's all-gather layout on b200 (cp_attention.c,
 * apsolve_cp_allgather_attention): Llama 3 70B's 8192 tokens at tp 2, cp
 * 2, 4 layers: chunks of 2048; rank 0 runs chunk 0 (1/8 of its flops, the
 * work of 2048 keys a tile) and chunk 3 (7/8, 14336), rank 1 chunks 1
 * (3/8, 6144) and 2 (5/8, 10240); the slower mix paces. */
static void test_allgather_by_hand(void)
{
    CostdbFabric f;
    double fwd, bwd, g = 2.0 * 4096 * 8192 * 4096.0, t0, t1, x;
    int64_t lo, hi;
    CU_ASSERT_EQUAL_FATAL(fabric("b200", &f), 0);
    t0 = 0.125 / apsolve_cp_attention_eff(&f, 2048) + 0.875 / apsolve_cp_attention_eff(&f, 14336);
    t1 = 0.375 / apsolve_cp_attention_eff(&f, 6144) + 0.625 / apsolve_cp_attention_eff(&f, 10240);
    x = 4 * g / 2 / 2250e12 * (fmax(t0, t1) - 1 / 0.444);
    apsolve_cp_allgather_attention(&f, 8192, 2, 1.0, 4096.0, 4, 0, &fwd, &bwd, &lo, &hi);
    CU_ASSERT(REL(fwd, 2 * x));
    CU_ASSERT(REL(bwd, 5 * x));
    CU_ASSERT_EQUAL(lo, 2048);
    CU_ASSERT_EQUAL(hi, 14336);
    /* rank 0's short chunk makes it the slower: more than the entry's */
    CU_ASSERT(t0 > t1 && fwd > 0);
    apsolve_cp_allgather_attention(&f, 8192, 2, 1.0, 4096.0, 4, 1, &fwd, &bwd, NULL, NULL);
    CU_ASSERT(REL(bwd, 7 * x));
    /* one figure at every length: nothing */
    CU_ASSERT_EQUAL_FATAL(fabric_flat(&f), 0);
    fwd = bwd = -1;
    apsolve_cp_allgather_attention(&f, 8192, 2, 1.0, 4096.0, 4, 0, &fwd, &bwd, &lo, &hi);
    CU_ASSERT(fwd == 0 && bwd == 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the hardware row carries the table", test_row_carries_table},
        {"the ring's kernels by hand", test_ring_by_hand},
        {"nothing added", test_nothing_added},
        {"the all-gather layout's kernels by hand", test_allgather_by_hand},
    };
    return CUNIT_RUN("solver-cp-attention", tests);
}
