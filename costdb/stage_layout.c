/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The placement of a plan's stages (stage_layout.h). Alpa (alpa-projects/
 * alpa b8078a9, alpa/pipeline_parallel/stage_construction.py,
 * get_sliced_virtual_submeshes) slices whole-host submeshes as consecutive
 * hosts and packs sub-host ones into a host, largest first; approf's
 * profiles price a submesh placed from a scale-up domain's first host
 * (costdb/collective.c), so on GB200 NVL72 (domains of 18 trays) a 16-tray
 * stage placed after another would straddle two racks while priced as
 * inside one. The layout keeps every stage where its profile priced it
 * whenever some order of Alpa's contiguous slicing allows it, and says
 * which stages straddle when none does.
 */
#include <stdlib.h>
#include <string.h>

#include "stage_layout.h"

/* Hosts of one NCCL node of f: its scale-up domain's, 1 when the host is
 * the domain. */
static int node_hosts(const CostdbFabric *f)
{
    int node = costdb_fabric_node_gpus(f);
    return f && f->gpus_per_host > 0 && node > f->gpus_per_host ? node / f->gpus_per_host : 1;
}

int costdb_hosts_domains(const CostdbFabric *f, int first_host, int n)
{
    int hpd = node_hosts(f);
    if (n < 1 || first_host < 0)
        return 0;
    return (first_host + n - 1) / hpd - first_host / hpd + 1;
}

/* Does a whole-host stage of n hosts from host h sit where its profile
 * priced it: inside one domain when it fits one, else from a domain's
 * first host? */
static int priced_spot(int hpd, int h, int n)
{
    return n <= hpd ? h / hpd == (h + n - 1) / hpd : h % hpd == 0;
}

/* One try: the stages in order[], first fit, the domain rule when
 * domain_rule. With the rule the search for stage k starts at the first
 * host of the domain its pipeline predecessor k - 1 took (when placed
 * already) and wraps round: neighbours share a domain where they can, so
 * their sends stay on NVLink. 1 when every stage found a place. */
static int first_fit(int hpd, int N, int M, const int *hosts, const int *gpus, const size_t *order,
                     size_t K, int domain_rule, unsigned char *used, int *busy,
                     CostdbStageSpot *out)
{
    int all = 1;
    memset(used, 0, (size_t)N * (size_t)M);
    memset(busy, 0, (size_t)N * sizeof *busy);
    for (size_t k = 0; k < K; k++)
        out[k].first_host = out[k].first_gpu = -1;
    for (size_t q = 0; q < K; q++) {
        size_t k = order[q];
        int n = hosts[k], m = gpus[k], found = 0, start = 0;
        if (domain_rule && k > 0 && out[k - 1].first_host >= 0)
            start = out[k - 1].first_host / hpd * hpd;
        for (int i = 0; i < N && !found; i++) {
            int h = (start + i) % N;
            if (n == 1 && m >= 1 && m <= M) {
                for (int g = 0; g + m <= M && !found; g += m) {
                    int free_run = 1;
                    for (int x = 0; x < m; x++)
                        free_run &= !used[h * M + g + x];
                    if (free_run) {
                        found = 1;
                        out[k].first_host = h, out[k].first_gpu = g;
                    }
                }
            } else if (n >= 1 && m == M && h + n <= N) {
                int free_run = !domain_rule || priced_spot(hpd, h, n);
                for (int x = 0; x < n && free_run; x++)
                    free_run = !busy[h + x];
                if (free_run) {
                    found = 1;
                    out[k].first_host = h, out[k].first_gpu = 0;
                }
            }
        }
        if (!found) {
            all = 0;
            continue;
        }
        for (int h = 0; h < n; h++) {
            busy[out[k].first_host + h] += m;
            for (int g = 0; g < m; g++)
                used[(out[k].first_host + h) * M + out[k].first_gpu + g] = 1;
        }
    }
    return all;
}

int costdb_stage_layout(const CostdbFabric *f, int N, int M, const int *hosts, const int *gpus,
                        size_t K, CostdbStageSpot *out)
{
    size_t *order[2];
    unsigned char *used;
    int *busy;
    int hpd = node_hosts(f), placed = 0, straddles = 0;
    if (!out)
        return -1;
    for (size_t k = 0; k < K; k++)
        out[k] = (CostdbStageSpot){-1, -1, 0, 0};
    if (N < 1 || M < 1 || !hosts || !gpus || K == 0)
        return K == 0 ? 0 : -1;
    order[0] = malloc(K * sizeof *order[0]);
    order[1] = malloc(K * sizeof *order[1]);
    used = malloc((size_t)N * (size_t)M);
    busy = malloc((size_t)N * sizeof *busy);
    if (!order[0] || !order[1] || !used || !busy) {
        free(order[0]);
        free(order[1]);
        free(used);
        free(busy);
        return -1;
    }
    /* stage order; Alpa's: reversed(np.argsort(sizes, kind="stable")),
     * largest first, the later of equal sizes first */
    for (size_t k = 0; k < K; k++)
        order[0][k] = order[1][k] = k;
    for (size_t a = 1; a < K; a++)
        for (size_t b = a; b > 0; b--) {
            size_t x = order[1][b - 1], y = order[1][b];
            long long sx = (long long)hosts[x] * gpus[x], sy = (long long)hosts[y] * gpus[y];
            if (sx > sy || (sx == sy && x > y))
                break;
            order[1][b - 1] = y, order[1][b] = x;
        }
    for (int t = 0; t < 4 && !placed; t++) {
        int domain_rule = t < 2;
        if (domain_rule && hpd <= 1)
            continue; /* the host is the domain: the rule holds everywhere */
        placed =
            first_fit(hpd, N, M, hosts, gpus, order[t % 2], K, domain_rule, used, busy, out);
    }
    if (!placed)
        first_fit(hpd, N, M, hosts, gpus, order[0], K, 0, used, busy, out);
    for (size_t k = 0; k < K; k++) {
        if (out[k].first_host < 0)
            continue;
        out[k].domains = costdb_hosts_domains(f, out[k].first_host, hosts[k]);
        out[k].priced_domains =
            costdb_collective_domains(f, hosts[k] * gpus[k], hosts[k], 0, hosts[k] > 1);
        straddles += out[k].domains > out[k].priced_domains;
    }
    free(order[0]);
    free(order[1]);
    free(used);
    free(busy);
    return placed ? straddles : -1;
}
