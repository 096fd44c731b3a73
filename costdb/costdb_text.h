/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The text formats the database stores (spec.c): Alpa's ShardingSpec of a
 * placement, shape text and dtype names. The profiler writes them, the
 * solver and the reports read them; this module is their one owner.
 */
#ifndef COSTDB_TEXT_H
#define COSTDB_TEXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COSTDB_MAX_DIMS 8

/* A tensor's layout on a logical mesh (a, b): per dimension the logical
 * axis it is split over, -1 for none, 2 for both axes at once. */
typedef struct CostdbLayout {
    int ndim;
    int mesh_axis_of_dim[COSTDB_MAX_DIMS];
    int logical_a, logical_b;
} CostdbLayout;

/* Formats l as Alpa's ShardingSpec text (after Alpa's
 * hlo_sharding_to_sharding_spec): one Chunked(k) per split dimension in
 * tensor order, then per logical axis of size > 1, in axis order,
 * ShardedAxis(axis=i) (i: the index among the chunked dimensions) or
 * Replicated(replicas=n); a dimension split over both axes is one
 * Chunked(a*b) with one entry; a fully replicated tensor has the single
 * entry Replicated(replicas=a*b). E.g.
 * "ShardingSpec((NoSharding(), Chunked(2)), (ShardedAxis(axis=0),))".
 * Truncates to len - 1 bytes; out is always terminated. */
void costdb_spec_format(const CostdbLayout *l, char *out, size_t len);
/* Parses ShardingSpec text (also Alpa's keyword form, "sharding=",
 * "chunks=[k]") for a tensor on logical mesh (a, b) into *out. 0;
 * COSTDB_EINVAL for a NULL text or a mesh below 1x1; COSTDB_EPARSE with
 * "column N: ..." in err when the text is malformed or does not fit the
 * mesh (a chunk count that is no mesh axis size, a mapping entry too many
 * or too few). */
struct CostdbPlacement;
/* Whether a placement on logical mesh (a, b) is a weight matrix (a
 * parameter of two or more dimensions) kept whole on every device of
 * logical axis 1, the axis a framework runs as tensor parallelism: 1 whole,
 * 0 split over axis 1 (alone or with axis 0: 1/b of it per device), -1 not
 * a weight matrix or a spec that does not parse. The one rule of apsolve's
 * and apreport's "priced whole over the tp axis" warnings. */
int costdb_weight_whole_on_axis1(const struct CostdbPlacement *pl, int a, int b);
/* Whether a placement on logical mesh (a, b) is an expert weight (a
 * parameter [.., E, in, out] whose path holds "/experts/", as the zoo's
 * and Hugging Face MoE layers name them): 0 with *ep the pieces its expert
 * dimension E is cut into, *etp those of its larger in/out split and
 * *experts E; -1 for any other placement or a spec that does not parse.
 * The one rule of apsolve's ep= and apreport's expert layout. */
int costdb_expert_split(const struct CostdbPlacement *pl, int a, int b, int *ep, int *etp,
                        int64_t *experts);
/* The device stride of the group an expert weight's larger in/out split
 * (costdb_expert_split's etp) runs over on logical mesh (a, b), the mesh
 * laid out row-major as the profiler lays it: 1 over axis 1 or both axes,
 * b over axis 0; -1 when it is no expert weight or its in/out dimensions
 * are whole. */
int costdb_expert_split_stride(const struct CostdbPlacement *pl, int a, int b);
/* Whether a placement on logical mesh (a, b) is an activation ([B, S, H]: a
 * stage input or output of three dimensions) split on the sequence over
 * logical axis 1, the tensor-parallel axis: 1 when it is (the sharding ILP
 * chose Megatron's sequence parallelism), 0 when not, -1 for a parameter,
 * another rank or a spec that does not parse. The one rule of apsolve's
 * verdict and apreport's launch files. */
int costdb_activation_seq_split(const struct CostdbPlacement *pl, int a, int b);
/* Transformer blocks, named as the frameworks count them (Megatron's
 * --num-layers): the block key of a parameter path is its first segment
 * when that ends in ".<digits>" ("h.3", "model.layers.3",
 * "encoder.layer.3"; "" when none, or longer than len - 1). */
#define COSTDB_BLOCK_KEY_MAX 96
void costdb_block_key(const char *name, char *key, size_t len);
/* Whether a parameter path is an attention weight: "attn" / "attention"
 * (Hugging Face, Flax) or the zoo gpt's and bert's "h.N/query",
 * "encoder.layer.N/key" projections. */
int costdb_attention_name(const char *name);
/* The placements of stage `stage`, one by one: NULL past its last. */
typedef const struct CostdbPlacement *(*CostdbPlacementAt)(const void *ctx, size_t stage,
                                                             size_t i);
/* The transformer blocks of each of nstages stages (blocks[k]) from their
 * parameters' block keys, a block holding an attention parameter
 * somewhere: 0; -2 with why when a block is split between two stages; -1
 * with why when the blocks are unknown (a stage without parameter
 * placements, no block holds attention, out of memory). */
int costdb_stage_blocks(CostdbPlacementAt at, const void *ctx, size_t nstages, int *blocks,
                        char *why, size_t whylen);
int costdb_spec_parse(const char *text, int logical_a, int logical_b, CostdbLayout *out,
                      char *err, size_t errlen);
/* Writes dims as shape text, "2048,8192" ("" for a scalar); truncates to
 * len - 1 bytes, out always terminated. */
void costdb_shape_format(const int64_t *dims, int n, char *out, size_t len);
/* Parses "2048,8192" (also "(2048, 8192)" and "[..]") into dims, at most
 * cap; returns the count, 0 for a scalar (""), or -1. */
int costdb_shape_parse(const char *s, int64_t *dims, int cap);
/* Bytes per element of a stored dtype name ("f32", "bf16", "float16",
 * "i8", ...); 4 for an unknown name. */
int costdb_dtype_bytes(const char *dtype);
/* Parses a sweep's shard text as approf sweep --shard writes it, "K/N":
 * decimal digits without sign, blank or leading zero, 0 <= K < N <= 2^20.
 * 0 with *k and *n set, or -1. */
int costdb_shard_parse(const char *s, int *k, int *n);
/* The string member key of a stored JSON object (a model's or sweep's
 * options, as the profiler writes them) into out (len bytes), read by the
 * one reader of stored JSON (costdb/json_read.c). 0 when found; -1 with out
 * "" when absent, not a string, longer than len - 1 or the text is not an
 * object. */
int costdb_json_member_text(const char *json, const char *key, char *out, size_t len);
/* The whole non-negative number member key (at most 2^53) of a stored JSON
 * object into *out, by the same reader. 0 when found; -1 with *out 0 when
 * absent, not such a number or the text is not an object. */
int costdb_json_member_int(const char *json, const char *key, long long *out);
/* The number member key of a stored JSON object (a hardware row's
 * capabilities) into *out, by the same reader. 0 when found; -1 with *out
 * 0 when absent, not a number or the text is not an object. */
int costdb_json_member_number(const char *json, const char *key, double *out);

#ifdef __cplusplus
}
#endif

#endif
