/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The headline of a report (headline.h): the figures a reader wants first,
 * derived once from the loaded report and the launch derivation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "headline.h"
#include "launch.h"
#include "plural.h"
#include "report_int.h"
#include "schedule.h"

/* The layout in the frameworks' words, from the launch derivation b. */
static void layout_text(const ApreportReport *r, const RepLaunchBasics *b, char *out, size_t len)
{
    size_t at = 0;
    int w;
#define PUT(...)                                                                              \
    do {                                                                                      \
        w = at < len ? snprintf(out + at, len - at, __VA_ARGS__) : 0;                         \
        at += w > 0 ? (size_t)w : 0;                                                          \
    } while (0)
    out[0] = '\0';
    if (rep_plan_uniform(r)) {
        PUT("dp %d x tp %d x pp %d", b->dp, b->tp, b->pp);
        if (b->cp > 1)
            PUT(" x cp %d (%s)", b->cp, b->cp_comm);
    } else {
        PUT("pp %d with stages of their own layout:", b->pp);
        for (size_t k = 0; k < r->n_stages && k < 8; k++)
            PUT("%s %zu: dp %d x tp %d on (%d, %d)", k ? ";" : "", k,
                r->stages[k].st.logical_a, r->stages[k].st.logical_b,
                r->stages[k].st.submesh_hosts, r->stages[k].st.submesh_gpus);
        if (r->n_stages > 8)
            PUT("; ...");
    }
    /* Megatron-Core's MoE parallel folding: the experts of each stage on
     * etp x ep of its GPUs (docs/expert-parallel.md) */
    if (r->opts.has_layout && r->opts.layout.ep > 0 && r->opts.layout.etp > 0)
        PUT(", experts on ep %d x etp %d", r->opts.layout.ep, r->opts.layout.etp);
    /* HSDP and FSDP2's reshard_after_forward (docs/hsdp.md) */
    if (r->opts.has_layout && r->opts.layout.zero == 3 && r->opts.layout.dp_shard > 0)
        PUT(", HSDP shard %d x replicate %d", r->opts.layout.dp_shard,
            r->opts.layout.dp / r->opts.layout.dp_shard);
    if (r->opts.has_layout && r->opts.layout.zero == 3 && r->opts.layout.raf_off)
        PUT(", raf=0 (parameters kept gathered from forward to backward)");
    if (b->v > 1)
        PUT(", interleaved vpp %d", b->v);
    PUT(", %d %s of %lld %s per replica (global batch %lld)", b->B,
        costdb_plural(b->B, "micro-batch", "micro-batches"), (long long)b->mbs,
        costdb_plural(b->mbs, "sample", "samples"), (long long)b->global);
    if (!b->variants_known) {
        PUT(", recompute and ZeRO unknown for some stages");
    } else if (b->variants_differ) {
        PUT(", per stage:");
        for (size_t k = 0; k < r->n_stages && k < 8; k++)
            PUT("%s %s/ZeRO-%d", k ? ";" : "",
                costdb_recompute_name(r->stages[k].variant.recompute), r->stages[k].variant.zero);
    } else {
        PUT(", recompute %s, ZeRO-%d", costdb_recompute_name(b->variant.recompute),
            b->variant.zero);
    }
    /* the plan's recomputation and offload knobs (docs/variants.md,
     * "Partial recomputation", "Activation offload") */
    if (r->opts.has_layout && r->opts.layout.recompute_layers > 0)
        PUT(", recompute_layers %d (full recomputation of the first %d %s of each model chunk "
            "only)", r->opts.layout.recompute_layers, r->opts.layout.recompute_layers,
            costdb_plural(r->opts.layout.recompute_layers, "layer", "layers"));
    if (r->opts.has_layout && r->opts.layout.offload > 0)
        PUT(", offload %d (the first %d %s' saved activations in host memory)",
            r->opts.layout.offload, r->opts.layout.offload,
            costdb_plural(r->opts.layout.offload, "layer", "layers"));
    PUT(", %s", b->prec ? b->prec : "fp32");
#undef PUT
}

/* Peak FLOP/s of one GPU in the launch derivation's precision; 0 unknown. */
static double peak_of(const ApreportReport *r, const char *prec)
{
    if (!r->has_hw)
        return 0;
    if (prec && !strcmp(prec, "bf16"))
        return r->hw.peak_flops_bf16;
    if (prec && !strcmp(prec, "fp16"))
        return r->hw.peak_flops_f16;
    return r->hw.peak_flops_f32;
}

int rep_headline(const ApreportReport *r, RepHeadline *h)
{
    int stored = apsolve_schedule_parse(r->opts.schedule);
    int same_schedule = (stored < 0 ? APREPORT_SCHED_1F1B : stored) == (int)r->schedule &&
                        ((r->schedule != APREPORT_SCHED_INTERLEAVED &&
                          r->schedule != APREPORT_SCHED_INTERLEAVED_ZB) ||
                         r->opts.virtual_stages == r->virtual_stages);
    RepLaunchBasics b;
    memset(h, 0, sizeof(*h));
    rep_launch_basics(r, &b);
    h->gpus = r->sweep.cluster_hosts * r->sweep.cluster_gpus;
    if (isfinite(r->plan.full_cost) && r->plan.full_cost > 0 && same_schedule) {
        h->iteration = r->plan.full_cost;
        h->source = "apsolve's full estimate: the pipeline with its transfers, gradient sync "
                    "and the optimizer step";
    } else {
        h->iteration = rep_schedule(r)->iteration_time;
        h->source = "the simulated schedule with its transfers, without gradient sync and "
                    "the optimizer step";
    }
    if (h->iteration > 0 && isfinite(h->iteration) && h->gpus > 0 && r->global_batch > 0) {
        RepModelShape m;
        h->samples_per_gpu = (double)r->global_batch / h->iteration / h->gpus;
        rep_model_shape(r, &m);
        if (m.family && m.seq > 0) {
            h->seq = m.seq;
            h->tokens_per_gpu = h->samples_per_gpu * m.seq;
        }
        h->peak_flops = peak_of(r, b.prec);
        if (h->peak_flops > 0 && r->flops_per_sample > 0)
            h->mfu = r->flops_per_sample * h->samples_per_gpu / h->peak_flops;
    }
    layout_text(r, &b, h->layout, sizeof(h->layout));
    rep_launch_basics_free(&b);
    h->n_stages = r->n_stages;
    h->mem = calloc(r->n_stages ? r->n_stages : 1, sizeof(*h->mem));
    if (!h->mem)
        return APREPORT_ENOMEM;
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        RepStageMemory *m = &h->mem[k];
        double params = 0;
        m->total = (double)s->memory_implied;
        m->available = (double)s->st.available_memory;
        {
            ApsolveOptions ho = {.headroom_percent = r->opts.headroom_percent,
                                 .headroom_bytes = r->opts.headroom_bytes};
            m->reserve = (double)apsolve_memory_reserve(&ho, s->st.available_memory);
        }
        if (r->opts.objective != COSTDB_OBJECTIVE_FULL)
            continue;
        for (size_t i = 0; i < s->n_tensors; i++)
            if (!strcmp(s->tensors[i].pl.role, "param"))
                params += (double)s->tensors[i].local_bytes;
        m->exact = 1;
        m->optimizer = (double)s->initial;
        m->activations = (s->mem_in_flight > 1 ? s->mem_in_flight : 1) * (double)s->intermediate;
        m->params = params;
        m->rest = m->total - m->optimizer - m->activations - m->params;
        if (m->rest < 0) {
            /* the peak does not hold all of them at once: say the sum */
            m->exact = 0;
            m->rest = 0;
        }
    }
    return 0;
}

void rep_headline_free(RepHeadline *h)
{
    free(h->mem);
    h->mem = NULL;
}
