/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stage's memory as approf prices it (the stage program of the sharding
 * ILP's Megatron layout, then apsolve's one memory rule with the schedule's
 * in-flight count) against Megatron-LM's own estimator,
 * megatron/training/theoretical_memory_usage.py at core_v0.19.0
 * (compute_weight_and_optimizer_memory, compute_activation_memory: the
 * path of --sequence-parallel with selective recomputation), worked out by
 * hand for GPT stages with and without the distributed optimizer, under
 * 1F1B and the interleaved schedule, with tensor and sequence parallelism
 * (docs/megatron-memory.md has the formulas in our words and what differs).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "schedule.h"
#include "sharding/sharding.h"
#include "stage.h"

/* The model of every case: approf's gpt (pre-LN, learned positions, tied
 * LM head, biases), 4 transformer layers of hidden 4096, 32 heads, 2048
 * tokens, a vocabulary of 1024, bf16, fused attention, dropout 0.1
 * (Megatron's default), one sample per data-parallel replica (mbs 1): the
 * first pipeline stage (embedding and 4 layers) of a model of 4 pp layers,
 * or at pp = 1 the whole model. */
enum { LAYERS = 4, HIDDEN = 4096, HEADS = 32, SEQ = 2048, VOCAB = 1024 };

typedef struct {
    const char *name;
    int dp, tp, pp, vpp, zero, micro_batches;
    /* Megatron's estimator for the first stage, worked by hand (bytes):
     * weights and optimizer, activations */
    double weights, activations;
} Case;

/* Parameters on one device of the first stage as Megatron's estimator
 * counts them: the stage's 4 layers of 12 h^2 (attention 4 h^2, MLP 8 h^2)
 * and the word embedding V h, split over tp; each layer's two LayerNorms
 * (2 x 2h) and a pp-th of the final one (2h) replicated:
 *   tp 4, pp 1: 202,375,168 + 65,536 + 8,192 = 202,448,896
 *   tp 4, pp 4: 202,375,168 + 65,536 + 2,048 = 202,442,752
 *   tp 8, pp 8: 101,187,584 + 65,536 + 1,024 = 101,254,144
 *   tp 2, pp 2: 404,750,336 + 65,536 + 4,096 = 404,819,968
 * Bytes per parameter (num_bytes_per_parameter): 18 without the
 * distributed optimizer (bf16 weight 2, f32 main_grad 4, f32 main
 * parameter and Adam's two moments 12), 6 + 12/dp with it:
 *   A  202,448,896 x 18         = 3,644,080,128
 *   B  202,442,752 x (6 + 12/2) = 2,429,313,024
 *   C  as B                     = 2,429,313,024
 *   D  101,254,144 x 18         = 1,822,574,592
 *   E  404,819,968 x (6 + 12/4) = 3,643,379,712
 * approf's gpt also has the linear layers' biases and a learned position
 * table (s h), which the estimator leaves out (Megatron-Core's GPT with
 * learned_absolute positions has the table too): up to 1.1 % more here.
 *
 * Activations (compute_activation_memory, SP + selective): 34 s b h bytes
 * per layer (18 + 4 ffn/h with ffn = 4h) times the model's 4 pp layers,
 * plus the embedding's input (8 s b pp) and dropout mask (s b h pp), all
 * times the interleaving factor 1 + (pp - 1)/(pp vpp), divided by tp; at
 * pp = 1 plus the output layer's and loss's inputs, 4 s b h (1 + V/h).
 * With s b h = 8,388,608 (b = 1 a replica):
 *   A  (136 sbh + 16,384 + sbh + 4 sbh x 1.25) / 4          =   297,799,680
 *   B  (544 sbh + 65,536 + 4 sbh) / 4                       = 1,149,255,680
 *   C  B x (1 + 3/8)                                        = 1,580,226,560
 *   D  (1088 sbh + 131,072 + 8 sbh) / 8                     = 1,149,255,680
 *   E  (272 sbh + 32,768 + 2 sbh) / 2 x (1 + 1/8)           = 1,292,912,640
 */
static const Case cases[] = {
    {"A dense, no distributed optimizer, pp 1", 2, 4, 1, 1, 0, 8, 3644080128.0, 297799680.0},
    {"B distributed optimizer, 1F1B pp 4", 2, 4, 4, 1, 1, 8, 2429313024.0, 1149255680.0},
    {"C distributed optimizer, interleaved pp 4 vpp 2", 2, 4, 4, 2, 1, 8, 2429313024.0,
     1580226560.0},
    {"D tp 8 with sequence parallelism, 1F1B pp 8", 1, 8, 8, 1, 0, 16, 1822574592.0,
     1149255680.0},
    {"E distributed optimizer dp 4, interleaved pp 2 vpp 4", 4, 2, 2, 4, 1, 8, 3643379712.0,
     1292912640.0},
};

static ApprofGraph *build_stage(int dp)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof o);
    o.num_layers = LAYERS;
    o.hidden = HIDDEN;
    o.heads = HEADS;
    o.seq_len = SEQ;
    o.vocab = VOCAB;
    o.batch = dp; /* approf's micro-batch: mbs x dp samples, split over dp */
    o.dropout = 0.1;
    o.attention = "flash";
    o.dtype = "bf16";
    int rc = approf_zoo_build("gpt", &o, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "gpt: %s\n", err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}

/* The first pipeline stage on a 1x8 H100 host as the logical mesh (dp,
 * tp), batch on axis 0, at the least-memory level of three (the GPT
 * block's Megatron layout with sequence parallelism, docs/variants.md),
 * gradients accumulated and reduced in f32 as Megatron-LM does for bf16
 * (the spec's grad_reduce_bytes 4). The graph is cut in two approf layers
 * before the final norm: with pp > 1 the stage is the first (embedding
 * and transformer layers, what Megatron's first stage holds), with pp = 1
 * both (the final norm, LM head and loss too). */
static void shard_case(const ApprofGraph *g, const Case *c, const double *adam_widths,
                       ApprofStageProgram *p)
{
    ApprofHardwareSpec hw;
    ApprofLayering l;
    ApprofShardContext *ctx = NULL;
    ApprofShardRequest req;
    int begin[2] = {0, -1}, end[2] = {-1, (int)g->n_ops};
    char err[256];
    for (int o = 0; o < (int)g->n_ops && begin[1] < 0; o++)
        if (!strcmp(g->ops[o].name, "ln_f"))
            begin[1] = end[0] = o;
    CU_ASSERT_FATAL(begin[1] > 0);
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    hw.grad_reduce_bytes = 4;
    if (adam_widths) {
        hw.optimizer_main_param_bytes = adam_widths[0];
        hw.optimizer_exp_avg_bytes = adam_widths[1];
        hw.optimizer_exp_avg_sq_bytes = adam_widths[2];
    }
    memset(&l, 0, sizeof l);
    l.n_layers = 2;
    l.op_begin = begin;
    l.op_end = end;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, c->micro_batches, &ctx) == 0);
    memset(&req, 0, sizeof req);
    req.end_layer = c->pp > 1 ? 0 : 1;
    req.mesh_hosts = 1;
    req.mesh_gpus = 8;
    req.logical_a = c->dp;
    req.logical_b = c->tp;
    req.force_batch_dim = 0;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.memory_levels = 3;
    req.variant.memory_level = 2;
    req.variant.recompute = COSTDB_RECOMPUTE_NONE;
    req.variant.zero = c->zero;
    memset(p, 0, sizeof *p);
    int rc = approf_shard_stage(ctx, &req, p, err, sizeof err);
    if (rc)
        fprintf(stderr, "shard %s: %s\n", c->name, err);
    CU_ASSERT_FATAL(rc == 0);
    approf_shard_context_free(&ctx);
}

static int near(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fabs(b);
}

static void test_first_stage(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const Case *c = &cases[i];
        ApprofGraph *g = build_stage(c->dp);
        ApprofStageProgram p;
        shard_case(g, c, NULL, &p);
        ApsolveSchedule s = c->vpp > 1 ? APSOLVE_SCHEDULE_INTERLEAVED : APSOLVE_SCHEDULE_1F1B;
        double f = apsolve_stage_in_flight(APSOLVE_MEMORY_EXACT, s, c->vpp, c->micro_batches,
                                           c->pp, 0);
        /* weights, their accumulation buffers and the optimizer state */
        double weights = (double)p.param_bytes + (double)p.donated_size[1] + (double)p.initial_size;
        double acts = f * (double)p.intermediate_size;
        long long peak = p.peak_memory[0] > p.peak_memory[1] ? p.peak_memory[0] : p.peak_memory[1];
        double need = (double)apsolve_stage_memory_need(APSOLVE_MEMORY_EXACT, peak, p.initial_size,
                                                         p.intermediate_size, f);
        double megatron = c->weights + c->activations;
        int ok = near(weights, c->weights, 0.015) && near(acts, c->activations, 0.005) &&
                 need >= megatron && near(need, megatron, 0.04);
        if (!ok)
            fprintf(stderr,
                    "%s: in flight %.4g; approf weights %.0f activations %.0f need %.0f; "
                    "Megatron %.0f %.0f %.0f\n",
                    c->name, f, weights, acts, need, c->weights, c->activations, megatron);
        /* the in-flight count on the first stage is the estimator's:
         * pp x (1 + (pp - 1)/(pp vpp)), or pp */
        CU_ASSERT(fabs(f - c->pp * (1.0 + (c->vpp > 1 ? (c->pp - 1.0) / (c->pp * c->vpp) : 0.0))) <
                  1e-12);
        /* the bytes per parameter: within 1.5 % (the biases and the
         * position table the estimator leaves out) */
        CU_ASSERT(near(weights, c->weights, 0.015));
        /* 34 s b h / t a layer and the embedding's input and mask, times
         * the in-flight count: within 0.5 % (0.01 % with pp > 1; at pp = 1
         * the estimator's 4 s b h (1 + V/h) for the output layer and the
         * loss is not quite the LM head's and loss's saved inputs) */
        CU_ASSERT(near(acts, c->activations, 0.005));
        /* the whole need: the estimator's figures plus the transient peak
         * of the backward's temporaries, which the estimator leaves out:
         * at least Megatron's, and within 4 % of it */
        CU_ASSERT(need >= megatron);
        CU_ASSERT(near(need, megatron, 0.04));
        approf_stage_program_clear(&p);
        approf_graph_free(&g);
    }
}

/* Case B (dp 2, tp 4, pp 4, the distributed optimizer) with Adam's
 * state narrower than f32: the bytes a parameter of Megatron's estimator
 * become 6 + W/dp with W the state's bytes (main copy + two moments):
 *   f32 everywhere (the default)             W = 4 + 4 + 4 = 12
 *   Megatron-Core --use-precision-aware-optimizer --exp-avg-dtype bf16
 *   --exp-avg-sq-dtype bf16 (main params fp32) W = 4 + 2 + 2 = 8
 *   NeMo 24.07's Apex distributed_fused_adam with dtype bf16 on a bf16
 *   model (store_params off: the weight is the main copy) W = 2 + 2 = 4
 * so 202,442,752 x (6 + 8/2) = 2,024,427,520 and x (6 + 4/2) =
 * 1,619,542,016 bytes; the initial state is W/12 of the default's; and
 * Adam's step moves 2 x (main + moments) + 2 (the gradient) bytes a
 * parameter: 26 (2 x 12 + 2), 18 (2 x 8 + 2) and 14 (2 x 6 + 2). */
static void test_optimizer_widths(void)
{
    static const struct {
        double widths[3], megatron, w, moved;
    } v[] = {
        {{0, 0, 0}, 2429313024.0, 12, 26},
        {{4, 2, 2}, 2024427520.0, 8, 18},
        {{2, 2, 2}, 1619542016.0, 4, 14},
    };
    const Case *c = &cases[1];
    ApprofGraph *g = build_stage(c->dp);
    ApprofStageProgram p0;
    shard_case(g, c, NULL, &p0);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        ApprofStageProgram p;
        shard_case(g, c, v[i].widths, &p);
        double weights = (double)p.param_bytes + (double)p.donated_size[1] + (double)p.initial_size;
        if (!near(weights, v[i].megatron, 0.015))
            fprintf(stderr, "widths %zu: approf %.0f Megatron %.0f\n", i, weights, v[i].megatron);
        CU_ASSERT(near(weights, v[i].megatron, 0.015));
        /* the state of the shard Adam updates (about half the stage's
         * parameters at dp 2), at W bytes a parameter */
        CU_ASSERT(near((double)p.initial_size, p.optimizer_elements * v[i].w, 1e-8));
        CU_ASSERT(near((double)p.initial_size, (double)p0.initial_size * v[i].w / 12.0, 1e-8));
        CU_ASSERT(near(p.optimizer_elements, p0.optimizer_elements, 1e-12));
        /* and the bytes its step moves */
        CU_ASSERT(near(p.optimizer_bytes, p.optimizer_elements * v[i].moved, 1e-12));
        approf_stage_program_clear(&p);
    }
    approf_stage_program_clear(&p0);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the first stage against Megatron's theoretical memory", test_first_stage},
        {"Adam's state narrower than f32", test_optimizer_widths},
    };
    return CUNIT_RUN("megatron_memory", tests);
}
