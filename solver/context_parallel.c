/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Context parallelism of a --parallel plan (context_parallel.h; the model,
 * with the Megatron-Core and Transformer Engine code it follows, is in
 * docs/context-parallel.md). Collectives are priced by costdb/collective.c,
 * the one price of a message.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "context_parallel.h"
#include "cp_attention.h"
#include "cp_facts.h"
#include "cp_torch_ring.h"
#include "costdb.h"
#include "costdb_text.h"
#include "frameworks.h"
#include "problem_subset.h"
#include "solver_int.h"

void apsolve_cp_frameworks(int cp, int comm, ApsolveFwVerdict *v)
{
    static const int fw[2] = {APSOLVE_FW_DEEPSPEED, APSOLVE_FW_TORCHTITAN};
    for (int i = 0; i < 2 && cp > 1; i++) {
        unsigned bit = 1u << fw[i];
        /* torchtitan's context parallelism exchanges K/V shards by
         * all-gather (its default context_parallel_rotate_method) or
         * passes them on: the ring and all_gather */
        if (!(v->runs & bit) || (fw[i] == APSOLVE_FW_TORCHTITAN &&
                                 (comm == APSOLVE_CP_P2P || comm == APSOLVE_CP_ALL_GATHER)))
            continue;
        v->runs &= ~bit;
        snprintf(v->why[fw[i]], sizeof v->why[fw[i]], "%s",
                 fw[i] == APSOLVE_FW_DEEPSPEED
                     ? "context parallelism: DeepSpeed's config has none (its Ulysses sequence "
                       "parallelism is Megatron-DeepSpeed's)"
                     : "context parallelism by all-to-all (a2a, a2a+p2p): torchtitan's is "
                       "ring attention (K/V shards all-gathered or passed on)");
    }
}

/* The ring of n ranks over one layer's local K + V (kv bytes), Transformer
 * Engine's AttnFuncWithCPAndKVP2P: forward n - 1 send-recvs of K and V;
 * backward n send-recvs, the first of K and V, the n - 2 middle ones of
 * K, V and their gradients, the last of the gradients. */
static void ring(const CostdbFabric *f, double kv, int n, int stride, int M, ApsolveCpStage *o)
{
    if (n <= 1)
        return;
    /* the ring's ranks are stride consecutive devices apart (Megatron's
     * order tp-cp-dp-pp) */
    double one = costdb_strided_collective_seconds(f, COSTDB_COLL_SEND_RECV, kv, n, stride, M);
    double two = costdb_strided_collective_seconds(f, COSTDB_COLL_SEND_RECV, 2 * kv, n, stride, M);
    o->comm_fwd += (n - 1) * one;
    o->traffic_fwd += (n - 1) * kv;
    o->comm_bwd += 2 * one + (n - 2) * two;
    o->traffic_bwd += 2 * (n - 1) * kv;
}

/* The all-to-alls of n ranks, AttnFuncWithCPAndQKVOA2A: forward one each
 * for Q, K, V before the attention and one for its output after;
 * backward one for the output's gradient and one each for the gradients
 * of Q, K, V. A rank holds 1/n of each tensor the formula's bytes name. */
static void a2a(const CostdbFabric *f, double q, double kv, int n, int stride, int M,
                ApsolveCpStage *o)
{
    double t;
    if (n <= 1)
        return;
    t = 2 * costdb_strided_collective_seconds(f, COSTDB_COLL_ALL_TO_ALL, q * n, n, stride, M) +
        2 * costdb_strided_collective_seconds(f, COSTDB_COLL_ALL_TO_ALL, kv / 2 * n, n, stride,
                                              M);
    o->comm_fwd += t;
    o->comm_bwd += t;
    o->traffic_fwd += (n - 1.0) / n * (2 * q + kv);
    o->traffic_bwd += (n - 1.0) / n * (2 * q + kv);
}

/* The all-gather of n ranks, Transformer Engine's
 * AttnFuncWithCPAndKVAllGather (context_parallel.py, v2.18; Megatron's
 * --cp-comm-type all_gather; the Llama 3 paper's section 3.3.2): forward
 * K and V each all-gathered over the cp group (gather_along_first_dim),
 * only the local shards saved; backward K and V all-gathered again and
 * their full gradients reduce-scattered (reduce_scatter_along_first_dim).
 * kv: one layer's local K + V bytes; a gathered tensor is n x kv / 2. */
static void all_gather(const CostdbFabric *f, double kv, int n, int stride, int M,
                       ApsolveCpStage *o)
{
    double ag, rs;
    if (n <= 1)
        return;
    ag = costdb_strided_collective_seconds(f, COSTDB_COLL_ALL_GATHER, n * kv / 2, n, stride, M);
    rs = costdb_strided_collective_seconds(f, COSTDB_COLL_REDUCE_SCATTER, n * kv / 2, n, stride,
                                           M);
    o->comm_fwd += 2 * ag;
    o->comm_bwd += 2 * ag + 2 * rs;
    o->traffic_fwd += (n - 1.0) / n * n * kv;
    o->traffic_bwd += 2 * (n - 1.0) / n * n * kv;
}

void apsolve_cp_heads(struct Costdb *db, int64_t sweep, const ApsolveProblem *p, int *heads,
                      int *kv_heads)
{
    CostdbSweep sw;
    CostdbModel m;
    long long h = 0;
    char why[256];
    *heads = *kv_heads = 0;
    if (costdb_sweep_get(db, sweep, &sw) || sw.model_id <= 0 ||
        costdb_model_get(db, sw.model_id, &m) ||
        costdb_json_member_int(m.options, "attention_heads", &h) || h <= 0 || h > 1 << 20)
        return;
    *heads = (int)h;
    /* the key/value heads: the first layer whose placements show both
     * projections */
    for (int k = 0; k < p->num_layers; k++)
        for (int s = 0; s < p->num_submeshes; s++)
            for (int c = 0; c < p->num_configs; c++) {
                CpFacts x;
                if (!p->configs[(size_t)s * p->num_configs + c].valid ||
                    !isfinite(p->cost[apsolve_index(p, k, k, s, c)]))
                    continue;
                if (apsolve_cp_read_facts(db, sweep, k, k, s, c, &x, why, sizeof why))
                    return;
                if (x.layers && x.qw > 0 && x.kvw > 0) {
                    double kv = h * x.kvw / x.qw;
                    if (kv >= 1 && kv == floor(kv))
                        *kv_heads = (int)kv;
                    return;
                }
                s = p->num_submeshes; /* no attention in layer k: the next */
                break;
            }
}

int apsolve_cp_check(const ApsolveCpLayout *l, int64_t seq, int heads, int kv_heads, char *why,
                     size_t len, char *note, size_t note_len)
{
    int g = l->comm == APSOLVE_CP_A2A ? l->cp : l->comm == APSOLVE_CP_A2A_P2P ? l->a2a : 1;
    int tp = l->tp > 0 ? l->tp : 1;
    if (note && note_len)
        note[0] = '\0';
    if (seq > 0 && seq % (2 * (int64_t)l->cp)) {
        snprintf(why, len, "the sequence length %lld does not divide by 2 x cp = %d (Megatron "
                 "cuts it into 2 cp chunks for the causal load balancing)", (long long)seq,
                 2 * l->cp);
        return 0;
    }
    if (g <= 1)
        return 1;
    if (heads <= 0) {
        if (note && note_len)
            snprintf(note, note_len, "cp_comm %s splits the attention heads over %d GPUs, and "
                     "the sweep records no heads (a database from before approf recorded "
                     "them, or attentions that disagree): not checked that each tp rank's "
                     "heads divide by %d", apsolve_cp_comm_name(l->comm), g, g);
        return 1;
    }
    if (heads % tp) {
        snprintf(why, len, "cp_comm %s splits each tp rank's attention heads, and the model's "
                 "%d query heads do not split over tp = %d", apsolve_cp_comm_name(l->comm),
                 heads, tp);
        return 0;
    }
    if ((heads / tp) % g) {
        snprintf(why, len, "cp_comm %s splits each tp rank's attention heads over %s%d GPUs: "
                 "the model's %d query heads over tp = %d are %d per rank, which %d does not "
                 "divide (Transformer Engine's all-to-all context parallelism asserts it)",
                 apsolve_cp_comm_name(l->comm),
                 l->comm == APSOLVE_CP_A2A_P2P ? "its inner group of " : "", g, heads, tp,
                 heads / tp, g);
        return 0;
    }
    if (kv_heads > 0 && (kv_heads % tp || (kv_heads / tp) % g)) {
        snprintf(why, len, "cp_comm %s splits each tp rank's key/value heads over %s%d GPUs: "
                 "the model's %d key/value heads (query groups) over tp = %d are %s%d per rank, "
                 "which %d does not divide (Transformer Engine's all-to-all context "
                 "parallelism asserts it)", apsolve_cp_comm_name(l->comm),
                 l->comm == APSOLVE_CP_A2A_P2P ? "its inner group of " : "", g, kv_heads, tp,
                 kv_heads % tp ? "not a whole number: " : "", kv_heads / tp, g);
        return 0;
    }
    return 1;
}

/* Prices the cp stage of facts x under layout l on hosts of M GPUs. */
static void price_stage(const CpFacts *x, const ApsolveCpLayout *l, int M, ApsolveCpStage *out)
{
    const CostdbFabric f = x->f;
    int64_t batch = x->batch;
    double qw = x->qw, kvw = x->kvw, dsize = x->dsize;
    int layers = x->layers;
    memset(out, 0, sizeof *out);
    out->seq = x->seq;
    out->attention_layers = layers;
    if (!layers || out->seq <= 0 || batch <= 0)
        return;
    /* the equivalent entry's micro-batch holds batch samples over dp x cp
     * replicas: Megatron's mbs = batch / (dp cp); a cp GPU holds mbs x
     * seq / cp tokens, the heads split tp ways */
    out->tokens = (double)batch / ((double)l->dp * l->cp) * (double)out->seq / l->cp;
    out->q_bytes = out->tokens * qw / l->tp * dsize;
    out->kv_bytes = out->tokens * 2 * kvw / l->tp * dsize;
    {
        ApsolveCpStage one;
        double kv = out->kv_bytes, q = out->q_bytes, buf = 0;
        int a = l->comm == APSOLVE_CP_A2A_P2P ? (l->a2a > 0 ? l->a2a : 1) : 1;
        memset(&one, 0, sizeof one);
        /* PyTorch's ring (the row's cp_ring_torch): its own exchange and
         * merges, the same receive buffers counted */
        int torch_ring = f.cp_ring_torch && (l->comm == APSOLVE_CP_P2P ||
                                             l->comm == APSOLVE_CP_ALL_GATHER);
        if (torch_ring) {
            double k = apsolve_cp_ring_step_seconds(&f, out->seq, l->cp, l->cp,
                                                    (double)batch / ((double)l->dp * l->cp),
                                                    qw / l->tp);
            apsolve_cp_torch_ring(&f, l->comm == APSOLVE_CP_ALL_GATHER, q, dsize, l->cp, l->tp,
                                  M, k, &one.comm_fwd, &one.comm_bwd, &one.traffic_fwd,
                                  &one.traffic_bwd, &one.merge_fwd, &one.merge_bwd);
            buf = l->comm == APSOLVE_CP_ALL_GATHER ? 2.0 * l->cp * kv
                                                   : fmax((l->cp - 1) * kv, 4 * kv);
        } else if (l->comm == APSOLVE_CP_A2A) {
            a2a(&f, q, kv, l->cp, l->tp, M, &one);
            buf = q + kv;
        } else if (l->comm == APSOLVE_CP_ALL_GATHER) {
            all_gather(&f, kv, l->cp, l->tp, M, &one);
            /* the gathered K and V live through the layer's attention;
             * the backward holds them and their full gradients */
            buf = 2.0 * l->cp * kv;
        } else {
            int ring_n = l->cp / a;
            if (a > 1) {
                a2a(&f, q, kv, a, l->tp, M, &one);
                buf += q + kv;
            }
            ring(&f, kv, ring_n, l->tp * a, M, &one);
            /* forward: the list of received blocks lives until the
             * layer's forward returns (n - 1 of them); backward: two
             * buffers of K, V and their gradients */
            if (ring_n > 1)
                buf += fmax((ring_n - 1) * kv, 4 * kv);
        }
        out->comm_fwd = layers * one.comm_fwd;
        out->comm_bwd = layers * one.comm_bwd;
        out->merge_fwd = layers * one.merge_fwd;
        out->merge_bwd = layers * one.merge_bwd;
        /* the ring's attention kernels over seq / ring GPUs' keys
         * (cp_attention.c); a2a keeps the entry's, TE's all_gather its
         * own (below), PyTorch's all-gathered K and V the ring's */
        if (l->comm == APSOLVE_CP_P2P || l->comm == APSOLVE_CP_A2A_P2P || torch_ring) {
            int ring_n = l->cp / a;
            if (ring_n > 1) {
                out->ring_keys = out->seq / ring_n;
                apsolve_cp_ring_attention(&f, out->seq, ring_n, l->cp,
                                          (double)batch / ((double)l->dp * l->cp), qw / l->tp,
                                          layers,
                                          l->recompute == COSTDB_RECOMPUTE_FULL ||
                                              l->recompute == COSTDB_RECOMPUTE_SELECTIVE,
                                          &out->attn_fwd, &out->attn_bwd);
            }
        }
        /* TE's all-gathered K/V: two kernels a rank by their key lengths */
        if (l->comm == APSOLVE_CP_ALL_GATHER && !torch_ring)
            apsolve_cp_allgather_attention(&f, out->seq, l->cp,
                                           (double)batch / ((double)l->dp * l->cp), qw / l->tp,
                                           layers,
                                           l->recompute == COSTDB_RECOMPUTE_FULL ||
                                               l->recompute == COSTDB_RECOMPUTE_SELECTIVE,
                                           &out->attn_fwd, &out->attn_bwd, &out->ag_keys_min,
                                           &out->ag_keys_max);
        out->traffic_fwd = layers * one.traffic_fwd;
        out->traffic_bwd = layers * one.traffic_bwd;
        /* Recomputation reruns the cp exchange. Full (Megatron-Core
         * core_v0.19.0, --recompute-granularity full: transformer_block.py
         * runs the layers through recompute.py checkpointed_forward,
         * tensor_parallel.checkpoint, whose backward reruns each layer's
         * forward) and selective (attention.py: checkpoint_core_attention,
         * the default recompute module core_attn, runs core_attention
         * through _checkpointed_attention_forward, tensor_parallel.checkpoint
         * again) both hold TEDotProductAttention inside the rerun region,
         * and with a cp group Transformer Engine v2.18's attention backends
         * run the cp exchange inside that forward (attn_forward_func_with_cp:
         * AttnFuncWithCPAndKVP2P, ...QKVOA2A, ...KVAllGather), so the
         * backward pays the forward's exchange again before its own. The
         * stored entry's rerun holds the graph's attention, not this.
         * torchtitan's op mode saves the SDPA's output (its save list):
         * no rerun. The buffers are unchanged: the rerun's are freed when
         * its forward returns, before the backward's own. */
        if (l->recompute == COSTDB_RECOMPUTE_FULL || l->recompute == COSTDB_RECOMPUTE_SELECTIVE) {
            out->rerun = out->comm_fwd;
            out->comm_bwd += out->comm_fwd;
            out->merge_bwd += out->merge_fwd;
            out->traffic_bwd += out->traffic_fwd;
        }
        out->buffers = (int64_t)llround(buf);
    }
}

int apsolve_cp_stage(struct Costdb *db, int64_t sweep, const ApsolveProblem *p, int start,
                     int end, int s, int c, const ApsolveCpLayout *l, ApsolveCpStage *out,
                     char *why, size_t len)
{
    CpFacts x;
    memset(out, 0, sizeof *out);
    if (apsolve_cp_read_facts(db, sweep, start, end, s, c, &x, why, len))
        return -1;
    /* a range with no placements of its own (composed from single layers,
     * profile mode individual): its layers' facts folded, as the auto
     * search's tables fold them */
    if (start < end && !x.layers && !x.seq) {
        CpFacts *cache = calloc((size_t)p->num_layers, sizeof *cache), y;
        int rc = cache ? apsolve_cp_range_facts(db, sweep, p, 0, cache, start, end, &y, why,
                                                      len)
                       : (snprintf(why, len, "out of memory"), -1);
        free(cache);
        if (rc)
            return -1;
        if (y.known)
            x = y;
    }
    price_stage(&x, l, p->cluster_gpus, out);
    return 0;
}

/* Entry idx of q as the cp stage: per micro-batch compute / cp + the cp
 * communication, saved activations / cp (out of the peak too, which holds
 * one micro-batch's), the transient's activation-sized part / cp (cut, the
 * peak's share: apsolve_cp_transient_cut), the receive buffers on the peak. */
static void transform(ApsolveProblem *q, size_t idx, int cp, const ApsolveCpStage *x,
                      int64_t cut)
{
    double r = 1.0 / cp;
    if (!isfinite(q->cost[idx]))
        return;
    q->cost[idx] = q->cost[idx] * r + x->comm_fwd + x->comm_bwd + x->attn_fwd + x->attn_bwd +
                   x->merge_fwd + x->merge_bwd;
    if (q->times) {
        ApsolveTimes t = *apsolve_times_at(q, idx);
        t.fwd = t.fwd * r + x->comm_fwd + x->attn_fwd + x->merge_fwd;
        t.bwd = t.bwd * r + x->comm_bwd + x->attn_bwd + x->merge_bwd;
        /* the weight GEMMs see 1/cp of the tokens; the ring is B's */
        if (t.wgrad >= 0)
            t.wgrad *= r;
        /* out of memory for a cell that had no times: no stage, as for its
         * memory figures below */
        if (apsolve_times_put(q, idx, &t) != APSOLVE_OK)
            q->cost[idx] = INFINITY;
    }
    if (q->memory) {
        ApsolveMemory m = *apsolve_memory_at(q, idx);
        int64_t inter = apsolve_cp_intermediate(m.intermediate, cp);
        m.peak = m.peak - cut - (m.intermediate - inter) + x->buffers;
        m.intermediate = inter;
        q->max_n_succ_stages[idx] = apsolve_memory_mnss(&m);
        /* out of memory for a cell that had no figures: no stage rather
         * than one with figures it does not have */
        if (apsolve_memory_put(q, idx, &m) != APSOLVE_OK)
            q->cost[idx] = INFINITY;
    }
}

int apsolve_cp_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                       const ApsolveStageSpec *specs, size_t n, const ApsolveCpLayout *l,
                       ApsolveProblem **out, int64_t *seq, int *attention, char *why,
                       size_t len)
{
    ApsolveProblem *q = NULL;
    int rc;
    *out = NULL;
    *seq = 0;
    *attention = 0;
    if ((rc = apsolve_problem_clone(p, &q)) != APSOLVE_OK)
        return rc;
    for (size_t k = 0; k < n; k++) {
        const ApsolveStageSpec *sp = &specs[k];
        int s = apsolve_find_submesh(q, sp->hosts, sp->gpus);
        if (s < 0)
            continue;
        for (int c = 0; c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            size_t idx = apsolve_index(q, sp->start_layer, sp->end_layer, s, c);
            ApsolveCpStage x;
            ApsolveCpLayout m = *l;
            int64_t cut;
            /* a twin the sweep judged out of memory is priced from the time
             * it computed; the transformed memory decides fit */
            if (!cf->valid || cf->logical_a != l->dp * l->cp || cf->logical_b != l->tp ||
                cf->force_batch_dim != 0 || !apsolve_unfit_restore(q, idx))
                continue;
            m.recompute = cf->variant.recompute; /* full and selective rerun the exchange */
            if (apsolve_cp_stage(db, sweep, q, sp->start_layer, sp->end_layer, s, c, &m, &x, why,
                                 len) ||
                apsolve_cp_transient_cut(db, sweep, sp->start_layer, sp->end_layer, s, c, l->cp,
                                         &cut, why, len)) {
                apsolve_problem_free(&q);
                return APSOLVE_EDB;
            }
            if (x.seq > 0 && !*seq)
                *seq = x.seq;
            if (x.attention_layers > *attention)
                *attention = x.attention_layers;
            transform(q, idx, l->cp, &x, cut);
        }
    }
    *out = q;
    return APSOLVE_OK;
}

/* Whether the family holds a sweep at micro-batch size m. */
static int has_micro(const int64_t *family, size_t nfamily, int64_t m)
{
    for (size_t i = 0; i < nfamily; i++)
        if (family[i] == m)
            return 1;
    return 0;
}

/* Whether config cf can hold no cp stage of cp degree cp and
 * communication comm at all, whatever the layer range
 * (apsolve_cp_problem_auto): not (dp cp, tp) with the batch on axis 0,
 * priced already by the plain search (the family's sweep at micro / cp
 * holds the same devices' entry with whole samples per replica, the same
 * tokens, FLOPs, activations and weights per GPU, measured, and no ring),
 * or an a2a+p2p whose inner group is 1 or cp (the ring's or a2a's entry). */
static int config_holds_no_cp(const ApsolveConfig *cf, int64_t micro, const int64_t *family,
                              size_t nfamily, int cp, int comm, int fast_gpus)
{
    int a2a;
    if (!cf->valid || cf->force_batch_dim != 0 || cf->logical_a % cp)
        return 1;
    if (micro % cp == 0 && (micro / cp) % cf->logical_a == 0 &&
        has_micro(family, nfamily, micro / cp))
        return 1;
    a2a = apsolve_cp_a2a_size(cp, cf->logical_b, fast_gpus);
    return comm == APSOLVE_CP_A2A_P2P && (a2a <= 1 || a2a >= cp);
}

/* A range's priced layouts (price_stage is a function of the range's
 * facts, the layout and M alone, and the layout is compared whole): the
 * configs of one logical mesh and recomputation that differ in memory
 * level or ZeRO stage share one. */
typedef struct PriceMemo {
    ApsolveCpLayout l;
    ApsolveCpStage st;
} PriceMemo;

static void price_memo(const CpFacts *x, const ApsolveCpLayout *l, int M, PriceMemo *memo,
                       int *n, ApsolveCpStage *out)
{
    for (int k = 0; k < *n; k++)
        if (!memcmp(&memo[k].l, l, sizeof *l)) {
            *out = memo[k].st;
            return;
        }
    price_stage(x, l, M, out);
    if (*n < 32) {
        memo[*n].l = *l;
        memo[*n].st = *out;
        (*n)++;
    }
}

/* A range's checked layouts: apsolve_cp_check is a function of the layout
 * and the range's sequence (with the run's heads) alone, so its verdict is
 * worked out (and its refusal written) once per layout and range. */
typedef struct CheckMemo {
    ApsolveCpLayout l;
    int ok;
} CheckMemo;

static int check_memo(const ApsolveCpLayout *l, int64_t seq, int heads, int kv_heads,
                      CheckMemo *memo, int *n)
{
    char refused[200];
    int ok;
    for (int k = 0; k < *n; k++)
        if (!memcmp(&memo[k].l, l, sizeof *l))
            return memo[k].ok;
    ok = apsolve_cp_check(l, seq, heads, kv_heads, refused, sizeof refused, NULL, 0);
    if (*n < 32) {
        memo[*n].l = *l;
        memo[*n].ok = ok;
        (*n)++;
    }
    return ok;
}

/* The candidates' common part (context_parallel.h): the sweep's problem
 * and each layer's facts, read once. */
struct ApsolveCpAuto {
    const ApsolveProblem *p;
    int64_t micro;
    const int64_t *family;
    size_t nfamily;
    int heads, kv_heads, fast;
    CpFacts *cache;                   /* [L] every layer's facts, final */
    int each;                         /* check and price every entry alone (the tests'
                                       * reference) */
    ApsolveCpTransients *tr;          /* the transients' cut (NULL: none) */
    int tr_loaded;                    /* tr read (as_restored: at the first table) */
};

/* apsolve_cp_auto_open, its layers' facts read from p as restored
 * (apsolve_cp_range_facts) where as_restored. */
static int auto_open(struct Costdb *db, int64_t sweep, const ApsolveProblem *p, int as_restored,
                     int64_t micro, const int64_t *family, size_t nfamily, int heads,
                     int kv_heads, ApsolveCpAuto **out, int64_t *seq, int *attention,
                     char *why, size_t len)
{
    ApsolveCpAuto *a = calloc(1, sizeof *a);
    *out = NULL;
    *seq = 0;
    *attention = 0;
    if (!a || !(a->cache = calloc((size_t)(p->num_layers > 0 ? p->num_layers : 1),
                                  sizeof *a->cache))) {
        free(a);
        return APSOLVE_ENOMEM;
    }
    *a = (ApsolveCpAuto){p, micro, family, nfamily, heads, kv_heads,
                         apsolve_cp_fast_gpus(db, sweep, p->cluster_gpus), a->cache, 0, NULL, 0};
    int rc = as_restored ? APSOLVE_OK : apsolve_cp_auto_transients_load(a, db, sweep, why, len);
    if (rc != APSOLVE_OK) {
        apsolve_cp_auto_close(&a);
        return rc;
    }
    /* every range's facts once: each layer is read here (range i..i), so
     * the tables below fold them without the database */
    for (int i = 0; i < p->num_layers; i++)
        for (int j = i; j < p->num_layers; j++) {
            CpFacts x;
            if (apsolve_cp_range_facts(db, sweep, p, as_restored, a->cache, i, j, &x, why,
                                       len)) {
                apsolve_cp_auto_close(&a);
                return APSOLVE_EDB;
            }
            if (x.seq > 0 && !*seq)
                *seq = x.seq;
            if (x.layers > *attention)
                *attention = x.layers;
        }
    *out = a;
    return APSOLVE_OK;
}

int apsolve_cp_auto_open(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                         int64_t micro, const int64_t *family, size_t nfamily, int heads,
                         int kv_heads, ApsolveCpAuto **out, int64_t *seq, int *attention,
                         char *why, size_t len)
{
    return auto_open(db, sweep, p, 0, micro, family, nfamily, heads, kv_heads, out, seq,
                     attention, why, len);
}

int apsolve_cp_auto_open_as_restored(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                                     int64_t micro, const int64_t *family, size_t nfamily,
                                     int heads, int kv_heads, ApsolveCpAuto **out, int64_t *seq,
                                     int *attention, char *why, size_t len)
{
    return auto_open(db, sweep, p, 1, micro, family, nfamily, heads, kv_heads, out, seq,
                     attention, why, len);
}

int apsolve_cp_auto_transients_load(ApsolveCpAuto *a, struct Costdb *db, int64_t sweep,
                                    char *why, size_t len)
{
    /* they read p's configs and dimensions only, which restoring p in
     * place leaves as they were */
    int rc = a->tr_loaded ? APSOLVE_OK : apsolve_cp_transients_read(db, sweep, a->p, &a->tr, why,
                                                                    len);
    a->tr_loaded = rc == APSOLVE_OK;
    return rc;
}

int apsolve_cp_auto_transients_loaded(const ApsolveCpAuto *a)
{
    return a->tr_loaded;
}

void apsolve_cp_auto_price_each(ApsolveCpAuto *a)
{
    a->each = 1;
}

void apsolve_cp_auto_close(ApsolveCpAuto **a)
{
    if (!a || !*a)
        return;
    free((*a)->cache);
    apsolve_cp_transients_free(&(*a)->tr);
    free(*a);
    *a = NULL;
}

int apsolve_cp_auto_kept(const ApsolveCpAuto *a, int cp, int comm, unsigned char *kept)
{
    const ApsolveProblem *p = a->p;
    int n = 0;
    for (int s = 0; s < p->num_submeshes; s++) {
        kept[s] = 0;
        for (int c = 0; c < p->num_configs && !kept[s]; c++)
            kept[s] = !config_holds_no_cp(&p->configs[(size_t)s * p->num_configs + c], a->micro,
                                          a->family, a->nfamily, cp, comm, a->fast);
        n += kept[s];
    }
    return n;
}

int apsolve_cp_auto_table(const ApsolveCpAuto *a, int cp, int comm, ApsolveProblem **out,
                          ApsolveSubset *view)
{
    const ApsolveProblem *p = a->p;
    size_t pairs = (size_t)p->num_submeshes * (size_t)p->num_configs;
    /* none[s * C + c]: config_holds_no_cp; keep: its complement */
    unsigned char *none = calloc(2 * (pairs ? pairs : 1), 1), *keep = none + pairs;
    ApsolveProblem *q = NULL;
    int rc;
    *out = NULL;
    if (view)
        memset(view, 0, sizeof *view);
    if (!a->tr_loaded) { /* apsolve_cp_auto_transients_load first */
        free(none);
        return APSOLVE_EINVAL;
    }
    if (!none)
        return APSOLVE_ENOMEM;
    for (size_t x = 0; x < pairs; x++)
        none[x] = (unsigned char)config_holds_no_cp(&p->configs[x], a->micro, a->family,
                                                    a->nfamily, cp, comm, a->fast);
    /* a copy of all of p (view NULL), or the subset of the pairs that can
     * hold its cp stages, those none[] does not mark */
    if (!view) {
        rc = apsolve_problem_clone(p, &q);
    } else {
        for (size_t x = 0; x < pairs; x++)
            keep[x] = !none[x];
        /* only the submeshes with a pair kept (the others' entries are
         * all +inf, no stage option); all of them, each of padding, when
         * none is kept */
        rc = apsolve_subset_new_kept(p, keep, view);
        if (rc == APSOLVE_OK &&
            (rc = apsolve_subset_shell_less_unfit(p, view, &q)) != APSOLVE_OK)
            apsolve_subset_free(view);
    }
    if (rc != APSOLVE_OK) {
        free(none);
        return rc;
    }
    for (int i = 0; i < p->num_layers; i++)
        for (int j = i; j < p->num_layers; j++) {
            CpFacts x;
            PriceMemo memo[32];
            CheckMemo checked[32];
            int nmemo = 0, nchecked = 0;
            apsolve_cp_fold_facts(a->cache, i, j, &x);
            /* the pairs q holds: every pair of p, or the subset's, in its
             * order (the memos are caches of pure functions, so the order
             * changes no figure); a pair the subset leaves out is not read
             * (a full-space table's cells, 8 candidates over) */
            for (int s2 = 0; s2 < q->num_submeshes; s2++)
                for (int c2 = 0; c2 < q->num_configs; c2++) {
                    int s = view ? view->submesh[s2] : s2,
                        c = view ? view->config[(size_t)s2 * view->num_configs + c2] : c2;
                    const ApsolveConfig *cf;
                    size_t idx, qi;
                    ApsolveCpLayout l;
                    ApsolveCpStage st;
                    char refused[200];
                    int no;
                    if (c < 0) /* the subset's padding */
                        continue;
                    cf = &p->configs[(size_t)s * p->num_configs + c];
                    idx = apsolve_index(p, i, j, s, c);
                    qi = apsolve_index(q, i, j, s2, c2);
                    l = (ApsolveCpLayout){0, cf->logical_b, cp, comm, 0, cf->variant.recompute};
                    /* a cp plan runs every stage with cp: an entry whose
                     * config holds none, or whose facts are unknown, has
                     * no cp stage (+inf; a subset leaves its config out) */
                    no = none[(size_t)s * p->num_configs + c];
                    /* the subset copied in this pass (its shell's cells) */
                    if (view && (rc = apsolve_subset_copy_entry(p, idx, q, qi)) != APSOLVE_OK)
                        goto fail;
                    if (!isfinite(p->cost[idx]))
                        continue;
                    /* a2a and a2a+p2p: the heads rule of the entry's tp
                     * (apsolve_cp_check) */
                    if (comm == APSOLVE_CP_A2A_P2P)
                        l.a2a = apsolve_cp_a2a_size(cp, cf->logical_b, a->fast);
                    if (!no && comm != APSOLVE_CP_P2P &&
                        !(a->each ? apsolve_cp_check(&l, x.seq, a->heads, a->kv_heads, refused,
                                                     sizeof refused, NULL, 0)
                                  : check_memo(&l, x.seq, a->heads, a->kv_heads, checked,
                                               &nchecked)))
                        no = 1;
                    if (!x.known || no) {
                        q->cost[qi] = INFINITY;
                        apsolve_times_drop(q, qi);
                        continue;
                    }
                    l.dp = cf->logical_a / cp;
                    if (a->each)
                        price_stage(&x, &l, p->cluster_gpus, &st);
                    else
                        price_memo(&x, &l, p->cluster_gpus, memo, &nmemo, &st);
                    transform(q, qi, cp, &st,
                              apsolve_cp_transients_cut(a->tr, p, i, j, s, c, cp));
                    /* the subset holds no unfit figures: settled here from
                     * p's (apsolve_unfit_settle of the copy that held them);
                     * an entry whose cost the transformation changed holds
                     * no restored figures (a restored entry's cost is
                     * theirs), so its unfit entry is not read */
                    if (view && apsolve_unfit_at(p, idx) && q->times && q->memory &&
                        q->cost[qi] == p->cost[idx])
                        apsolve_unfit_settle_entry(q, qi, apsolve_unfit_at(p, idx));
                }
        }
    free(none);
    *out = q;
    return APSOLVE_OK;
fail: /* a subset's copy (no unfit figures: none so far) */
    apsolve_problem_free(&q);
    apsolve_subset_free(view);
    free(none);
    return rc;
}

int apsolve_cp_problem_auto(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            int64_t micro, const int64_t *family, size_t nfamily,
                            const int *cps, const int *comms, int heads, int kv_heads, int ncp,
                            ApsolveProblem **out, ApsolveSubset *views, int64_t *seq,
                            int *attention, char *why, size_t len)
{
    ApsolveCpAuto *a = NULL;
    int rc;
    for (int k = 0; k < ncp; k++) {
        out[k] = NULL;
        if (views)
            memset(&views[k], 0, sizeof views[k]);
    }
    rc = apsolve_cp_auto_open(db, sweep, p, micro, family, nfamily, heads, kv_heads, &a, seq,
                              attention, why, len);
    for (int k = 0; k < ncp && rc == APSOLVE_OK; k++)
        rc = apsolve_cp_auto_table(a, cps[k], comms ? comms[k] : APSOLVE_CP_P2P, &out[k],
                                   views ? &views[k] : NULL);
    apsolve_cp_auto_close(&a);
    if (rc != APSOLVE_OK)
        for (int k = 0; k < ncp; k++) {
            apsolve_problem_free(&out[k]);
            if (views)
                apsolve_subset_free(&views[k]);
        }
    return rc;
}
