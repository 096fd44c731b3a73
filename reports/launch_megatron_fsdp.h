/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the Megatron-LM file's ZeRO-2, ZeRO-3 and HSDP, run by
 * Megatron-FSDP (reports/launch_megatron_fsdp.c; docs/export-megatron.md
 * "ZeRO-2, ZeRO-3 and HSDP: Megatron-FSDP"). Not installed.
 */
#ifndef APREPORT_LAUNCH_MEGATRON_FSDP_H
#define APREPORT_LAUNCH_MEGATRON_FSDP_H

#include <stdint.h>
#include <stdio.h>

#include "launch.h"

/* The parameter elements of the smallest transformer block of the plan on
 * one tensor-parallel rank (Megatron-FSDP's unit under optim_grads_params
 * is a TransformerLayer, its bucket that layer's tp-local parameters,
 * unsharded): from the stages' parameter placements, each block by its
 * block key (costdb_block_key), divided by the pieces the tp axis cuts it
 * into. 0 with why when no placement names a block. */
int64_t rep_megatron_fsdp_unit(const ApreportReport *r, char *why, size_t len);

/* The Megatron-FSDP arguments of L (ZeRO 2 or 3; nothing otherwise):
 * --use-megatron-fsdp, the sharding strategy, --ckpt-format fsdp_dtensor,
 * for ZeRO-3 the unit size that makes its prefetch and reduce-scatter
 * queue one layer (L->fsdp_unit / 2), for HSDP the optimizer instances;
 * one per line, or (one_line) each after a space, as the plan as code
 * writes them (reports/code.c). */
void rep_megatron_fsdp_args(const RepLaunch *L, FILE *f, int one_line);

/* The comment lines of a Megatron-FSDP file: its launch context (zero=Z,
 * dp_shard=S, fsdp_unit=U, which the manifest's megatron-fsdp rules read)
 * and the CUDA_DEVICE_MAX_CONNECTIONS it needs. Nothing for ZeRO 0 or 1. */
void rep_megatron_fsdp_comments(const RepLaunch *L, FILE *f);

#endif
