/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stage program builder's interface to the rest of the sharding pass
 * (program*.c): building the per-device program of a solved stage, and
 * the rules the ILP (sharding.c) and the memos (memo.c) share with it so
 * that they count what the program holds: a kernel's digest, gradient
 * accumulation, Adam's state and the checkpoint blocks.
 */
#ifndef APPROF_SHARDING_PROGRAM_H
#define APPROF_SHARDING_PROGRAM_H

#include "hash.h"
#include "stage.h"
#include "sharding/sharding_int.h"

/* Fills kernels, collectives, grad sync, memory, placements and the
 * signature of p from the solved stage. */
int shard_build_program(const ShardStage *st, ApprofStageProgram *p);

/* Signs p (stage.h, signature): its text from its request fields (submesh,
 * logical mesh, force_batch_dim, dtype, ilp_objective) and
 * signature_body, which the build computed. The one owner of the text's
 * format: a build signs its programs with it, and a program taken for
 * another request (program_twin.c) is signed again with it after its
 * request fields change. */
void shard_sign_program(ApprofStageProgram *p);

/* The 128-bit digest of a kernel as the program signature hashes it
 * (program_push.c owns the rule; every field but the source operator). */
ApprofHash128 shard_kernel_digest(const ApprofKernel *k);

/* The add kernel that puts elems fresh gradient elements into their
 * accumulation buffer, in the widths of st's spec (program_accum.c,
 * shard_push_grad_accum); the ILP prices the same kernel per strategy. */
void shard_grad_accum_kernel(const ShardStage *st, double elems, ApprofKernel *k);
/* Bytes of the gradient accumulation buffer per byte of a parameter of
 * the model's dtype (program_accum.c, the one owner): the width the gradients
 * are accumulated and reduced in (the spec's grad_reduce_bytes: Megatron's
 * f32 main_grad for 16-bit models, 2 for a bf16 model) over the model's
 * width; 1 when the spec leaves it to the model's dtype. Used for the
 * buffer's memory (program.c, program_zero.c) and the ILP's node memory
 * (sharding.c), so that a level's bytes are those the program keeps. */
double shard_grad_buffer_ratio(const ShardStage *st);

/* Adam's resident bytes a parameter param_bytes wide keeps beyond the
 * weight, in the widths of the stage's spec (its optimizer_* fields):
 * costdb's one rule (costdb_adam_state_bytes; docs/megatron-memory.md;
 * program_accum.c). */
double shard_adam_state_bytes(const ShardStage *st, double param_bytes);

/* The first op of each checkpoint block of the stage (program_memory.c,
 * the one owner of the rule: docs/variants.md); begin has n_ops entries. Returns
 * the number of blocks. */
int shard_stage_blocks(const ShardStage *st, int *begin);

#endif
