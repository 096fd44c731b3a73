/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stage variant (docs/variants.md) as one value: the memory level of a
 * stage's sharding solution, its activation recomputation and its ZeRO
 * stage, and the variant space a sweep enumerates (the levels, modes and
 * stages it profiles). costdb owns them because the database stores both
 * (sweep_config's three columns, the sweep's options); the profiler, the
 * solver and the reports hold and compare variants through this header
 * only. Header of costdb.h; libc only apart from costdb/variant.c.
 */
#ifndef COSTDB_VARIANT_H
#define COSTDB_VARIANT_H

#ifdef __cplusplus
extern "C" {
#ifdef __cplusplus
}
#endif

#endif

/* Activation recomputation of a stage variant (docs/variants.md). */
typedef enum {
    COSTDB_RECOMPUTE_NONE = 0,        /* keep every saved activation */
    COSTDB_RECOMPUTE_SELECTIVE,       /* recompute attention scores/softmax (Megatron) */
    COSTDB_RECOMPUTE_FULL,            /* keep layer inputs, rerun the forward in backward */
    COSTDB_RECOMPUTE_OP,              /* torchtitan's per-op selective AC: save every other
                                       * matmul and attention, rerun the rest (schema 11) */
    COSTDB_RECOMPUTE_COUNT
} CostdbRecompute;

/* The highest ZeRO stage: optimizer state (1), + gradients (2), +
 * parameters (3) sharded across the data-parallel replicas. */
#define COSTDB_ZERO_MAX 3

/* "none" | "selective" | "full" | "op" (NULL for an out-of-range value). */
const char *costdb_recompute_name(int r);
/* The CostdbRecompute of name, or -1. */
int costdb_recompute_parse(const char *name);
/* Of two recomputation modes, the one that keeps less (the more
 * conservative for memory): none < selective < op < full. */
int costdb_recompute_max(int a, int b);

/* One stage variant. Memory level 0, recompute none and ZeRO 0 is Alpa's
 * plain config. Where a struct says so, a field < 0 means "unknown" or
 * "any" (a plan's stage given without its variant, a pattern to match). */
typedef struct CostdbVariant {
    int memory_level;                 /* >= 0: point of the stage's time/memory Pareto set,
                                       * 0 the fastest (Alpa's ILP optimum) */
    int recompute;                    /* a CostdbRecompute */
    int zero;                         /* ZeRO stage 0..COSTDB_ZERO_MAX */
} CostdbVariant;

/* Whether a and b are the same variant, field by field. */
static inline int costdb_variant_equal(CostdbVariant a, CostdbVariant b)
{
    return a.memory_level == b.memory_level && a.recompute == b.recompute && a.zero == b.zero;
}

/* Whether a and b recompute alike and have the same ZeRO stage: what a
 * framework sets for a run (the memory level is the sharding's). */
static inline int costdb_variant_same_settings(CostdbVariant a, CostdbVariant b)
{
    return a.recompute == b.recompute && a.zero == b.zero;
}

/* Whether v is Alpa's plain config (0, none, 0). */
static inline int costdb_variant_is_plain(CostdbVariant v)
{
    return v.memory_level == 0 && v.recompute == COSTDB_RECOMPUTE_NONE && v.zero == 0;
}

/* Whether v matches pattern: each field of pattern < 0 (any) or equal. */
static inline int costdb_variant_matches(CostdbVariant pattern, CostdbVariant v)
{
    return (pattern.memory_level < 0 || pattern.memory_level == v.memory_level) &&
           (pattern.recompute < 0 || pattern.recompute == v.recompute) &&
           (pattern.zero < 0 || pattern.zero == v.zero);
}

/* The more conservative of a and b for memory, field by field: the higher
 * memory level, the recomputation that keeps less (costdb_recompute_max),
 * the higher ZeRO stage. What a plan's stages run under one framework
 * setting (apsolve's framework rule, apreport's launch files). */
CostdbVariant costdb_variant_max(CostdbVariant a, CostdbVariant b);

/* Whether v may be stored: memory level >= 0, a known recomputation mode,
 * ZeRO 0..COSTDB_ZERO_MAX. */
int costdb_variant_valid(CostdbVariant v);

/* The variants a sweep profiles (approf sweep --memory-levels, --recompute,
 * --zero, --variants): memory levels 0..K-1 and the recomputation modes
 * and ZeRO stages whose bits are set (bit CostdbRecompute, bit z). Zero
 * fields read as Alpa's plain space: one level, none only, ZeRO 0 only. */
typedef struct CostdbVariantSpace {
    int memory_levels;                /* K; 0 reads as 1 */
    unsigned recompute_mask;          /* 0 reads as 1 (none) */
    unsigned zero_mask;               /* 0 reads as 1 (ZeRO 0) */
} CostdbVariantSpace;

/* s with its zero fields read as their defaults (levels 1, masks 1): the
 * space a sweep enumerates. */
CostdbVariantSpace costdb_variant_space_resolve(CostdbVariantSpace s);
/* Whether s (resolved) is Alpa's plain space: one level, none, ZeRO 0. */
int costdb_variant_space_is_plain(CostdbVariantSpace s);

#ifdef __cplusplus
}
#endif

#endif
