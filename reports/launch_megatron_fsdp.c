/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Megatron-FSDP in the Megatron-LM file (launch_megatron_fsdp.h). Read at
 * Megatron-LM core_v0.19.0 (5be9626709af):
 *
 * - megatron/training/arguments.py: --data-parallel-sharding-strategy
 *   {no_shard, optim, optim_grads, optim_grads_params} (line 3023),
 *   --outer-dp-sharding-strategy {no_shard, optim} (3026),
 *   --suggested-communication-unit-size (3040),
 *   --num-distributed-optimizer-instances (3049); --use-megatron-fsdp is
 *   DistributedInitConfig.use_megatron_fsdp (training/config/common_config.py
 *   line 92), --ckpt-format training/config/training_config.py line 486's
 *   Literal. validate_args (1100-1164) turns the distributed optimizer on,
 *   asserts --ckpt-format fsdp_dtensor and CUDA_DEVICE_MAX_CONNECTIONS not 1.
 * - megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py:
 *   with a unit size given, the all-gather prefetch window is half of it
 *   and the reduce-scatter queue holds it (lines 419-444; the 1e9-element
 *   floor applies only when none is given); optim_grads_params forces both
 *   overlaps on (327-337).
 * - param_and_grad_buffer.py: AllGatherPipeline.all_gather_params adds the
 *   next bucket groups while the prefetched elements stay under the window
 *   (4479-4505), GradReducePipeline.wait_for_previous_grad_reduce waits for
 *   the oldest reduce-scatters while the queue holds more than its capacity
 *   (3917-3942), bucket sizes are the unsharded, padded elements (367-372).
 *
 * So a unit size U with 2 <= U < every layer's elements makes both windows
 * one layer: the next layer's gather issued as a layer starts, and a
 * layer's backward waiting for the reduce-scatter issued two layers
 * before: FSDP2's schedule (docs/variants.md, "Megatron-FSDP"). U = the
 * smallest layer's elements / 2.
 */
#include <stdlib.h>
#include <string.h>

#include "costdb_text.h"
#include "launch_megatron_fsdp.h"

/* The elements of placement t on one rank of the tp axis (logical axis 1
 * of mesh (a, b)): the whole tensor over the pieces axis 1 cuts it in. */
static int64_t tp_local_elements(const RepTensor *t, int b)
{
    int64_t dims[COSTDB_MAX_DIMS], n = 1;
    int nd = costdb_shape_parse(t->pl.shape, dims, COSTDB_MAX_DIMS), split = 0;
    if (nd < 0)
        return 0;
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    for (int d = 0; t->layout_ok && d < t->layout.ndim && d < COSTDB_MAX_DIMS; d++)
        split |= t->layout.mesh_axis_of_dim[d] == 1 || t->layout.mesh_axis_of_dim[d] == 2;
    return split && b > 1 ? n / b : n;
}

int64_t rep_megatron_fsdp_unit(const ApreportReport *r, char *why, size_t len)
{
    char (*keys)[COSTDB_BLOCK_KEY_MAX] = calloc(REP_MAX_BLOCKS, sizeof *keys);
    int64_t *elems = calloc(REP_MAX_BLOCKS, sizeof *elems), best = 0;
    int n = 0;
    if (!keys || !elems) {
        snprintf(why, len, "out of memory");
        free(keys);
        free(elems);
        return 0;
    }
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        for (size_t i = 0; i < s->n_tensors; i++) {
            const RepTensor *t = &s->tensors[i];
            char key[COSTDB_BLOCK_KEY_MAX];
            int j;
            if (strcmp(t->pl.role, "param"))
                continue;
            costdb_block_key(t->pl.tensor_name, key, sizeof key);
            if (!key[0])
                continue; /* embeddings, final norm, head: not a TransformerLayer */
            for (j = 0; j < n && strcmp(keys[j], key); j++)
                ;
            if (j == n) {
                if (n == REP_MAX_BLOCKS)
                    continue;
                snprintf(keys[n++], sizeof keys[0], "%s", key);
            }
            elems[j] += tp_local_elements(t, s->st.logical_b);
        }
    }
    for (int j = 0; j < n; j++)
        if (elems[j] > 0 && (best == 0 || elems[j] < best))
            best = elems[j];
    if (best < 4)
        snprintf(why, len, "no parameter placement names a transformer block (a path "
                           "starting 'h.N', 'model.layers.N')");
    free(keys);
    free(elems);
    return best < 4 ? 0 : best;
}

/* One argument: a line of its own, or after a space on the current line. */
static void arg_out(FILE *f, int one_line, const char *flag, const char *value)
{
    if (one_line)
        fputc(' ', f);
    fputs(flag, f);
    if (value) {
        fputc(' ', f);
        fputs(value, f);
    }
    if (!one_line)
        fputc('\n', f);
}

void rep_megatron_fsdp_args(const RepLaunch *L, FILE *f, int one_line)
{
    char b[32];
    if (L->variant.zero < 2)
        return;
    arg_out(f, one_line, "--use-megatron-fsdp", NULL);
    arg_out(f, one_line, "--data-parallel-sharding-strategy",
            L->variant.zero == 3 ? "optim_grads_params" : "optim_grads");
    arg_out(f, one_line, "--ckpt-format", "fsdp_dtensor");
    if (L->variant.zero == 3 && L->fsdp_unit > 0) {
        snprintf(b, sizeof b, "%lld", (long long)(L->fsdp_unit / 2));
        arg_out(f, one_line, "--suggested-communication-unit-size", b);
    }
    if (L->dp_shard > 0 && L->dp > L->dp_shard) {
        /* the outer (replicated) dimension; the inner groups are
         * consecutive dp ranks (parallel_state.py 984-995) */
        snprintf(b, sizeof b, "%d", L->dp / L->dp_shard);
        arg_out(f, one_line, "--num-distributed-optimizer-instances", b);
    }
}

void rep_megatron_fsdp_comments(const RepLaunch *L, FILE *f)
{
    if (L->variant.zero < 2)
        return;
    fprintf(f, "# launch context: zero=%d", L->variant.zero);
    if (L->dp_shard > 0)
        fprintf(f, " dp_shard=%d", L->dp_shard);
    if (L->variant.zero == 3 && L->fsdp_unit > 0)
        fprintf(f, " fsdp_unit=%lld", (long long)L->fsdp_unit);
    fputs("\n# Megatron-FSDP: leave CUDA_DEVICE_MAX_CONNECTIONS unset or above 1 (validate_args "
          "asserts it is not 1)\n", f);
}
