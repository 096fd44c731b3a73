/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Launch configurations of a stored plan (docs/reports.md "Launch the
 * plan"): Megatron-LM / NeMo arguments (<name>_megatron.args, one argument
 * per line, shell-quoted, '#' comments), a DeepSpeed JSON config
 * (<name>_deepspeed.json) and a torchtitan TOML job config
 * (<name>_torchtitan.toml). A plan maps onto the runtimes' 3-D layout as
 * in "The plan as code": dp = logical axis 0, tp = logical axis 1, pp = the
 * stages, Megatron's micro-batch = approf's micro-batch / dp. Where a
 * runtime cannot express the plan (stages on different submeshes or
 * logical meshes or of unequal size, a ZeRO stage, recomputation or
 * schedule the runtime lacks, per-stage variants) the file says so first
 * and gives the closest plan the runtime can run: uniform stages with the
 * layout most of the plan's stages have, priced when the report was loaded
 * with the solver's own evaluation (apsolve_evaluate over the plan's
 * sweep). Every string goes through its format's writer: shell words
 * (rep_sh_word), JSON strings (rep_json_string), TOML strings
 * (rep_toml_string); comments quote database text with rep_py_text, which
 * never lets a newline end a comment.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "report_int.h"
#include "schedule.h"

enum { RT_MEGATRON = 0, RT_DEEPSPEED, RT_TORCHTITAN };

static const char *const rt_names[] = {"Megatron-LM", "DeepSpeed", "torchtitan"};

#define MAX_LINES 24
#define LINE_LEN 480

/* What one runtime file states: the layout it runs, its settings, and
 * the header lines (notes, cost) that say how it relates to the plan. */
typedef struct Launch {
    int rt;
    int hosts, gpus;                  /* the cluster */
    int dp, tp, pp, v;                /* v: interleaved chunks per stage (1 otherwise) */
    ApreportScheduleKind sched;
    int recompute, zero, sp, ep, experts;
    int B;
    int64_t global, mbs, local;       /* mbs: per replica micro-batch; local: per replica step */
    const char *prec;                 /* "bf16" | "fp16" | NULL (fp32) */
    int blocks_known, blocks_total, blocks_equal, blocks0;
    int changed;                      /* the closest plan, not the plan as priced */
    int repriced;                     /* the plan under another schedule than it was priced */
    char lines[MAX_LINES][LINE_LEN];
    int n_lines;
} Launch;

static void line(Launch *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void line(Launch *L, const char *fmt, ...)
{
    va_list ap;
    if (L->n_lines >= MAX_LINES)
        return;
    va_start(ap, fmt);
    vsnprintf(L->lines[L->n_lines++], LINE_LEN, fmt, ap);
    va_end(ap);
}

static int same_layout(const CostdbPlanStage *a, const CostdbPlanStage *b)
{
    return a->submesh_hosts == b->submesh_hosts && a->submesh_gpus == b->submesh_gpus &&
           a->logical_a == b->logical_a && a->logical_b == b->logical_b &&
           (a->force_batch_dim >= 0) == (b->force_batch_dim >= 0);
}

/* The stage whose layout most stages share (ties: the first). */
static size_t majority_stage(const ApreportReport *r, int *count)
{
    size_t best = 0;
    int bestn = 0;
    for (size_t k = 0; k < r->n_stages; k++) {
        int n = 0;
        for (size_t j = 0; j < r->n_stages; j++)
            n += same_layout(&r->stages[k].st, &r->stages[j].st);
        if (n > bestn) {
            bestn = n;
            best = k;
        }
    }
    *count = bestn;
    return best;
}

void rep_closest_price(Costdb *db, ApreportReport *r)
{
    RepClosest *c = &r->closest;
    ApsolveProblem *p = NULL;
    ApsolveStageSpec *specs = NULL;
    ApsolveOptions o;
    char msg[200] = "";
    int count, dev, D = r->sweep.cluster_hosts * r->sweep.cluster_gpus, rc;
    memset(c, 0, sizeof(*c));
    if (!r->n_stages)
        return;
    const CostdbPlanStage *s = &r->stages[majority_stage(r, &count)].st;
    c->hosts = s->submesh_hosts;
    c->gpus = s->submesh_gpus;
    c->logical_a = s->logical_a;
    c->logical_b = s->logical_b;
    c->force_batch_dim = s->force_batch_dim;
    dev = c->hosts * c->gpus;
    if (dev <= 0 || D <= 0 || D % dev) {
        snprintf(c->why, sizeof(c->why), "the submesh (%d, %d) of most stages does not divide "
                 "the %d devices", c->hosts, c->gpus, D);
        return;
    }
    c->pp = D / dev;
    if (c->pp > r->num_layers) {
        snprintf(c->why, sizeof(c->why), "%d stages of (%d, %d) would need more than the %d "
                 "layers", c->pp, c->hosts, c->gpus, r->num_layers);
        return;
    }
    c->have = 1;
    memset(&o, 0, sizeof(o));
    o.micro_batches = r->plan.micro_batches > 0 ? r->plan.micro_batches : 1;
    o.memory_budget = r->plan.memory_budget;
    o.inference = !strcmp(r->plan.objective, "inference");
    o.objective = strstr(r->plan.options, "\"objective\": \"full\"") ? APSOLVE_OBJECTIVE_FULL
                                                                     : APSOLVE_OBJECTIVE_ALPA;
    if (!db || (rc = apsolve_problem_from_db_msg(db, r->sweep.id, &o, &p, msg, sizeof(msg))) < 0) {
        snprintf(c->why, sizeof(c->why), "not priced: %s",
                 !db ? "no database" : msg[0] ? msg : "the sweep cannot be loaded");
        return;
    }
    specs = calloc((size_t)c->pp, sizeof(*specs));
    if (!specs) {
        snprintf(c->why, sizeof(c->why), "not priced: out of memory");
        goto cleanup;
    }
    for (int si = 0; si < 2; si++) {
        o.schedule = si == 0 ? (int)r->schedule : APSOLVE_SCHEDULE_1F1B;
        o.virtual_stages = o.schedule == APSOLVE_SCHEDULE_INTERLEAVED ? r->virtual_stages : 1;
        for (int rec = 0; rec < 3; rec++)
            for (int z = 0; z < 4; z++) {
                ApsolvePlan *plan = NULL;
                char eb[200] = "";
                if (apsolve_uniform_specs(r->num_layers, c->pp, c->hosts, c->gpus, c->logical_a,
                                          c->logical_b, c->force_batch_dim, specs) < 0)
                    goto cleanup;
                for (int k = 0; k < c->pp; k++) {
                    specs[k].recompute = rec;
                    specs[k].zero = z;
                }
                if (apsolve_evaluate(p, &o, specs, (size_t)c->pp, &plan, eb, sizeof(eb)) == 0) {
                    c->priced[si][rec][z] = 1;
                    c->cost[si][rec][z] = plan->cost;
                    c->total[si][rec][z] = plan->total_cost;
                    c->feasible[si][rec][z] = plan->feasible;
                } else if (!c->why[0]) {
                    snprintf(c->why, sizeof(c->why), "not priced: %s", eb[0] ? eb : "evaluation failed");
                }
                apsolve_plan_free(&plan);
            }
    }
cleanup:
    free(specs);
    apsolve_problem_free(&p);
}

/* "(1, 2), (1, 2), (1, 4)" of the stages' submeshes (logical 0) or logical
 * meshes (1), or their layer counts (2). */
static void stage_list(const ApreportReport *r, int what, char *out, size_t len)
{
    size_t pos = 0;
    out[0] = '\0';
    for (size_t k = 0; k < r->n_stages && pos < len; k++) {
        const CostdbPlanStage *s = &r->stages[k].st;
        if (what == 2)
            pos += (size_t)snprintf(out + pos, len - pos, "%s%d", k ? ", " : "",
                                    s->end_layer - s->start_layer + 1);
        else
            pos += (size_t)snprintf(out + pos, len - pos, "%s(%d, %d)", k ? ", " : "",
                                    what ? s->logical_a : s->submesh_hosts,
                                    what ? s->logical_b : s->submesh_gpus);
    }
}

/* Expert parallelism: the pieces the expert dimension of the expert weights
 * ([.., E, in, out], a path holding "/experts/") is split into; *experts
 * gets E. 0 when the model has no experts. */
static int expert_parallel(const ApreportReport *r, int *experts)
{
    int ep = 0;
    *experts = 0;
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        for (size_t i = 0; i < s->n_tensors; i++) {
            const RepTensor *t = &s->tensors[i];
            int64_t dims[APREPORT_MAX_DIMS];
            int n, d, axis, pieces;
            if (strcmp(t->pl.role, "param") || !strstr(t->pl.tensor_name, "/experts/") ||
                !t->layout_ok || t->layout.ndim < 3)
                continue;
            d = t->layout.ndim - 3;
            axis = t->layout.mesh_axis_of_dim[d];
            pieces = axis == 0 ? t->layout.logical_a : axis == 1 ? t->layout.logical_b
                     : axis == 2 ? t->layout.logical_a * t->layout.logical_b : 1;
            ep = pieces > ep ? pieces : ep;
            n = costdb_shape_parse(t->pl.shape, dims, APREPORT_MAX_DIMS);
            if (n == t->layout.ndim && dims[d] > *experts && dims[d] < 1 << 20)
                *experts = (int)dims[d];
        }
    }
    return ep;
}

static const char *sched_label(ApreportScheduleKind k)
{
    return k == APREPORT_SCHED_GPIPE ? "GPipe" : k == APREPORT_SCHED_INTERLEAVED ? "interleaved 1F1B"
                                                                               : "1F1B";
}

/* Fills L for runtime rt: the layout and settings the file states, and its
 * header lines. */
static void launch_of(const ApreportReport *r, int rt, Launch *L)
{
    const RepClosest *c = &r->closest;
    const CostdbPlanStage *s0 = &r->stages[0].st;
    const char *name = rt_names[rt], *dt = r->sweep.dtype;
    int uni = rep_plan_uniform(r), differ = 0, variants = 1, *blocks;
    int rec_plan = 0, zero_plan = 0;
    char why[200] = "out of memory", notes[8][LINE_LEN];
    int n_notes = 0;
    memset(L, 0, sizeof(*L));
    L->rt = rt;
    L->hosts = r->sweep.cluster_hosts;
    L->gpus = r->sweep.cluster_gpus;
    L->sched = r->schedule;
    L->v = r->schedule == APREPORT_SCHED_INTERLEAVED ? r->virtual_stages : 1;
#define NOTE(...) \
    do { \
        if (n_notes < 8 && snprintf(notes[n_notes++], LINE_LEN, __VA_ARGS__) >= LINE_LEN) \
            notes[n_notes - 1][LINE_LEN - 2] = '.'; /* cut: the list is too long */ \
    } while (0)
    if (uni) {
        L->dp = s0->logical_a;
        L->tp = s0->logical_b;
        L->pp = (int)r->n_stages;
    } else {
        char sub[160], lg[160], ly[160];
        stage_list(r, 0, sub, sizeof(sub));
        stage_list(r, 1, lg, sizeof(lg));
        stage_list(r, 2, ly, sizeof(ly));
        L->changed = 1;
        NOTE("%s cannot express this plan: its stages are not uniform (submeshes %s; logical "
             "meshes %s; layers %s) and %s runs one layout on equal stages", name, sub, lg, ly,
             name);
        if (c->have) {
            L->dp = c->logical_a;
            L->tp = c->logical_b;
            L->pp = c->pp;
            NOTE("closest expressible plan: %d uniform stages on (%d, %d) submeshes with logical "
                 "mesh (%d, %d), the layout most of the plan's stages have", c->pp, c->hosts,
                 c->gpus, c->logical_a, c->logical_b);
        } else {
            L->dp = s0->logical_a;
            L->tp = s0->logical_b;
            L->pp = (int)r->n_stages;
            NOTE("no uniform plan with the plan's layouts uses every device (%s): the layout "
                 "below is stage 0's on every stage, not priced", c->why);
        }
    }
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        if (!s->variant_known) {
            variants = 0;
            continue;
        }
        differ |= s->recompute != r->stages[0].recompute || s->zero != r->stages[0].zero;
        rec_plan = s->recompute > rec_plan ? s->recompute : rec_plan;
        zero_plan = s->zero > zero_plan ? s->zero : zero_plan;
    }
    L->recompute = rec_plan;
    L->zero = zero_plan;
    if (differ) {
        L->changed = 1;
        NOTE("%s cannot set recomputation or ZeRO per stage and the stages differ: the most "
             "conservative (recompute %s, ZeRO %d) on every stage", name,
             costdb_recompute_name(rec_plan), zero_plan);
    }
    if (rt == RT_MEGATRON && L->zero >= 2) {
        L->changed = 1;
        NOTE("Megatron-LM cannot express ZeRO-%d (its distributed optimizer shards the "
             "optimizer states only): ZeRO-1 instead", L->zero);
        L->zero = 1;
    }
    if (rt == RT_MEGATRON && L->sched == APREPORT_SCHED_GPIPE) {
        L->changed = 1;
        NOTE("Megatron-LM cannot express the GPipe schedule: 1F1B instead");
        L->sched = APREPORT_SCHED_1F1B;
    }
    if (rt == RT_DEEPSPEED && L->pp > 1 && L->zero >= 2) {
        L->changed = 1;
        NOTE("DeepSpeed's pipeline engine cannot express ZeRO-%d with pipeline parallelism "
             "(stage 0 or 1 only): ZeRO-1 instead", L->zero);
        L->zero = 1;
    }
    if (rt == RT_DEEPSPEED && L->pp > 1 && L->sched != APREPORT_SCHED_1F1B) {
        L->changed = 1;
        NOTE("DeepSpeed's pipeline engine cannot express the %s schedule (it runs its own "
             "1F1B): 1F1B instead", sched_label(L->sched));
        L->sched = APREPORT_SCHED_1F1B;
    }
    if (rt == RT_DEEPSPEED && L->recompute == COSTDB_RECOMPUTE_SELECTIVE) {
        L->changed = 1;
        NOTE("DeepSpeed's activation checkpointing cannot express selective recomputation "
             "(it checkpoints whole layers): full instead");
        L->recompute = COSTDB_RECOMPUTE_FULL;
    }
    if (rt == RT_TORCHTITAN && L->zero == 1) {
        L->changed = 1;
        NOTE("torchtitan cannot express ZeRO-1 (FSDP shards gradients too): ZeRO-2, FSDP "
             "without resharding after the forward, instead");
        L->zero = 2;
    }
    if (L->sched != APREPORT_SCHED_INTERLEAVED)
        L->v = 1;
    if (L->pp == 1 && L->sched != APREPORT_SCHED_1F1B) {
        L->sched = APREPORT_SCHED_1F1B;
        L->v = 1;
    }
    if (!variants)
        NOTE("the sweep's configs of some stages are unknown: no recomputation or ZeRO "
             "assumed for them");
    L->sp = rep_plan_knob(r, "sp") && L->tp > 1;
    L->ep = expert_parallel(r, &L->experts);
    L->B = r->plan.micro_batches > 0 ? r->plan.micro_batches : 1;
    L->global = r->global_batch;
    L->mbs = L->global / L->B / (L->dp > 0 ? L->dp : 1);
    /* torchtitan: one step of a replica; without a pipeline it accumulates
     * global / (local x dp) steps, with one its micro-batches are local / mbs */
    L->local = L->pp > 1 ? L->mbs * L->B : L->mbs;
    if (L->global % ((int64_t)L->B * (L->dp > 0 ? L->dp : 1)))
        NOTE("the global batch %lld is not a multiple of micro-batches x data parallel size "
             "(%d x %d): the micro-batch size is rounded down", (long long)L->global, L->B,
             L->dp);
    L->prec = !strcmp(dt, "bf16") || !strcmp(dt, "bfloat16") ? "bf16"
              : !strcmp(dt, "f16") || !strcmp(dt, "fp16") || !strcmp(dt, "float16") ? "fp16"
                                                                                  : NULL;
    blocks = calloc(r->n_stages, sizeof(int));
    if (blocks && rep_stage_blocks(r, blocks, why, sizeof(why)) == 0) {
        L->blocks_known = 1;
        L->blocks_equal = 1;
        for (size_t k = 0; k < r->n_stages; k++) {
            L->blocks_total += blocks[k];
            L->blocks_equal &= blocks[k] == blocks[0];
        }
        L->blocks0 = blocks[0];
        if (L->changed || !uni) {
            L->blocks_equal = L->pp > 0 && L->blocks_total % L->pp == 0;
            L->blocks0 = L->pp > 0 ? L->blocks_total / L->pp : 0;
        }
    } else if ((L->blocks_total = rep_total_blocks(r)) > 0) {
        /* a block split between the plan's stages: the runtime splits the
         * model's blocks evenly over its stages */
        L->blocks_known = 1;
        L->blocks_equal = L->pp > 0 && L->blocks_total % L->pp == 0;
        L->blocks0 = L->pp > 0 ? L->blocks_total / L->pp : 0;
        if (!L->changed)
            NOTE("%s; %s splits the model's %d transformer blocks evenly", why, name,
                 L->blocks_total);
    } else {
        L->blocks_total = 0;
        NOTE("transformer blocks unknown (%s): set the layer counts to the model's", why);
    }
    free(blocks);

    {
        /* the schedule the plan was priced with (apsolve stores it; 1F1B
         * before it did): reported under another, it is priced anew */
        const char *sc = strstr(r->plan.options, "\"schedule\": \"");
        int stored = APREPORT_SCHED_1F1B, stored_v = rep_plan_knob(r, "virtual_stages");
        char nm[16] = "";
        if (sc && sscanf(sc + strlen("\"schedule\": \""), "%15[a-z0-9]", nm) == 1 &&
            apsolve_schedule_parse(nm) >= 0)
            stored = apsolve_schedule_parse(nm);
        if (!L->changed && uni &&
            (stored != (int)r->schedule ||
             (r->schedule == APREPORT_SCHED_INTERLEAVED && stored_v != r->virtual_stages))) {
            L->repriced = 1;
            NOTE("the plan was priced under %s; reported under %s, it is priced anew",
                 sched_label((ApreportScheduleKind)stored), sched_label(r->schedule));
        }
    }
    /* the header */
    if (!r->plan.feasible)
        line(L, "INFEASIBLE PLAN: apsolve found no plan that fits; this one does not fit the "
                "devices or their memory. Do not run it as it is.");
    line(L, "%s launch configuration of plan %lld of %s (sweep %lld), written by apreport.",
         name, (long long)r->plan.id, r->db_label, (long long)r->sweep.id);
    if (L->changed)
        line(L, "NOTE: %s cannot express this plan as priced; below is the closest plan it "
                "can run:", name);
    else
        line(L, "%s runs this plan%s:", name, L->repriced ? "" : " as priced");
    for (int i = 0; i < n_notes; i++)
        line(L, "- %s", notes[i]);
    {
        char sl[48];
        if (L->v > 1)
            snprintf(sl, sizeof(sl), "interleaved 1F1B (%d chunks per stage)", L->v);
        else
            snprintf(sl, sizeof(sl), "%s", sched_label(L->sched));
        line(L, "layout: dp %d x tp %d x pp %d on %d x %d GPUs, %s, micro-batch %lld per "
                "replica x %d micro-batches = global batch %lld, recompute %s, ZeRO %d, %s",
             L->dp, L->tp, L->pp, L->hosts, L->gpus, sl, (long long)L->mbs, L->B,
             (long long)L->global, costdb_recompute_name(L->recompute), L->zero,
             L->prec ? L->prec : "fp32");
    }
    if (!L->changed && !L->repriced) {
        if (isfinite(r->plan.full_cost) && r->plan.full_cost > 0)
            line(L, "estimated iteration time (the plan's): T = %.6f s, full estimate %.6f s",
                 r->plan.cost, r->plan.full_cost);
        else
            line(L, "estimated iteration time (the plan's): T = %.6f s", r->plan.cost);
    } else {
        int si = L->sched == r->schedule ? 0 : 1;
        if (c->have && c->priced[si][L->recompute][L->zero] &&
            (uni || (L->dp == c->logical_a && L->tp == c->logical_b && L->pp == c->pp))) {
            double t = c->cost[si][L->recompute][L->zero];
            if (isfinite(t))
                line(L, "estimated iteration time of this %s: T = %.6f s, objective "
                        "%.6f s%s (the plan: T = %.6f s)", L->changed ? "closest plan" : "plan",
                     t, c->total[si][L->recompute][L->zero],
                     c->feasible[si][L->recompute][L->zero] ? "" : ", INFEASIBLE (memory)",
                     r->plan.cost);
            else
                line(L, "estimated iteration time of this %s: unknown, the sweep has no entry "
                        "for its layout or variant (the plan: T = %.6f s)",
                     L->changed ? "closest plan" : "plan", r->plan.cost);
        } else {
            line(L, "estimated iteration time of this %s: unknown (%s) (the plan: T = %.6f s)",
                 L->changed ? "closest plan" : "plan", c->why[0] ? c->why : "not priced",
                 r->plan.cost);
        }
    }
#undef NOTE
}

static void comment_header(const Launch *L, FILE *f)
{
    for (int i = 0; i < L->n_lines; i++) {
        fputs("# ", f);
        rep_py_text(f, L->lines[i]);
        fputc('\n', f);
    }
}

static int refuse(const ApreportReport *r)
{
    return !r || !r->n_stages || (!r->plan.feasible && !r->allow_infeasible);
}

/* One argument line: the flag and, when given, its value as a shell word. */
static void arg(FILE *f, const char *flag, const char *value)
{
    rep_sh_word(f, flag);
    if (value) {
        fputc(' ', f);
        rep_sh_word(f, value);
    }
    fputc('\n', f);
}

static void arg_int(FILE *f, const char *flag, long long v)
{
    char b[32];
    snprintf(b, sizeof(b), "%lld", v);
    arg(f, flag, b);
}

int apreport_write_megatron(const ApreportReport *r, FILE *f)
{
    Launch L;
    if (refuse(r))
        return r && r->n_stages ? APREPORT_EINFEASIBLE : APREPORT_EINVAL;
    launch_of(r, RT_MEGATRON, &L);
    comment_header(&L, f);
    fputs("# One argument per line, shell-quoted; lines starting with # are comments. Use:\n"
          "#   eval \"set -- $(sed '/^#/d' ", f);
    {
        char file[sizeof(r->name) + 16];
        snprintf(file, sizeof(file), "%s_megatron.args", r->name);
        rep_sh_word(f, file);
    }
    fprintf(f, " | tr '\\n' ' ')\"\n"
               "#   torchrun --nnodes %d --nproc-per-node %d pretrain_gpt.py \"$@\" "
               "<model, data and optimizer arguments>\n", L.hosts, L.gpus);
    fprintf(f, "# NeMo: trainer.num_nodes=%d trainer.devices=%d "
               "model.tensor_model_parallel_size=%d model.pipeline_model_parallel_size=%d",
            L.hosts, L.gpus, L.tp, L.pp);
    if (L.v > 1)
        fprintf(f, " model.virtual_pipeline_model_parallel_size=%d", L.v);
    fprintf(f, " model.micro_batch_size=%lld model.global_batch_size=%lld", (long long)L.mbs,
            (long long)L.global);
    if (L.sp)
        fputs(" model.sequence_parallel=True", f);
    if (L.recompute == COSTDB_RECOMPUTE_SELECTIVE)
        fputs(" model.activations_checkpoint_granularity=selective", f);
    else if (L.recompute == COSTDB_RECOMPUTE_FULL)
        fputs(" model.activations_checkpoint_granularity=full "
              "model.activations_checkpoint_method=uniform model.activations_checkpoint_num_layers=1", f);
    if (L.zero)
        fputs(" model.optim.name=distributed_fused_adam", f);
    if (L.ep > 1)
        fprintf(f, " model.expert_model_parallel_size=%d", L.ep);
    if (L.prec)
        fprintf(f, " trainer.precision=%s-mixed", L.prec[0] == 'b' ? "bf16" : "16");
    fputc('\n', f);
    if (L.v > 1 && !(L.blocks_known && L.blocks_equal && L.blocks0 % L.v == 0))
        fprintf(f, "# --num-layers-per-virtual-pipeline-stage: the blocks of a stage / %d, "
                   "not a whole number known for this plan\n", L.v);
    arg_int(f, "--tensor-model-parallel-size", L.tp);
    arg_int(f, "--pipeline-model-parallel-size", L.pp);
    if (L.v > 1 && L.blocks_known && L.blocks_equal && L.blocks0 % L.v == 0)
        arg_int(f, "--num-layers-per-virtual-pipeline-stage", L.blocks0 / L.v);
    if (L.blocks_known)
        arg_int(f, "--num-layers", L.blocks_total);
    arg_int(f, "--micro-batch-size", L.mbs);
    arg_int(f, "--global-batch-size", L.global);
    if (L.sp)
        arg(f, "--sequence-parallel", NULL);
    if (L.recompute == COSTDB_RECOMPUTE_SELECTIVE) {
        arg(f, "--recompute-granularity", "selective");
    } else if (L.recompute == COSTDB_RECOMPUTE_FULL) {
        arg(f, "--recompute-granularity", "full");
        arg(f, "--recompute-method", "uniform");
        arg_int(f, "--recompute-num-layers", 1);
    }
    if (L.zero)
        arg(f, "--use-distributed-optimizer", NULL);
    if (L.ep > 0) {
        arg_int(f, "--expert-model-parallel-size", L.ep);
        if (L.experts > 0)
            arg_int(f, "--num-experts", L.experts);
    }
    if (L.prec)
        arg(f, L.prec[0] == 'b' ? "--bf16" : "--fp16", NULL);
    return ferror(f) ? APREPORT_EIO : 0;
}

static void json_line(FILE *f, int indent, const char *key, int last, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void json_line(FILE *f, int indent, const char *key, int last, const char *fmt, ...)
{
    va_list ap;
    fprintf(f, "%*s", indent, "");
    rep_json_string(f, key);
    fputs(": ", f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputs(last ? "\n" : ",\n", f);
}

int apreport_write_deepspeed(const ApreportReport *r, FILE *f)
{
    Launch L;
    int dp;
    if (refuse(r))
        return r && r->n_stages ? APREPORT_EINFEASIBLE : APREPORT_EINVAL;
    launch_of(r, RT_DEEPSPEED, &L);
    dp = L.dp > 0 ? L.dp : 1;
    if (L.tp > 1 || L.pp > 1 || L.ep > 0) {
        char b[LINE_LEN];
        size_t pos = (size_t)snprintf(b, sizeof(b), "the JSON holds no model parallelism:");
        if (L.tp > 1)
            pos += (size_t)snprintf(b + pos, sizeof(b) - pos, " tensor parallel size %d comes "
                                    "from Megatron-DeepSpeed (--tensor-model-parallel-size %d);",
                                    L.tp, L.tp);
        if (L.pp > 1 && pos < sizeof(b))
            pos += (size_t)snprintf(b + pos, sizeof(b) - pos, " pipeline: "
                                    "deepspeed.pipe.PipelineModule(num_stages=%d, "
                                    "partition_method='uniform');", L.pp);
        if (L.ep > 0 && pos < sizeof(b))
            pos += (size_t)snprintf(b + pos, sizeof(b) - pos, " experts: "
                                    "deepspeed.moe.layer.MoE(ep_size=%d);", L.ep);
        if (pos < sizeof(b))
            b[pos - 1] = '.';
        line(&L, "%s", b);
    }
    line(&L, "launch: deepspeed --num_nodes %d --num_gpus %d train.py --deepspeed "
             "--deepspeed_config %s_deepspeed.json", L.hosts, L.gpus, r->name);
    fputs("{\n  ", f);
    rep_json_string(f, "_comment");
    fputs(": [\n", f);
    for (int i = 0; i < L.n_lines; i++) {
        fputs("    ", f);
        rep_json_string(f, L.lines[i]);
        fputs(i + 1 < L.n_lines ? ",\n" : "\n", f);
    }
    fputs("  ],\n", f);
    json_line(f, 2, "train_batch_size", 0, "%lld", (long long)(L.mbs * L.B * dp));
    json_line(f, 2, "train_micro_batch_size_per_gpu", 0, "%lld", (long long)L.mbs);
    json_line(f, 2, "gradient_accumulation_steps", 0, "%d", L.B);
    json_line(f, 2, "bf16", 0, "{\"enabled\": %s}", L.prec && L.prec[0] == 'b' ? "true" : "false");
    if (L.prec && L.prec[0] == 'f')
        json_line(f, 2, "fp16", 0, "{\"enabled\": true, \"loss_scale\": 0, "
                                   "\"initial_scale_power\": 16}");
    else
        json_line(f, 2, "fp16", 0, "{\"enabled\": false}");
    if (L.zero == 3)
        /* the reuse distance the plan was priced with (costdb.h) */
        json_line(f, 2, "zero_optimization", 0,
                  "{\"stage\": 3, \"stage3_max_reuse_distance\": %lld}",
                  (long long)COSTDB_ZERO3_MAX_REUSE_DISTANCE);
    else
        json_line(f, 2, "zero_optimization", 0, "{\"stage\": %d}", L.zero);
    if (L.pp > 1)
        json_line(f, 2, "pipeline", 0, "{\"stages\": %d, \"partition\": \"uniform\"}", L.pp);
    if (L.recompute)
        json_line(f, 2, "activation_checkpointing", 0,
                  "{\"partition_activations\": %s, \"contiguous_memory_optimization\": false, "
                  "\"cpu_checkpointing\": false, \"number_checkpoints\": null, "
                  "\"synchronize_checkpoint_boundary\": false, \"profile\": false}",
                  L.tp > 1 ? "true" : "false");
    json_line(f, 2, "steps_per_print", 1, "%d", 10);
    fputs("}\n", f);
    return ferror(f) ? APREPORT_EIO : 0;
}

int apreport_write_torchtitan(const ApreportReport *r, FILE *f)
{
    Launch L;
    char desc[LINE_LEN];
    const char *sched;
    if (refuse(r))
        return r && r->n_stages ? APREPORT_EINFEASIBLE : APREPORT_EINVAL;
    launch_of(r, RT_TORCHTITAN, &L);
    if (L.sp == 0 && L.tp > 1)
        line(&L, "torchtitan's tensor parallelism always shards the norms' activations over the "
                 "sequence (sequence parallelism); the plan was priced without it");
    line(&L, "launch: NGPU=%d CONFIG_FILE=%s_torchtitan.toml ./run_train.sh on each of the %d "
             "host(s), with the [model] section of your model", L.gpus, r->name, L.hosts);
    comment_header(&L, f);
    if (snprintf(desc, sizeof(desc), "approf plan %lld of %s (sweep %lld)",
                 (long long)r->plan.id, r->db_label, (long long)r->sweep.id) >= (int)sizeof(desc))
        desc[sizeof(desc) - 2] = '.'; /* a long database name, cut */
    fputs("\n[job]\ndescription = ", f);
    rep_toml_string(f, desc);
    fputs("\n\n[parallelism]\n", f);
    fprintf(f, "data_parallel_replicate_degree = %d\n"
               "data_parallel_shard_degree = %d\n", L.zero ? 1 : L.dp, L.zero ? L.dp : 1);
    if (L.zero) {
        fputs("fsdp_reshard_after_forward = ", f);
        rep_toml_string(f, L.zero == 3 ? "always" : "never");
        fputc('\n', f);
    }
    fprintf(f, "tensor_parallel_degree = %d\n", L.tp);
    fprintf(f, "context_parallel_degree = 1\n");
    fprintf(f, "pipeline_parallel_degree = %d\n", L.pp);
    sched = L.sched == APREPORT_SCHED_GPIPE ? "GPipe"
            : L.sched == APREPORT_SCHED_INTERLEAVED ? "Interleaved1F1B" : "1F1B";
    if (L.pp > 1) {
        fputs("pipeline_parallel_schedule = ", f);
        rep_toml_string(f, sched);
        fprintf(f, "\npipeline_parallel_microbatch_size = %lld\n", (long long)L.mbs);
        if (L.v > 1 && L.blocks_known && L.blocks_equal && L.blocks0 % L.v == 0)
            fprintf(f, "pipeline_parallel_layers_per_stage = %d\n", L.blocks0 / L.v);
    }
    if (L.ep > 0)
        fprintf(f, "expert_parallel_degree = %d\n", L.ep);
    fputs("\n[training]\n", f);
    fprintf(f, "local_batch_size = %lld\nglobal_batch_size = %lld\n", (long long)L.local,
            (long long)L.global);
    fputs("mixed_precision_param = ", f);
    rep_toml_string(f, !L.prec ? "float32" : L.prec[0] == 'b' ? "bfloat16" : "float16");
    fputs("\nmixed_precision_reduce = ", f);
    rep_toml_string(f, "float32");
    fputs("\n\n[activation_checkpoint]\nmode = ", f);
    rep_toml_string(f, L.recompute == COSTDB_RECOMPUTE_FULL ? "full"
                       : L.recompute == COSTDB_RECOMPUTE_SELECTIVE ? "selective" : "none");
    fputc('\n', f);
    if (L.recompute == COSTDB_RECOMPUTE_SELECTIVE) {
        fputs("selective_ac_option = ", f);
        rep_toml_string(f, "op");
        fputc('\n', f);
    }
    return ferror(f) ? APREPORT_EIO : 0;
}

int apreport_export_parse(const char *list, unsigned *out, char *err, size_t errlen)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        {"megatron", APREPORT_EXPORT_MEGATRON}, {"deepspeed", APREPORT_EXPORT_DEEPSPEED},
        {"torchtitan", APREPORT_EXPORT_TORCHTITAN}, {"all", APREPORT_EXPORT_ALL},
        {"none", APREPORT_EXPORT_NONE},
    };
    unsigned bits = 0;
    const char *p = list;
    if (!list || !out)
        return APREPORT_EINVAL;
    for (;;) {
        size_t n = strcspn(p, ","), i;
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i].name) == n && !strncmp(p, names[i].name, n))
                break;
        if (i == sizeof(names) / sizeof(names[0])) {
            snprintf(err, errlen, "unknown export '%.*s' (megatron, deepspeed, torchtitan, all, "
                     "none)", (int)(n < 40 ? n : 40), p);
            return APREPORT_EINVAL;
        }
        bits |= names[i].bit;
        if (!p[n])
            break;
        p += n + 1;
    }
    if ((bits & APREPORT_EXPORT_NONE) && (bits & APREPORT_EXPORT_ALL)) {
        snprintf(err, errlen, "'none' cannot be combined with a runtime");
        return APREPORT_EINVAL;
    }
    *out = bits;
    return 0;
}
