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

#endif
