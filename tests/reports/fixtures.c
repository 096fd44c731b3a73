/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Builds the report tests' databases (fixtures.h): a generated CSV cost
 * table imported with costdb_csv_import, then placements (ShardingSpec text
 * made by apreport_spec_format from per-dimension mesh axes) and a plan
 * stored with costdb_placements_put / costdb_plan_put.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apreport.h"
#include "fixtures.h"

typedef struct {
    int hosts, gpus, a, b, force;
    double factor;
} Cfg;

typedef struct {
    int stage;
    const char *role;
    int index;
    const char *name;
    const char *shape;
    int ndim;
    int axes[4];
} Tensor;

typedef struct {
    int start, end, hosts, gpus, a, b, force;
} StageDef;

static const Cfg mlp_cfgs[] = {
    {1, 2, 2, 1, 0, 1.0}, {1, 2, 1, 2, 0, 0.8}, {1, 2, 2, 1, -1, 1.1}, {1, 4, 4, 1, 0, 0.55},
};
static const Cfg resnet_cfgs[] = {
    {1, 4, 4, 1, 0, 1.0}, {1, 4, 2, 2, 0, 0.9}, {1, 4, 1, 4, 0, 1.3}, {1, 4, 4, 1, -1, 1.05},
    {1, 8, 8, 1, 0, 0.6},
};
static const StageDef mlp_stages[] = {{0, 1, 1, 2, 2, 1, 0}, {2, 3, 1, 2, 1, 2, 0}};
static const StageDef resnet_stages[] = {{0, 1, 1, 4, 4, 1, 0}, {2, 3, 1, 4, 2, 2, 0}};

static const Tensor mlp_tensors[] = {
    {0, "param", 1, "layer0/dense/kernel", "2048,8192", 2, {-1, -1}},
    {0, "param", 2, "layer0/dense/bias", "8192", 1, {-1}},
    {0, "param", 4, "layer1/dense/kernel", "8192,2048", 2, {-1, -1}},
    {0, "param", 5, "layer1/dense/bias", "2048", 1, {-1}},
    {0, "input", 0, "x", "512,2048", 2, {0, -1}},
    {0, "output", 6, "layer1/out", "512,2048", 2, {0, -1}},
    {1, "param", 7, "layer2/dense/kernel", "2048,8192", 2, {-1, 1}},
    {1, "param", 8, "layer2/dense/bias", "8192", 1, {1}},
    {1, "param", 10, "layer3/dense/kernel", "8192,2048", 2, {1, -1}},
    {1, "param", 11, "layer3/dense/bias", "2048", 1, {-1}},
    {1, "input", 6, "layer1/out", "512,2048", 2, {-1, -1}},
    {1, "input", 13, "y", "512,2048", 2, {-1, -1}},
    {1, "output", 14, "loss", "", 0, {0}},
};
static const Tensor resnet_tensors[] = {
    {0, "param", 1, "layer0/conv1/kernel", "7,7,3,64", 4, {-1, -1, -1, -1}},
    {0, "param", 2, "layer0/bn1/scale", "64", 1, {-1}},
    {0, "param", 3, "layer1/conv2/kernel", "3,3,64,256", 4, {-1, -1, -1, -1}},
    {0, "input", 0, "images", "32,224,224,3", 4, {0, -1, -1, -1}},
    {0, "output", 20, "layer1/out", "32,28,28,512", 4, {0, -1, -1, -1}},
    {1, "param", 21, "layer2/conv1/kernel", "3,3,512,1024", 4, {-1, -1, -1, 1}},
    {1, "param", 22, "layer2/bn1/scale", "1024", 1, {1}},
    {1, "param", 23, "layer3/fc/kernel", "2048,1000", 2, {-1, -1}},
    {1, "param", 24, "layer3/fc/bias", "1000", 1, {-1}},
    {1, "input", 20, "layer1/out", "32,28,28,512", 4, {0, -1, -1, -1}},
    {1, "input", 30, "labels", "32", 1, {0}},
    {1, "output", 31, "loss", "", 0, {0}},
};

static double cost_of(int i, int j, const Cfg *c, int phase, double base, double scale)
{
    /* Integer millionths keep every value exact in CSV and in the goldens. */
    double v = base * (j - i + 1) * c->factor * (phase ? 2.0 : 1.0) * scale;
    return round(v * 1e6) / 1e6;
}

static int write_csv(const char *path, const Cfg *cfgs, size_t ncfg, int L, double base,
                     const FixtureOptions *o)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return COSTDB_EIO;
    fputs("start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory,"
          "invar_size,outvar_size,temp_buffer_size,available_memory,intermediate_size,"
          "initial_size,status\n", f);
    for (size_t c = 0; c < ncfg; c++) {
        int whole = c + 1 == ncfg;
        for (int i = 0; i < L; i++)
            for (int j = i; j < L; j++) {
                if (whole && (i != 0 || j != L - 1))
                    continue;
                if (o->drop_entry && c == 0 && i == 0 && j == 0)
                    continue;
                for (int ph = 0; ph < 2; ph++) {
                    char fb[16] = "";
                    long long n = j - i + 1, peak = (ph ? 3 : 2) * 268435456LL * n;
                    if (cfgs[c].force >= 0)
                        snprintf(fb, sizeof(fb), "%d", cfgs[c].force);
                    fprintf(f, "%d,%d,%dx%d,%dx%d,%s,%s,%.6f,%lld,%lld,%lld,%lld,%lld,%lld,%lld,ok\n",
                            i, j, cfgs[c].hosts, cfgs[c].gpus, cfgs[c].a, cfgs[c].b, fb,
                            ph ? "bwd" : "fwd", cost_of(i, j, &cfgs[c], ph, base, o->scale), peak,
                            peak / 2, peak / 4, peak / 4, 17179869184LL, 67108864LL * n,
                            134217728LL * n);
                }
            }
    }
    if (o->drop_entry) /* an entry only this side has: config (2, 2) {} */
        fprintf(f, "3,3,%dx%d,%dx%d,,fwd,0.001,1,1,1,0,17179869184,0,0,ok\n", cfgs[0].hosts,
                cfgs[0].gpus, cfgs[0].gpus > 2 ? 2 : 1, cfgs[0].gpus > 2 ? 2 : 2);
    return fclose(f) ? COSTDB_EIO : 0;
}

static int find_config(Costdb *db, int64_t sweep, const StageDef *s, int *sm_out, int *cf_out)
{
    CostdbSubmesh *sm = NULL;
    CostdbConfig *cf = NULL;
    size_t nsm = 0, ncf = 0;
    int rc = COSTDB_ENOTFOUND;
    if (costdb_sweep_submeshes(db, sweep, &sm, &nsm) < 0 || costdb_sweep_configs(db, sweep, &cf, &ncf) < 0)
        goto cleanup;
    for (size_t i = 0; i < nsm; i++)
        if (sm[i].hosts == s->hosts && sm[i].gpus_per_host == s->gpus)
            for (size_t k = 0; k < ncf; k++)
                if (cf[k].submesh_index == sm[i].index && cf[k].logical_a == s->a &&
                    cf[k].logical_b == s->b && cf[k].force_batch_dim == s->force) {
                    *sm_out = sm[i].index;
                    *cf_out = cf[k].config_index;
                    rc = 0;
                }
cleanup:
    free(sm);
    free(cf);
    return rc;
}

int fixture_build(const char *path, const char *model, const FixtureOptions *opt,
                  int64_t *plan_id)
{
    int resnet = !strcmp(model, "resnet50"), rc, L = 4, B = resnet ? 2 : 4;
    const Cfg *cfgs = resnet ? resnet_cfgs : mlp_cfgs;
    size_t ncfg = resnet ? sizeof(resnet_cfgs) / sizeof(Cfg) : sizeof(mlp_cfgs) / sizeof(Cfg);
    const StageDef *sd = resnet ? resnet_stages : mlp_stages;
    const Tensor *ts = resnet ? resnet_tensors : mlp_tensors;
    size_t nts = resnet ? sizeof(resnet_tensors) / sizeof(Tensor) : sizeof(mlp_tensors) / sizeof(Tensor);
    double base = resnet ? 0.003 : 0.002;
    char csv[4200];
    Costdb *db = NULL;
    int64_t sweep = 0;
    CostdbImportOptions io = {1, resnet ? 8 : 4, B, resnet ? 32 * B : 2048, model};
    snprintf(csv, sizeof(csv), "%s.csv", path);
    unlink(path);
    if ((rc = write_csv(csv, cfgs, ncfg, L, base, opt)) < 0)
        return rc;
    if ((rc = costdb_open(path, 0, &db, NULL, 0)) < 0)
        goto cleanup;
    if ((rc = costdb_csv_import(db, csv, &io, &sweep)) < 0)
        goto cleanup;
    if (!opt->with_plan)
        goto cleanup;
    CostdbPlan plan;
    CostdbPlanStage st[2];
    memset(&plan, 0, sizeof(plan));
    memset(st, 0, sizeof(st));
    double sum = 0, mx = 0;
    StageDef sdu[2];
    memcpy(sdu, sd, sizeof(sdu));
    if (opt->uniform && resnet)
        sdu[0] = sdu[1];
    if (opt->uniform && resnet)
        sdu[0].start = 0, sdu[0].end = 1;
    sd = sdu;
    for (int k = 0; k < 2; k++) {
        const Cfg c = {sd[k].hosts, sd[k].gpus, sd[k].a, sd[k].b, sd[k].force,
                       k == 0 ? cfgs[0].factor : cfgs[1].factor};
        long long n = sd[k].end - sd[k].start + 1;
        st[k].stage_index = k;
        st[k].start_layer = sd[k].start;
        st[k].end_layer = sd[k].end;
        if ((rc = find_config(db, sweep, &sd[k], &st[k].submesh_index, &st[k].config_index)) < 0)
            goto cleanup;
        st[k].submesh_hosts = sd[k].hosts;
        st[k].submesh_gpus = sd[k].gpus;
        st[k].logical_a = sd[k].a;
        st[k].logical_b = sd[k].b;
        st[k].force_batch_dim = sd[k].force;
        st[k].fwd_cost = cost_of(sd[k].start, sd[k].end, &c, 0, base, opt->scale);
        st[k].bwd_cost = cost_of(sd[k].start, sd[k].end, &c, 1, base, opt->scale);
        st[k].peak_memory = 3 * 268435456LL * n;
        st[k].available_memory = 17179869184LL;
        st[k].memory_needed = st[k].peak_memory + 134217728LL * n + (2 - k) * 67108864LL * n;
        sum += st[k].fwd_cost + st[k].bwd_cost;
        if (st[k].fwd_cost + st[k].bwd_cost > mx)
            mx = st[k].fwd_cost + st[k].bwd_cost;
    }
    plan.sweep_id = sweep;
    snprintf(plan.kind, sizeof(plan.kind), "manual");
    snprintf(plan.objective, sizeof(plan.objective), "training");
    plan.micro_batches = B;
    plan.cost = sum + (B - 1) * mx;
    plan.full_cost = plan.cost;
    plan.feasible = 1;
    if ((rc = costdb_plan_put(db, &plan, st, 2)) < 0)
        goto cleanup;
    *plan_id = plan.id;
    for (int k = 0; k < 2; k++) {
        CostdbPlacement p[16];
        size_t np = 0;
        for (size_t t = 0; t < nts; t++) {
            ApreportLayout l;
            if (ts[t].stage != k)
                continue;
            memset(&p[np], 0, sizeof(p[np]));
            memset(&l, 0, sizeof(l));
            l.ndim = ts[t].ndim;
            l.logical_a = sd[k].a;
            l.logical_b = sd[k].b;
            memcpy(l.mesh_axis_of_dim, ts[t].axes, sizeof(ts[t].axes));
            p[np].start_layer = sd[k].start;
            p[np].end_layer = sd[k].end;
            p[np].submesh_index = st[k].submesh_index;
            p[np].config_index = st[k].config_index;
            p[np].tensor_index = ts[t].index;
            snprintf(p[np].tensor_name, sizeof(p[np].tensor_name), "%s", ts[t].name);
            snprintf(p[np].role, sizeof(p[np].role), "%s", ts[t].role);
            snprintf(p[np].shape, sizeof(p[np].shape), "%s", ts[t].shape);
            snprintf(p[np].dtype, sizeof(p[np].dtype), "f32");
            if (opt->hostile && !resnet) {
                if (ts[t].index == 0)
                    snprintf(p[np].tensor_name, sizeof(p[np].tensor_name), "%s",
                             FIXTURE_HOSTILE_INPUT);
                if (ts[t].index == 6)
                    snprintf(p[np].tensor_name, sizeof(p[np].tensor_name), "%s",
                             FIXTURE_HOSTILE_CROSS);
                if (ts[t].index == 1)
                    snprintf(p[np].dtype, sizeof(p[np].dtype), "%s", FIXTURE_HOSTILE_DTYPE);
                if (ts[t].index == 2)
                    snprintf(p[np].shape, sizeof(p[np].shape), "%s", FIXTURE_HOSTILE_SHAPE);
            }
            costdb_spec_format(&l, p[np].sharding_spec, sizeof(p[np].sharding_spec));
            np++;
        }
        if ((rc = costdb_placements_put(db, sweep, p, np)) < 0)
            goto cleanup;
    }
cleanup:
    costdb_close(&db);
    unlink(csv);
    return rc;
}
