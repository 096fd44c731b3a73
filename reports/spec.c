/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sharding layouts: the SBP (split / broadcast / partial-sum) of a layout
 * per mesh axis, the classification of layout conversions and the verdict
 * per tensor (docs/alpa-semantics.md "Sharding specs"). The ShardingSpec
 * text itself is costdb's (costdb_text.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apreport.h"

const char *apreport_strerror(int err)
{
    switch (err) {
    case APREPORT_OK: return "success";
    case APREPORT_ENOMEM: return "out of memory";
    case APREPORT_EINVAL: return "invalid argument";
    case APREPORT_EPARSE: return "malformed sharding spec";
    case APREPORT_EDB: return "database error";
    case APREPORT_EIO: return "cannot write output";
    case APREPORT_ENOTFOUND: return "not found";
    case APREPORT_ESOLVE: return "solver failed";
    case APREPORT_EINFEASIBLE:
        return "the plan is infeasible: no paste-ready code (apreport --allow-infeasible writes it "
               "marked as such)";
    default: return "unknown error";
    }
}

/* ---- SBP, conversions, verdicts ------------------------------------------ */

ApreportSbp apreport_layout_sbp(const ApreportLayout *l, int axis)
{
    ApreportSbp s = {APREPORT_SBP_B, -1};
    int size = axis == 0 ? l->logical_a : l->logical_b;
    if (size <= 1)
        return s;
    for (int d = 0; d < l->ndim; d++)
        if (l->mesh_axis_of_dim[d] == axis || l->mesh_axis_of_dim[d] == 2) {
            s.kind = APREPORT_SBP_S;
            s.dim = d;
        }
    return s;
}

ApreportConversion apreport_classify(ApreportSbp src, ApreportSbp dst)
{
    switch (src.kind) {
    case APREPORT_SBP_S:
        if (dst.kind == APREPORT_SBP_B)
            return APREPORT_CONV_SPLIT_GATHER;
        if (dst.kind == APREPORT_SBP_P)
            return APREPORT_CONV_SPLIT_PSUM;
        return src.dim == dst.dim ? APREPORT_CONV_NONE : APREPORT_CONV_SPLIT_SPLIT;
    case APREPORT_SBP_P:
        if (dst.kind == APREPORT_SBP_B)
            return APREPORT_CONV_PSUM_ALLREDUCE;
        if (dst.kind == APREPORT_SBP_S)
            return APREPORT_CONV_PSUM_REDUCE_SCATTER;
        return APREPORT_CONV_NONE;
    case APREPORT_SBP_B:
    default:
        if (dst.kind == APREPORT_SBP_S)
            return APREPORT_CONV_BCAST_SPLIT;
        if (dst.kind == APREPORT_SBP_P)
            return APREPORT_CONV_BCAST_PSUM;
        return APREPORT_CONV_NONE;
    }
}

const char *apreport_conversion_name(ApreportConversion c)
{
    static const char *const names[] = {
        "none", "split->gather", "partial-sum->all-reduce", "partial-sum->reduce-scatter",
        "broadcast->split", "broadcast->partial-sum", "split->split", "split->partial-sum",
    };
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

const char *apreport_conversion_collective(ApreportConversion c)
{
    static const char *const names[] = {
        "none", "all-gather", "all-reduce", "reduce-scatter", "local slice",
        "zero non-root replicas", "all-to-all", "zero padding",
    };
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

int apreport_conversion_flagged(ApreportConversion c, const char *role)
{
    return c == APREPORT_CONV_BCAST_PSUM && role && !strcmp(role, "param");
}

ApreportVerdict apreport_verdict(const char *role, const char *name, const ApreportLayout *l)
{
    int split = 0, only_batch = 1;
    if (l->logical_a * l->logical_b <= 1)
        return APREPORT_VERDICT_SINGLE;
    for (int d = 0; d < l->ndim; d++)
        if (l->mesh_axis_of_dim[d] >= 0) {
            split = 1;
            if (d != 0)
                only_batch = 0;
        }
    if (role && !strcmp(role, "param")) {
        if (!split)
            return APREPORT_VERDICT_REPLICATED;
        return name && strstr(name, "opt_state") ? APREPORT_VERDICT_SHARDED_OPT
                                                 : APREPORT_VERDICT_SHARDED_WEIGHT;
    }
    if (!split)
        return APREPORT_VERDICT_ACT_REPLICATED;
    return only_batch ? APREPORT_VERDICT_BATCH_SHARDED : APREPORT_VERDICT_ACT_SHARDED;
}

const char *apreport_verdict_name(ApreportVerdict v)
{
    static const char *const names[] = {
        "single device",
        "replicated (data parallel)",
        "sharded weight (tensor/model parallel)",
        "sharded optimizer state",
        "sharded on the batch axis only (data parallel)",
        "replicated activation",
        "sharded activation (model parallel)",
    };
    return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}
