/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Merging --shard K/N sweeps (merge.h): pick the shard sweeps of each input,
 * check that they form one sweep (same provenance, shards 0..N-1 once each,
 * all complete), then copy hardware, model, sweep, entries and placements
 * into the output in one transaction, composing range entries for profile
 * mode individual exactly as a single-process sweep does (compose.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compose.h"
#include "costdb.h"
#include "costdb_error.h"
#include "grow.h"
#include "costdb_text.h"
#include "graph.h"
#include "merge.h"

typedef struct {
    const char *path;
    Costdb *db;                   /* borrowed from the input list */
    CostdbSweep sweep;
    CostdbModel model;
    CostdbHardware hw;
    int k, n;
} Shard;

typedef struct {
    Shard *v;
    size_t n, cap;
} ShardList;

/* The first field of the setup in which a and b differ, or NULL: everything
 * but the shard (costdb_setup_diff; model and hardware by signature and
 * fingerprint, ids are per file). *rc is the error of reading a row. */
static const char *provenance_diff(const Shard *a, const Shard *b, int *rc)
{
    unsigned differ = 0;
    *rc = costdb_setup_diff(a->db, &a->sweep, b->db, &b->sweep, COSTDB_SETUP_IGNORE_MERGE,
                            &differ);
    return *rc < 0 || !differ ? NULL : costdb_setup_field_name(differ);
}

static int shard_load(Costdb *db, const char *path, const CostdbSweep *s, Shard *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    out->path = path;
    out->db = db;
    out->sweep = *s;
    if (costdb_shard_parse(s->shard, &out->k, &out->n) < 0)
        return COSTDB_EINVAL;
    if (s->model_id && (rc = costdb_model_get(db, s->model_id, &out->model)) < 0)
        return rc;
    if (s->hardware_id && (rc = costdb_hardware_get(db, s->hardware_id, &out->hw)) < 0)
        return rc;
    return 0;
}

static int shards_push(ShardList *l, const Shard *s)
{
    if (UTIL_GROW(l->v, l->cap, l->n + 1) < 0)
        return APPROF_ENOMEM;
    l->v[l->n++] = *s;
    return 0;
}

/* The shard sweeps of one input: its newest shard sweep, and for each other
 * shard value the newest sweep with the same provenance. */
static int collect_shards(Costdb *db, const char *path, ShardList *out, char *err,
                          size_t errlen)
{
    CostdbSweep *all = NULL;
    size_t n = 0, first = out->n;
    Shard ref, cand;
    int rc = costdb_sweep_list(db, &all, &n), found = 0;
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, costdb_errmsg(db));
        return APPROF_EDB;
    }
    for (size_t i = n; i-- > 0 && rc == 0;) {
        if (!all[i].shard[0])
            continue;
        rc = shard_load(db, path, &all[i], found ? &cand : &ref);
        if (rc == COSTDB_EINVAL) {
            snprintf(err, errlen, "%s: sweep %lld has a malformed shard '%s'", path,
                     (long long)all[i].id, all[i].shard);
            rc = APPROF_EINVAL;
            break;
        }
        if (rc < 0) {
            snprintf(err, errlen, "%s: %s", path, costdb_errmsg(db));
            rc = APPROF_EDB;
            break;
        }
        if (!found) {
            found = 1;
            rc = shards_push(out, &ref);
            continue;
        }
        if (provenance_diff(&ref, &cand, &rc) || rc < 0 || cand.n != ref.n) {
            if (rc < 0) {
                snprintf(err, errlen, "%s: %s", path, costdb_errmsg(db));
                rc = APPROF_EDB;
            }
            continue;
        }
        {
            int seen = 0;
            for (size_t j = first; j < out->n; j++)
                seen |= out->v[j].k == cand.k;
            if (!seen)
                rc = shards_push(out, &cand);
        }
    }
    free(all);
    if (rc == 0 && !found) {
        snprintf(err, errlen, "%s holds no shard sweep (made by approf sweep --shard K/N)",
                 path);
        rc = APPROF_EINVAL;
    }
    return rc;
}

static int same_lists(const Shard *a, const Shard *b, char *err, size_t errlen)
{
    CostdbSubmesh *sa = NULL, *sb = NULL;
    CostdbConfig *ca = NULL, *cb = NULL;
    size_t nsa = 0, nsb = 0, nca = 0, ncb = 0;
    int rc = 0;
    if (costdb_sweep_submeshes(a->db, a->sweep.id, &sa, &nsa) < 0 ||
        costdb_sweep_submeshes(b->db, b->sweep.id, &sb, &nsb) < 0 ||
        costdb_sweep_configs(a->db, a->sweep.id, &ca, &nca) < 0 ||
        costdb_sweep_configs(b->db, b->sweep.id, &cb, &ncb) < 0) {
        snprintf(err, errlen, "reading submeshes/configs: %s / %s", costdb_errmsg(a->db),
                 costdb_errmsg(b->db));
        rc = APPROF_EDB;
        goto cleanup;
    }
    /* Whole-struct compares (rows are zeroed by costdb, all fields int), so
     * a config's variant (memory level, recompute, ZeRO) must match too. */
    if (nsa != nsb || nca != ncb || (nsa && memcmp(sa, sb, nsa * sizeof *sa)) ||
        (nca && memcmp(ca, cb, nca * sizeof *ca))) {
        snprintf(err, errlen,
                 "%s sweep %lld (shard %s) and %s sweep %lld (shard %s) differ in their "
                 "submesh or config lists", a->path, (long long)a->sweep.id, a->sweep.shard,
                 b->path, (long long)b->sweep.id, b->sweep.shard);
        rc = APPROF_EINVAL;
    }
cleanup:
    free(sa);
    free(sb);
    free(ca);
    free(cb);
    return rc;
}

/* Shards 0..N-1 once each, one provenance, all complete. */
static int check_shards(const ShardList *l, char *err, size_t errlen)
{
    const Shard *r = &l->v[0];
    const Shard **by_k;
    int rc = 0;
    for (size_t i = 0; i < l->n; i++) {
        const Shard *s = &l->v[i];
        const char *d;
        if (s->sweep.status != COSTDB_SWEEP_COMPLETE) {
            snprintf(err, errlen,
                     "%s: sweep %lld (shard %s) is %s, not complete: finish it with the same "
                     "approf sweep command and --resume", s->path, (long long)s->sweep.id,
                     s->sweep.shard, costdb_sweep_status_name(s->sweep.status));
            return APPROF_EINVAL;
        }
        if (s->n != r->n) {
            snprintf(err, errlen, "%s sweep %lld is shard %s but %s sweep %lld is shard %s: "
                     "the shards come from different splits", r->path, (long long)r->sweep.id,
                     r->sweep.shard, s->path, (long long)s->sweep.id, s->sweep.shard);
            return APPROF_EINVAL;
        }
        if ((d = provenance_diff(r, s, &rc)) == NULL && rc < 0) {
            /* shard_load read both rows before: hardly reachable */
            snprintf(err, errlen, "%s: %s; %s: %s", r->path, costdb_errmsg(r->db), s->path,
                     costdb_errmsg(s->db));
            return APPROF_EDB;
        }
        if (d) {
            snprintf(err, errlen, "%s sweep %lld (shard %s) and %s sweep %lld (shard %s) are "
                     "not shards of one sweep: they differ in %s", r->path,
                     (long long)r->sweep.id, r->sweep.shard, s->path, (long long)s->sweep.id,
                     s->sweep.shard, d);
            return APPROF_EINVAL;
        }
        if (i && (rc = same_lists(r, s, err, errlen)) < 0)
            return rc;
    }
    by_k = calloc((size_t)r->n, sizeof *by_k);
    if (!by_k)
        return APPROF_ENOMEM;
    for (size_t i = 0; i < l->n && rc == 0; i++) {
        const Shard *s = &l->v[i];
        if (by_k[s->k]) {
            snprintf(err, errlen, "shard %s is given twice: %s sweep %lld and %s sweep %lld",
                     s->sweep.shard, by_k[s->k]->path, (long long)by_k[s->k]->sweep.id, s->path,
                     (long long)s->sweep.id);
            rc = APPROF_EINVAL;
        }
        by_k[s->k] = s;
    }
    for (int k = 0; k < r->n && rc == 0; k++)
        if (!by_k[k]) {
            snprintf(err, errlen, "shard %d/%d is missing: the inputs hold %zu of the %d shards "
                     "(run approf sweep ... --shard %d/%d and add its database)", k, r->n, l->n,
                     r->n, k, r->n);
            rc = APPROF_EINVAL;
        }
    free(by_k);
    return rc;
}

/* Copies hardware, model and the sweep row; sets *id. Inside the caller's
 * transaction. */
static int write_sweep(Costdb *out, const ShardList *l, int64_t *id)
{
    const Shard *r = &l->v[0];
    CostdbHardware hw = r->hw;
    CostdbModel model = r->model;
    CostdbLayer *layers = NULL;
    CostdbSubmesh *subs = NULL;
    CostdbConfig *confs = NULL;
    CostdbSweep row = r->sweep;
    size_t nl = 0, ns = 0, nc = 0;
    int rc = 0;
    row.hardware_id = row.model_id = 0;
    if (r->sweep.hardware_id) {
        hw.id = 0;
        if ((rc = costdb_hardware_upsert(out, &hw)) < 0)
            goto cleanup;
        row.hardware_id = hw.id;
        /* the measured curves and GEMM rates the sweep was priced with
         * travel along */
        {
            CostdbCommPoint *pts = NULL;
            CostdbGemmPoint *gp = NULL;
            size_t np = 0, ng = 0;
            rc = costdb_comm_list(r->db, r->sweep.hardware_id, &pts, &np);
            if (rc == 0 && np)
                rc = costdb_comm_put(out, hw.id, pts, np);
            if (rc == 0)
                rc = costdb_gemm_list(r->db, r->sweep.hardware_id, &gp, &ng);
            if (rc == 0 && ng)
                rc = costdb_gemm_put(out, hw.id, gp, ng);
            free(pts);
            free(gp);
            if (rc < 0)
                goto cleanup;
        }
    }
    if (r->sweep.model_id) {
        model.id = 0;
        if ((rc = costdb_model_layers(r->db, r->sweep.model_id, &layers, &nl)) < 0 ||
            (rc = costdb_model_upsert(out, &model, layers, nl)) < 0)
            goto cleanup;
        row.model_id = model.id;
    }
    if ((rc = costdb_sweep_submeshes(r->db, r->sweep.id, &subs, &ns)) < 0 ||
        (rc = costdb_sweep_configs(r->db, r->sweep.id, &confs, &nc)) < 0)
        goto cleanup;
    row.id = 0;
    row.shard[0] = '\0';
    row.status = COSTDB_SWEEP_COMPLETE;
    for (size_t i = 1; i < l->n; i++) {
        if (strcmp(l->v[i].sweep.started_at, row.started_at) < 0)
            memcpy(row.started_at, l->v[i].sweep.started_at, sizeof row.started_at);
        if (strcmp(l->v[i].sweep.finished_at, row.finished_at) > 0)
            memcpy(row.finished_at, l->v[i].sweep.finished_at, sizeof row.finished_at);
    }
    rc = costdb_sweep_create(out, &row, subs, ns, confs, nc);
    *id = row.id;
cleanup:
    free(layers);
    free(subs);
    free(confs);
    return rc;
}

/* Composes the range entries of an individual-mode sweep from the merged
 * single-layer entries. 0, APPROF_EDB (costdb_errmsg(out) says why),
 * APPROF_ENOMEM, or APPROF_EINVAL for a submesh table compose cannot take. */
static int compose_merged(Costdb *out, const Shard *r, int64_t id, size_t *composed)
{
    CostdbSubmesh *subs = NULL;
    CostdbConfig *confs = NULL;
    CostdbEntry *all = NULL, *res = NULL;
    ApprofMeshShape shapes[APPROF_MAX_SUBMESHES];
    int n_configs[APPROF_MAX_SUBMESHES] = {0};
    size_t ns = 0, nc = 0, n = 0, nres = 0;
    int rc;
    if ((rc = costdb_sweep_submeshes(out, id, &subs, &ns)) < 0 ||
        (rc = costdb_sweep_configs(out, id, &confs, &nc)) < 0 ||
        (rc = costdb_entries_get(out, id, &all, &n)) < 0) {
        rc = approf_from_costdb(rc);
        goto cleanup;
    }
    if (ns == 0 || ns > APPROF_MAX_SUBMESHES) {
        rc = APPROF_EINVAL;
        goto cleanup;
    }
    for (size_t i = 0; i < ns; i++) {
        if (subs[i].index < 0 || (size_t)subs[i].index >= ns) {
            rc = APPROF_EINVAL;
            goto cleanup;
        }
        shapes[subs[i].index] = (ApprofMeshShape){subs[i].hosts, subs[i].gpus_per_host};
    }
    for (size_t i = 0; i < nc; i++)
        if (confs[i].submesh_index >= 0 && (size_t)confs[i].submesh_index < ns &&
            confs[i].config_index + 1 > n_configs[confs[i].submesh_index])
            n_configs[confs[i].submesh_index] = confs[i].config_index + 1;
    rc = approf_compose_individual(all, n, r->sweep.num_layers, shapes, (int)ns, n_configs,
                                   r->sweep.cluster_hosts * r->sweep.cluster_gpus, &res, &nres);
    if (rc == 0 && nres)
        rc = approf_from_costdb(costdb_entries_put(out, id, res, nres, 0));
    if (rc == 0)
        *composed = nres;
cleanup:
    free(subs);
    free(confs);
    free(all);
    free(res);
    return rc;
}

/* Copies every entry and placement of the shards; inside the transaction. */
static int copy_rows(Costdb *out, const ShardList *l, int64_t id, ApprofMergeSummary *sum,
                     char *err, size_t errlen)
{
    for (size_t i = 0; i < l->n; i++) {
        const Shard *s = &l->v[i];
        CostdbEntry *e = NULL;
        CostdbPlacement *p = NULL;
        size_t ne = 0, np = 0;
        int rc;
        if ((rc = costdb_entries_get(s->db, s->sweep.id, &e, &ne)) < 0 ||
            (rc = costdb_placements_list(s->db, s->sweep.id, &p, &np)) < 0) {
            snprintf(err, errlen, "%s: %s", s->path, costdb_errmsg(s->db));
            free(e);
            return APPROF_EDB;
        }
        rc = costdb_entries_put(out, id, e, ne, 0);
        if (rc == 0)
            rc = costdb_placements_put(out, id, p, np);
        free(e);
        free(p);
        if (rc == COSTDB_ECONSTRAINT) {
            snprintf(err, errlen, "%s sweep %lld (shard %s) holds entries another shard "
                     "holds too: %s", s->path, (long long)s->sweep.id, s->sweep.shard,
                     costdb_errmsg(out));
            return APPROF_EINVAL;
        }
        if (rc < 0) {
            snprintf(err, errlen, "%s", costdb_errmsg(out));
            return APPROF_EDB;
        }
        sum->entries += ne;
        sum->placements += np;
    }
    return 0;
}

int approf_merge_shards(const char *out_path, const char *const *inputs, size_t n_inputs,
                        ApprofMergeSummary *sum, char *err, size_t errlen)
{
    Costdb **dbs = NULL, *out = NULL;
    ShardList l = {0};
    char dberr[1024];
    int64_t id = 0;
    int rc = 0, in_txn = 0;

    memset(sum, 0, sizeof *sum);
    err[0] = '\0';
    if (!n_inputs) {
        snprintf(err, errlen, "no input databases");
        return APPROF_EINVAL;
    }
    dbs = calloc(n_inputs, sizeof *dbs);
    if (!dbs)
        return APPROF_ENOMEM;
    for (size_t i = 0; i < n_inputs && rc == 0; i++) {
        if (costdb_open(inputs[i], COSTDB_OPEN_READONLY, &dbs[i], dberr, sizeof dberr) < 0) {
            snprintf(err, errlen, "%s", dberr);
            rc = APPROF_EDB;
        } else {
            rc = collect_shards(dbs[i], inputs[i], &l, err, errlen);
        }
    }
    if (rc == 0)
        rc = check_shards(&l, err, errlen);
    if (rc < 0)
        goto cleanup;
    sum->shard_n = l.v[0].n;
    snprintf(sum->profile_mode, sizeof sum->profile_mode, "%s", l.v[0].sweep.profile_mode);

    if (costdb_open(out_path, 0, &out, dberr, sizeof dberr) < 0) {
        snprintf(err, errlen, "%s", dberr);
        rc = APPROF_EDB;
        goto cleanup;
    }
    if (costdb_begin(out) < 0) {
        rc = APPROF_EDB;
        goto dberror;
    }
    in_txn = 1;
    if (write_sweep(out, &l, &id) < 0) {
        rc = APPROF_EDB;
        goto dberror;
    }
    rc = copy_rows(out, &l, id, sum, err, errlen);
    if (rc < 0)
        goto cleanup;
    if (!strcmp(l.v[0].sweep.profile_mode, "individual") &&
        (rc = compose_merged(out, &l.v[0], id, &sum->composed)) < 0) {
        if (rc == APPROF_EDB)
            goto dberror;
        snprintf(err, errlen, "%s: composing the range entries of sweep %lld: %s", out_path,
                 (long long)id, approf_strerror(rc));
        goto cleanup;
    }
    if (costdb_commit(out) < 0) {
        rc = APPROF_EDB;
        goto dberror;
    }
    in_txn = 0;
    sum->sweep_id = id;
    goto cleanup;
dberror:
    snprintf(err, errlen, "%s", costdb_errmsg(out));
cleanup:
    if (in_txn)
        costdb_rollback(out);
    costdb_close(&out);
    for (size_t i = 0; i < n_inputs; i++)
        costdb_close(&dbs[i]);
    free(dbs);
    free(l.v);
    return rc;
}
