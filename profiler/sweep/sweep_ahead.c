/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tuple's sharding request, and its program key asked for one tuple
 * ahead (sweep_int.h). A sweep profiles most tuples from a template found
 * by the key (sweep_tuple.c); the probe's first slot is a cache miss (the
 * young table of tens of thousands of templates, walked in tuple order,
 * docs/performance.md "The full space's template-hit path"). When the
 * tuples come in order (one worker: approf_sweep_run's loop), the key of
 * the next one is asked for once this one is done and its slots are
 * prefetched, so the miss runs while the results are handed on.
 *
 * Exact: the key and the order are approf_shard_program_key_view's for
 * the same request and context (a function of them), asked with nothing
 * asked of the context between: the lent order stays valid (only a key
 * call replaces it), and the key is not asked ahead when reuse_enter would
 * forget the context's solutions before the next tuple (the context then
 * sees the calls in the order of a sweep without the ahead key). A
 * prefetch reads nothing into the store.
 */
#include <stdlib.h>
#include <string.h>

#include "sweep_int.h"

void approf_sweep_tuple_request(const Sweep *sw, const ApprofTuple *t, ApprofShardRequest *req)
{
    const ApprofConfigChoice *c = &sw->configs[t->submesh][t->config];
    memset(req, 0, sizeof *req);
    req->start_layer = t->start;
    req->end_layer = t->end;
    req->mesh_hosts = sw->submeshes[t->submesh].n;
    req->mesh_gpus = sw->submeshes[t->submesh].m;
    req->logical_a = c->logical_a;
    req->logical_b = c->logical_b;
    req->force_batch_dim = c->force_batch_dim;
    req->method = sw->ilp_method;
    req->variant = c->variant;
    req->memory_levels = sw->memory_levels;
    req->zero_family = sw->zero_above[t->submesh][t->config];
    /* the analytic backend's pricing and what the entry reads of the
     * program take a phase's kernels in two parts (stage.h) */
    req->kernel_views = approf_backend_prices_phases(&sw->backend);
}

int approf_sweep_tuple_key(Sweep *sw, const ApprofTuple *t, const ApprofShardRequest *req,
                           uint64_t key[2], const int **order, int *n_order)
{
    ReuseTable *rt = &sw->reuse;
    int have;
    if (rt->ahead_t && rt->ahead_t == t) {
        have = rt->ahead_have;
        key[0] = rt->ahead_key[0];
        key[1] = rt->ahead_key[1];
        *order = rt->ahead_order;
        *n_order = rt->ahead_n;
    } else {
        have = approf_shard_program_key_view(sw->shard, req, key, order, n_order) == 0;
    }
    rt->ahead_t = NULL;
    return have;
}

/* Whether the key is asked ahead: on unless APPROF_KEY_AHEAD is "0". */
static int ahead_on(ReuseTable *rt)
{
    if (!rt->ahead_mode) {
        const char *v = getenv("APPROF_KEY_AHEAD");
        rt->ahead_mode = v && !strcmp(v, "0") ? 2 : 1;
    }
    return rt->ahead_mode == 1;
}

void approf_sweep_key_ahead(Sweep *sw, const ApprofTuple *t)
{
    ReuseTable *rt = &sw->reuse;
    const ApprofTuple *last = rt->last_t;
    ApprofShardRequest req;
    rt->last_t = t;
    rt->ahead_t = NULL;
    if (!sw->tuples || t < sw->tuples || t >= sw->tuples + sw->n_tuples || !ahead_on(rt))
        return;
    size_t k = (size_t)(t - sw->tuples);
    /* in order: the tuple before t was profiled last (a worker of many,
     * or a resumed sweep's skips, asks for none ahead) */
    if (k == 0 || last != t - 1 || k + 1 >= sw->n_tuples)
        return;
    const ApprofTuple *next = t + 1;
    /* reuse_enter (sweep_tuple.c) would forget the context's solutions
     * before next: not asked ahead */
    if (sw->shape_end && k + 1 >= rt->held_end)
        return;
    if (next->submesh < 0 || next->submesh >= sw->n_submeshes || next->config < 0 ||
        next->config >= sw->n_configs[next->submesh])
        return;
    approf_sweep_tuple_request(sw, next, &req);
    rt->ahead_have = approf_shard_program_key_view(sw->shard, &req, rt->ahead_key,
                                                   &rt->ahead_order, &rt->ahead_n) == 0;
    rt->ahead_t = next;
    if (rt->ahead_have)
        template_store_prefetch(&rt->tpl, rt->ahead_key);
}
