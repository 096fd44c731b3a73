/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a sweep profiles, following Alpa (stage_construction.py at b8078a9,
 * summarised in docs/alpa-semantics.md): submesh choices of a cluster, autosharding
 * configs per submesh, and the (i, j, s, c) tuples in profiling order.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "enumerate.h"
#include "stage.h"

static const char *const submesh_space_names[] = {
    "power_of_two", "small_power_of_two", "all", "manual",
};
static const char *const logical_space_names[] = {
    "single_node_model_parallel", "all", "same_as_physical",
    "data_parallel_only", "model_parallel_only",
};

static int is_power_of_two(int x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

const char *approf_submesh_space_name(ApprofSubmeshSpace s)
{
    return (unsigned)s < 4 ? submesh_space_names[s] : "?";
}

const char *approf_logical_space_name(ApprofLogicalSpace s)
{
    return (unsigned)s < 5 ? logical_space_names[s] : "?";
}

int approf_logical_space_parse(const char *s, ApprofLogicalSpace *out)
{
    for (int i = 0; i < 5; i++)
        if (s && !strcmp(s, logical_space_names[i])) {
            *out = (ApprofLogicalSpace)i;
            return 0;
        }
    return -1;
}

static int parse_shape(const char *s, const char **endp, ApprofMeshShape *out)
{
    char *end = NULL;
    long a, b;
    errno = 0;
    a = strtol(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X') || a <= 0 || a > 65536)
        return -1;
    s = end + 1;
    b = strtol(s, &end, 10);
    if (errno || end == s || b <= 0 || b > 65536)
        return -1;
    out->n = (int)a;
    out->m = (int)b;
    *endp = end;
    return 0;
}

int approf_submesh_space_parse(const char *s, ApprofSubmeshSpace *space, ApprofMeshShape *manual,
                               int max_manual, int *n_manual, char *err, size_t errlen)
{
    *n_manual = 0;
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, submesh_space_names[i])) {
            *space = (ApprofSubmeshSpace)i;
            return 0;
        }
    if (strncmp(s, "manual:", 7) != 0) {
        snprintf(err, errlen,
                 "unknown submesh space '%s' (power_of_two, small_power_of_two, all, "
                 "manual:1x1,1x2,...)", s);
        return -1;
    }
    *space = APPROF_SUBMESH_MANUAL;
    s += 7;
    for (;;) {
        const char *end;
        if (*n_manual >= max_manual) {
            snprintf(err, errlen, "too many manual submeshes (at most %d)", max_manual);
            return -1;
        }
        if (parse_shape(s, &end, &manual[*n_manual]) < 0) {
            snprintf(err, errlen, "manual submesh %d: '%s' is not NxM", *n_manual + 1, s);
            return -1;
        }
        (*n_manual)++;
        if (*end == '\0')
            break;
        if (*end != ',') {
            snprintf(err, errlen, "manual submeshes: expected ',' at '%s'", end);
            return -1;
        }
        s = end + 1;
    }
    return 0;
}

int approf_submesh_choices(int hosts, int gpus_per_host, ApprofSubmeshSpace space,
                           const ApprofMeshShape *manual, int n_manual,
                           ApprofMeshShape *out, int max, char *err, size_t errlen)
{
    int n = 0;
    if (hosts <= 0 || !is_power_of_two(gpus_per_host)) {
        snprintf(err, errlen, "cluster %dx%d: GPUs per host must be a power of two", hosts,
                 gpus_per_host);
        return -1;
    }
    if (space == APPROF_SUBMESH_MANUAL) {
        if (n_manual <= 0) {
            snprintf(err, errlen, "manual submesh space with no submeshes");
            return -1;
        }
        for (int i = 0; i < n_manual; i++) {
            const ApprofMeshShape *s = &manual[i];
            if (s->n > hosts || s->m > gpus_per_host || (s->n > 1 && s->m != gpus_per_host)) {
                snprintf(err, errlen,
                         "manual submesh %dx%d does not fit the %dx%d cluster (a multi-host "
                         "submesh must use whole hosts)", s->n, s->m, hosts, gpus_per_host);
                return -1;
            }
            for (int j = 0; j < i; j++)
                if (manual[j].n == s->n && manual[j].m == s->m) {
                    snprintf(err, errlen, "manual submesh %dx%d listed twice", s->n, s->m);
                    return -1;
                }
            if (n >= max)
                goto too_many;
            out[n++] = *s;
        }
        return n;
    }
    for (int i = 1; i <= gpus_per_host; i *= 2) {
        if (n >= max)
            goto too_many;
        out[n++] = (ApprofMeshShape){1, i};
    }
    if (space == APPROF_SUBMESH_ALL) {
        for (int i = 2; i <= hosts; i++) {
            if (n >= max)
                goto too_many;
            out[n++] = (ApprofMeshShape){i, gpus_per_host};
        }
    } else {
        int limit = space == APPROF_SUBMESH_SMALL_POWER_OF_TWO && hosts > 4 ? 4 : hosts;
        for (int i = 2; i <= limit; i *= 2) {
            if (n >= max)
                goto too_many;
            out[n++] = (ApprofMeshShape){i, gpus_per_host};
        }
    }
    return n;
too_many:
    snprintf(err, errlen, "more than %d submesh choices", max);
    return -1;
}

static int add_config(ApprofConfigChoice *out, int n, int max, int a, int b, int force)
{
    assert(out && n >= 0 && a >= 1 && b >= 1);  /* a logical mesh of the submesh */
    if (n < max)
        out[n] = (ApprofConfigChoice){a, b, force};
    return n + 1;
}

int approf_config_variants(ApprofConfigChoice *cfg, int n_base, int max, int devices,
                           CostdbVariantSpace space, int has_attention)
{
    int n = n_base < max ? n_base : max;
    for (int c = 0; c < n_base && c < max; c++)
        for (int lv = 0; lv < space.memory_levels; lv++)
            for (int r = 0; r < COSTDB_RECOMPUTE_COUNT; r++) {
                if (!(space.recompute_mask & (1u << r)) ||
                    (r == COSTDB_RECOMPUTE_SELECTIVE && !has_attention))
                    continue;
                for (int z = 0; z <= COSTDB_ZERO_MAX; z++) {
                    if (!(space.zero_mask & (1u << z)) || (z > 0 && devices <= 1) ||
                        (lv == 0 && r == 0 && z == 0))
                        continue;
                    if (n < max) {
                        cfg[n] = cfg[c];
                        cfg[n].variant = (CostdbVariant){lv, r, z};
                    }
                    n++;
                }
            }
    return n;
}

int approf_config_choices(ApprofMeshShape submesh, ApprofLogicalSpace space,
                          int64_t micro_batch_size, int node_gpus, ApprofConfigChoice *out,
                          int max)
{
    int d = submesh.n * submesh.m, n = 0;
    switch (space) {
    case APPROF_LOGICAL_SINGLE_NODE_MODEL_PARALLEL:
    case APPROF_LOGICAL_ALL: {
        /* Alpa's "single node": one host; a scale-up domain of several
         * hosts is one node to NCCL, and mp inside it rides NVLink */
        int node = node_gpus > submesh.m ? (node_gpus < d ? node_gpus : d) : submesh.m;
        int max_mp = space == APPROF_LOGICAL_ALL ? d : node;
        for (int mp = 1; mp <= max_mp; mp++) {
            int dp;
            if (d % mp)
                continue;
            dp = d / mp;
            if (micro_batch_size % dp == 0)
                n = add_config(out, n, max, dp, mp, 0);
        }
        n = add_config(out, n, max, d, 1, -1);
        break;
    }
    case APPROF_LOGICAL_SAME_AS_PHYSICAL:
        n = add_config(out, n, max, submesh.n, submesh.m, -1);
        break;
    case APPROF_LOGICAL_DATA_PARALLEL_ONLY:
        n = add_config(out, n, max, d, 1, 0);
        break;
    case APPROF_LOGICAL_MODEL_PARALLEL_ONLY:
        n = add_config(out, n, max, 1, d, 0);
        break;
    }
    return n < max ? n : max;
}

/* The last layers j of the ranges [i, j] a submesh profiles: [*lo, *hi],
 * empty when *lo > *hi. Alpa's rules: a submesh of the whole cluster takes
 * only the whole model, profile mode individual single layers, and the
 * stage-imbalance filter (prefix != NULL) keeps the ranges whose share of
 * the FLOPs is within (1 + tol) of the submesh's share of the devices. That
 * share grows with j, so each of the filter's two tests flips once and a
 * binary search finds the same ends as testing every j. */
static void range_ends(int n_layers, int i, int whole, int individual, const double *prefix,
                       double total_flops, double device_ratio, double tol, int *lo, int *hi)
{
    int a, b;
    /* prefix holds n_layers + 1 sums when the filter is on */
    assert(lo && hi && i >= 0 && i < n_layers);
    *lo = i;
    *hi = individual ? i : n_layers - 1;
    if (!individual && whole) {
        if (i != 0) {
            *lo = 1;
            *hi = 0;
            return;
        }
        *lo = n_layers - 1;
    }
    if (!prefix || !(total_flops > 0))
        return;
    /* first j no longer too few FLOPs for the devices */
    for (a = *lo, b = *hi + 1; a < b;) {
        int m = a + (b - a) / 2;
        double flops_ratio = (prefix[m + 1] - prefix[i]) / total_flops;
        if (device_ratio > flops_ratio * (1 + tol))
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    /* first j with too many FLOPs for the devices */
    for (b = *hi + 1; a < b;) {
        int m = a + (b - a) / 2;
        double flops_ratio = (prefix[m + 1] - prefix[i]) / total_flops;
        if (!(device_ratio < flops_ratio / (1 + tol)))
            a = m + 1;
        else
            b = m;
    }
    *hi = a - 1;
}

/* Counts the tuples and, when t is not NULL, writes them in order. */
static size_t walk(int n_layers, const ApprofMeshShape *submeshes, int n_submeshes,
                   const int *configs_per_submesh, int total_devices, int individual,
                   double imbalance_tol, const double *prefix, ApprofTuple *t)
{
    size_t n = 0;
    double total_flops;
    /* the caller checked the layers, submeshes and their config counts */
    assert(n_layers > 0 && submeshes && n_submeshes > 0 && configs_per_submesh &&
           total_devices > 0);
    total_flops = prefix ? prefix[n_layers] : 0;
    for (int s = n_submeshes - 1; s >= 0; s--) {
        int devices = submeshes[s].n * submeshes[s].m;
        int whole = devices == total_devices;
        double device_ratio = (double)devices / total_devices;
        for (int i = 0; i < n_layers; i++) {
            int lo, hi;
            range_ends(n_layers, i, whole, individual, prefix, total_flops, device_ratio,
                       imbalance_tol, &lo, &hi);
            if (lo > hi)
                continue;
            if (!t) {
                n += (size_t)(hi - lo + 1) * (size_t)configs_per_submesh[s];
                continue;
            }
            for (int j = lo; j <= hi; j++)
                for (int c = 0; c < configs_per_submesh[s]; c++)
                    t[n++] = (ApprofTuple){(int16_t)i, (int16_t)j, (int16_t)s, (int16_t)c};
        }
    }
    return n;
}

/* Prefix sums of the layers' FLOPs for the imbalance filter (NULL when it
 * is off): 0, or -1 on a missing input or no memory. */
static int flops_prefix(int n_layers, double imbalance_tol, const double *layer_flops,
                        double **prefix)
{
    *prefix = NULL;
    if (imbalance_tol < 0)
        return 0;
    if (!layer_flops)
        return -1;
    *prefix = calloc((size_t)n_layers + 1, sizeof **prefix);
    if (!*prefix)
        return -1;
    for (int i = 0; i < n_layers; i++)
        (*prefix)[i + 1] = (*prefix)[i] + layer_flops[i];
    return 0;
}

int64_t approf_count_tuples(int n_layers, const ApprofMeshShape *submeshes, int n_submeshes,
                            const int *configs_per_submesh, int cluster_hosts, int cluster_gpus,
                            int individual, double imbalance_tol, const double *layer_flops)
{
    double *prefix;
    size_t n;
    if (n_layers <= 0 || n_submeshes <= 0 || cluster_hosts <= 0 || cluster_gpus <= 0 ||
        flops_prefix(n_layers, imbalance_tol, layer_flops, &prefix) < 0)
        return -1;
    n = walk(n_layers, submeshes, n_submeshes, configs_per_submesh, cluster_hosts * cluster_gpus,
             individual, imbalance_tol, prefix, NULL);
    free(prefix);
    return (int64_t)n;
}

int approf_enumerate_tuples(int n_layers, const ApprofMeshShape *submeshes, int n_submeshes,
                            const int *configs_per_submesh, int cluster_hosts,
                            int cluster_gpus, int individual, double imbalance_tol,
                            const double *layer_flops, ApprofTuple **out, size_t *n_out)
{
    size_t n;
    ApprofTuple *t;
    double *prefix;
    int total_devices = cluster_hosts * cluster_gpus;

    *out = NULL;
    *n_out = 0;
    if (n_layers <= 0 || n_layers > APPROF_TUPLE_MAX_LAYERS || n_submeshes <= 0 ||
        n_submeshes > APPROF_MAX_SUBMESHES || total_devices <= 0 ||
        flops_prefix(n_layers, imbalance_tol, layer_flops, &prefix) < 0)
        return -1;
    /* counted first: exactly what is kept is allocated (the bound of every
     * range on every submesh was gigabytes for thousands of layers) */
    n = walk(n_layers, submeshes, n_submeshes, configs_per_submesh, total_devices, individual,
             imbalance_tol, prefix, NULL);
    t = malloc((n ? n : 1) * sizeof *t);
    if (!t) {
        free(prefix);
        return -1;
    }
    walk(n_layers, submeshes, n_submeshes, configs_per_submesh, total_devices, individual,
         imbalance_tol, prefix, t);
    free(prefix);
    *out = t;
    *n_out = n;
    return 0;
}
