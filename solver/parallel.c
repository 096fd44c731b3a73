/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The --parallel text: Megatron's degrees and knobs of a 3-D plan,
 * "dp=2,tp=2,pp=2[,sp=0|1][,zero=0..3][,recompute=none|selective|full|op]
 * [,vpp=V][,mbs=M][,cp=C][,cp_comm=p2p|a2a|a2a+p2p|all_gather][,ep=E][,etp=T]
 * [,dp_shard=S][,raf=0|1][,recompute_layers=K|auto][,offload=N][,moe_a2a_overlap=0|1]"
 * in any order,
 * each knob at most once.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "context_parallel.h"
#include "expert_parallel.h"
#include "hsdp.h"
#include "recompute_layers.h"
#include "costdb.h"
#include "session.h"

/* A whole decimal integer in [lo, hi] of the len bytes at s: digits only. */
static int parse_count(const char *s, size_t len, long lo, long hi, long *out)
{
    long v = 0;
    if (len == 0 || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int apsolve_parallel_parse(const char *s, ApsolveParallel *par, char *errbuf, size_t errlen)
{
    static const struct {
        const char *name;
        long lo, hi;
    } knobs[] = {
        {"dp", 1, 65536}, {"tp", 1, 65536}, {"pp", 1, 65536}, {"sp", 0, 1},
        {"zero", 0, 3},   {"recompute", 0, 0}, {"vpp", 1, 1024}, {"mbs", 1, 1 << 24},
        {"cp", 1, 65536}, {"cp_comm", 0, 0}, {"ep", 1, 65536}, {"etp", 1, 65536},
        {"dp_shard", 1, 65536}, {"raf", 0, 1}, {"recompute_layers", 1, APSOLVE_MAX_LAYERS},
        {"offload", 1, 4096}, /* activation offload (activation_offload.h) */
        {"moe_a2a_overlap", 0, 1}, /* overlap_moe_expert_parallel_comm (expert_parallel.h) */
    };
    enum { N_KNOBS = sizeof knobs / sizeof knobs[0] };
    int seen[N_KNOBS] = {0};
    memset(par, 0, sizeof *par);
    if (!s) {
        snprintf(errbuf, errlen, "dp, tp and pp are required");
        return -1;
    }
    while (*s) {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        size_t klen, vlen, k;
        long v = 0;
        if (!end)
            end = s + strlen(s);
        if (!eq || eq > end) {
            snprintf(errbuf, errlen, "'%.*s' is not KNOB=VALUE", (int)(end - s), s);
            return -1;
        }
        klen = (size_t)(eq - s);
        vlen = (size_t)(end - eq - 1);
        for (k = 0; k < N_KNOBS; k++)
            if (strlen(knobs[k].name) == klen && !strncmp(s, knobs[k].name, klen))
                break;
        if (k == N_KNOBS) {
            snprintf(errbuf, errlen, "unknown knob '%.*s' (dp, tp, pp, sp, zero, recompute, vpp, "
                     "mbs, cp, cp_comm, ep, etp, dp_shard, raf, recompute_layers, offload, "
                     "moe_a2a_overlap)",
                     (int)klen, s);
            return -1;
        }
        if (seen[k]++) {
            snprintf(errbuf, errlen, "%s given twice", knobs[k].name);
            return -1;
        }
        if (!strcmp(knobs[k].name, "recompute")) {
            char val[16];
            snprintf(val, sizeof val, "%.*s", (int)(vlen < sizeof val ? vlen : sizeof val - 1),
                     eq + 1);
            v = vlen < sizeof val ? costdb_recompute_parse(val) : -1;
            if (v < 0) {
                snprintf(errbuf, errlen, "recompute must be none, selective, full or op, not '%.*s'",
                         (int)vlen, eq + 1);
                return -1;
            }
        } else if (!strcmp(knobs[k].name, "cp_comm")) {
            char val[16];
            snprintf(val, sizeof val, "%.*s", (int)(vlen < sizeof val ? vlen : sizeof val - 1),
                     eq + 1);
            v = vlen < sizeof val ? apsolve_cp_comm_parse(val) : -1;
            if (v < 0) {
                snprintf(errbuf, errlen,
                         "cp_comm must be p2p, a2a, a2a+p2p or all_gather, not '%.*s'",
                         (int)vlen, eq + 1);
                return -1;
            }
        } else if (k == 14 && vlen == 4 && !strncmp(eq + 1, "auto", 4)) {
            v = APSOLVE_RECOMPUTE_LAYERS_AUTO;
        } else if (parse_count(eq + 1, vlen, knobs[k].lo, knobs[k].hi, &v)) {
            snprintf(errbuf, errlen, "%s must be an integer in %ld..%ld, not '%.*s'",
                     knobs[k].name, knobs[k].lo, knobs[k].hi, (int)vlen, eq + 1);
            return -1;
        }
        switch (k) {
        case 0: par->dp = (int)v; break;
        case 1: par->tp = (int)v; break;
        case 2: par->pp = (int)v; break;
        case 3: par->sp = (int)v; break;
        case 4: par->zero = (int)v; break;
        case 5: par->recompute = (int)v; break;
        case 6: par->vpp = (int)v; break;
        case 7: par->mbs = (int)v; break;
        case 8: par->cp = (int)v; break;
        case 9: par->cp_comm = (int)v; break;
        case 10: par->ep = (int)v; break;
        case 11: par->etp = (int)v; break;
        case 12: par->dp_shard = (int)v; break;
        case 13: par->raf_off = !v; break;
        case 14: par->recompute_layers = (int)v; break;
        case 15: par->offload = (int)v; break;
        default: par->moe_a2a_overlap = (int)v; break;
        }
        s = *end ? end + 1 : end;
    }
    if (!seen[0] || !seen[1] || !seen[2]) {
        snprintf(errbuf, errlen, "dp, tp and pp are required");
        return -1;
    }
    if (seen[9] && par->cp <= 1) {
        snprintf(errbuf, errlen, "cp_comm needs context parallelism (cp >= 2)");
        return -1;
    }
    if (par->cp < 1)
        par->cp = 1;
    if (apsolve_hsdp_parse_check(par, seen[12], seen[13], errbuf, errlen))
        return -1;
    /* Megatron-LM's --recompute-method block takes --recompute-num-layers
     * with --recompute-granularity full only (TransformerConfig.__post_init__,
     * core_v0.19.0); the composition is not priced with the knobs that
     * transform entries (docs/variants.md, "Partial recomputation") */
    if (seen[14] && par->recompute != COSTDB_RECOMPUTE_FULL) {
        snprintf(errbuf, errlen, "recompute_layers needs recompute=full (Megatron-LM's "
                 "--recompute-method block checkpoints whole layers)");
        return -1;
    }
    if (seen[14] && (par->cp > 1 || par->ep > 1 || seen[10] || seen[11] || seen[12] ||
                     seen[13])) {
        snprintf(errbuf, errlen, "recompute_layers is not priced with cp, ep, etp, dp_shard or "
                 "raf (docs/variants.md)");
        return -1;
    }
    /* Every later step multiplies the degrees in int: refuse a product no
     * cluster has before any of it runs (each factor <= 2^16: exact in
     * int64, four of them under 2^64). */
    int64_t devices = (int64_t)par->dp * par->tp * par->pp;
    if (devices <= COSTDB_MAX_DEVICES)
        devices *= par->cp;
    if (devices > COSTDB_MAX_DEVICES) {
        snprintf(errbuf, errlen, "dp x tp x pp%s = %lld devices is more than %d "
                 "(COSTDB_MAX_DEVICES, the largest cluster)", par->cp > 1 ? " x cp" : "",
                 (long long)devices, COSTDB_MAX_DEVICES);
        return -1;
    }
    /* Megatron-Core's MoE parallel folding: the experts of a pipeline
     * stage run on its dp x tp (x cp) GPUs as etp x ep x expert-dp
     * (initialize_model_parallel: world % (etp x ep x pp) == 0) */
    if (par->ep < 1)
        par->ep = 1;
    if (par->moe_a2a_overlap && apsolve_ep_a2a_overlap_check(par, errbuf, errlen))
        return -1;
    {
        int64_t stage = (int64_t)par->dp * par->tp * par->cp,
                grid = (int64_t)par->ep * (par->etp > 0 ? par->etp : par->tp);
        if (stage % grid) {
            snprintf(errbuf, errlen, "etp x ep = %lld does not divide dp x tp%s = %lld: the "
                     "expert grid etp x ep x pp must divide the world size (Megatron's "
                     "initialize_model_parallel; etp defaults to tp)", (long long)grid,
                     par->cp > 1 ? " x cp" : "", (long long)stage);
            return -1;
        }
    }
    return 0;
}
