/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two steps of a stage program's build made cheaper (docs/performance.md,
 * "The memory levels' builds: where the full space's extra goes"):
 *
 * - shard_reshard skips an axis that both layouts split alike (or both
 *   leave whole) with no partial sum, without working out the group's
 *   bytes (shard_reshard_axis_idle), and the build does not call it where
 *   both axes are idle. Checked against the rule as it was (every axis of size > 1
 *   walked, reference_reshard below, a copy of the code before the
 *   change) on every pair of layouts of a 3-d tensor (each axis: dim -1
 *   to 2, both axes on one dim included), every partial flag pair and
 *   both regather values, on five logical meshes (one or both axes of
 *   size 1 included): the same collectives, field for field, bit for bit,
 *   and none exactly where both axes are idle.
 * - shard_push_kernels appends a run of kernels with room made once, as
 *   that many shard_push_kernel calls would: the same kernels (op set,
 *   async marks cleared), the same digests, the same count, from arrays
 *   too small for the run and from none.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "sharding/program_int.h"
#include "sharding/sharding_mesh.h"

/* Bytes of t in layout L with axis x undone (sharding_mesh.c). */
static double reference_group_bytes(const ApprofTensor *t, ShardLayout L, int x,
                                    const ShardMesh *m)
{
    L.d[x] = -1;
    return shard_local_bytes(t, L, m);
}

/* shard_reshard before the change: the group's bytes of every axis of
 * size > 1 computed, then the cases. */
static void reference_reshard(const ShardMesh *m, const ApprofTensor *t, ShardLayout lp,
                              ShardLayout lc, const int partial[2], int regather,
                              ApprofCollective *fwd, int *nf, ApprofCollective *bwd, int *nb)
{
    *nf = *nb = 0;
    for (int x = 0; x < 2; x++) {
        if (m->n[x] <= 1)
            continue;
        int p = lp.d[x], c = lc.d[x];
        double gb = reference_group_bytes(t, lc, x, m);
        int g0 = *nf;
        if (p >= 0 && c < 0)
            fwd[(*nf)++] = shard_coll(m, APPROF_COLL_ALL_GATHER, x,
                                      reference_group_bytes(t, lp, x, m), -1);
        else if (p >= 0 && c >= 0 && p != c)
            fwd[(*nf)++] = shard_coll(m, APPROF_COLL_ALL_TO_ALL, x, gb, -1);
        if (regather && *nf > g0)
            bwd[(*nb)++] = fwd[g0];
        int g1 = *nb;
        if (partial[x])
            bwd[(*nb)++] = shard_coll(
                m, p >= 0 ? APPROF_COLL_REDUCE_SCATTER : APPROF_COLL_ALL_REDUCE, x, gb, -1);
        else if (p < 0 && c >= 0)
            bwd[(*nb)++] = shard_coll(m, APPROF_COLL_ALL_GATHER, x, gb, -1);
        else if (p >= 0 && c >= 0 && p != c)
            bwd[(*nb)++] = shard_coll(m, APPROF_COLL_ALL_TO_ALL, x, gb, -1);
        if (*nb > g1)
            bwd[g1].async_wgrad = 1;
    }
}

static int same_coll(const ApprofCollective *a, const ApprofCollective *b)
{
    return a->kind == b->kind && a->axes == b->axes && a->group_size == b->group_size &&
           a->crosses_hosts == b->crosses_hosts && !memcmp(&a->bytes, &b->bytes, sizeof a->bytes) &&
           a->op == b->op && a->hosts == b->hosts && a->span_hosts == b->span_hosts &&
           a->async_group == b->async_group && a->async_wgrad == b->async_wgrad &&
           a->blocking == b->blocking && a->zero3_unit == b->zero3_unit;
}

static void test_reshard_equals_reference(void)
{
    static const int meshes[][4] = {{1, 8, 2, 4}, {1, 8, 8, 1}, {1, 8, 1, 8}, {2, 8, 4, 4},
                                    {1, 1, 1, 1}};
    ApprofTensor t;
    memset(&t, 0, sizeof t);
    t.dtype = APPROF_BF16;
    t.ndim = 3;
    t.dims[0] = 8;
    t.dims[1] = 2048;
    t.dims[2] = 4096;
    t.batch_dim = 0;
    t.producer = -1;
    int cases = 0, bad = 0, moved = 0;
    for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
        ShardMesh m;
        shard_mesh_init(&m, meshes[mi][0], meshes[mi][1], meshes[mi][2], meshes[mi][3]);
        for (int code = 0; code < 4 * 4 * 4 * 4; code++) {
            ShardLayout lp = {{code % 4 - 1, code / 4 % 4 - 1}};
            ShardLayout lc = {{code / 16 % 4 - 1, code / 64 % 4 - 1}};
            for (int flags = 0; flags < 8; flags++) {
                int partial[2] = {flags & 1, (flags >> 1) & 1}, regather = (flags >> 2) & 1;
                ApprofCollective f[2], b[4], rf[2], rb[4];
                int nf, nb, rnf, rnb;
                memset(f, 0, sizeof f);
                memset(b, 0, sizeof b);
                memset(rf, 0, sizeof rf);
                memset(rb, 0, sizeof rb);
                CU_ASSERT_EQUAL(shard_reshard(&m, &t, lp, lc, partial, regather, f, &nf, b, &nb),
                                0);
                reference_reshard(&m, &t, lp, lc, partial, regather, rf, &rnf, rb, &rnb);
                int same = nf == rnf && nb == rnb;
                for (int q = 0; same && q < nf; q++)
                    same = same_coll(&f[q], &rf[q]);
                for (int q = 0; same && q < nb; q++)
                    same = same_coll(&b[q], &rb[q]);
                /* the build calls shard_reshard only where an axis is
                 * not idle (program.c, reshard_input): exactly where
                 * the rule moves something */
                int idle = shard_reshard_axis_idle(&m, lp, lc, partial, 0) &&
                           shard_reshard_axis_idle(&m, lp, lc, partial, 1);
                bad += !same || idle != (rnf + rnb == 0);
                moved += rnf + rnb > 0;
                cases++;
            }
        }
    }
    CU_ASSERT_EQUAL(cases, 5 * 256 * 8);
    CU_ASSERT_EQUAL(bad, 0);
    /* the cases with collectives are there, not only the skipped ones */
    CU_ASSERT(moved > cases / 4);
    CU_ASSERT(moved < cases);
}

static void fill_kernel(ApprofKernel *k, int i)
{
    memset(k, 0, sizeof *k);
    k->kind = (ApprofKernelKind)(i % 3);
    k->m = 64 + i;
    k->n = 128 + 3 * i;
    k->k = 32 + 5 * i;
    k->flops = 1.5e9 + i;
    k->bytes = 2.5e6 * (i + 1);
    k->op = 1000 + i;         /* overwritten by the push */
    k->async_group = 7 + i;   /* cleared by the push */
    k->async_wgrad = 1;
}

static void test_push_kernels_equal_single_pushes(void)
{
    enum { RUN = 40 };
    ApprofKernel src[RUN];
    ApprofHash128 dsrc[RUN];
    for (int i = 0; i < RUN; i++) {
        fill_kernel(&src[i], i);
        dsrc[i] = shard_kernel_digest(&src[i]);
    }
    int bad = 0;
    for (size_t cap0 = 0; cap0 <= 5; cap0 += 5)
        for (int n = 0; n <= RUN; n += 3) {
            ApprofStageProgram a, b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            ApprofHash128 *da[2] = {NULL, NULL}, *db[2] = {NULL, NULL};
            size_t capa = cap0, capb = cap0;
            if (cap0) {
                a.kernels[1] = malloc(cap0 * sizeof *a.kernels[1]);
                b.kernels[1] = malloc(cap0 * sizeof *b.kernels[1]);
                da[1] = malloc(cap0 * sizeof *da[1]);
                db[1] = malloc(cap0 * sizeof *db[1]);
                CU_ASSERT_FATAL(a.kernels[1] && b.kernels[1] && da[1] && db[1]);
            }
            /* a first kernel, then the run of n behind it */
            CU_ASSERT_EQUAL(shard_push_kernel(&a, 1, &capa, da, &src[0], dsrc[0], 3), 0);
            CU_ASSERT_EQUAL(shard_push_kernel(&b, 1, &capb, db, &src[0], dsrc[0], 3), 0);
            for (int i = 0; i < n; i++)
                CU_ASSERT_EQUAL(shard_push_kernel(&a, 1, &capa, da, &src[i], dsrc[i], 42), 0);
            CU_ASSERT_EQUAL(shard_push_kernels(&b, 1, &capb, db, src, dsrc, n, 42), 0);
            int same = a.n_kernels[1] == b.n_kernels[1] && a.n_kernels[1] == (size_t)n + 1 &&
                       capb >= b.n_kernels[1];
            for (size_t i = 0; same && i < a.n_kernels[1]; i++)
                same = !memcmp(&a.kernels[1][i], &b.kernels[1][i], sizeof a.kernels[1][i]) &&
                       !memcmp(&da[1][i], &db[1][i], sizeof da[1][i]) &&
                       b.kernels[1][i].op == (i ? 42 : 3) && !b.kernels[1][i].async_group &&
                       !b.kernels[1][i].async_wgrad;
            bad += !same;
            free(a.kernels[1]);
            free(b.kernels[1]);
            free(da[1]);
            free(db[1]);
        }
    CU_ASSERT_EQUAL(bad, 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a reshard's collectives equal the rule's before the skip", test_reshard_equals_reference},
        {"a run of kernels pushed at once equals single pushes",
         test_push_kernels_equal_single_pushes},
    };
    return cunit_run("sharding build push", tests, sizeof tests / sizeof tests[0]);
}
