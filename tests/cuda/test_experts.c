/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host side of backend ABI 11 (no GPU needed): the grouped GEMM plan of a
 * MoE layer's expert GEMMs (approf_grouped_gemm_plan: one GEMM per expert
 * over its tokens, operands inside the dense buffers), the zoo's expert
 * GEMMs marked as such (and nothing else), the optimizer step's arrays
 * (op_shape.h, ADAM) and the stage program's optimizer_elements, whose
 * Adam bytes are the program's optimizer_bytes.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "collective.h"
#include "cuda/host.h"
#include "cunit_run.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

static ApprofKernel gemm_kernel(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t experts,
                                int experts_k)
{
    ApprofKernel x;
    memset(&x, 0, sizeof x);
    x.kind = APPROF_K_GEMM;
    x.batch = batch;
    x.m = m;
    x.n = n;
    x.k = k;
    x.experts = experts;
    x.experts_k = experts_k;
    x.flops = 2.0 * (double)batch * (double)m * (double)n * (double)k;
    return x;
}

/* Every group inside the dense buffers approf_kernel_buffers sizes, and
 * the groups' FLOPs those of the kernel when the tokens are the uniform
 * ones. */
static void check_fits(const ApprofKernel *k, const ApprofGroupedGemm *g, ApprofDtype dt)
{
    ApprofKernelBuffers b;
    int64_t es = dt == APPROF_F32 ? 4 : 2;
    CU_ASSERT_EQUAL_FATAL(approf_kernel_buffers(k, dt, &b), 0);
    for (int e = 0; e < g->groups; e++) {
        const ApprofGemmGroup *q = &g->g[e];
        CU_ASSERT((q->off_a + q->K * q->lda) * es <= b.bytes[0]);
        CU_ASSERT((q->off_b + q->N * q->ldb) * es <= b.bytes[1]);
        CU_ASSERT((q->off_c + q->N * q->ldc) * es <= b.bytes[2]);
        CU_ASSERT_EQUAL(q->lda, q->M);
        CU_ASSERT_EQUAL(q->ldb, q->K);
        CU_ASSERT_EQUAL(q->ldc, q->M);
    }
    CU_ASSERT(g->elems_a * es <= b.bytes[0]);
    CU_ASSERT(g->elems_b * es <= b.bytes[1]);
    CU_ASSERT(g->elems_c * es <= b.bytes[2]);
}

static void test_grouped_plan(void)
{
    /* forward: 2 samples x 4 experts, 3 slots each, hidden 7 -> 5 */
    ApprofKernel k = gemm_kernel(8, 3, 5, 7, 4, 0);
    ApprofGroupedGemm g;
    double flops = 0;
    CU_ASSERT_EQUAL_FATAL(approf_grouped_gemm_plan(&k, APPROF_BF16, 1, NULL, &g), 0);
    CU_ASSERT_EQUAL(g.groups, 4);
    CU_ASSERT_EQUAL(g.ab_type, APPROF_BF16);
    CU_ASSERT_EQUAL(g.compute, APPROF_GEMM_COMPUTE_32F);
    for (int e = 0; e < 4; e++) {
        CU_ASSERT_EQUAL(g.g[e].tokens, 6);         /* both samples' slots */
        CU_ASSERT_EQUAL(g.g[e].N, 6);
        CU_ASSERT_EQUAL(g.g[e].M, 5);
        CU_ASSERT_EQUAL(g.g[e].K, 7);
        CU_ASSERT_EQUAL(g.g[e].off_a, e * 7 * 5);  /* one weight per expert */
        CU_ASSERT_EQUAL(g.g[e].off_b, e * 6 * 7);
        CU_ASSERT_EQUAL(g.g[e].off_c, e * 6 * 5);
        flops += 2.0 * (double)(g.g[e].M * g.g[e].N * g.g[e].K);
    }
    CU_ASSERT_EQUAL(g.elems_a, 4 * 7 * 5);
    CU_ASSERT_DOUBLE_EQUAL(flops, k.flops, 0);
    check_fits(&k, &g, APPROF_BF16);
    approf_grouped_gemm_free(&g);
    CU_ASSERT_PTR_NULL(g.g);

    /* the weight gradient: 4 experts, 7 x 6 tokens @ 6 tokens x 5 */
    k = gemm_kernel(4, 7, 5, 6, 4, 1);
    CU_ASSERT_EQUAL_FATAL(approf_grouped_gemm_plan(&k, APPROF_F32, 1, NULL, &g), 0);
    CU_ASSERT_EQUAL(g.compute, APPROF_GEMM_COMPUTE_32F_FAST_TF32);
    for (int e = 0; e < 4; e++) {
        CU_ASSERT_EQUAL(g.g[e].tokens, 6);
        CU_ASSERT_EQUAL(g.g[e].K, 6);
        CU_ASSERT_EQUAL(g.g[e].N, 7);
        CU_ASSERT_EQUAL(g.g[e].off_a, e * 6 * 5);   /* dy_e */
        CU_ASSERT_EQUAL(g.g[e].off_b, e * 7 * 6);   /* x_e^T */
        CU_ASSERT_EQUAL(g.g[e].off_c, e * 7 * 5);   /* dw_e */
    }
    check_fits(&k, &g, APPROF_F32);
    approf_grouped_gemm_free(&g);

    /* routing imbalance: counts that differ, as many slots in all */
    {
        const int64_t skew[4] = {1, 2, 3, 18}, over[4] = {10, 10, 10, 10}, zero[4] = {6, 0, 6, 6};
        k = gemm_kernel(8, 3, 5, 7, 4, 0);
        CU_ASSERT_EQUAL_FATAL(approf_grouped_gemm_plan(&k, APPROF_BF16, 0, skew, &g), 0);
        CU_ASSERT_EQUAL(g.g[3].N, 18);
        CU_ASSERT_EQUAL(g.g[3].off_b, 6 * 7);
        CU_ASSERT_EQUAL(g.g[3].off_c, 6 * 5);
        check_fits(&k, &g, APPROF_BF16);
        approf_grouped_gemm_free(&g);
        CU_ASSERT_EQUAL(approf_grouped_gemm_plan(&k, APPROF_BF16, 0, over, &g), APPROF_EINVAL);
        CU_ASSERT_PTR_NULL(g.g);
        CU_ASSERT_EQUAL(approf_grouped_gemm_plan(&k, APPROF_BF16, 0, zero, &g), APPROF_EINVAL);
    }
    /* not an expert GEMM, a batch that does not split over the experts */
    k = gemm_kernel(8, 3, 5, 7, 0, 0);
    CU_ASSERT_EQUAL(approf_grouped_gemm_plan(&k, APPROF_BF16, 0, NULL, &g), APPROF_EINVAL);
    k = gemm_kernel(6, 3, 5, 7, 4, 0);
    CU_ASSERT_EQUAL(approf_grouped_gemm_plan(&k, APPROF_BF16, 0, NULL, &g), APPROF_EINVAL);
    k = gemm_kernel(8, 0, 5, 7, 4, 0);
    CU_ASSERT_EQUAL(approf_grouped_gemm_plan(&k, APPROF_BF16, 0, NULL, &g), APPROF_EINVAL);
}

static ApprofGraph *mixtral(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof o);
    o.preset = "mixtral-8x7b";
    o.num_layers = 1;
    o.batch = 2;
    o.seq_len = 64;
    o.dtype = "bf16";
    if (approf_zoo_build("mixtral", &o, &g, err, sizeof err))
        fprintf(stderr, "mixtral: %s\n", err);
    return g;
}

/* The experts' GEMMs (a parameter per batch entry) carry the experts,
 * the weight gradient its tokens in k; every other GEMM none; each expert
 * GEMM has a grouped plan with the kernel's FLOPs. */
static void test_zoo_experts(void)
{
    ApprofGraph *g = mixtral();
    int expert = 0, wgrad = 0, other = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (size_t op = 0; op < g->n_ops; op++)
        for (int ph = 0; ph < 2; ph++) {
            ApprofKernel ks[APPROF_MAX_KERNELS];
            int nk = approf_op_kernels(g, (int)op, NULL, ph, ks, APPROF_MAX_KERNELS);
            int is_expert = strstr(g->ops[op].name, "experts/") != NULL &&
                            g->ops[op].kind == APPROF_OP_BATCH_MATMUL;
            for (int i = 0; i < nk; i++) {
                ApprofGroupedGemm gg;
                double flops = 0;
                if (ks[i].kind != APPROF_K_GEMM) {
                    CU_ASSERT_EQUAL(ks[i].experts, 0);
                    continue;
                }
                if (!is_expert) {
                    CU_ASSERT_EQUAL(ks[i].experts, 0);
                    other++;
                    continue;
                }
                expert++;
                CU_ASSERT_EQUAL(ks[i].experts, 8);
                wgrad += ks[i].experts_k;
                CU_ASSERT_EQUAL(ks[i].experts_k, ph == 1 && ks[i].batch == 8);
                CU_ASSERT_EQUAL_FATAL(approf_grouped_gemm_plan(&ks[i], g->dtype, 0, NULL, &gg), 0);
                for (int e = 0; e < gg.groups; e++)
                    flops += 2.0 * (double)gg.g[e].M * (double)gg.g[e].N * (double)gg.g[e].K;
                CU_ASSERT_DOUBLE_EQUAL(flops, ks[i].flops, 1e-9 * flops);
                check_fits(&ks[i], &gg, g->dtype);
                approf_grouped_gemm_free(&gg);
            }
        }
    /* gate, up, down: forward, input and weight gradients */
    CU_ASSERT_EQUAL(expert, 9);
    CU_ASSERT_EQUAL(wgrad, 3);
    CU_ASSERT(other > 0);
    approf_graph_free(&g);
}

/* op_shape.h's ADAM arrays: f32 gradient, parameter and moments; 16-bit
 * gradient and parameter with an f32 master and moments; forward only. */
static void test_adam_layout(void)
{
    ApprofOpShape s;
    ApprofOpArrays l[3];
    memset(&s, 0, sizeof s);
    s.op = APPROF_CUDA_OP_ADAM;
    s.rows = 1;
    s.cols = 1000;
    CU_ASSERT_EQUAL_FATAL(approf_op_layout(&s, l), 0);
    CU_ASSERT_EQUAL(l[0].n, 1);
    CU_ASSERT_EQUAL(l[0].bytes[0], 4000);
    CU_ASSERT_EQUAL(l[1].n, 1);
    CU_ASSERT_EQUAL(l[1].bytes[0], 4000);
    CU_ASSERT_EQUAL(l[2].n, 2);
    CU_ASSERT_EQUAL(l[2].bytes[1], 4000);
    /* g read, p, m, v read and written: costdb_adam_bytes' 24 + 4 a parameter */
    CU_ASSERT_DOUBLE_EQUAL((double)(l[0].bytes[0] + 2 * (l[1].bytes[0] + l[2].bytes[0] +
                                                         l[2].bytes[1])),
                           costdb_adam_bytes(NULL, 1000, 4, 4), 0);
    s.dtype = 2;
    CU_ASSERT_EQUAL_FATAL(approf_op_layout(&s, l), 0);
    CU_ASSERT_EQUAL(l[0].bytes[0], 2000);
    CU_ASSERT_EQUAL(l[1].bytes[0], 2000);
    CU_ASSERT_EQUAL(l[2].n, 3);
    CU_ASSERT_EQUAL(l[2].bytes[0], 4000);
    CU_ASSERT_EQUAL(l[2].offset[1] % 256, 0);
    s.backward = 1;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), -1);
    s.backward = 0;
    s.cols = 0;
    CU_ASSERT_EQUAL(approf_op_layout(&s, l), -1);
}

/* A stage's optimizer_elements are its parameters on one device (one
 * GPU, no ZeRO: all of them), and optimizer_bytes their Adam bytes. */
static void test_optimizer_elements(void)
{
    ApprofGraph *g = mixtral();
    ApprofLayering l;
    ApprofHardwareSpec hw;
    ApprofShardContext *ctx = NULL;
    ApprofShardRequest req;
    ApprofStageProgram p;
    char err[256];
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    CU_ASSERT_FATAL(approf_layers_auto(g, 1, 0.5, &l) == 0);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 1, &ctx) == 0);
    memset(&req, 0, sizeof req);
    memset(&p, 0, sizeof p);
    req.mesh_hosts = req.mesh_gpus = req.logical_a = req.logical_b = 1;
    req.force_batch_dim = -1;
    req.memory_levels = 1;
    CU_ASSERT_EQUAL_FATAL(approf_shard_stage(ctx, &req, &p, err, sizeof err), 0);
    CU_ASSERT_DOUBLE_EQUAL(p.optimizer_elements, (double)approf_graph_num_params(g), 0.5);
    CU_ASSERT_DOUBLE_EQUAL(p.optimizer_bytes, costdb_adam_bytes(NULL, p.optimizer_elements, 2, 2), 1.0);
    approf_stage_program_clear(&p);
    approf_shard_context_free(&ctx);
    approf_layering_free(&l);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"grouped_plan", test_grouped_plan},
        {"zoo_experts", test_zoo_experts},
        {"adam_layout", test_adam_layout},
        {"optimizer_elements", test_optimizer_elements},
    };
    return CUNIT_RUN("cuda-experts", tests);
}
