/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage variants (docs/variants.md): the time/memory Pareto set of the
 * sharding ILP against exhaustive search, the Megatron layout of a GPT block
 * on (1, 8) once memory counts, full recomputation (layer inputs kept, one
 * more forward in the backward) and ZeRO-3 at dp = 8 (parameters and
 * optimizer state divided by 8, all-gathers added; under full
 * recomputation DeepSpeed's second gathers of large modules).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/ilp.h"
#include "sharding/sharding.h"
#include "stage.h"

static ApprofGraph *build_gpt_dropout(ApprofDtype dt, int layers, int hidden, int heads,
                                      int seq_len, int batch, int vocab, double dropout)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof o);
    o.dropout = dropout;
    o.num_layers = layers;
    o.hidden = hidden;
    o.heads = heads;
    o.seq_len = seq_len;
    o.vocab = vocab;
    o.batch = batch;
    o.dtype = approf_dtype_name(dt);
    int rc = approf_zoo_build("gpt", &o, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "gpt: %s\n", err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}

static ApprofGraph *build_gpt_sized(ApprofDtype dt, int layers, int hidden, int heads,
                                    int seq_len, int batch, int vocab)
{
    return build_gpt_dropout(dt, layers, hidden, heads, seq_len, batch, vocab, 0.0);
}

static ApprofGraph *build_gpt_layers(ApprofDtype dt, int layers)
{
    return build_gpt_sized(dt, layers, 1024, 16, 512, 8, 1024);
}

static ApprofGraph *build_gpt(ApprofDtype dt)
{
    return build_gpt_layers(dt, 1);
}

/* The ZeRO tests compare ZeRO's stages on one sharding, which the ILP
 * keeps only where no strategy is close: ZeRO-2/3 drop the gradient
 * accumulation's add kernel from its objective (sharding.c), and at
 * sequence 512, with small all-gathers priced by NCCL's tuning model
 * (docs/nccl-tuning.md), ZeRO-2/3 replicate the position table that
 * ZeRO-0/1 split. At sequence 1024 every stage picks the same. */
static ApprofGraph *build_gpt_zero(void)
{
    return build_gpt_sized(APPROF_F16, 1, 1024, 16, 1024, 8, 1024);
}

/* The whole graph as one layer (one stage), on hw (NULL: a100-40g), with
 * mb micro-batches. */
static int shard_all_hw(const ApprofGraph *g, const ApprofHardwareSpec *on, int mb, int a, int b,
                        int level, int levels, int recompute, int zero, ApprofStageProgram *p)
{
    ApprofHardwareSpec hw;
    ApprofLayering l;
    int begin = 0, end = (int)g->n_ops;
    ApprofShardContext *ctx = NULL;
    char err[256];
    memset(&l, 0, sizeof l);
    l.n_layers = 1;
    l.op_begin = &begin;
    l.op_end = &end;
    if (on)
        hw = *on;
    else
        CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, mb, &ctx) == 0);
    ApprofShardRequest req;
    memset(&req, 0, sizeof req);
    req.end_layer = 0;
    req.mesh_hosts = 1;
    req.mesh_gpus = 8;
    req.logical_a = a;
    req.logical_b = b;
    req.force_batch_dim = 0;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.variant.memory_level = level;
    req.memory_levels = levels;
    req.variant.recompute = recompute;
    req.variant.zero = zero;
    memset(p, 0, sizeof *p);
    int rc = approf_shard_stage(ctx, &req, p, err, sizeof err);
    if (rc && rc != APPROF_ENOVARIANT)
        fprintf(stderr, "shard: %s\n", err);
    approf_shard_context_free(&ctx);
    return rc;
}

static int shard_all(const ApprofGraph *g, int a, int b, int level, int levels, int recompute,
                     int zero, ApprofStageProgram *p)
{
    return shard_all_hw(g, NULL, 8, a, b, level, levels, recompute, zero, p);
}

static const ApprofPlacement *param_named(const ApprofGraph *g, const ApprofStageProgram *p,
                                          const char *part)
{
    for (size_t i = 0; i < p->n_placements; i++) {
        const ApprofTensor *t = &g->tensors[p->placements[i].tensor];
        if (p->placements[i].role == APPROF_ROLE_PARAM && t->ndim == 2 && strstr(t->name, part))
            return &p->placements[i];
    }
    return NULL;
}

static int64_t param_total(const ApprofGraph *g)
{
    int64_t s = 0;
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].role == APPROF_TENSOR_PARAM)
            s += approf_tensor_bytes(&g->tensors[t]);
    return s;
}

/* Operators that are the first to read some parameter: ZeRO-3's modules. */
static int param_modules(const ApprofGraph *g)
{
    int n = 0;
    unsigned char *seen = calloc(g->n_tensors ? g->n_tensors : 1, 1);
    CU_ASSERT_FATAL(seen != NULL);
    for (size_t o = 0; o < g->n_ops; o++) {
        int holds = 0;
        for (int i = 0; i < g->ops[o].n_inputs; i++) {
            int t = g->ops[o].inputs[i];
            if (g->tensors[t].role == APPROF_TENSOR_PARAM && !seen[t]) {
                seen[t] = 1;
                holds = 1;
            }
        }
        n += holds;
    }
    free(seen);
    return n;
}

/* GPT block on (1, 8), mp = 8: level 0 is Alpa's optimum (replicated
 * weights, split sequence); the least-memory level shards like Megatron:
 * QKV and fc1 split by columns, the out-projection and fc2 by rows, one
 * all-reduce (or reduce-scatter) per block and direction for each. */
static void test_megatron_layout(void)
{
    ApprofGraph *g = build_gpt(APPROF_F16);
    ApprofStageProgram fast, lean;
    int levels = 3;
    CU_ASSERT_FATAL(shard_all(g, 1, 8, 0, levels, 0, 0, &fast) == 0);
    int last = levels - 1;
    while (last > 0 && shard_all(g, 1, 8, last, levels, 0, 0, &lean) == APPROF_ENOVARIANT)
        last--;
    CU_ASSERT_FATAL(last > 0);
    /* less resident memory, at most the replicated size / 4 for weights */
    CU_ASSERT(lean.param_bytes < fast.param_bytes);
    CU_ASSERT(lean.peak_memory[1] + lean.initial_size < fast.peak_memory[1] + fast.initial_size);
    CU_ASSERT(lean.ilp_objective >= fast.ilp_objective);
    if (getenv("APPROF_TEST_VERBOSE"))
        for (size_t i = 0; i < lean.n_placements; i++)
            fprintf(stderr, "%d %s %s\n", lean.placements[i].role,
                    g->tensors[lean.placements[i].tensor].name, lean.placements[i].spec);
    if (getenv("APPROF_TEST_VERBOSE"))
        for (int ph = 0; ph < 2; ph++)
            for (size_t i = 0; i < lean.n_colls[ph]; i++)
                fprintf(stderr, "coll ph%d kind %d op %d %s bytes %.0f\n", ph, lean.colls[ph][i].kind,
                        lean.colls[ph][i].op,
                        lean.colls[ph][i].op >= 0 ? g->ops[lean.colls[ph][i].op].name : "-",
                        lean.colls[ph][i].bytes);
    const char *col[] = {"query", "key", "value", "fc1"}, *row[] = {"proj", "fc2"};
    for (int i = 0; i < 4; i++) {
        const ApprofPlacement *pl = param_named(g, &lean, col[i]);
        CU_ASSERT_FATAL(pl != NULL);
        CU_ASSERT_EQUAL(pl->mesh_axis_of_dim[0], -1);
        CU_ASSERT_EQUAL(pl->mesh_axis_of_dim[1], 1);
    }
    for (int i = 0; i < 2; i++) {
        const ApprofPlacement *pl = param_named(g, &lean, row[i]);
        CU_ASSERT_FATAL(pl != NULL);
        CU_ASSERT_EQUAL(pl->mesh_axis_of_dim[0], 1);
        CU_ASSERT_EQUAL(pl->mesh_axis_of_dim[1], -1);
    }
    /* Megatron's sequence parallelism: per block one all-gather before
     * QKV (shared by the three projections) and before fc1, one
     * reduce-scatter after the out-projection and fc2; the backward mirrors
     * them and re-gathers the two saved matmul inputs. */
    int ag[2] = {0, 0}, rs[2] = {0, 0}, ar[2] = {0, 0};
    const double act = 8.0 * 512 * 1024 * 2;  /* B x S x H in f16 */
    for (int ph = 0; ph < 2; ph++)
        for (size_t i = 0; i < lean.n_colls[ph]; i++) {
            const ApprofCollective *c = &lean.colls[ph][i];
            if (fabs(c->bytes - act) > 1.0)
                continue;
            ag[ph] += c->kind == APPROF_COLL_ALL_GATHER;
            rs[ph] += c->kind == APPROF_COLL_REDUCE_SCATTER;
            ar[ph] += c->kind == APPROF_COLL_ALL_REDUCE;
        }
    CU_ASSERT_EQUAL(ag[0], 2);
    CU_ASSERT_EQUAL(rs[0], 2);
    CU_ASSERT_EQUAL(ag[1], 4);
    CU_ASSERT_EQUAL(rs[1], 2);
    CU_ASSERT_EQUAL(ar[0] + ar[1], 0);
    const ApprofPlacement *rep = param_named(g, &fast, "fc1");
    CU_ASSERT_FATAL(rep != NULL);
    CU_ASSERT(rep->mesh_axis_of_dim[0] < 0 && rep->mesh_axis_of_dim[1] < 0);
    approf_stage_program_clear(&fast);
    approf_stage_program_clear(&lean);
    approf_graph_free(&g);
}

/* Megatron-LM's asynchronous backward collectives (tp_async_grad;
 * sharding/program.c, mark_async_gemms): in the Megatron layout of the
 * test above, the reduce-scatter of QKV's and of fc1's input gradient
 * runs under the weight-gradient GEMMs of QKV (the three projections
 * share it) and of fc1, the re-gather of their input under the
 * input-gradient GEMMs; the out-projection's and fc2's gradient
 * all-gathers and every forward collective stay serial. Without the
 * setting nothing is marked and the program is the one it always was. */
static void test_async_backward(void)
{
    ApprofGraph *g = build_gpt(APPROF_F16);
    ApprofHardwareSpec hw;
    ApprofStageProgram plain, as;
    int level = 2;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    while (level > 0 && shard_all_hw(g, &hw, 8, 1, 8, level, 3, 0, 0, &plain) == APPROF_ENOVARIANT)
        level--;
    CU_ASSERT_FATAL(level > 0);
    for (int ph = 0; ph < 2; ph++) {
        for (size_t i = 0; i < plain.n_kernels[ph]; i++)
            CU_ASSERT_EQUAL(plain.kernels[ph][i].async_group, 0);
        for (size_t i = 0; i < plain.n_colls[ph]; i++)
            CU_ASSERT_EQUAL(plain.colls[ph][i].async_group, 0);
    }
    hw.tp_async_grad = 1.0;
    CU_ASSERT_FATAL(shard_all_hw(g, &hw, 8, 1, 8, level, 3, 0, 0, &as) == 0);
    CU_ASSERT(strcmp(as.signature, plain.signature) != 0);
    CU_ASSERT_EQUAL(as.n_colls[1], plain.n_colls[1]);
    /* the ILP weighs the overlap too (sharding.c, linear_windows): the
     * same layout, a smaller objective */
    CU_ASSERT(as.ilp_objective < plain.ilp_objective);
    for (size_t i = 0; i < as.n_colls[0]; i++)
        CU_ASSERT_EQUAL(as.colls[0][i].async_group, 0);
    const double act = 8.0 * 512 * 1024 * 2; /* B x S x H in f16 */
    int rs = 0, regather = 0, other = 0;
    double hidden = 0.0;
    for (size_t i = 0; i < as.n_colls[1]; i++) {
        const ApprofCollective *c = &as.colls[1][i];
        double wgrad = 0.0, dgrad = 0.0;
        int wgrads = 0, dgrads = 0;
        if (fabs(c->bytes - act) > 1.0)
            continue;
        CU_ASSERT_FATAL(c->async_group > 0);
        for (size_t k = 0; k < as.n_kernels[1]; k++) {
            const ApprofKernel *kr = &as.kernels[1][k];
            if (kr->async_group != c->async_group)
                continue;
            CU_ASSERT_EQUAL(kr->kind, APPROF_K_GEMM);
            CU_ASSERT_EQUAL(g->ops[kr->op].kind, APPROF_OP_MATMUL);
            if (kr->async_wgrad) {
                /* C of a weight gradient: a [1024, 1024 / 8] shard */
                CU_ASSERT_EQUAL(kr->batch * kr->m * kr->n,
                                strstr(g->ops[kr->op].name, "fc1") ? 1024 * 4096 / 8
                                                                  : 1024 * 1024 / 8);
                wgrad += approf_kernel_seconds(&hw, kr);
                wgrads++;
            } else {
                dgrad += approf_kernel_seconds(&hw, kr);
                dgrads++;
            }
        }
        if (getenv("APPROF_TEST_VERBOSE"))
            fprintf(stderr, "coll kind %d op %s group %d wgrad %d: wgrads %d dgrads %d\n", c->kind,
                    c->op >= 0 ? g->ops[c->op].name : "-", c->async_group, c->async_wgrad, wgrads,
                    dgrads);
        if (c->kind == APPROF_COLL_REDUCE_SCATTER) {
            CU_ASSERT_EQUAL(c->async_wgrad, 1);
            CU_ASSERT(wgrads == 3 || wgrads == 1); /* query, key, value; fc1 */
            CU_ASSERT_EQUAL(dgrads, wgrads);
            hidden += fmin(approf_collective_cost(&hw, c), wgrad);
            rs++;
        } else if (c->kind == APPROF_COLL_ALL_GATHER && dgrads > 0) {
            CU_ASSERT_EQUAL(c->async_wgrad, 0);
            hidden += fmin(approf_collective_cost(&hw, c), dgrad);
            regather++;
        } else {
            /* the out-projection's and fc2's output gradient (and the
             * embeddings' reshard): no linear layer in its group */
            CU_ASSERT_EQUAL(wgrads + dgrads, 0);
            other += c->kind == APPROF_COLL_ALL_GATHER;
        }
    }
    CU_ASSERT_EQUAL(rs, 2);
    CU_ASSERT_EQUAL(regather, 2);
    CU_ASSERT_EQUAL(other, 2);
    /* the phase is the serial one less what those four hide */
    CU_ASSERT(hidden > 0.0);
    hw.tp_async_grad = 0.0;
    double serial = approf_phase_seconds(&hw, &as, 1);
    CU_ASSERT(fabs(serial - approf_phase_seconds(&hw, &plain, 1)) <= 1e-12 * serial);
    hw.tp_async_grad = 1.0;
    CU_ASSERT(fabs(approf_phase_seconds(&hw, &as, 1) - (serial - hidden)) <= 1e-9 * serial);
    CU_ASSERT(fabs(approf_phase_seconds(&hw, &as, 0) - approf_phase_seconds(&hw, &plain, 0)) <=
              1e-12 * serial);
    approf_stage_program_clear(&plain);
    approf_stage_program_clear(&as);
    approf_graph_free(&g);
}

/* GPT block on (2, 4), batch on axis 0: with replicated weights every
 * gradient is partial over both axes and synchronised over all 8 devices;
 * with the weights split over axis 1 (Megatron's layout) the gradient sync
 * runs over axis 0 alone (group 2), as each tensor-parallel rank's
 * data-parallel group does, although the few replicated parameters (the
 * LayerNorms' and some biases) are still partial over both. */
static void test_grad_sync_group(void)
{
    ApprofGraph *g = build_gpt(APPROF_F16);
    ApprofStageProgram fast, lean;
    int levels = 3, last = levels - 1;
    CU_ASSERT_FATAL(shard_all(g, 2, 4, 0, levels, 0, 0, &fast) == 0);
    while (last > 0 && shard_all(g, 2, 4, last, levels, 0, 0, &lean) == APPROF_ENOVARIANT)
        last--;
    CU_ASSERT_FATAL(last > 0);
    const ApprofPlacement *rep = param_named(g, &fast, "fc1"), *tp = param_named(g, &lean, "fc1");
    CU_ASSERT_FATAL(rep != NULL && tp != NULL);
    CU_ASSERT(rep->mesh_axis_of_dim[0] < 0 && rep->mesh_axis_of_dim[1] < 0);
    CU_ASSERT_EQUAL(fast.grad_sync.axes, APPROF_AXIS0 | APPROF_AXIS1);
    CU_ASSERT_EQUAL(fast.grad_sync.group_size, 8);
    CU_ASSERT_EQUAL(tp->mesh_axis_of_dim[1], 1);
    CU_ASSERT_EQUAL(lean.grad_sync.axes, APPROF_AXIS0);
    CU_ASSERT_EQUAL(lean.grad_sync.group_size, 2);
    /* every local parameter's gradient, the replicated ones included (the
     * tied embedding once per reader: ZeRO takes min(bytes, param_bytes)) */
    CU_ASSERT(lean.grad_sync.bytes >= (double)lean.param_bytes);
    CU_ASSERT(fast.grad_sync.bytes >= (double)fast.param_bytes);
    approf_stage_program_clear(&fast);
    approf_stage_program_clear(&lean);
    approf_graph_free(&g);
}

/* Full recomputation keeps only the inputs of each checkpoint block (a
 * transformer layer) and runs the forward kernels once more inside the
 * backward. */
static void test_full_recompute(void)
{
    ApprofGraph *g = build_gpt(APPROF_F32);
    ApprofStageProgram none, full;
    CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, COSTDB_RECOMPUTE_NONE, 0, &none) == 0);
    CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, COSTDB_RECOMPUTE_FULL, 0, &full) == 0);
    /* kept: the inputs of each checkpoint block (embeddings, h.0, ln_f,
     * lm_head, loss): the token ids and labels, split 8 ways, and the four
     * B x S x H (or B x S x V) activations entering h.0, ln_f, lm_head and
     * the loss, each split 8 ways over the batch */
    int64_t inputs = 0;
    for (size_t i = 0; i < full.n_placements; i++)
        if (full.placements[i].role == APPROF_ROLE_INPUT)
            inputs += full.placements[i].local_bytes;
    const int64_t act = (int64_t)8 * 512 * 1024 * 4 / 8;
    if (full.intermediate_size != inputs + 4 * act)
        fprintf(stderr, "full %lld inputs %lld none %lld\n", (long long)full.intermediate_size,
                (long long)inputs, (long long)none.intermediate_size);
    CU_ASSERT_EQUAL(full.intermediate_size, inputs + 4 * act);
    CU_ASSERT(full.intermediate_size < none.intermediate_size / 6);
    CU_ASSERT_EQUAL(full.n_kernels[1], none.n_kernels[1] + none.n_kernels[0]);
    CU_ASSERT_EQUAL(full.n_kernels[0], none.n_kernels[0]);
    CU_ASSERT_EQUAL(full.param_bytes, none.param_bytes);
    CU_ASSERT(full.temp_buffer_size[1] > none.temp_buffer_size[1]);
    /* selective drops only the attention scores and probabilities */
    ApprofStageProgram sel;
    CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, COSTDB_RECOMPUTE_SELECTIVE, 0, &sel) == 0);
    CU_ASSERT(sel.intermediate_size < none.intermediate_size);
    CU_ASSERT(sel.intermediate_size > full.intermediate_size);
    CU_ASSERT(sel.n_kernels[1] > none.n_kernels[1]);
    CU_ASSERT(sel.n_kernels[1] < full.n_kernels[1]);
    approf_stage_program_clear(&sel);
    approf_stage_program_clear(&none);
    approf_stage_program_clear(&full);
    approf_graph_free(&g);

    /* Four transformer layers in one approf layer: still one checkpoint per
     * transformer layer (seven block inputs besides ids and labels), and
     * the backward reruns one of them at a time. */
    ApprofGraph *g4 = build_gpt_layers(APPROF_F32, 4);
    ApprofStageProgram full4, none4;
    CU_ASSERT_FATAL(shard_all(g4, 8, 1, 0, 1, COSTDB_RECOMPUTE_FULL, 0, &full4) == 0);
    CU_ASSERT_FATAL(shard_all(g4, 8, 1, 0, 1, COSTDB_RECOMPUTE_NONE, 0, &none4) == 0);
    int64_t in4 = 0;
    for (size_t i = 0; i < full4.n_placements; i++)
        if (full4.placements[i].role == APPROF_ROLE_INPUT)
            in4 += full4.placements[i].local_bytes;
    CU_ASSERT_EQUAL(full4.intermediate_size, in4 + 7 * act);
    /* one layer's activations recomputed at a time: the extra temporaries
     * are about a quarter of what the four layers keep without recomputing */
    CU_ASSERT(full4.temp_buffer_size[1] - none4.temp_buffer_size[1] <
              none4.intermediate_size / 3);
    approf_stage_program_clear(&full4);
    approf_stage_program_clear(&none4);
    approf_graph_free(&g4);

    /* With dropout (Megatron's 0.1): selective recomputation reruns the
     * dropout of the probabilities with the core (Megatron's CoreAttention),
     * so what it keeps more than without dropout is the one-byte masks of
     * the three hidden dropouts (embedding, attention output, MLP output),
     * B x S x H bytes each (a quarter of act in f32: program_memory.c,
     * shard_saved_storage), and no S x S tensor; without recomputation the
     * probabilities' dropout keeps its output (the values' matmul reads it)
     * and its mask, B x heads x S x S in f32 and in bytes, as Korthikanti
     * et al. 2022 (section 4.1) count the attention's dropout. */
    ApprofGraph *gd = build_gpt_dropout(APPROF_F32, 1, 1024, 16, 512, 8, 1024, 0.1);
    ApprofGraph *g0 = build_gpt(APPROF_F32);
    ApprofStageProgram seld, sel0, noned, none0;
    CU_ASSERT_FATAL(shard_all(gd, 8, 1, 0, 1, COSTDB_RECOMPUTE_SELECTIVE, 0, &seld) == 0);
    CU_ASSERT_FATAL(shard_all(g0, 8, 1, 0, 1, COSTDB_RECOMPUTE_SELECTIVE, 0, &sel0) == 0);
    CU_ASSERT_FATAL(shard_all(gd, 8, 1, 0, 1, COSTDB_RECOMPUTE_NONE, 0, &noned) == 0);
    CU_ASSERT_FATAL(shard_all(g0, 8, 1, 0, 1, COSTDB_RECOMPUTE_NONE, 0, &none0) == 0);
    const int64_t probs = (int64_t)8 * 16 * 512 * 512 * 4 / 8;
    if (seld.intermediate_size - sel0.intermediate_size != 3 * act / 4)
        fprintf(stderr, "selective with dropout keeps %lld more bytes, act %lld probs %lld\n",
                (long long)(seld.intermediate_size - sel0.intermediate_size), (long long)act,
                (long long)probs);
    CU_ASSERT_EQUAL(seld.intermediate_size - sel0.intermediate_size, 3 * act / 4);
    CU_ASSERT_EQUAL(noned.intermediate_size - none0.intermediate_size,
                    3 * act / 4 + probs + probs / 4);
    approf_stage_program_clear(&seld);
    approf_stage_program_clear(&sel0);
    approf_stage_program_clear(&noned);
    approf_stage_program_clear(&none0);
    approf_graph_free(&gd);
    approf_graph_free(&g0);
}

/* The count and the bytes of the collectives of kind k in phase ph of a
 * minus those of b (the same sharding without ZeRO). */
static void extra_colls(const ApprofStageProgram *a, const ApprofStageProgram *b, int ph,
                        ApprofCollKind k, int *n, double *bytes)
{
    *n = 0;
    *bytes = 0.0;
    for (size_t i = 0; i < a->n_colls[ph]; i++)
        if (a->colls[ph][i].kind == k) {
            (*n)++;
            *bytes += a->colls[ph][i].bytes;
        }
    for (size_t i = 0; i < b->n_colls[ph]; i++)
        if (b->colls[ph][i].kind == k) {
            (*n)--;
            *bytes -= b->colls[ph][i].bytes;
        }
}

/* ZeRO-3 at dp = 8 divides parameter and optimizer bytes by 8 and adds an
 * all-gather of the parameters to the forward and the backward. */
static void test_zero3(void)
{
    ApprofGraph *g = build_gpt_zero();
    ApprofStageProgram z0, z1, z2, z3;
    int64_t P = param_total(g);
    CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, 0, 0, &z0) == 0);
    CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, 0, 1, &z1) == 0);
    CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, 0, 2, &z2) == 0);
    CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, 0, 3, &z3) == 0);
    CU_ASSERT_EQUAL(z0.grad_sync.group_size, 8);
    /* f16 Adam state: 12 bytes per 2-byte element, sharded 8 ways */
    /* the replicated parameters (the gradient all-reduce's bytes S) are
     * sharded; the embedding tables the ILP splits over the batch axis are
     * not replicated and stay as they are */
    double S = fmin(z0.grad_sync.bytes, (double)z0.param_bytes);
    CU_ASSERT(S > 0.9 * (double)P && S <= (double)P);
    CU_ASSERT(llabs(z0.initial_size - 6 * (int64_t)llround(z0.param_bytes)) <= 2);
    CU_ASSERT(llabs(z1.initial_size - (z0.initial_size - llround(6 * S * 7 / 8))) <= 2);
    CU_ASSERT(llabs(z3.initial_size - z1.initial_size) <= 2);
    CU_ASSERT(llabs((z0.invar_size[0] - z3.invar_size[0]) - llround(S * 7 / 8)) <= 2);
    /* the parameters are gathered module by module (one all-gather per
     * operator that holds parameters) in the forward and again in the
     * backward, on top of ZeRO-0's program (the same sharding); together
     * they move S */
    int n, modules = param_modules(g);
    double bytes;
    CU_ASSERT(modules > 1);
    for (int ph = 0; ph < 2; ph++) {
        extra_colls(&z3, &z0, ph, APPROF_COLL_ALL_GATHER, &n, &bytes);
        CU_ASSERT_EQUAL(n, modules);
        CU_ASSERT(fabs(bytes - S) <= 1e-9 * S);
    }
    /* the gradients are reduce-scattered in the backward of every
     * micro-batch: ZeRO-2 in one collective of S (its buckets), ZeRO-3 one
     * per module as DeepSpeed's stage 3 does, together S; none in the
     * forward */
    extra_colls(&z2, &z0, 1, APPROF_COLL_REDUCE_SCATTER, &n, &bytes);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT(fabs(bytes - S) <= 1e-9 * S);
    extra_colls(&z3, &z0, 1, APPROF_COLL_REDUCE_SCATTER, &n, &bytes);
    CU_ASSERT_EQUAL(n, modules);
    CU_ASSERT(fabs(bytes - S) <= 1e-9 * S);
    extra_colls(&z3, &z0, 0, APPROF_COLL_REDUCE_SCATTER, &n, &bytes);
    CU_ASSERT_EQUAL(n, 0);
    /* apply-grad: all-reduce (ZeRO-0), reduce-scatter + all-gather (1), nothing (3) */
    CU_ASSERT_EQUAL(z0.n_apply_colls, 1);
    CU_ASSERT_EQUAL(z1.n_apply_colls, 2);
    CU_ASSERT_EQUAL(z2.n_apply_colls, 1);
    CU_ASSERT_EQUAL(z3.n_apply_colls, 0);
    CU_ASSERT(z3.optimizer_bytes < z0.optimizer_bytes / 7);
    /* no replicas on (1, 8) forced with the parameters split: ZeRO needs some */
    approf_stage_program_clear(&z0);
    approf_stage_program_clear(&z1);
    approf_stage_program_clear(&z2);
    approf_stage_program_clear(&z3);
    approf_graph_free(&g);
}

/* The bytes of the parameters whose names start with prefix, less those
 * whose names start with one of the n_skip prefixes in skip[]. */
static double params_under(const ApprofGraph *g, const char *prefix, const char *const *skip,
                           int n_skip)
{
    double s = 0.0;
    for (size_t t = 0; t < g->n_tensors; t++) {
        const char *name = g->tensors[t].name;
        int skipped = 0;
        if (g->tensors[t].role != APPROF_TENSOR_PARAM || strncmp(name, prefix, strlen(prefix)))
            continue;
        for (int k = 0; k < n_skip; k++)
            skipped |= !strncmp(name, skip[k], strlen(skip[k]));
        if (!skipped)
            s += (double)approf_tensor_bytes(&g->tensors[t]);
    }
    return s;
}

/* ZeRO-3 under full recomputation (docs/variants.md, "ZeRO-3 and
 * recomputation"): the backward's rerun forward gathers every module, and
 * DeepSpeed gathers a module again for its backward when the block's later
 * modules, used twice in between, hold 1e9 parameter elements or more
 * (stage3_max_reuse_distance). One f16 GPT block at dp = 8: with hidden
 * 12288 only fc2 (nothing after it) is kept; at 11008 fc1 is kept too (its
 * distance 2 x (4 h^2 + h) is 0.97e9); at 1024 every module is. */
static void test_zero3_regather(void)
{
    static const struct {
        int hidden, heads;
        int n_kept;             /* the block's modules kept for the backward */
        const char *kept[2];    /* their parameter prefixes */
        int regathers;          /* 0: none expected */
    } cases[] = {
        {12288, 96, 1, {"h.0/fc2/"}, 1},
        {11008, 86, 2, {"h.0/fc2/", "h.0/fc1/"}, 1},
        {1024, 16, 0, {NULL}, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ApprofGraph *g = build_gpt_sized(APPROF_F16, 1, cases[c].hidden, cases[c].heads, 128, 8,
                                         1024);
        ApprofStageProgram z0, z3, z0n, z3n;
        int n, m;
        double bytes, bytes_n;
        CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, COSTDB_RECOMPUTE_FULL, 0, &z0) == 0);
        CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, COSTDB_RECOMPUTE_FULL, 3, &z3) == 0);
        CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, COSTDB_RECOMPUTE_NONE, 0, &z0n) == 0);
        CU_ASSERT_FATAL(shard_all(g, 8, 1, 0, 1, COSTDB_RECOMPUTE_NONE, 3, &z3n) == 0);
        double S = fmin(z0.grad_sync.bytes, (double)z0.param_bytes);
        /* the forward gathers S once whatever the recomputation */
        extra_colls(&z3, &z0, 0, APPROF_COLL_ALL_GATHER, &n, &bytes);
        CU_ASSERT(fabs(bytes - S) <= 1e-9 * S);
        /* the backward: S once for the rerun, then the block's modules
         * that were let go, each one more all-gather of its bytes */
        extra_colls(&z3, &z0, 1, APPROF_COLL_ALL_GATHER, &n, &bytes);
        double again = cases[c].regathers
                           ? params_under(g, "h.0/", cases[c].kept, cases[c].n_kept)
                           : 0.0;
        CU_ASSERT(fabs(bytes - (S + again)) <= 1e-6 * S);
        if (cases[c].regathers) {
            /* every parameter replicated (dp = 8): a module's share of S
             * is its bytes */
            CU_ASSERT(S > 0.99 * (double)param_total(g));
            CU_ASSERT(again > 0.0);
            /* query, key, value, proj, ln_1, ln_2 and (12288) fc1 */
            CU_ASSERT_EQUAL(n - param_modules(g), cases[c].hidden == 12288 ? 7 : 6);
        } else {
            CU_ASSERT_EQUAL(n, param_modules(g));
        }
        /* without recomputation the backward gathers S once */
        extra_colls(&z3n, &z0n, 1, APPROF_COLL_ALL_GATHER, &m, &bytes_n);
        CU_ASSERT_EQUAL(m, param_modules(g));
        CU_ASSERT(fabs(bytes_n - fmin(z0n.grad_sync.bytes, (double)z0n.param_bytes)) <=
                  1e-6 * S);
        approf_stage_program_clear(&z0);
        approf_stage_program_clear(&z3);
        approf_stage_program_clear(&z0n);
        approf_stage_program_clear(&z3n);
        approf_graph_free(&g);
    }
}

/* Gradient accumulation (sharding/program.c, push_grad_accum): the
 * backward adds every parameter's fresh gradient into its accumulation
 * buffer, one elementwise kernel per operator that holds parameters,
 * reading the buffer and the gradient and writing the buffer: 3 x 2 bytes
 * per local element in f16, 4 + 2 + 4 with the buffer in f32
 * (grad_reduce_bytes 4), on the device's partition under ZeRO-2. With
 * grad_accum_fusion the weight-gradient GEMMs read and write the f32
 * buffer in their epilogue instead (6 more bytes stored per element of
 * their C than the 16-bit gradient) and only the operators without one
 * (norms, embeddings) keep an add kernel. */
static double accum_tail(const ApprofStageProgram *p, int n, double per_elem)
{
    double elems = 0.0;
    CU_ASSERT_FATAL(p->n_kernels[1] >= (size_t)n);
    for (size_t i = p->n_kernels[1] - (size_t)n; i < p->n_kernels[1]; i++) {
        const ApprofKernel *k = &p->kernels[1][i];
        CU_ASSERT_EQUAL(k->kind, APPROF_K_ELEMENTWISE);
        CU_ASSERT(fabs(k->bytes - per_elem * (double)k->elements) <= 1e-9 * k->bytes);
        elems += (double)k->elements;
    }
    return elems;
}

static double gemm_store(const ApprofStageProgram *p)
{
    double s = 0.0;
    for (size_t i = 0; i < p->n_kernels[1]; i++)
        if (p->kernels[1][i].kind == APPROF_K_GEMM)
            s += p->kernels[1][i].store_bytes;
    return s;
}

static void test_grad_accum(void)
{
    ApprofGraph *g = build_gpt_zero();
    ApprofHardwareSpec hw;
    ApprofStageProgram a, f32, fused, z2;
    int modules = param_modules(g);
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    CU_ASSERT_FATAL(shard_all_hw(g, &hw, 8, 8, 1, 0, 1, 0, 0, &a) == 0);
    /* every local parameter element once, 6 bytes each */
    CU_ASSERT(fabs(accum_tail(&a, modules, 6.0) - (double)a.param_bytes / 2.0) <= 1.0 * modules);
    hw.grad_reduce_bytes = 4;
    CU_ASSERT_FATAL(shard_all_hw(g, &hw, 8, 8, 1, 0, 1, 0, 0, &f32) == 0);
    CU_ASSERT(fabs(accum_tail(&f32, modules, 10.0) - (double)a.param_bytes / 2.0) <= 1.0 * modules);
    CU_ASSERT_EQUAL(f32.n_kernels[1], a.n_kernels[1]);
    /* fused: the six weight-gradient GEMMs (query, key, value, proj, fc1,
     * fc2) store 6 more bytes per element of their C (the weights); their
     * biases and the other modules keep an add kernel */
    hw.grad_accum_fusion = 1;
    CU_ASSERT_FATAL(shard_all_hw(g, &hw, 8, 8, 1, 0, 1, 0, 0, &fused) == 0);
    CU_ASSERT_EQUAL(fused.n_kernels[1], a.n_kernels[1]);
    double weights = 0.0;
    for (size_t t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].role == APPROF_TENSOR_PARAM && g->tensors[t].ndim == 2 &&
            strncmp(g->tensors[t].name, "h.0/", 4) == 0)
            weights += (double)approf_tensor_bytes(&g->tensors[t]) / 2.0;
    CU_ASSERT(weights > 0.0);
    CU_ASSERT(fabs(gemm_store(&fused) - gemm_store(&f32) - 6.0 * weights) <= 1e-9 * weights);
    CU_ASSERT(fabs(accum_tail(&fused, modules, 10.0) + weights - (double)a.param_bytes / 2.0) <=
              1.0 * modules);
    /* ZeRO-2: the partition of the replicated parameters */
    hw.grad_accum_fusion = 0;
    hw.grad_reduce_bytes = 0;
    CU_ASSERT_FATAL(shard_all_hw(g, &hw, 8, 8, 1, 0, 1, 0, 2, &z2) == 0);
    double S = fmin(a.grad_sync.bytes, (double)a.param_bytes);
    CU_ASSERT(fabs(accum_tail(&z2, modules, 6.0) -
                   ((double)a.param_bytes - S * 7.0 / 8.0) / 2.0) <= 1.0 * modules);
    approf_stage_program_clear(&a);
    approf_stage_program_clear(&f32);
    approf_stage_program_clear(&fused);
    approf_stage_program_clear(&z2);
    approf_graph_free(&g);
}

/* The ILP prices the gradient accumulation of each strategy's shards
 * (sharding.c, node_compute_cost): at the width of N21's 1T model on
 * (1, 8), keeping the 51200 x 25600 word embedding replicated would add
 * its whole gradient every micro-batch, so the fastest level splits it,
 * as Megatron's vocabulary-parallel embedding does. */
static void test_accum_splits_tables(void)
{
    ApprofGraph *g = build_gpt_sized(APPROF_F16, 2, 25600, 160, 2048, 1, 51200);
    ApprofHardwareSpec hw;
    ApprofStageProgram p;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-80g", &hw) == 0);
    CU_ASSERT_FATAL(shard_all_hw(g, &hw, 1, 1, 8, 0, 1, 0, 0, &p) == 0);
    const ApprofPlacement *pl = param_named(g, &p, "embeddings/word");
    CU_ASSERT_FATAL(pl != NULL);
    CU_ASSERT(pl->mesh_axis_of_dim[0] == 1 || pl->mesh_axis_of_dim[1] == 1);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

/* Random ILPs: the Pareto points are not dominated by any combination, the
 * first is the fastest and the last the least memory. */
static void test_pareto_brute_force(void)
{
    srand(7);
    for (int trial = 0; trial < 200; trial++) {
        ApprofIlp *p = NULL;
        int n = 2 + rand() % 5, k[8];
        CU_ASSERT_FATAL(approf_ilp_new(&p) == 0);
        for (int v = 0; v < n; v++) {
            double c[4], m[4];
            k[v] = 1 + rand() % 3;
            for (int i = 0; i < k[v]; i++) {
                c[i] = (rand() % 100) / 10.0;
                m[i] = (double)(rand() % 50);
            }
            CU_ASSERT_FATAL(approf_ilp_add_node(p, k[v], c, m) == v);
        }
        for (int v = 1; v < n; v++) {
            int u = rand() % v;
            double r[16];
            for (int i = 0; i < k[u] * k[v]; i++)
                r[i] = (rand() % 30) / 10.0;
            CU_ASSERT_FATAL(approf_ilp_add_edge(p, u, v, r) >= 0);
        }
        int choices[4 * 8], np = 0, cur[8] = {0};
        double t[4], m[4], best_t = INFINITY, best_m = INFINITY;
        CU_ASSERT_FATAL(approf_ilp_pareto(p, APPROF_ILP_SERIES_PARALLEL, NULL, 4, choices, t, m,
                                          &np, NULL) == 0);
        CU_ASSERT_FATAL(np >= 1);
        for (;;) {
            double ct = approf_ilp_evaluate(p, cur), cm = approf_ilp_memory(p, cur);
            if (ct < best_t)
                best_t = ct;
            if (cm < best_m)
                best_m = cm;
            for (int q = 0; q < np; q++)
                CU_ASSERT(!(ct <= t[q] - 1e-9 && cm <= m[q] - 1e-9));
            int v = 0;
            while (v < n && ++cur[v] == k[v])
                cur[v++] = 0;
            if (v == n)
                break;
        }
        CU_ASSERT_DOUBLE_EQUAL(t[0], best_t, 1e-9);
        /* the least-memory point, unless it saves a negligible share */
        CU_ASSERT(m[np - 1] >= best_m - 1e-9 && m[np - 1] - best_m < 0.005 * m[np - 1] + 1e-9);
        for (int q = 1; q < np; q++)
            CU_ASSERT(t[q] > t[q - 1] && m[q] <= m[q - 1] * (1 - 0.005));
        approf_ilp_free(&p);
    }
}

/* A point that saves 0.1 % of the memory for five times the time is not a
 * level: the fastest solution is the only point. One that saves 10 % is. */
static void test_pareto_negligible(void)
{
    for (int big = 0; big < 2; big++) {
        ApprofIlp *p = NULL;
        CU_ASSERT_FATAL(approf_ilp_new(&p) == 0);
        double c[2] = {1.0, 5.0}, m[2] = {1000.0, big ? 900.0 : 999.0};
        double c1[1] = {1.0}, m1[1] = {0.0}, r[2] = {0.0, 0.0};
        CU_ASSERT_FATAL(approf_ilp_add_node(p, 2, c, m) == 0);
        CU_ASSERT_FATAL(approf_ilp_add_node(p, 1, c1, m1) == 1);
        CU_ASSERT_FATAL(approf_ilp_add_edge(p, 0, 1, r) >= 0);
        int choices[2 * 4], np = 0;
        double t[4], mm[4];
        CU_ASSERT_FATAL(approf_ilp_pareto(p, APPROF_ILP_SERIES_PARALLEL, NULL, 4, choices, t, mm,
                                          &np, NULL) == 0);
        CU_ASSERT_EQUAL(np, big ? 2 : 1);
        CU_ASSERT_DOUBLE_EQUAL(t[0], 2.0, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(mm[np - 1], big ? 900.0 : 1000.0, 1e-12);
        approf_ilp_free(&p);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"Pareto points vs exhaustive search", test_pareto_brute_force},
        {"negligible memory savings are not levels", test_pareto_negligible},
        {"GPT block on (1,8): weights split 8 ways at the least-memory level",
         test_megatron_layout},
        {"GPT block on (2,4): the gradient sync group of split weights", test_grad_sync_group},
        {"Megatron's asynchronous backward collectives (tp_async_grad)", test_async_backward},
        {"full and selective recomputation", test_full_recompute},
        {"ZeRO-1 and ZeRO-3 at dp = 8", test_zero3},
        {"ZeRO-3 under full recomputation: DeepSpeed's second gathers", test_zero3_regather},
        {"gradient accumulation: add kernels, f32 buffer, fused, ZeRO-2", test_grad_accum},
        {"the ILP splits a large table whose gradient it would accumulate whole",
         test_accum_splits_tables},
    };
    return CUNIT_RUN("stage variants", tests);
}
