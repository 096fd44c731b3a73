/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Appending to a stage program (program_int.h): a kernel with its
 * signature digest, a collective, and the kernel digest's rule
 * (program.h), shared by every step of the builder (program.c and the
 * files of its parts).
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "grow.h"
#include "sharding/program_int.h"

/* Appends kernel k of op to phase ph, and its digest to dig[ph] (the
 * signature's, same length): a run of one. */
int shard_push_kernel(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                      const ApprofKernel *k, ApprofHash128 d, int op)
{
    return shard_push_kernels(p, ph, cap, dig, k, &d, 1, op);
}

int shard_reserve_kernels(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                          size_t n)
{
    size_t at = p->n_kernels[ph], ck = *cap, cd = *cap; /* one capacity for both arrays */
    if (at + n > *cap) {
        if (APPROF_BLOCK_GROW(p->kernels[ph], ck, at + n) < 0 || UTIL_GROW(dig[ph], cd, at + n) < 0)
            return APPROF_ENOMEM;
        *cap = ck < cd ? ck : cd;
    }
    return 0;
}

/* An assignment of a kernel (ApprofKernel, 304 bytes) compiles to `rep
 * movsq`, whose start costs this machine's AMD EPYC about twice a vector
 * copy of the same bytes (15 against 6.5 ns a kernel in a loop of such
 * copies; timer profile of the 80-layer llama-3-70b full sweep: 64 % of
 * shard_push_kernels' samples on that instruction, callgrind counting it
 * as one). memcpy's size is not known here, so the compiler calls the C
 * library's, which copies with vector moves: the same bytes. */
void shard_copy_kernels(ApprofKernel *to, const ApprofKernel *from, size_t n)
{
    memcpy(to, from, n * sizeof *to);
}

int shard_push_kernels(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                       const ApprofKernel *k, const ApprofHash128 *d, int n, int op)
{
    size_t at = p->n_kernels[ph];
    if (n <= 0)
        return 0;
    if (at + (size_t)n > *cap && shard_reserve_kernels(p, ph, cap, dig, (size_t)n))
        return APPROF_ENOMEM;
    /* one or two kernels a call mostly: the digests assigned, the
     * kernels copied by memcpy (shard_copy_kernels), then marked */
    ApprofKernel *to = &p->kernels[ph][at];
    ApprofHash128 *dto = &dig[ph][at];
    for (int i = 0; i < n; i++)
        dto[i] = d[i];
    shard_copy_kernels(to, k, (size_t)n);
    for (int i = 0; i < n; i++) {
        to[i].op = op;
        to[i].async_group = to[i].async_wgrad = 0;
    }
    p->n_kernels[ph] = at + (size_t)n;
    return 0;
}

ApprofHash128 shard_kernel_digest(const ApprofKernel *k)
{
    ApprofHash128 h;
    approf_hash128_init(&h, 0x6b);
    int64_t w[15] = {k->kind, 0, 0, k->batch, k->m, k->n, k->k, k->conv_n, k->conv_c,
                     k->conv_h, k->conv_w, k->conv_k, k->conv_r, k->conv_s, k->elements};
    memcpy(&w[1], &k->flops, sizeof(double));
    memcpy(&w[2], &k->bytes, sizeof(double));
    approf_hash128_update(&h, w, sizeof(w));
    return h;
}

int shard_colls_room(ApprofStageProgram *p, int ph, size_t *cap, size_t need)
{
    ApprofCollShare *s = p->coll_share[ph];
    if (!s)
        return need <= *cap || APPROF_BLOCK_GROW(p->colls[ph], *cap, need) == 0 ? 0
                                                                               : APPROF_ENOMEM;
    /* a shared array is read-only: the phase's first n_colls copied into
     * one of its own, with room for what an end appends (ZeRO's
     * collectives, a few per op: two more per op of the program's
     * range), so that it is seldom grown (copied) again */
    size_t n = p->n_colls[ph];
    size_t room = need + 2 * (size_t)(p->op_end > p->op_begin ? p->op_end - p->op_begin : 1);
    ApprofCollective *c = approf_block_take(room * sizeof *c);
    if (!c)
        return APPROF_ENOMEM;
    if (n)
        memcpy(c, p->colls[ph], n * sizeof *c);
    approf_coll_share_release(s);
    p->coll_share[ph] = NULL;
    p->colls[ph] = c;
    *cap = room;
    return 0;
}

int shard_push_coll(ApprofStageProgram *p, int ph, size_t *cap, const ApprofCollective *c)
{
    if (c->group_size <= 1 || !(c->bytes > 0))
        return 0;
    if (p->n_colls[ph] >= *cap && shard_colls_room(p, ph, cap, p->n_colls[ph] + 1))
        return APPROF_ENOMEM;
    p->colls[ph][p->n_colls[ph]++] = *c;
    return 0;
}

