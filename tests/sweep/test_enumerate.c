/* SPDX-License-Identifier: Apache-2.0 */
/* Enumeration against the lists docs/alpa-semantics.md gives for Alpa: submesh choices,
 * autosharding configs and tuple order. */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sweep/enumerate.h"

static void shapes_str(const ApprofMeshShape *s, int n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s(%d,%d)", i ? "," : "", s[i].n, s[i].m);
}

static void configs_str(const ApprofConfigChoice *c, int n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s(%d,%d)%s", i ? "," : "", c[i].logical_a,
                                c[i].logical_b, c[i].force_batch_dim == 0 ? "f" : "{}");
}

static void check_submeshes(int h, int g, ApprofSubmeshSpace space, const char *want)
{
    ApprofMeshShape out[APPROF_MAX_SUBMESHES];
    char err[256], buf[512];
    int n = approf_submesh_choices(h, g, space, NULL, 0, out, APPROF_MAX_SUBMESHES, err,
                                   sizeof err);
    CU_ASSERT_FATAL(n > 0);
    shapes_str(out, n, buf, sizeof buf);
    if (strcmp(buf, want))
        fprintf(stderr, "\n%dx%d %s: got %s want %s\n", h, g, approf_submesh_space_name(space),
                buf, want);
    CU_ASSERT_STRING_EQUAL(buf, want);
}

static void test_submesh_choices(void)
{
    check_submeshes(4, 8, APPROF_SUBMESH_POWER_OF_TWO, "(1,1),(1,2),(1,4),(1,8),(2,8),(4,8)");
    check_submeshes(1, 1, APPROF_SUBMESH_POWER_OF_TWO, "(1,1)");
    check_submeshes(1, 4, APPROF_SUBMESH_POWER_OF_TWO, "(1,1),(1,2),(1,4)");
    check_submeshes(1, 8, APPROF_SUBMESH_POWER_OF_TWO, "(1,1),(1,2),(1,4),(1,8)");
    check_submeshes(2, 4, APPROF_SUBMESH_POWER_OF_TWO, "(1,1),(1,2),(1,4),(2,4)");
    check_submeshes(2, 8, APPROF_SUBMESH_POWER_OF_TWO, "(1,1),(1,2),(1,4),(1,8),(2,8)");
    check_submeshes(6, 2, APPROF_SUBMESH_POWER_OF_TWO, "(1,1),(1,2),(2,2),(4,2)");
    check_submeshes(6, 2, APPROF_SUBMESH_ALL, "(1,1),(1,2),(2,2),(3,2),(4,2),(5,2),(6,2)");
    check_submeshes(16, 2, APPROF_SUBMESH_SMALL_POWER_OF_TWO, "(1,1),(1,2),(2,2),(4,2)");
    check_submeshes(16, 2, APPROF_SUBMESH_POWER_OF_TWO, "(1,1),(1,2),(2,2),(4,2),(8,2),(16,2)");
    check_submeshes(4, 8, APPROF_SUBMESH_ALL, "(1,1),(1,2),(1,4),(1,8),(2,8),(3,8),(4,8)");
    check_submeshes(4, 8, APPROF_SUBMESH_SMALL_POWER_OF_TWO, "(1,1),(1,2),(1,4),(1,8),(2,8),(4,8)");
}

static void test_submesh_errors_and_manual(void)
{
    ApprofMeshShape out[APPROF_MAX_SUBMESHES], manual[8];
    ApprofSubmeshSpace space;
    char err[256], buf[256];
    int nm = 0, n;
    CU_ASSERT(approf_submesh_choices(2, 6, APPROF_SUBMESH_POWER_OF_TWO, NULL, 0, out, 32, err,
                                     sizeof err) < 0);
    CU_ASSERT(strstr(err, "power of two") != NULL);
    CU_ASSERT(approf_submesh_space_parse("manual:1x1,1x4,2x4", &space, manual, 8, &nm, err,
                                         sizeof err) == 0);
    CU_ASSERT_EQUAL(space, APPROF_SUBMESH_MANUAL);
    CU_ASSERT_EQUAL(nm, 3);
    n = approf_submesh_choices(2, 4, space, manual, nm, out, 32, err, sizeof err);
    CU_ASSERT_EQUAL(n, 3);
    shapes_str(out, n, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "(1,1),(1,4),(2,4)");
    CU_ASSERT(approf_submesh_space_parse("manual:1x1,x4", &space, manual, 8, &nm, err,
                                         sizeof err) < 0);
    CU_ASSERT(approf_submesh_space_parse("powers", &space, manual, 8, &nm, err, sizeof err) < 0);
    CU_ASSERT(approf_submesh_space_parse("manual:2x2", &space, manual, 8, &nm, err,
                                         sizeof err) == 0);
    /* a multi-host submesh must use whole hosts */
    CU_ASSERT(approf_submesh_choices(2, 4, space, manual, nm, out, 32, err, sizeof err) < 0);
}

/* node: GPUs of a scale-up domain larger than a host, 0 for none */
static void check_configs_node(int n, int m, ApprofLogicalSpace space, int64_t mb, int node,
                               const char *want)
{
    ApprofConfigChoice out[APPROF_MAX_CONFIGS];
    char buf[512];
    int k = approf_config_choices((ApprofMeshShape){n, m}, space, mb, node, out,
                                  APPROF_MAX_CONFIGS);
    configs_str(out, k, buf, sizeof buf);
    if (strcmp(buf, want))
        fprintf(stderr, "\n(%d,%d) %s mb=%lld node=%d: got %s want %s\n", n, m,
                approf_logical_space_name(space), (long long)mb, node, buf, want);
    CU_ASSERT_STRING_EQUAL(buf, want);
}

static void check_configs(int n, int m, ApprofLogicalSpace space, int64_t mb, const char *want)
{
    check_configs_node(n, m, space, mb, 0, want);
}

static void test_config_choices(void)
{
    ApprofLogicalSpace snmp = APPROF_LOGICAL_SINGLE_NODE_MODEL_PARALLEL;
    /* docs/alpa-semantics.md's lists, divisible micro-batch */
    check_configs(1, 4, snmp, 64, "(4,1)f,(2,2)f,(1,4)f,(4,1){}");
    check_configs(1, 8, snmp, 64, "(8,1)f,(4,2)f,(2,4)f,(1,8)f,(8,1){}");
    check_configs(2, 4, snmp, 64, "(8,1)f,(4,2)f,(2,4)f,(8,1){}");
    check_configs(1, 1, snmp, 64, "(1,1)f,(1,1){}");
    check_configs(1, 2, snmp, 64, "(2,1)f,(1,2)f,(2,1){}");
    /* a scale-up domain of several hosts (GB200 NVL72: 72 GPUs, trays of
     * 4): mp crosses trays inside the domain, up to the submesh */
    check_configs_node(2, 4, snmp, 64, 72, "(8,1)f,(4,2)f,(2,4)f,(1,8)f,(8,1){}");
    check_configs_node(1, 4, snmp, 64, 72, "(4,1)f,(2,2)f,(1,4)f,(4,1){}");
    /* ... and no further than the domain: 32 trays, a 72-GPU domain */
    check_configs_node(32, 4, snmp, 128,
                       72, "(128,1)f,(64,2)f,(32,4)f,(16,8)f,(8,16)f,(4,32)f,(2,64)f,(128,1){}");
    /* a domain that is the host changes nothing */
    check_configs_node(2, 4, snmp, 64, 4, "(8,1)f,(4,2)f,(2,4)f,(8,1){}");
    /* divisibility of the micro-batch by dp */
    check_configs(1, 8, snmp, 4, "(4,2)f,(2,4)f,(1,8)f,(8,1){}");
    check_configs(1, 8, snmp, 1, "(1,8)f,(8,1){}");
    check_configs(1, 8, snmp, 3, "(1,8)f,(8,1){}");
    /* other spaces */
    check_configs(1, 4, APPROF_LOGICAL_ALL, 64, "(4,1)f,(2,2)f,(1,4)f,(4,1){}");
    check_configs(2, 4, APPROF_LOGICAL_ALL, 64, "(8,1)f,(4,2)f,(2,4)f,(1,8)f,(8,1){}");
    check_configs(2, 4, APPROF_LOGICAL_SAME_AS_PHYSICAL, 64, "(2,4){}");
    check_configs(2, 4, APPROF_LOGICAL_DATA_PARALLEL_ONLY, 64, "(8,1)f");
    check_configs(2, 4, APPROF_LOGICAL_MODEL_PARALLEL_ONLY, 64, "(1,8)f");
    check_configs(4, 8, APPROF_LOGICAL_DATA_PARALLEL_ONLY, 64, "(32,1)f");
}

static void test_tuples(void)
{
    ApprofMeshShape sm[4] = {{1, 1}, {1, 2}, {1, 4}, {2, 4}};
    int cps[4] = {2, 3, 4, 4};
    ApprofTuple *t = NULL;
    size_t n = 0;
    double flops[4] = {1, 1, 1, 1};
    CU_ASSERT_FATAL(approf_enumerate_tuples(4, sm, 4, cps, 2, 4, 0, -1, NULL, &t, &n) == 0);
    /* whole cluster (2,4): only (0,3) x 4 configs; others: 10 ranges each */
    CU_ASSERT_EQUAL(n, 4 + 10 * (2 + 3 + 4));
    /* largest submesh first */
    CU_ASSERT_EQUAL(t[0].submesh, 3);
    CU_ASSERT_EQUAL(t[0].start, 0);
    CU_ASSERT_EQUAL(t[0].end, 3);
    CU_ASSERT_EQUAL(t[3].config, 3);
    CU_ASSERT_EQUAL(t[4].submesh, 2);
    CU_ASSERT_EQUAL(t[4].start, 0);
    CU_ASSERT_EQUAL(t[4].end, 0);
    CU_ASSERT_EQUAL(t[n - 1].submesh, 0);
    CU_ASSERT_EQUAL(t[n - 1].start, 3);
    CU_ASSERT_EQUAL(t[n - 1].end, 3);
    for (size_t k = 1; k < n; k++)
        CU_ASSERT(t[k].submesh <= t[k - 1].submesh);
    free(t);
    /* individual mode: single layers only, on every submesh */
    CU_ASSERT_FATAL(approf_enumerate_tuples(4, sm, 4, cps, 2, 4, 1, -1, NULL, &t, &n) == 0);
    CU_ASSERT_EQUAL(n, 4 * (2 + 3 + 4 + 4));
    for (size_t k = 0; k < n; k++)
        CU_ASSERT_EQUAL(t[k].start, t[k].end);
    free(t);
    /* imbalance filter, tolerance 0: only ranges whose FLOP share equals the
     * device share: 1 device of 8 -> no range of uniform 4 layers (1/4 each);
     * 2 devices -> single layers; 4 devices -> pairs; 8 -> the whole model. */
    CU_ASSERT_FATAL(approf_enumerate_tuples(4, sm, 4, cps, 2, 4, 0, 0.0, flops, &t, &n) == 0);
    CU_ASSERT_EQUAL(n, 4 + 3 * 4 + 4 * 3);
    free(t);
}

/* Every (i, j, s, c) in Alpa's order, testing each range: the oracle the
 * enumeration (which finds the kept ends by binary search) must equal. */
static size_t reference_tuples(int L, const ApprofMeshShape *sm, int S, const int *cps, int devices,
                               int individual, double tol, const double *flops, ApprofTuple *t)
{
    double total = 0, *prefix = calloc((size_t)L + 1, sizeof *prefix);
    size_t n = 0;
    for (int i = 0; i < L; i++)
        prefix[i + 1] = prefix[i] + (flops ? flops[i] : 0);
    total = prefix[L];
    for (int s = S - 1; s >= 0; s--) {
        int d = sm[s].n * sm[s].m, whole = d == devices;
        for (int i = 0; i < L; i++)
            for (int j = i; j < L; j++) {
                if (individual ? i != j : whole && !(i == 0 && j == L - 1))
                    continue;
                if (tol >= 0 && total > 0) {
                    double fr = (prefix[j + 1] - prefix[i]) / total, dr = (double)d / devices;
                    if (dr > fr * (1 + tol) || dr < fr / (1 + tol))
                        continue;
                }
                for (int c = 0; c < cps[s]; c++)
                    t[n++] = (ApprofTuple){i, j, s, c};
            }
    }
    free(prefix);
    return n;
}

/* Random layer FLOPs (zeros included), tolerances and modes: the same
 * tuples in the same order as the oracle, and approf_count_tuples agrees
 * without listing them. */
static void test_tuples_match_reference(void)
{
    ApprofMeshShape sm[5] = {{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 8}};
    int cps[5] = {1, 2, 3, 2, 4};
    static const double tols[] = {-1, 0, 0.1, 0.5, 2, 1e9};
    unsigned seed = 12345;
    for (int trial = 0; trial < 300; trial++) {
        int L = 1 + trial % 37, individual = trial % 7 == 0, S = 1 + trial % 5;
        double tol = tols[trial % 6], flops[40];
        ApprofTuple *t = NULL, *r = malloc(sizeof *r * 40 * 41 / 2 * 16 + 16);
        size_t n = 0, nr;
        int64_t cnt;
        for (int i = 0; i < L; i++) {
            seed = seed * 1103515245u + 12345u;
            flops[i] = (seed >> 16) % 5 == 0 ? 0 : (double)((seed >> 8) % 1000) * 1e9;
        }
        nr = reference_tuples(L, sm, S, cps, 16, individual, tol, flops, r);
        CU_ASSERT_FATAL(approf_enumerate_tuples(L, sm, S, cps, 2, 8, individual, tol, flops, &t, &n) == 0);
        cnt = approf_count_tuples(L, sm, S, cps, 2, 8, individual, tol, flops);
        CU_ASSERT_EQUAL(n, nr);
        CU_ASSERT_EQUAL(cnt, (int64_t)nr);
        CU_ASSERT(n == nr && (n == 0 || !memcmp(t, r, n * sizeof *t)));
        free(t);
        free(r);
    }
    /* 10^5 layers on 2x8: counted without listing 5 x 10^9 ranges */
    {
        int cps1[5] = {1, 1, 1, 1, 1};
        CU_ASSERT_EQUAL(approf_count_tuples(100000, sm, 5, cps1, 2, 8, 0, -1, NULL),
                        (int64_t)4 * 100000 * 100001 / 2 + 1);
    }
    /* a tuple holds its layers in 16 bits: more layers are refused, the
     * most it holds are listed (individual mode: one range per layer) */
    {
        int cps1[1] = {1};
        ApprofTuple *t = NULL;
        size_t n = 0;
        CU_ASSERT_EQUAL(sizeof(ApprofTuple), 8);
        CU_ASSERT(approf_enumerate_tuples(APPROF_TUPLE_MAX_LAYERS + 1, sm, 1, cps1, 1, 1, 1, -1,
                                          NULL, &t, &n) == -1 && !t);
        CU_ASSERT_FATAL(approf_enumerate_tuples(APPROF_TUPLE_MAX_LAYERS, sm, 1, cps1, 1, 1, 1, -1,
                                                NULL, &t, &n) == 0);
        CU_ASSERT(n == APPROF_TUPLE_MAX_LAYERS && t[n - 1].start == APPROF_TUPLE_MAX_LAYERS - 1 &&
                  t[n - 1].end == APPROF_TUPLE_MAX_LAYERS - 1);
        free(t);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"submesh choices", test_submesh_choices},
        {"submesh errors and manual", test_submesh_errors_and_manual},
        {"config choices", test_config_choices},
        {"tuples", test_tuples},
        {"tuples = reference, counted", test_tuples_match_reference},
    };
    return CUNIT_RUN("enumerate", tests);
}
