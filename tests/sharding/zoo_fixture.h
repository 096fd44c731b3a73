/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the sharding tests share: the zoo's GPT at round sizes (hidden
 * 1024, 16 heads, sequence 512, vocabulary 1024, batch 8, f16).
 */
#ifndef SHARDING_ZOO_FIXTURE_H
#define SHARDING_ZOO_FIXTURE_H

#include "graph.h"
#include "model/zoo.h"
#include "hardware.h"
#include "sharding/sharding.h"
#include "stage.h"

/* The zoo's model `model` at options o; a CUnit fatal assertion (after
 * the zoo's message on stderr) when the zoo refuses it. */
ApprofGraph *zoo_fixture_build(const char *model, const ApprofZooOptions *o);
/* o set to a small two-layer model (hidden 128, 4 heads, sequence 64,
 * vocabulary 512, batch 2) in dtype, the rest zero: the options the
 * sharding tests build their llama and mixtral graphs with. */
void zoo_fixture_small_options(ApprofZooOptions *o, const char *dtype);

/* That GPT with the given number of layers; a CUnit fatal assertion when
 * the zoo refuses it. */
ApprofGraph *zoo_fixture_gpt(int layers);

/* The zoo's MLP in f16 at the given batch and hidden size (0: the zoo's
 * default); a CUnit fatal assertion when the zoo refuses it. */
ApprofGraph *zoo_fixture_mlp(int64_t batch, int hidden);

/* One bf16 GPT layer for the FP8 tests: hidden 1024, 16 heads, sequence
 * 512, batch 2, vocabulary 2056 (a multiple of 8 and of no larger power of
 * two, so the LM head's GEMM is aligned for FP8 and not a round size). */
ApprofGraph *zoo_fixture_fp8_gpt_layer(void);

/* The whole of g as one stage (one layer of every op) on one host's `gpus`
 * GPUs, logical mesh (gpus, 1), no forced batch split, the series-parallel
 * ILP, one memory level, recomputation `recompute` and ZeRO stage `zero`,
 * priced on hw; returns approf_shard_stage's code (its message printed
 * when not 0). */
int zoo_fixture_shard_whole(const ApprofGraph *g, const ApprofHardwareSpec *hw, int gpus,
                            int recompute, int zero, ApprofStageProgram *p);

/* A graph as two layers (its ops halved) on an A100 spec: the layering
 * and hardware the sharding requests of several tests read. */
typedef struct {
    ApprofLayering l;
    int begin[2], end[2];
    ApprofHardwareSpec hw;
} ZooTwoLayers;

/* s set for g (a CUnit fatal assertion when the A100 spec is missing). */
void zoo_fixture_two_layers(ZooTwoLayers *s, const ApprofGraph *g);

/* req asked of ctx and of a fresh context on s (CUnit assertions): the
 * same code, and when both build, the same program
 * (zoo_fixture_same_program with placements). 1 when they built. */
int zoo_fixture_same_as_fresh(ApprofShardContext *ctx, const ApprofGraph *g,
                              const ZooTwoLayers *s, const ApprofShardRequest *req);
/* The same, the placements compared only when placements is nonzero (a
 * ZeRO program taken from its family keeps none). */
int zoo_fixture_same_as_fresh_with(ApprofShardContext *ctx, const ApprofGraph *g,
                                   const ZooTwoLayers *s, const ApprofShardRequest *req,
                                   int placements);

/* The request of layers [layer0, layer1) of a ZooTwoLayers graph on one
 * host's four GPUs, logical mesh (a, b), the series-parallel ILP, `levels`
 * memory levels: level `level`, recomputation `recompute`, the batch
 * forced onto the mesh when `force` (the context tests' request). */
ApprofShardRequest zoo_fixture_request(int layer0, int layer1, int a, int b, int force, int levels,
                                       int level, int recompute);

/* x and y have the same bits (a CUnit assertion). */
void zoo_fixture_same_bits(double x, double y);

/* d equals b field by field (CUnit assertions): the signature's two
 * parts, the request's fields, kernels, collectives, memory, and when
 * `placements` the placements (a derived ZeRO program keeps none). */
void zoo_fixture_same_program(const ApprofStageProgram *d, const ApprofStageProgram *b,
                              int placements);

#endif
