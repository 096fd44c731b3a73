/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plan as code (reports/code.c, apreport_write_code): the uniform
 * ResNet-50 fixture under 1F1B and under the interleaved schedule against
 * golden files (golden/resnet50-uniform/; ResNet-50 has no transformer
 * blocks, so the layer counts are comments), and in-memory GPT plans for
 * the block count from parameter names (h.<i>), interleaved
 * --num-layers-per-virtual-pipeline-stage, --sequence-parallel from the
 * plan's options, recomputation and ZeRO variants (per-stage differences
 * give the most conservative setting and a comment; ZeRO-2/3 Megatron-FSDP
 * flags), the dtype flag and a block split between stages. The
 * escaping writers: Python string literals (rep_py_quote, exact output and
 * truncation) and the HTML writer, which must escape every text field of
 * a plan (kind, objective, role, strategy, names, specs, warnings).
 * Usage: test_code GOLDEN_DIR [--regen].
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "apreport.h"
#include "cunit_run.h"
#include "fixtures.h"
#include "report_int.h"

static const char *golden_dir;
static int regen;
static char tmpdir[256];

static char *code_of(const ApreportReport *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    CU_ASSERT_EQUAL(apreport_write_code(r, m), 0);
    fclose(m);
    return buf;
}

static void golden(const char *file, const char *got)
{
    char path[512], *want = NULL;
    long n;
    snprintf(path, sizeof(path), "%s/resnet50-uniform/%s", golden_dir, file);
    if (regen) {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/resnet50-uniform", golden_dir);
        mkdir(dir, 0777);
        FILE *f = fopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs(got, f);
        fclose(f);
    }
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (want = calloc((size_t)n + 1, 1)) && fread(want, 1, (size_t)n, f) != (size_t)n)
        want[0] = '\0';
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want);
    if (strcmp(got, want)) {
        fprintf(stderr, "\n%s differs:\n%s", path, got);
        CU_FAIL("plan code differs from the golden file");
    }
    free(want);
}

static void test_resnet_uniform(void)
{
    char path[512], err[512] = "";
    FixtureOptions fo = {1.0, 0, 1, 1};
    int64_t plan_id = 0;
    Costdb *db = NULL;
    ApreportReport *r = NULL;
    snprintf(path, sizeof(path), "%s/uniform.db", tmpdir);
    CU_ASSERT_EQUAL_FATAL(fixture_build(path, "resnet50", &fo, &plan_id), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    ApreportOptions opt = {plan_id, "resnet50", 0, APREPORT_SCHED_1F1B, 0};
    CU_ASSERT_EQUAL_FATAL(apreport_load(db, &opt, &r, err, sizeof(err)), 0);
    char *buf = code_of(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    golden("plan_1f1b.py", buf);
    free(buf);
    apreport_free(&r);

    opt.schedule = APREPORT_SCHED_INTERLEAVED;
    opt.virtual_stages = 2;
    CU_ASSERT_EQUAL_FATAL(apreport_load(db, &opt, &r, err, sizeof(err)), 0);
    CU_ASSERT_PTR_NOT_NULL(r->sched[2]);
    buf = code_of(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    golden("plan_interleaved.py", buf);
    free(buf);
    apreport_free(&r);

    /* two micro-batches on two stages: v = 3 is fine, 3 stages are not */
    opt.virtual_stages = 1;
    CU_ASSERT_EQUAL(apreport_load(db, &opt, &r, err, sizeof(err)), APREPORT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "at least 2 virtual stages"));
    CU_ASSERT_PTR_NULL(r);
    costdb_close(&db);
}

/* A 4-stage GPT plan in memory: stage k holds blocks h.<3k>..h.<3k+2>
 * (attention and MLP parameters), stage 0 the embedding, the last ln_f. */
typedef struct {
    ApreportReport r;
    RepStage st[4];
    RepTensor t[4][8];
} Gpt;

static void gpt_plan(Gpt *g, int per_stage)
{
    memset(g, 0, sizeof(*g));
    g->r.n_stages = 4;
    g->r.stages = g->st;
    g->r.global_batch = 512;
    g->r.plan.micro_batches = 8;
    g->r.plan.feasible = 1;
    g->r.schedule = APREPORT_SCHED_1F1B;
    g->r.virtual_stages = 1;
    snprintf(g->r.sweep.dtype, sizeof(g->r.sweep.dtype), "bf16");
    for (int k = 0; k < 4; k++) {
        RepStage *s = &g->st[k];
        s->st.stage_index = k;
        s->st.start_layer = 2 * k, s->st.end_layer = 2 * k + 1;
        s->st.submesh_hosts = 1, s->st.submesh_gpus = 8;
        s->st.logical_a = 2, s->st.logical_b = 4;
        s->st.force_batch_dim = 0;
        s->variant_known = 1;
        s->tensors = g->t[k];
        for (int i = 0; i < per_stage; i++) {
            RepTensor *t = &s->tensors[s->n_tensors++];
            snprintf(t->pl.role, sizeof(t->pl.role), "param");
            snprintf(t->pl.tensor_name, sizeof(t->pl.tensor_name), "h.%d/%s/kernel",
                     per_stage * k + i, i % 2 ? "mlp" : "attn");
            t = &s->tensors[s->n_tensors++];
            snprintf(t->pl.role, sizeof(t->pl.role), "param");
            snprintf(t->pl.tensor_name, sizeof(t->pl.tensor_name), "h.%d/attn/qkv/bias",
                     per_stage * k + i);
        }
        RepTensor *t = &s->tensors[s->n_tensors++];
        snprintf(t->pl.role, sizeof(t->pl.role), "param");
        snprintf(t->pl.tensor_name, sizeof(t->pl.tensor_name), "%s",
                 k == 0 ? "wte/embedding" : k == 3 ? "ln_f/scale" : "h.x/none");
    }
}

static void test_gpt(void)
{
    static Gpt g;
    char *buf;
    int blocks[4];
    char why[200];
    gpt_plan(&g, 3);
    CU_ASSERT_EQUAL(rep_stage_blocks(&g.r, blocks, why, sizeof(why)), 0);
    CU_ASSERT(blocks[0] == 3 && blocks[1] == 3 && blocks[2] == 3 && blocks[3] == 3);
    buf = code_of(&g.r);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "# train.dist.pipeline_num_layers = 12  (transformer blocks)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "# train.train_micro_batch_size = 32\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "# --tensor-model-parallel-size 4 --pipeline-model-parallel-size 4 "
                                       "--micro-batch-size 32 --global-batch-size 512 --num-layers 12 "
                                       "--bf16\n"));
    CU_ASSERT_PTR_NULL(strstr(buf, "virtual"));
    CU_ASSERT_PTR_NULL(strstr(buf, "--recompute"));
    free(buf);

    /* interleaved v = 3: one block per chunk; sp, selective, ZeRO-1 */
    g.r.schedule = APREPORT_SCHED_INTERLEAVED;
    g.r.virtual_stages = 3;
    snprintf(g.r.plan.options, sizeof(g.r.plan.options),
             "{\"parallel\": {\"dp\": 2, \"tp\": 4, \"pp\": 4, \"sp\": 1, \"zero\": 1}}");
    CU_ASSERT_FATAL(costdb_plan_options_parse(g.r.plan.options, &g.r.opts, NULL, 0) == 0);
    for (int k = 0; k < 4; k++)
        g.st[k].variant.recompute = COSTDB_RECOMPUTE_SELECTIVE, g.st[k].variant.zero = 1;
    buf = code_of(&g.r);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, " --num-layers 12 --num-layers-per-virtual-pipeline-stage 1 "
                                       "--sequence-parallel --recompute-granularity selective "
                                       "--use-distributed-optimizer --bf16\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "# train.zero_optimization.stage = 1\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "LiBai has no interleaved schedule"));
    CU_ASSERT_PTR_NULL(strstr(buf, "differ"));
    free(buf);

    /* v = 2 does not divide 3 blocks; stages differ: full + ZeRO-3 wins */
    g.r.virtual_stages = 2;
    g.st[2].variant.recompute = COSTDB_RECOMPUTE_FULL;
    g.st[1].variant.zero = 3;
    snprintf(g.r.sweep.dtype, sizeof(g.r.sweep.dtype), "f16");
    buf = code_of(&g.r);
    CU_ASSERT_PTR_NULL(strstr(buf, "--num-layers-per-virtual-pipeline-stage 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "not a whole number for this plan"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "--recompute-granularity full --recompute-method uniform "
                                       "--recompute-num-layers 1"));
    /* ZeRO-3: Megatron-FSDP, as the launch file writes it */
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, " --use-distributed-optimizer --use-megatron-fsdp "
                                       "--data-parallel-sharding-strategy optim_grads_params "
                                       "--ckpt-format fsdp_dtensor"));
    CU_ASSERT_PTR_NULL(strstr(buf, "zero_optimization\": {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "most conservative (recompute full, ZeRO 3)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, " --fp16\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "# train.amp.enabled = True\n"));
    free(buf);

    /* a block split between stages 1 and 2: the count is unknowable */
    gpt_plan(&g, 3);
    snprintf(g.t[2][0].pl.tensor_name, sizeof(g.t[2][0].pl.tensor_name), "h.5/mlp/kernel");
    CU_ASSERT_EQUAL(rep_stage_blocks(&g.r, blocks, why, sizeof(why)), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "h.5 is split between stages 1 and 2"));
    buf = code_of(&g.r);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "# train.dist.pipeline_num_layers: unknown (transformer block "
                                       "h.5 is split"));
    CU_ASSERT_PTR_NULL(strstr(buf, "--num-layers "));
    free(buf);

    /* unequal blocks per stage: Megatron splits evenly, said in a comment */
    gpt_plan(&g, 3);
    g.st[3].n_tensors = 3;                    /* stage 3: blocks h.9 and ... only one */
    CU_ASSERT_EQUAL(rep_stage_blocks(&g.r, blocks, why, sizeof(why)), 0);
    CU_ASSERT_EQUAL(blocks[3], 2);
    buf = code_of(&g.r);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "this plan's stages hold 3, 3, 3, 2 blocks"));
    free(buf);
}

/* One launch file of an in-memory report as a string (the caller frees). */
static char *export_of(const ApreportReport *r, int (*fn)(const ApreportReport *, FILE *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    CU_ASSERT_EQUAL(fn(r, m), 0);
    fclose(m);
    return buf;
}

#define HAS(buf, text) CU_ASSERT_PTR_NOT_NULL(strstr(buf, text))
#define LACKS(buf, text) CU_ASSERT_PTR_NULL(strstr(buf, text))

/* Launch files (reports/export.c) of the in-memory GPT plan on a 4x8
 * cluster: the uniform plan as priced; interleaved; MoE expert parallelism
 * from the expert weights' layout; ZeRO-3 and selective recomputation each
 * runtime cannot express; a non-uniform plan (its closest plan is not
 * priced without a database); database text escaped in every format. */
static void test_exports(void)
{
    static Gpt g;
    char *buf;
    gpt_plan(&g, 3);
    g.r.sweep.cluster_hosts = 4, g.r.sweep.cluster_gpus = 8;
    g.r.num_layers = 8;
    g.r.plan.cost = 1.5;
    snprintf(g.r.db_label, sizeof(g.r.db_label), "gpt.db");
    rep_closest_price(NULL, &g.r);
    CU_ASSERT(g.r.closest.have && g.r.closest.pp == 4 && g.r.closest.logical_b == 4);
    HAS(g.r.closest.why, "not priced: no database");
    buf = export_of(&g.r, apreport_write_megatron);
    HAS(buf, "# Megatron-LM runs this plan as priced:\n");
    HAS(buf, "\n--tensor-model-parallel-size 4\n--pipeline-model-parallel-size 4\n--num-layers 12\n");
    HAS(buf, "\n--micro-batch-size 32\n--global-batch-size 512\n--bf16\n");
    HAS(buf, "# checked against Megatron-LM core_v0.19.0");
    /* no model in the database: the shape is marked unknown, not guessed */
    HAS(buf, "# UNKNOWN --num-attention-heads: model 'unknown' is not a zoo transformer");
    HAS(buf, "# launch context: nodes=4 gpus_per_node=8 world_size=32 tp=4 pp=4 layers=12\n");
    HAS(buf, "--rdzv-endpoint HOST0:29500");
    HAS(buf, "T = 1.500000 s");
    LACKS(buf, "cannot express");
    LACKS(buf, "--expert");
    free(buf);
    buf = export_of(&g.r, apreport_write_deepspeed);
    HAS(buf, "\"train_batch_size\": 512,\n");
    HAS(buf, "\"train_micro_batch_size_per_gpu\": 32,\n");
    HAS(buf, "\"gradient_accumulation_steps\": 8,\n");
    HAS(buf, "\"zero_optimization\": {\"stage\": 0}");
    LACKS(buf, "activation_checkpointing");
    free(buf);
    buf = export_of(&g.r, apreport_write_torchtitan);
    /* ZeRO-0 with tp and pp: torchtitan's DDP refuses, FSDP instead */
    HAS(buf, "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = 2\n"
             "fsdp_reshard_after_forward = \"never\"\n");
    HAS(buf, "\"DDP has not supported > 1D parallelism\"");
    HAS(buf, "--rdzv_endpoint HOST0:29500");
    HAS(buf, "tensor_parallel_degree = 4\n");
    HAS(buf, "pipeline_parallel_degree = 4\npipeline_parallel_schedule = \"1F1B\"\n"
             "pipeline_parallel_microbatch_size = 32\n");
    HAS(buf, "local_batch_size = 256\nglobal_batch_size = 512\n");
    HAS(buf, "mode = \"none\"\n");
    free(buf);

    /* the dtype: f16 and f32 */
    snprintf(g.r.sweep.dtype, sizeof(g.r.sweep.dtype), "f16");
    buf = export_of(&g.r, apreport_write_megatron);
    HAS(buf, "\n--fp16\n");
    LACKS(buf, "--bf16");
    free(buf);
    buf = export_of(&g.r, apreport_write_deepspeed);
    HAS(buf, "\"bf16\": {\"enabled\": false},\n  \"fp16\": {\"enabled\": true, \"loss_scale\": 0");
    free(buf);
    buf = export_of(&g.r, apreport_write_torchtitan);
    HAS(buf, "mixed_precision_param = \"bfloat16\"\n");
    HAS(buf, "bfloat16 instead of float16");
    free(buf);
    snprintf(g.r.sweep.dtype, sizeof(g.r.sweep.dtype), "f32");
    buf = export_of(&g.r, apreport_write_megatron);
    LACKS(buf, "\n--fp16");
    LACKS(buf, "\n--bf16");
    free(buf);
    buf = export_of(&g.r, apreport_write_torchtitan);
    HAS(buf, "mixed_precision_param = \"float32\"\n");
    free(buf);
    snprintf(g.r.sweep.dtype, sizeof(g.r.sweep.dtype), "bf16");

    /* interleaved, 3 chunks of one block; sp; selective; ZeRO-3 */
    g.r.schedule = APREPORT_SCHED_INTERLEAVED;
    g.r.virtual_stages = 3;
    snprintf(g.r.plan.options, sizeof(g.r.plan.options), "{\"parallel\": {\"sp\": 1}}");
    CU_ASSERT_FATAL(costdb_plan_options_parse(g.r.plan.options, &g.r.opts, NULL, 0) == 0);
    for (int k = 0; k < 4; k++)
        g.st[k].variant.recompute = COSTDB_RECOMPUTE_SELECTIVE, g.st[k].variant.zero = 3;
    buf = export_of(&g.r, apreport_write_megatron);
    HAS(buf, "# NOTE: Megatron-LM cannot express this plan as priced");
    HAS(buf, "ZeRO-3 priced with the serial schedule: Megatron-FSDP");
    HAS(buf, "--num-layers-per-virtual-pipeline-stage 1\n");
    HAS(buf, "--sequence-parallel\n--recompute-granularity selective\n--use-distributed-optimizer\n"
             "--use-megatron-fsdp\n--data-parallel-sharding-strategy optim_grads_params\n"
             "--ckpt-format fsdp_dtensor\n");
    HAS(buf, "estimated iteration time of this closest plan: unknown (not priced: no database)");
    free(buf);
    buf = export_of(&g.r, apreport_write_deepspeed);
    HAS(buf, "cannot express ZeRO-3 with pipeline parallelism");
    HAS(buf, "cannot express the interleaved 1F1B schedule");
    HAS(buf, "cannot express selective recomputation");
    HAS(buf, "\"zero_optimization\": {\"stage\": 1}");
    HAS(buf, "\"activation_checkpointing\": {\"partition_activations\": true");
    /* the pipeline engine recomputes only with an interval (full, 1 layer) */
    HAS(buf, "\"pipeline\": {\"activation_checkpoint_interval\": 1}");
    LACKS(buf, "\"stages\"");
    free(buf);
    /* torchtitan has no attention-core recomputation (Megatron's
     * selective): its per-op policy instead, said */
    buf = export_of(&g.r, apreport_write_torchtitan);
    HAS(buf, "torchtitan cannot express selective recomputation of the attention core");
    LACKS(buf, "cannot express ZeRO");
    HAS(buf, "data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = 2\n"
             "fsdp_reshard_after_forward = \"always\"\n");
    HAS(buf, "pipeline_parallel_schedule = \"Interleaved1F1B\"\n");
    HAS(buf, "pipeline_parallel_layers_per_stage = 1\n");
    HAS(buf, "mode = \"selective\"\nselective_ac_option = \"op\"\n");
    free(buf);
    /* recompute op (torchtitan's per-op policy): torchtitan runs it as
     * priced, selective_ac_option "op"; Megatron-LM and DeepSpeed cannot,
     * and fall back to full recomputation */
    for (int k = 0; k < 4; k++)
        g.st[k].variant.recompute = COSTDB_RECOMPUTE_OP;
    /* ZeRO-3 priced serially (a sweep's default) is not FSDP2's overlap:
     * the file says so and names the option that prices it as run */
    buf = export_of(&g.r, apreport_write_torchtitan);
    HAS(buf, "# NOTE: torchtitan cannot express this plan as priced");
    HAS(buf, "because ZeRO-3 priced with the serial schedule");
    HAS(buf, "--zero3-schedule fsdp2");
    free(buf);
    snprintf(g.r.sweep.options, sizeof(g.r.sweep.options), "{\"zero3_schedule\":\"fsdp2\"}");
    buf = export_of(&g.r, apreport_write_torchtitan);
    LACKS(buf, "cannot express");
    HAS(buf, "mode = \"selective\"\nselective_ac_option = \"op\"\n");
    free(buf);
    buf = export_of(&g.r, apreport_write_megatron);
    HAS(buf, "Megatron-LM cannot express torchtitan's per-op recomputation");
    HAS(buf, "--recompute-granularity full\n--recompute-method uniform\n--recompute-num-layers 1\n");
    LACKS(buf, "--recompute-granularity selective");
    free(buf);
    buf = export_of(&g.r, apreport_write_deepspeed);
    HAS(buf, "DeepSpeed cannot express torchtitan's per-op recomputation");
    free(buf);
    /* a plan without recomputation: mode none, no option */
    for (int k = 0; k < 4; k++)
        g.st[k].variant.recompute = COSTDB_RECOMPUTE_NONE;
    buf = export_of(&g.r, apreport_write_torchtitan);
    HAS(buf, "mode = \"none\"\n");
    LACKS(buf, "selective_ac_option");
    free(buf);
    for (int k = 0; k < 4; k++)
        g.st[k].variant.recompute = COSTDB_RECOMPUTE_SELECTIVE;
    /* one stage: DeepSpeed runs ZeRO-3, with the reuse distance the plan
     * was priced with (docs/variants.md, "ZeRO-3 and recomputation") */
    g.r.n_stages = 1;
    g.r.schedule = APREPORT_SCHED_1F1B;
    g.r.virtual_stages = 1;
    g.st[0].variant.recompute = COSTDB_RECOMPUTE_FULL;
    buf = export_of(&g.r, apreport_write_deepspeed);
    LACKS(buf, "cannot express ZeRO-3");
    HAS(buf, "\"zero_optimization\": {\"stage\": 3, \"stage3_max_reuse_distance\": 1000000000}");
    free(buf);
    g.r.n_stages = 4;

    /* mixture of experts: 8 experts split 4 ways over the tensor axis */
    gpt_plan(&g, 3);
    g.r.sweep.cluster_hosts = 4, g.r.sweep.cluster_gpus = 8;
    {
        RepTensor *t = &g.st[0].tensors[g.st[0].n_tensors++];
        snprintf(t->pl.role, sizeof(t->pl.role), "param");
        snprintf(t->pl.tensor_name, sizeof(t->pl.tensor_name), "h.0/mlp/experts/up_proj/kernel");
        snprintf(t->pl.shape, sizeof(t->pl.shape), "1,8,4096,14336");
        t->layout_ok = 1;
        t->layout.ndim = 4;
        t->layout.logical_a = 2, t->layout.logical_b = 4;
        t->layout.mesh_axis_of_dim[0] = t->layout.mesh_axis_of_dim[2] = -1;
        t->layout.mesh_axis_of_dim[3] = -1;
        t->layout.mesh_axis_of_dim[1] = 1;
        /* the stored text the expert rule reads (costdb_expert_split) */
        costdb_spec_format(&t->layout, t->pl.sharding_spec, sizeof(t->pl.sharding_spec));
    }
    buf = export_of(&g.r, apreport_write_megatron);
    HAS(buf, "--num-experts 8\n--expert-model-parallel-size 4\n--expert-tensor-parallel-size 1\n");
    HAS(buf, "--sequence-parallel\n");       /* Megatron's MoE with tp > 1 */
    free(buf);
    buf = export_of(&g.r, apreport_write_torchtitan);
    HAS(buf, "expert_parallel_degree = 4\n");
    free(buf);
    /* experts over the data axis, their FFN dimension over the tensor
     * axis: Megatron's expert tensor parallel size is tp */
    {
        RepTensor *t = &g.st[0].tensors[g.st[0].n_tensors - 1];
        t->layout.mesh_axis_of_dim[1] = 0;
        t->layout.mesh_axis_of_dim[3] = 1;
        costdb_spec_format(&t->layout, t->pl.sharding_spec, sizeof(t->pl.sharding_spec));
    }
    buf = export_of(&g.r, apreport_write_megatron);
    HAS(buf, "--num-experts 8\n--expert-model-parallel-size 2\n--expert-tensor-parallel-size 4\n");
    free(buf);
    buf = export_of(&g.r, apreport_write_torchtitan);
    HAS(buf, "expert_parallel_degree = 2\nexpert_tensor_parallel_degree = 4\n");
    free(buf);

    /* non-uniform: stage 3 on another logical mesh; the closest plan is
     * the layout of the other three */
    gpt_plan(&g, 3);
    g.r.sweep.cluster_hosts = 4, g.r.sweep.cluster_gpus = 8;
    g.r.num_layers = 8;
    g.st[3].st.logical_a = 8, g.st[3].st.logical_b = 1;
    rep_closest_price(NULL, &g.r);
    CU_ASSERT(g.r.closest.have && g.r.closest.logical_a == 2 && g.r.closest.pp == 4);
    buf = export_of(&g.r, apreport_write_torchtitan);
    CU_ASSERT_EQUAL(strncmp(buf, "# torchtitan launch configuration of plan 0 of ", 47), 0);
    HAS(buf, "\n# NOTE: torchtitan cannot express this plan as priced");
    HAS(buf, "logical meshes (2, 4), (2, 4), (2, 4), (8, 1)");
    HAS(buf, "closest expressible plan: 4 uniform stages on (1, 8) submeshes with logical mesh (2, 4)");
    free(buf);
    buf = export_of(&g.r, apreport_write_deepspeed);
    HAS(buf, "{\n  \"_comment\": [\n");
    HAS(buf, "DeepSpeed cannot express this plan: its stages are not uniform");
    free(buf);

    /* database text in each format: no line break escapes a comment or string */
    snprintf(g.r.db_label, sizeof(g.r.db_label), "x\"\n[job]\nevil = '1'\n#\\.db");
    buf = export_of(&g.r, apreport_write_torchtitan);
    LACKS(buf, "\nevil");
    LACKS(buf, "\n[job]\nevil");
    HAS(buf, "description = \"approf plan 0 of x\\\"\\n[job]\\nevil = '1'\\n#\\\\.db (sweep 0)\"\n");
    free(buf);
    buf = export_of(&g.r, apreport_write_megatron);
    LACKS(buf, "\nevil");
    free(buf);
    buf = export_of(&g.r, apreport_write_deepspeed);
    HAS(buf, "of x\\\"\\n[job]\\nevil");
    free(buf);

    /* an infeasible plan: refused unless allowed, then marked first */
    g.r.plan.feasible = 0;
    CU_ASSERT_EQUAL(apreport_write_megatron(&g.r, stdout), APREPORT_EINFEASIBLE);
    g.r.allow_infeasible = 1;
    buf = export_of(&g.r, apreport_write_megatron);
    CU_ASSERT_EQUAL(strncmp(buf, "# INFEASIBLE PLAN", 17), 0);
    free(buf);
}

/* quote (rep_sh_word or rep_toml_string, named name) writes in as want. */
static void quoted(void (*quote)(FILE *, const char *), const char *name, const char *in,
                   const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    quote(m, in);
    fclose(m);
    if (strcmp(buf, want))
        fprintf(stderr, "\n%s: got %s, want %s\n", name, buf, want);
    CU_ASSERT_STRING_EQUAL(buf, want);
    free(buf);
}

static void sh(const char *in, const char *want)
{
    quoted(rep_sh_word, "rep_sh_word", in, want);
}

static void toml(const char *in, const char *want)
{
    quoted(rep_toml_string, "rep_toml_string", in, want);
}

static void test_sh_toml(void)
{
    unsigned bits = 0;
    char err[128] = "";
    sh("--tensor-model-parallel-size", "--tensor-model-parallel-size");
    sh("a/b.c:1,2=x@y%z+", "a/b.c:1,2=x@y%z+");
    sh("", "''");
    sh("a b", "'a b'");
    sh("it's", "'it'\\''s'");
    sh("$(rm -rf ~)`x`;|&<>*?[]#", "'$(rm -rf ~)`x`;|&<>*?[]#'");
    sh("x\ny", "'x\ny'");
    sh("\xc3\xa9", "'\xc3\xa9'");
    toml("plain", "\"plain\"");
    toml("a\"b\\c", "\"a\\\"b\\\\c\"");
    toml("\b\t\n\f\r\x01\x1f\x7f", "\"\\b\\t\\n\\f\\r\\u0001\\u001f\\u007f\"");
    toml("\xc3\xa9\xf0\x9f\x98\x80", "\"\xc3\xa9\xf0\x9f\x98\x80\"");
    toml("\xff\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    toml("", "\"\"");
    CU_ASSERT_EQUAL(apreport_export_parse("megatron,torchtitan", &bits, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(bits, APREPORT_EXPORT_MEGATRON | APREPORT_EXPORT_TORCHTITAN);
    CU_ASSERT_EQUAL(apreport_export_parse("all", &bits, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(bits, APREPORT_EXPORT_ALL);
    CU_ASSERT_EQUAL(apreport_export_parse("none", &bits, err, sizeof(err)), 0);
    CU_ASSERT_EQUAL(bits, APREPORT_EXPORT_NONE);
    CU_ASSERT_EQUAL(apreport_export_parse("deepspeed,", &bits, err, sizeof(err)), APREPORT_EINVAL);
    HAS(err, "unknown export ''");
    CU_ASSERT_EQUAL(apreport_export_parse("alpa", &bits, err, sizeof(err)), APREPORT_EINVAL);
    HAS(err, "unknown export 'alpa'");
    CU_ASSERT_EQUAL(apreport_export_parse("none,megatron", &bits, err, sizeof(err)), APREPORT_EINVAL);
}

static void py(const char *in, size_t len, const char *want)
{
    char out[256];
    rep_py_quote(in, strlen(in), out, len);
    if (strcmp(out, want))
        fprintf(stderr, "\nrep_py_quote: got %s, want %s\n", out, want);
    CU_ASSERT_STRING_EQUAL(out, want);
}

static void test_py_quote(void)
{
    py("plain/name.0", 256, "'plain/name.0'");
    py("a'b\\c\"d", 256, "'a\\'b\\\\c\"d'");
    py("x\nprint('PWNED')\r\t#", 256, "'x\\nprint(\\'PWNED\\')\\r\\t#'");
    py("\x01\x1f\x7f", 256, "'\\x01\\x1f\\x7f'");
    /* UTF-8: two, three and four bytes; invalid, overlong and surrogate bytes */
    py("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 256, "'\\u00e9\\u20ac\\U0001f600'");
    py("\xff\xc0\xaf\xed\xa0\x80", 256, "'\\xff\\xc0\\xaf\\xed\\xa0\\x80'");
    py("\xe2\x82", 256, "'\\xe2\\x82'");
    /* cut short: still a closed literal, never half an escape */
    py("abcdef", 6, "'abc'");
    py("a\nb", 5, "'a'");
    py("", 3, "''");
}

/* Every text field a database can hold, with markup in it, must come out
 * escaped: report.html must not contain the tag. */
static void test_html_fields(void)
{
    static const char evil[] = "<img src=x onerror=alert(1)>";
    char path[512], err[512] = "", *buf = NULL;
    size_t len = 0;
    FixtureOptions fo = {1.0, 0, 1, 0};
    int64_t plan_id = 0;
    Costdb *db = NULL;
    ApreportReport *r = NULL;
    FILE *m;
    snprintf(path, sizeof(path), "%s/mlp.db", tmpdir);
    CU_ASSERT_EQUAL_FATAL(fixture_build(path, "mlp", &fo, &plan_id), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    ApreportOptions opt = {plan_id, "mlp", 0, APREPORT_SCHED_1F1B, 0};
    CU_ASSERT_EQUAL_FATAL(apreport_load(db, &opt, &r, err, sizeof(err)), 0);
    CU_ASSERT_FATAL(r->n_tasks > 0 && r->n_convs > 0 && r->stages[0].n_tensors > 0);
    snprintf(r->plan.kind, sizeof(r->plan.kind), "<img k>");
    snprintf(r->plan.objective, sizeof(r->plan.objective), "<img o>");
    snprintf(r->stages[0].tensors[0].pl.role, sizeof(r->stages[0].tensors[0].pl.role), "<i>");
    snprintf(r->stages[0].tensors[0].pl.tensor_name, sizeof(r->stages[0].tensors[0].pl.tensor_name),
             "%s", evil);
    snprintf(r->stages[0].tensors[0].pl.dtype, sizeof(r->stages[0].tensors[0].pl.dtype), "<u>");
    snprintf(r->stages[0].tensors[0].pl.shape, sizeof(r->stages[0].tensors[0].pl.shape), "%s", evil);
    snprintf(r->stages[0].tensors[0].pl.sharding_spec,
             sizeof(r->stages[0].tensors[0].pl.sharding_spec), "%s", evil);
    snprintf(r->tasks[0].strategy, sizeof(r->tasks[0].strategy), "%s", evil);
    snprintf(r->tasks[0].tensor_name, sizeof(r->tasks[0].tensor_name), "%s", evil);
    snprintf(r->tasks[0].src_spec, sizeof(r->tasks[0].src_spec), "%s", evil);
    snprintf(r->convs[0].role, sizeof(r->convs[0].role), "<i>");
    snprintf(r->convs[0].why, sizeof(r->convs[0].why), "%s", evil);
    snprintf(r->db_label, sizeof(r->db_label), "%s", evil);
    snprintf(r->sweep.name, sizeof(r->sweep.name), "%s", evil);
    snprintf(r->model.name, sizeof(r->model.name), "%s", evil);
    snprintf(r->warnings[0], sizeof(r->warnings[0]), "%s", evil);
    r->n_warnings = r->n_warnings ? r->n_warnings : 1;
    m = open_memstream(&buf, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(apreport_write_html(r, m), 0);
    fclose(m);
    CU_ASSERT_PTR_NULL(strstr(buf, "<img"));
    CU_ASSERT_PTR_NULL(strstr(buf, "<i>"));
    CU_ASSERT_PTR_NULL(strstr(buf, "<u>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "&lt;img src=x onerror=alert(1)&gt;"));
    free(buf);
    /* trace.json with an event that overflowed to +inf: null, never "inf" */
    r->sched[0]->events[0].end = INFINITY;
    buf = NULL;
    m = open_memstream(&buf, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(apreport_write_trace(r, m), 0);
    fclose(m);
    CU_ASSERT_PTR_NULL(strstr(buf, "inf"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"dur\": null"));
    free(buf);
    apreport_free(&r);
    costdb_close(&db);
    unlink(path);
    snprintf(path, sizeof(path), "%s/mlp.db-wal", tmpdir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/mlp.db-shm", tmpdir);
    unlink(path);
}

/* trace.json: complete events of sub-nanosecond stages never reach past
 * the next event's start on their track once printed (rounded ts and dur
 * each made the end of F1 land after the start of F2). */
static void test_trace_rounding(void)
{
    const double fwd[2] = {0.6e-9, 0.6e-9}, bwd[2] = {0.6e-9, 0.6e-9};
    ApreportPipeline pl = {2, 8, fwd, bwd, NULL, 1};
    ApreportReport *r = calloc(1, sizeof(*r));
    RepStage *st = calloc(2, sizeof(*st));
    char *buf = NULL;
    size_t len = 0;
    CU_ASSERT_FATAL(r && st);
    r->n_stages = 2;
    r->stages = st;
    r->schedule = APREPORT_SCHED_1F1B;
    CU_ASSERT_FATAL(apreport_simulate(&pl, APREPORT_SCHED_1F1B, &r->sched[0]) == 0);
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_FATAL(f != NULL);
    CU_ASSERT(apreport_write_trace(r, f) == 0);
    fclose(f);
    /* per (pid, tid): the events in order, each ending at or before the next starts */
    for (int pid = 0; pid < 2; pid++)
        for (int tid = 0; tid < 2; tid++) {
            long ends = -1, n = 0;
            char key[48];
            snprintf(key, sizeof(key), "\"pid\": %d, \"tid\": %d,", pid, tid);
            for (const char *p = buf; (p = strstr(p, "\"ph\": \"X\", \"ts\": ")) != NULL; p++) {
                double ts, dur;
                const char *eol = strchr(p, '\n');
                const char *k = strstr(p, key);
                if (!k || (eol && k > eol))
                    continue;
                CU_ASSERT_FATAL(sscanf(p, "\"ph\": \"X\", \"ts\": %lf, \"dur\": %lf", &ts,
                                       &dur) == 2);
                CU_ASSERT(llround(ts * 1000) >= ends);
                ends = llround(ts * 1000) + llround(dur * 1000);
                n++;
            }
            CU_ASSERT(tid == 1 || n == 16);
        }
    free(buf);
    apreport_schedule_free(&r->sched[0]);
    free(st);
    free(r);
}

int main(int argc, char **argv)
{
    static const CunitTest tests[] = {
        {"uniform resnet50: 1F1B and interleaved (golden)", test_resnet_uniform},
        {"GPT blocks, variants, sp, dtype", test_gpt},
        {"launch files: Megatron-LM, DeepSpeed, torchtitan", test_exports},
        {"shell words and TOML strings; --export lists", test_sh_toml},
        {"Python string literals (rep_py_quote)", test_py_quote},
        {"HTML: every database field escaped", test_html_fields},
        {"trace.json: no overlap through rounding", test_trace_rounding},
    };
    if (argc < 2) {
        fprintf(stderr, "usage: test_code GOLDEN_DIR [--regen]\n");
        return 2;
    }
    golden_dir = argv[1];
    regen = argc > 2 && !strcmp(argv[2], "--regen");
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/approf-code-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    int rc = CUNIT_RUN("reports-code", tests);
    char path[300];
    snprintf(path, sizeof(path), "%s/uniform.db", tmpdir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/uniform.db-wal", tmpdir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/uniform.db-shm", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    return rc;
}
