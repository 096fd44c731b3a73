/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A degree-2 step's table without its argmin (a replay's fill, which
 * takes two of z's strategies at a time where SSE2 is there: ilp_steps.c,
 * deg2_fill_pairs; docs/performance.md "Two of z's strategies at a time")
 * against the same plan's table with its argmin (the elimination's
 * scalar fill), bit for bit: every count of x's strategies that has an
 * instance of its own and some that do not (1 to 8 and 70), y's 1 to 5,
 * z's 1 to 7 (odd counts leave the scalar tail), both ends of each edge
 * (strides 1 and k: the loads of one z pair are adjacent or not), a new
 * table and one added into an edge of either orientation. Values on a
 * coarse grid with signed zeros and infinities, so that candidates tie
 * and a tie between -0 and +0 tells which candidate was kept. Likewise
 * the twin-pair step of a lone twin (pair_fill_lone_pairs, two of c's
 * strategies at a time): x 1 to 5 strategies, its twin 1 to 4 (the 3 x 2
 * and 4 x 3 instances, the general one in and past the pairs' limits), a
 * 1 to 3, c 1 to 5, every orientation of the three edges and the output.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "sharding/ilp_int.h"

#define MAXK 70

static double grid_value(unsigned *seed)
{
    static const double vals[] = {-0.0, 0.0, -0.0, 0.25, 0.5, 0.75, 1.0, INFINITY};
    return vals[rand_r(seed) % (sizeof vals / sizeof vals[0])];
}

static void fill_values(unsigned *seed, double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = grid_value(seed);
}

/* The step x (kx) with edge 0 to y (ky) and edge 1 to z (kz), x the
 * edges' u end or v end by the bits of orient; out into a new table
 * (acc_kind 0) or added into edge 2 between y and z (1: y its u end, 2:
 * its v end). Returns the number of entries whose bits differ between the
 * plan with the argmin and the plan without it. */
static int compare_step(unsigned *seed, int kx, int ky, int kz, int orient, int acc_kind)
{
    static double cx[MAXK], r1[MAXK * 8], r2[MAXK * 8], acc_a[64], acc_b[64], out_a[64],
        out_b[64];
    static int arg[64];
    WNode nodes[3];
    WEdge edges[3];
    Work w;
    memset(&w, 0, sizeof w);
    memset(nodes, 0, sizeof nodes);
    nodes[0].k = kx;
    nodes[1].k = ky;
    nodes[2].k = kz;
    nodes[0].c = cx;
    fill_values(seed, cx, (size_t)kx);
    fill_values(seed, r1, (size_t)kx * (size_t)ky);
    fill_values(seed, r2, (size_t)kx * (size_t)kz);
    fill_values(seed, acc_a, (size_t)ky * (size_t)kz);
    memcpy(acc_b, acc_a, sizeof acc_a);
    edges[0] = (WEdge){orient & 1 ? 1 : 0, orient & 1 ? 0 : 1, r1, 1};
    edges[1] = (WEdge){orient & 2 ? 2 : 0, orient & 2 ? 0 : 2, r2, 1};
    edges[2] = (WEdge){acc_kind == 2 ? 2 : 1, acc_kind == 2 ? 1 : 2, acc_a, 1};
    w.n = nodes;
    w.nn = 3;
    w.e = edges;
    w.ne = 3;
    StepOut oa = {acc_kind ? NULL : out_a, acc_kind ? &edges[2] : NULL, 1};
    Deg2Plan with_arg, without_arg;
    ilp_deg2_plan(&w, 0, 0, 1, arg, &oa, &with_arg, 1);
    CU_ASSERT_FATAL(ilp_deg2_run(&w, &with_arg) == 0);
    edges[2].r = acc_b;
    StepOut ob = {acc_kind ? NULL : out_b, acc_kind ? &edges[2] : NULL, 1};
    ilp_deg2_plan(&w, 0, 0, 1, NULL, &ob, &without_arg, 0);
    CU_ASSERT_FATAL(ilp_deg2_run(&w, &without_arg) == 0);
    const double *a = acc_kind ? acc_a : out_a, *b = acc_kind ? acc_b : out_b;
    int bad = 0;
    for (int i = 0; i < ky * kz; i++)
        bad += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    free(w.scratch); /* the steps' buffer (ilp_elim.c frees its own) */
    return bad;
}

static void test_pairs_equal_scalar(void)
{
    static const int kxs[] = {1, 2, 3, 4, 5, 6, 7, 8, 70};
    unsigned seed = 38;
    int steps = 0, bad = 0;
    for (size_t q = 0; q < sizeof kxs / sizeof kxs[0]; q++)
        for (int ky = 1; ky <= 5; ky++)
            for (int kz = 1; kz <= 7; kz++)
                for (int orient = 0; orient < 4; orient++)
                    for (int acc = 0; acc < 3; acc++)
                        for (int rep = 0; rep < 6; rep++) {
                            bad += compare_step(&seed, kxs[q], ky, kz, orient, acc);
                            steps++;
                        }
    CU_ASSERT_EQUAL(steps, 9 * 5 * 7 * 4 * 3 * 6);
    CU_ASSERT_EQUAL(bad, 0);
}

/* The signed zeros do tie: a step whose every candidate is -0 or +0
 * keeps the first least one (-0 + -0 + -0 first, then +0s: -0 stays). */
static void test_signed_zero_tie(void)
{
    double cx[4] = {-0.0, 0.0, 0.0, 0.0}, r1[4] = {-0.0, 0.0, 0.0, 0.0},
           r2[8] = {-0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, out[2];
    WNode nodes[3];
    WEdge edges[2];
    Work w;
    memset(&w, 0, sizeof w);
    memset(nodes, 0, sizeof nodes);
    nodes[0] = (WNode){.k = 4, .c = cx};
    nodes[1].k = 1;
    nodes[2].k = 2;
    /* x the u end of both: r1[i], r2[i * 2 + l] */
    edges[0] = (WEdge){0, 1, r1, 1};
    edges[1] = (WEdge){0, 2, r2, 1};
    w.n = nodes;
    w.nn = 3;
    w.e = edges;
    w.ne = 2;
    StepOut o = {out, NULL, 1};
    Deg2Plan pl;
    ilp_deg2_plan(&w, 0, 0, 1, NULL, &o, &pl, 0);
    CU_ASSERT_FATAL(ilp_deg2_run(&w, &pl) == 0);
    CU_ASSERT(out[0] == 0.0 && signbit(out[0]));
    CU_ASSERT(out[1] == 0.0 && signbit(out[1]));
    /* the last candidate -0, the first +0: +0 stays */
    cx[0] = 0.0;
    cx[3] = -0.0;
    r1[3] = -0.0;
    r2[6] = r2[7] = -0.0;
    r2[0] = r2[1] = 0.0;
    CU_ASSERT_FATAL(ilp_deg2_run(&w, &pl) == 0);
    CU_ASSERT(out[0] == 0.0 && !signbit(out[0]));
    CU_ASSERT(out[1] == 0.0 && !signbit(out[1]));
    free(w.scratch);
}

/* The twin-pair step x (kx) and its twin y (ky) lone (no edges to a or
 * c): edges x-y, x-a (ka), x-c (kc), x the u or v end of each by the bits
 * of orient; out into a new table (acc_kind 0) or added into edge 3
 * between a and c (1: a its u end, 2: its v end). Returns the number of
 * entries whose bits differ between the plan with the argmin and the
 * plan without it. */
static int compare_pair(unsigned *seed, int kx, int ky, int ka, int kc, int orient, int acc_kind)
{
    static double cx[8], cy[8], rxy[64], rxa[64], rxc[64], acc_a[64], acc_b[64], out_a[64],
        out_b[64];
    static int arg[64];
    WNode nodes[4];
    WEdge edges[4];
    Work w;
    memset(&w, 0, sizeof w);
    memset(nodes, 0, sizeof nodes);
    nodes[0] = (WNode){.k = kx, .c = cx};
    nodes[1] = (WNode){.k = ky, .c = cy};
    nodes[2].k = ka;
    nodes[3].k = kc;
    fill_values(seed, cx, (size_t)kx);
    fill_values(seed, cy, (size_t)ky);
    fill_values(seed, rxy, (size_t)kx * (size_t)ky);
    fill_values(seed, rxa, (size_t)kx * (size_t)ka);
    fill_values(seed, rxc, (size_t)kx * (size_t)kc);
    fill_values(seed, acc_a, (size_t)ka * (size_t)kc);
    memcpy(acc_b, acc_a, sizeof acc_a);
    edges[0] = (WEdge){orient & 1 ? 1 : 0, orient & 1 ? 0 : 1, rxy, 1};
    edges[1] = (WEdge){orient & 2 ? 2 : 0, orient & 2 ? 0 : 2, rxa, 1};
    edges[2] = (WEdge){orient & 4 ? 3 : 0, orient & 4 ? 0 : 3, rxc, 1};
    edges[3] = (WEdge){acc_kind == 2 ? 3 : 2, acc_kind == 2 ? 2 : 3, acc_a, 1};
    w.n = nodes;
    w.nn = 4;
    w.e = edges;
    w.ne = 4;
    const int e[5] = {0, 1, 2, -1, -1};
    StepOut oa = {acc_kind ? NULL : out_a, acc_kind ? &edges[3] : NULL, 2};
    PairPlan with_arg, without_arg;
    ilp_pair_plan(&w, 0, e, arg, &oa, &with_arg, 1);
    CU_ASSERT_FATAL(ilp_pair_run(&w, &with_arg) == 0);
    edges[3].r = acc_b;
    StepOut ob = {acc_kind ? NULL : out_b, acc_kind ? &edges[3] : NULL, 2};
    ilp_pair_plan(&w, 0, e, NULL, &ob, &without_arg, 0);
    CU_ASSERT_FATAL(ilp_pair_run(&w, &without_arg) == 0);
    const double *a = acc_kind ? acc_a : out_a, *b = acc_kind ? acc_b : out_b;
    int bad = 0;
    for (int i = 0; i < ka * kc; i++)
        bad += memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    free(w.scratch); /* the steps' buffer (ilp_elim.c frees its own) */
    return bad;
}

static void test_lone_pairs_equal_scalar(void)
{
    unsigned seed = 83;
    int steps = 0, bad = 0;
    for (int kx = 1; kx <= 5; kx++)
        for (int ky = 1; ky <= 4; ky++)
            for (int ka = 1; ka <= 3; ka++)
                for (int kc = 1; kc <= 5; kc++)
                    for (int orient = 0; orient < 8; orient++)
                        for (int acc = 0; acc < 3; acc++)
                            for (int rep = 0; rep < 2; rep++) {
                                bad += compare_pair(&seed, kx, ky, ka, kc, orient, acc);
                                steps++;
                            }
    CU_ASSERT_EQUAL(steps, 5 * 4 * 3 * 5 * 8 * 3 * 2);
    CU_ASSERT_EQUAL(bad, 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a replay's degree-2 table equals the elimination's, bit for bit",
         test_pairs_equal_scalar},
        {"tied signed zeros keep the first candidate", test_signed_zero_tie},
        {"a replay's lone twin-pair table equals the elimination's, bit for bit",
         test_lone_pairs_equal_scalar},
    };
    return cunit_run("sharding deg2 pairs", tests, sizeof tests / sizeof tests[0]);
}
