/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The FP8 recipes approf sweep --fp8-recipe prices (costdb/fp8_recipe.c,
 * docs/fp8.md): their names, as the sweep's options store them and the
 * launch files (reports/export_fp8.c) write them, and what each stores
 * and runs (profiler/sharding/program_fp8.c prices it).
 */
#ifndef COSTDB_FP8_RECIPE_H
#define COSTDB_FP8_RECIPE_H

/* FP8 recipes (ApprofHardwareSpec.fp8, the sweep's options'
 * fp8_recipe), named as Megatron-LM core_v0.19.0's --fp8-recipe
 * choices. */
typedef enum {
    COSTDB_FP8_NONE = 0,
    COSTDB_FP8_DELAYED = 1,    /* TE DelayedScaling */
    COSTDB_FP8_TENSORWISE = 2, /* TE Float8CurrentScaling */
    COSTDB_FP8_MXFP8 = 3,      /* TE MXFP8BlockScaling (Blackwell) */
    COSTDB_FP8_BLOCKWISE = 4   /* TE Float8BlockScaling */
} CostdbFp8RecipeId;
/* What a recipe stores and runs, per Transformer Engine's tensors. */
typedef struct {
    const char *name;         /* Megatron's --fp8-recipe value */
    const char *te_recipe;    /* TE's recipe class, for messages */
    double act_copy_bytes;    /* bytes an element of one quantized copy of an
                               * input or output gradient (data and scales) */
    double weight_copy_bytes; /* the same for a weight */
    int amax_pass;            /* 1: the amax is a kernel of its own before
                               * each cast, reading the tensor (current
                               * scaling) */
    int needs_mx_cores;       /* 1: block-scaled MX tensor cores (Blackwell) */
    int per_tensor;           /* 1: one scale per tensor (TE's Float8Tensor),
                               * which a card with non-TN FP8 GEMMs uses in
                               * both layouts: no transposed copy */
} CostdbFp8Recipe;
/* The recipe's facts; NULL for COSTDB_FP8_NONE or an unknown value. */
const CostdbFp8Recipe *costdb_fp8_recipe(int recipe);
/* The recipe named s; -1 when unknown. */
int costdb_fp8_recipe_parse(const char *s);
/* The recipe a sweep's options (JSON, as profiler/sweep/sweep_db.c writes
 * them) say it priced: COSTDB_FP8_NONE without "precision":"fp8", else
 * its "fp8_recipe" (delayed when it names none); *fp8_params (may be NULL)
 * 1 when they say "fp8_param_gather":1 (FP8 primary weights), else 0. */
int costdb_fp8_of_options(const char *options, int *fp8_params);
/* The quantized copies Transformer Engine keeps of an FP8 weight under
 * recipe: one where a per-tensor recipe runs on a card with non-TN FP8
 * GEMMs (non_tn: Blackwell, a spec with FP4 tensor cores), else the
 * row-wise and the column-wise two (docs/fp8.md, "Memory"). */
int costdb_fp8_weight_copies(int recipe, int non_tn);
/* Bytes an element of a weight run in FP8 under recipe holds beyond its
 * es-byte 16-bit copy (profiler/sharding/program_fp8.c, shard_fp8_weights):
 * `copies` quantized copies of the recipe's weight_copy_bytes, less the
 * 16-bit copy where the FP8 copies are the weights (fp8_params: the
 * spec's fp8_param_gather under ZeRO 0-2). 0 for COSTDB_FP8_NONE. */
double costdb_fp8_weight_extra_bytes(int recipe, int copies, int fp8_params, double es);
/* The kernels a cast of one activation or output gradient launches under
 * recipe, as the stage program prices them (profiler/sharding/
 * program_fp8.c, push_cast; docs/fp8.md, "The casts TE adds"): 4 under
 * current scaling (Transformer Engine's quantize zeroes the amax, takes
 * it, computes the scale from it, then casts), else 1 (the amax inside
 * the cast); 0 for COSTDB_FP8_NONE. */
int costdb_fp8_cast_kernels(int recipe);
/* Of those, the kernels on the amax and scale alone (2 under current
 * scaling: the zeroing and the scale; else 0), which a quantize of linear
 * layers that share one input (q, k and v; gate and up: one TE module)
 * runs once for their output gradients in the backward (push_cast). */
int costdb_fp8_cast_scale_kernels(int recipe);

#endif
