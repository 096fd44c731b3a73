/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ZeRO-3 overlapped with compute as the frameworks schedule it
 * (approf sweep --zero3-schedule, hw/zero3_overlap.c, docs/variants.md
 * "ZeRO-3 overlap"). The model: the zoo's mlp (four dense layers of equal
 * size, each a checkpoint block of its own) as one stage on 8 GPUs of data
 * parallelism with ZeRO-3. Hand counts of the phases' seconds:
 * - compute longer than every collective: the forward costs its kernels
 *   plus the first block's all-gather; the backward its kernels plus the
 *   last block's all-gather (the first of the backward) and the first
 *   block's reduce-scatter (the last of the backward);
 * - collectives longer than any block's compute: the forward costs every
 *   all-gather plus the last block's compute; the backward every all-gather
 *   and reduce-scatter back to back;
 * - serial (the default): kernels plus every collective, unmarked.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "zoo_fixture.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

static ApprofGraph *mlp_hidden(int64_t batch, int hidden)
{
    return zoo_fixture_mlp(batch, hidden);
}

static ApprofGraph *mlp(int64_t batch)
{
    return mlp_hidden(batch, 0);
}

/* The whole graph as one stage with ZeRO-3 over 8 GPUs of one a100-80g
 * host, priced with schedule; *hw gets the spec. */
static int shard(const ApprofGraph *g, int schedule, ApprofHardwareSpec *hw,
                 ApprofStageProgram *p)
{
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-80g", hw) == 0);
    /* counted by hand without the GEMM slowdown beside the collectives
     * (tests/hw/test_overlap_slowdown.c prices it) */
    hw->nccl_channels = 0;
    hw->zero3_schedule = schedule;
    return zoo_fixture_shard_whole(g, hw, 8, COSTDB_RECOMPUTE_NONE, 3, p);
}

static double kernels(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph,
                      int from_op)
{
    double t = 0.0;
    for (size_t i = 0; i < p->n_kernels[ph]; i++)
        if (p->kernels[ph][i].op >= from_op)
            t += approf_kernel_seconds(hw, &p->kernels[ph][i]);
    return t;
}

/* The seconds of phase ph's collectives no schedule moves (the loss's
 * all-reduce of the data-parallel mean): serial in every schedule. */
static double unmarked(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph)
{
    double t = 0.0;
    for (size_t i = 0; i < p->n_colls[ph]; i++)
        if (p->colls[ph][i].zero3_unit == 0)
            t += approf_collective_cost(hw, &p->colls[ph][i]);
    return t;
}

/* Phase ph's marked collectives of kind k: their number, seconds in *sum,
 * the seconds of unit u's in *of_u, the largest first op in *last_op. */
static int marked(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph,
                  ApprofCollKind k, int u, double *sum, double *of_u, int *last_op)
{
    int n = 0;
    *sum = *of_u = 0.0;
    *last_op = -1;
    for (size_t i = 0; i < p->n_colls[ph]; i++) {
        const ApprofCollective *c = &p->colls[ph][i];
        if (c->kind != k || c->zero3_unit <= 0)
            continue;
        double s = approf_collective_cost(hw, c);
        n++;
        *sum += s;
        if (c->zero3_unit == u)
            *of_u += s;
        if (c->op > *last_op)
            *last_op = c->op;
    }
    return n;
}

/* The least (most = 0) or the most (most = 1) compute of a block in phase ph. */
static double block_compute(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph,
                            int most)
{
    int first[8], n = 0;
    double pick = most ? 0.0 : INFINITY;
    for (size_t i = 0; i < p->n_colls[0] && n < 8; i++)
        if (p->colls[0][i].zero3_unit > 0)
            first[n++] = p->colls[0][i].op;
    for (int u = 0; u < n; u++) {
        double t = 0.0;
        for (size_t i = 0; i < p->n_kernels[ph]; i++) {
            int op = p->kernels[ph][i].op;
            if (op >= first[u] && (u + 1 == n || op < first[u + 1]))
                t += approf_kernel_seconds(hw, &p->kernels[ph][i]);
        }
        if (most ? t > pick : t < pick)
            pick = t;
    }
    return pick;
}

/* The shortest marked collective of phase ph. */
static double shortest(const ApprofHardwareSpec *hw, const ApprofStageProgram *p, int ph)
{
    double least = INFINITY;
    for (size_t i = 0; i < p->n_colls[ph]; i++)
        if (p->colls[ph][i].zero3_unit > 0) {
            double s = approf_collective_cost(hw, &p->colls[ph][i]);
            if (s < least)
                least = s;
        }
    return least;
}

static void test_serial_unmarked(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_SERIAL, &hw, &p) == 0);
    for (int ph = 0; ph < 2; ph++) {
        double colls = 0.0;
        CU_ASSERT(p.n_colls[ph] > 0);
        for (size_t i = 0; i < p.n_colls[ph]; i++) {
            CU_ASSERT(p.colls[ph][i].zero3_unit == 0);
            colls += approf_collective_cost(&hw, &p.colls[ph][i]);
        }
        CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, ph), kernels(&hw, &p, ph, 0) + colls,
                               1e-12);
    }
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

static void test_fsdp2_compute_bound(void)
{
    ApprofGraph *g = mlp(8 * 4096);
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    double ag, ag1, ag4, rs, rs1, rs4;
    int last;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_FSDP2, &hw, &p) == 0);
    /* one all-gather per dense layer each way, one reduce-scatter each */
    CU_ASSERT_EQUAL(marked(&hw, &p, 0, APPROF_COLL_ALL_GATHER, 1, &ag, &ag1, &last), 4);
    CU_ASSERT_EQUAL(marked(&hw, &p, 1, APPROF_COLL_ALL_GATHER, 4, &ag, &ag4, &last), 4);
    CU_ASSERT_EQUAL(marked(&hw, &p, 1, APPROF_COLL_REDUCE_SCATTER, 1, &rs, &rs1, &last), 4);
    (void)marked(&hw, &p, 1, APPROF_COLL_REDUCE_SCATTER, 4, &rs, &rs4, &last);
    CU_ASSERT(ag1 > 0 && ag4 > 0 && rs1 > 0);
    /* the precondition: every block computes longer than what it hides
     * (in the backward a gather and a reduce-scatter) */
    CU_ASSERT_FATAL(block_compute(&hw, &p, 0, 0) > ag1);
    CU_ASSERT_FATAL(block_compute(&hw, &p, 1, 0) > ag4 + rs4);
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, 0), kernels(&hw, &p, 0, 0) + unmarked(&hw, &p, 0) + ag1,
                           1e-9);
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, 1),
                           kernels(&hw, &p, 1, 0) + unmarked(&hw, &p, 1) + ag4 + rs1, 1e-9);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

static void test_fsdp2_comm_bound(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    double ag0, agb, rs, x;
    int last;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_FSDP2, &hw, &p) == 0);
    CU_ASSERT_EQUAL(marked(&hw, &p, 0, APPROF_COLL_ALL_GATHER, 1, &ag0, &x, &last), 4);
    CU_ASSERT_EQUAL(marked(&hw, &p, 1, APPROF_COLL_ALL_GATHER, 1, &agb, &x, &last), 4);
    CU_ASSERT_EQUAL(marked(&hw, &p, 1, APPROF_COLL_REDUCE_SCATTER, 1, &rs, &x, &last), 4);
    /* the precondition: every collective is longer than any block's compute */
    CU_ASSERT_FATAL(shortest(&hw, &p, 0) > block_compute(&hw, &p, 0, 1));
    CU_ASSERT_FATAL(shortest(&hw, &p, 1) > block_compute(&hw, &p, 1, 1));
    /* forward: the gathers one after the other, then the last block's compute */
    (void)marked(&hw, &p, 0, APPROF_COLL_ALL_GATHER, 4, &ag0, &x, &last);
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, 0), ag0 + kernels(&hw, &p, 0, last) +
                                                           unmarked(&hw, &p, 0), 1e-9);
    /* backward: every gather and reduce-scatter back to back */
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, 1), agb + rs + unmarked(&hw, &p, 1), 1e-9);
    /* and less than the serial sum of the same program */
    CU_ASSERT(approf_phase_seconds(&hw, &p, 1) < kernels(&hw, &p, 1, 0) + agb + rs);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

/* DeepSpeed: the first module is fetched on demand; at its start the
 * coordinator prefetches the next modules while under
 * stage3_prefetch_bucket_size (5e7 elements): the mlp's modules hold
 * 2048 x 8192 + 8192 or + 2048 elements (about 1.68e7), so modules 2, 3
 * and 4 are all issued as module 1 starts (1.68e7 x 2 < 5e7 <= x 3). With
 * compute longer than the gathers only the first is exposed. */
static void test_deepspeed_prefetch(void)
{
    ApprofGraph *g = mlp(8 * 4096);
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    double ag, ag1;
    int last, n = 0;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, &hw, &p) == 0);
    for (size_t i = 0; i < p.n_colls[0]; i++) {
        const ApprofCollective *c = &p.colls[0][i];
        if (c->zero3_unit <= 0)
            continue;
        n++;
        CU_ASSERT_EQUAL(c->zero3_issue, 1);
    }
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(marked(&hw, &p, 0, APPROF_COLL_ALL_GATHER, 1, &ag, &ag1, &last), 4);
    /* the three prefetched gathers run under the first module's compute */
    CU_ASSERT_FATAL(block_compute(&hw, &p, 0, 0) > ag - ag1);
    CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, 0), kernels(&hw, &p, 0, 0) + unmarked(&hw, &p, 0) + ag1,
                           1e-9);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

/* DeepSpeed's persistent parameters (stage3_param_persistence_threshold,
 * 1e5 elements): the mlp's biases (8192 or 2048 elements) are never
 * gathered, so each module's all-gather moves its weight only: 2048 x 8192
 * elements of 2 bytes (f16), every one of the 4 modules, both ways. FSDP2
 * gathers the whole block, bias included. */
static void test_deepspeed_persistent(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    int n[2] = {0, 0};
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, &hw, &p) == 0);
    for (int ph = 0; ph < 2; ph++)
        for (size_t i = 0; i < p.n_colls[ph]; i++) {
            const ApprofCollective *c = &p.colls[ph][i];
            if (c->zero3_unit <= 0 || c->kind != APPROF_COLL_ALL_GATHER)
                continue;
            n[ph]++;
            CU_ASSERT_DOUBLE_EQUAL(c->bytes, 2048.0 * 8192.0 * 2.0, 1e-6);
        }
    CU_ASSERT_EQUAL(n[0], 4);
    CU_ASSERT_EQUAL(n[1], 4);
    approf_stage_program_clear(&p);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_FSDP2, &hw, &p) == 0);
    for (size_t i = 0; i < p.n_colls[0]; i++) {
        const ApprofCollective *c = &p.colls[0][i];
        if (c->zero3_unit > 0)
            CU_ASSERT(c->bytes > 2048.0 * 8192.0 * 2.0 + 4000.0);
    }
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

/* DeepSpeed's stage3_max_live_parameters (1e9 elements,
 * program_zero.c DS_MAX_LIVE_ELEMS): a module prefetches only while the
 * gathered elements it holds are fewer. The mlp at hidden 16384 has four
 * modules of 16384 x 65536 = 1.07e9 weight elements: none prefetches, so
 * every gather of both phases is issued on demand by its own module, and
 * the forward costs its kernels plus all four gathers. At hidden 8192
 * (2.7e8 elements a module) each module prefetches the next one, as
 * before. */
static void test_deepspeed_max_live(void)
{
    static const int hidden[2] = {16384, 8192};
    for (int h = 0; h < 2; h++) {
        ApprofGraph *g = mlp_hidden(8, hidden[h]);
        ApprofHardwareSpec hw;
        ApprofStageProgram p;
        double ag, ag1;
        int last, n = 0;
        CU_ASSERT_FATAL(g != NULL);
        CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, &hw, &p) == 0);
        for (int ph = 0; ph < 2; ph++)
            for (size_t i = 0; i < p.n_colls[ph]; i++) {
                const ApprofCollective *c = &p.colls[ph][i];
                if (c->zero3_unit <= 0 || c->kind != APPROF_COLL_ALL_GATHER)
                    continue;
                int first = ph == 0 ? 1 : 4; /* the first module run */
                int before = ph == 0 ? c->zero3_unit - 1 : c->zero3_unit + 1;
                n++;
                int want = h == 0 || c->zero3_unit == first ? c->zero3_unit : before;
                CU_ASSERT_EQUAL(c->zero3_issue, want);
            }
        CU_ASSERT_EQUAL(n, 8);
        if (h == 0) {
            CU_ASSERT_EQUAL(marked(&hw, &p, 0, APPROF_COLL_ALL_GATHER, 1, &ag, &ag1, &last), 4);
            CU_ASSERT_DOUBLE_EQUAL(approf_phase_seconds(&hw, &p, 0),
                                   kernels(&hw, &p, 0, 0) + unmarked(&hw, &p, 0) + ag, 1e-9);
        }
        approf_stage_program_clear(&p);
        approf_graph_free(&g);
    }
}

/* zero3_rank_copies (DeepSpeed up to v0.5 through torch.distributed's list
 * form, hw/cost.c): each marked all-gather and reduce-scatter of the 8
 * ranks adds 8 copies of bytes / 8, each read and written once at
 * 2039 GB/s x 0.85 plus the 4 us launch of a100-80g: by hand, for a gather
 * of 2048 x 8192 x 2 bytes, 8 x (4e-6 + 2 x 4194304 / 1.73315e12) =
 * 3.2e-5 + 3.8722e-5 s, plus the fill of the gathered buffer
 * (_allgather_param's torch.zeros, hw/cost.c): 4e-6 + 2048 x 8192 x 2 /
 * 1.73315e12 s. The loss's all-reduce (unmarked) is unchanged. */
static void test_rank_copies(void)
{
    ApprofGraph *g = mlp(8);
    ApprofHardwareSpec hw, rc;
    ApprofStageProgram p;
    int seen_ag = 0, seen_rs = 0, seen_other = 0;
    CU_ASSERT_FATAL(g != NULL);
    CU_ASSERT_FATAL(shard(g, APPROF_ZERO3_DEEPSPEED, &hw, &p) == 0);
    rc = hw;
    rc.zero3_rank_copies = 1;
    for (int ph = 0; ph < 2; ph++)
        for (size_t i = 0; i < p.n_colls[ph]; i++) {
            const ApprofCollective *c = &p.colls[ph][i];
            double plain = approf_collective_cost(&hw, c), with = approf_collective_cost(&rc, c);
            if (c->zero3_unit > 0 && c->kind == APPROF_COLL_ALL_GATHER) {
                CU_ASSERT_EQUAL(c->group_size, 8);
                CU_ASSERT_DOUBLE_EQUAL(with - plain,
                                       8.0 * 4e-6 + 2.0 * 2048.0 * 8192.0 * 2.0 / (2039e9 * 0.85) +
                                           4e-6 + 2048.0 * 8192.0 * 2.0 / (2039e9 * 0.85),
                                       1e-12);
                seen_ag++;
            } else if (c->zero3_unit > 0 && c->kind == APPROF_COLL_REDUCE_SCATTER) {
                CU_ASSERT_DOUBLE_EQUAL(with - plain,
                                       8.0 * 4e-6 + 2.0 * c->bytes / (2039e9 * 0.85), 1e-12);
                seen_rs++;
            } else {
                CU_ASSERT_EQUAL(with, plain);
                seen_other++;
            }
        }
    CU_ASSERT_EQUAL(seen_ag, 8);
    CU_ASSERT(seen_rs >= 1);
    CU_ASSERT(seen_other >= 1);
    /* the phase grows by what the copies add to the communication stream
     * beyond the compute that hides it: never less than before */
    CU_ASSERT(approf_phase_seconds(&rc, &p, 1) >= approf_phase_seconds(&hw, &p, 1));
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"serial: every collective adds, none marked", test_serial_unmarked},
        {"fsdp2, compute-bound: first gather and last reduce-scatter exposed",
         test_fsdp2_compute_bound},
        {"fsdp2, communication-bound: the collectives back to back", test_fsdp2_comm_bound},
        {"deepspeed: prefetch bucket, first gather exposed", test_deepspeed_prefetch},
        {"deepspeed: persistent parameters never gathered", test_deepspeed_persistent},
        {"deepspeed: no prefetch past stage3_max_live_parameters", test_deepspeed_max_live},
        {"zero3_rank_copies: a copy per rank on a marked collective", test_rank_copies},
    };
    return CUNIT_RUN("zero3_overlap", tests);
}
