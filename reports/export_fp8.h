/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: FP8 training in the launch files (reports/export_fp8.c,
 * docs/fp8.md "Launch files"). Not installed.
 */
#ifndef APREPORT_EXPORT_FP8_H
#define APREPORT_EXPORT_FP8_H

#include <stdio.h>

#include "launch.h"

/* How the plan's sweep was priced (its options, written by
 * profiler/sweep/sweep_db.c): REP_FP8_NONE for 16-bit training, else the
 * recipe (a CostdbFp8RecipeId, costdb/fp8_recipe.h: REP_FP8_DELAYED is
 * Transformer Engine's delayed scaling, approf sweep --fp8; the others
 * --fp8-recipe's), with REP_FP8_PARAMS set for FP8 primary weights (the
 * spec's fp8_param_gather). REP_FP8_RECIPE masks the recipe. */
enum {
    REP_FP8_NONE = 0,
    REP_FP8_DELAYED = 1,
    REP_FP8_RECIPE = 0x0f,
    REP_FP8_PARAMS = 0x10
};
int rep_fp8_of(const ApreportReport *r);

/* The launch context's precision facts (" precision=fp8 fp8_params=N
 * priced_recipe=R", "" for 16-bit), which the manifests' FP8 rules
 * read. */
const char *rep_fp8_context(int fp8);

/* Megatron-LM: the NeMo keys appended to its comment line, and the FP8
 * arguments (or what core_v0.19.0 cannot express of them). */
void rep_fp8_nemo(int fp8, FILE *f);
void rep_fp8_megatron(const RepLaunch *L, int fp8, FILE *f);

/* DeepSpeed: its header line (its config has no FP8 key). */
void rep_fp8_deepspeed_notes(RepLaunch *L, int fp8);

/* torchtitan: the header lines (what v0.2.2 and main cannot express), the
 * [model] converters key (inside [model]) and the [compile] and
 * [quantize.linear.float8] tables. */
void rep_fp8_torchtitan_notes(RepLaunch *L, int fp8);
void rep_fp8_torchtitan_converters(int fp8, FILE *f);
void rep_fp8_torchtitan_tables(const RepLaunch *L, int fp8, int fsdp_shards, FILE *f);
void rep_fp8_torchtitan_main(int fp8, FILE *f);

#endif
