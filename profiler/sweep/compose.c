/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Composition of range entries from single-layer entries (compose.h): an
 * index of the single-layer entries by (layer, submesh, config, phase), a
 * sorted key list of the entries already present, and one pass over every
 * range in the sweep's order.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compose.h"
#include "grow.h"

/* (i, j, s, c, phase) as one sortable key: layers take 16 bits each (the
 * caller checks n_layers), s 8 (at most APPROF_MAX_SUBMESHES), c 16. */
static uint64_t entry_key(int i, int j, int s, int c, int phase)
{
    return ((uint64_t)(uint16_t)i << 48) | ((uint64_t)(uint16_t)j << 32) |
           ((uint64_t)(uint8_t)s << 24) | ((uint64_t)(uint16_t)c << 8) | (uint64_t)(phase & 1);
}

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sums layers i..j of (s, c, phase) into *x; 0 when a layer has no entry. */
static int compose_one(const CostdbEntry *const *single, int n_submeshes, int max_configs,
                       int i, int j, int s, int c, int ph, CostdbEntry *x)
{
    memset(x, 0, sizeof *x);
    x->start_layer = i;
    x->end_layer = j;
    x->submesh_index = s;
    x->config_index = c;
    x->phase = ph ? COSTDB_BWD : COSTDB_FWD;
    x->available_memory = INT64_MAX;
    x->repeats = INT32_MAX;
    for (int l = i; l <= j; l++) {
        const CostdbEntry *e =
            single[(((size_t)l * (size_t)n_submeshes + (size_t)s) * (size_t)max_configs +
                    (size_t)c) * 2 + (size_t)ph];
        if (!e)
            return 0;
        x->compute_cost += e->compute_cost;
        /* Apply and weight-gradient costs add up over layers; one unknown
         * makes the sum unknown. */
        if (e->apply_cost < 0 || x->apply_cost < 0)
            x->apply_cost = -1.0;
        else
            x->apply_cost += e->apply_cost;
        if (e->wgrad_cost < 0 || x->wgrad_cost < 0)
            x->wgrad_cost = -1.0;
        else
            x->wgrad_cost += e->wgrad_cost;
        x->peak_memory += e->peak_memory;
        x->invar_size += e->invar_size;
        x->outvar_size += e->outvar_size;
        if (e->temp_buffer_size > x->temp_buffer_size)
            x->temp_buffer_size = e->temp_buffer_size;
        /* The activation-sized part of the transient (schema 17) takes the
         * largest like the transient; a layer's part outside (0, its
         * transient] is none, as apsolve's cp step reads it. */
        if (e->temp_activation_size > 0 && e->temp_activation_size <= e->temp_buffer_size &&
            e->temp_activation_size > x->temp_activation_size)
            x->temp_activation_size = e->temp_activation_size;
        if (e->available_memory < x->available_memory)
            x->available_memory = e->available_memory;
        x->intermediate_size += e->intermediate_size;
        x->initial_size += e->initial_size;
        if (e->repeats < x->repeats)
            x->repeats = e->repeats;
        if (e->spread > x->spread)
            x->spread = e->spread;
        if (e->status != COSTDB_STATUS_OK && x->status == COSTDB_STATUS_OK) {
            x->status = e->status;
            snprintf(x->error, sizeof x->error, "layer %d: %.480s", l, e->error);
        }
    }
    /* capped by the composed transient (the CHECK of schema 17; a no-op
     * while each layer's part is at most its own transient) */
    if (x->temp_activation_size > x->temp_buffer_size)
        x->temp_activation_size = x->temp_buffer_size;
    if (x->status != COSTDB_STATUS_OK)
        x->compute_cost = INFINITY;
    return 1;
}

int approf_compose_individual(const CostdbEntry *have, size_t n_have, int n_layers,
                              const ApprofMeshShape *submeshes, int n_submeshes,
                              const int *n_configs, int cluster_devices,
                              CostdbEntry **out, size_t *n_out)
{
    const CostdbEntry **single = NULL;
    uint64_t *present = NULL;
    CostdbEntry *res = NULL;
    size_t n_present = 0, n_res = 0, cap = 0;
    int max_configs = 1, rc = APPROF_OK;

    *out = NULL;
    *n_out = 0;
    if (n_layers <= 0 || n_layers > 65535 || n_submeshes <= 0 ||
        n_submeshes > APPROF_MAX_SUBMESHES || (n_have && !have))
        return APPROF_EINVAL;
    for (int s = 0; s < n_submeshes; s++) {
        if (n_configs[s] < 0 || n_configs[s] > APPROF_MAX_CONFIGS)
            return APPROF_EINVAL;
        if (n_configs[s] > max_configs)
            max_configs = n_configs[s];
    }
    single = calloc((size_t)n_layers * (size_t)n_submeshes * (size_t)max_configs * 2,
                    sizeof *single);
    present = malloc((n_have ? n_have : 1) * sizeof *present);
    if (!single || !present) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    for (size_t k = 0; k < n_have; k++) {
        const CostdbEntry *e = &have[k];
        if (e->start_layer < 0 || e->end_layer >= n_layers || e->submesh_index < 0 ||
            e->submesh_index >= n_submeshes || e->config_index < 0 ||
            e->config_index >= max_configs)
            continue;
        if (e->start_layer == e->end_layer)
            single[(((size_t)e->start_layer * (size_t)n_submeshes + (size_t)e->submesh_index) *
                        (size_t)max_configs + (size_t)e->config_index) * 2 +
                   (size_t)(e->phase & 1)] = e;
        else
            present[n_present++] = entry_key(e->start_layer, e->end_layer, e->submesh_index,
                                             e->config_index, e->phase);
    }
    qsort(present, n_present, sizeof *present, key_cmp);
    for (int s = n_submeshes - 1; s >= 0; s--) {
        int whole = submeshes[s].n * submeshes[s].m == cluster_devices;
        for (int i = 0; i < n_layers; i++)
            for (int j = i + 1; j < n_layers; j++) {
                if (whole && !(i == 0 && j == n_layers - 1))
                    continue;
                for (int c = 0; c < n_configs[s]; c++)
                    for (int ph = 0; ph < 2; ph++) {
                        uint64_t key = entry_key(i, j, s, c, ph);
                        if (n_present &&
                            bsearch(&key, present, n_present, sizeof key, key_cmp))
                            continue;
                        if (UTIL_GROW(res, cap, n_res + 1) < 0) {
                            rc = APPROF_ENOMEM;
                            goto cleanup;
                        }
                        if (compose_one(single, n_submeshes, max_configs, i, j, s, c, ph,
                                        &res[n_res]))
                            n_res++;
                    }
            }
    }
    *out = n_res ? res : NULL;
    *n_out = n_res;
    if (n_res)
        res = NULL;
cleanup:
    free(res);
    free(present);
    free(single);
    return rc;
}
