/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The database side of a sweep: its hardware, model and sweep rows
 * (approf_sweep_open_db), finding an unfinished sweep with the same
 * provenance for --resume, creating a new one with its submesh and config
 * lists, and writing entries in batched transactions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cuda/probe_store.h"
#include "fnv.h"
#include "hardware.h"
#include "sweep.h"
#include "sweep_db.h"
#include "sweep_int.h"

static uint64_t fnv1a(const char *s)
{
    return costdb_fnv1a_str(COSTDB_FNV_BASIS_V1, s);
}

int approf_sweep_find_resumable(Costdb *db, const CostdbSweep *want, int64_t *id,
                                int *complete)
{
    CostdbSweep *all = NULL;
    size_t n = 0;
    int rc = costdb_sweep_list(db, &all, &n);
    *id = 0;
    *complete = 0;
    if (rc < 0)
        return rc;
    for (size_t i = n; i-- > 0;) {
        CostdbSweepStatus st = all[i].status;
        unsigned differ = 0;
        if (st != COSTDB_SWEEP_RUNNING && st != COSTDB_SWEEP_INTERRUPTED &&
            st != COSTDB_SWEEP_COMPLETE)
            continue;
        if ((rc = costdb_setup_diff(db, &all[i], db, want, COSTDB_SETUP_IGNORE_RESUME,
                                    &differ)) < 0)
            break;
        if (!differ) {
            *id = all[i].id;
            *complete = st == COSTDB_SWEEP_COMPLETE;
            break;
        }
    }
    free(all);
    return rc;
}

int approf_sweep_writer_init(ApprofSweepWriter *w, Costdb *db, int64_t sweep_id, int commit_every)
{
    memset(w, 0, sizeof *w);
    w->db = db;
    w->sweep_id = sweep_id;
    w->commit_every = commit_every > 0 ? commit_every : 64;
    w->max_seconds = 0.05;
    return 0;
}

/* Opens the batch transaction if none is open. */
static int writer_begin(ApprofSweepWriter *w)
{
    int rc;
    if (w->in_txn)
        return 0;
    rc = costdb_begin(w->db);
    if (rc < 0)
        return rc;
    w->in_txn = 1;
    w->pending = 0;
    w->opened_at = costdb_monotonic_seconds();
    return 0;
}

/* Entries held for one costdb_entries_put: a batch of the default 64
 * tuples, two entries each (82 kB, below malloc's threshold for mmap). */
#define WRITER_HELD 128

/* Writes the held entries into the open batch. */
static int held_write(ApprofSweepWriter *w)
{
    size_t n = w->n_held;
    w->n_held = 0;
    return n ? costdb_entries_put(w->db, w->sweep_id, w->held, n, 0) : 0;
}

/* The batch rolled back, what it held dropped. */
static void writer_abort(ApprofSweepWriter *w)
{
    costdb_rollback(w->db);
    w->in_txn = 0;
    w->pending = 0;
    w->n_held = 0;
    free(w->held);
    w->held = NULL;
}

/* The tuple's entries to the batch: held, or written now with what is
 * held when they would not fit (in the order given either way, so the
 * cost rows get the ids they got when each tuple's entries were written
 * at once). */
static int held_add(ApprofSweepWriter *w, const CostdbEntry *e, size_t n)
{
    int rc;
    if (w->n_held + n > WRITER_HELD && (rc = held_write(w)) < 0)
        return rc;
    if (n > WRITER_HELD)
        return costdb_entries_put(w->db, w->sweep_id, e, n, 0);
    if (!w->held && !(w->held = malloc(WRITER_HELD * sizeof *w->held)))
        return costdb_entries_put(w->db, w->sweep_id, e, n, 0);
    /* the used bytes only (costdb_entry_copy): most error texts are empty */
    for (size_t i = 0; i < n; i++)
        costdb_entry_copy(&w->held[w->n_held + i], &e[i]);
    w->n_held += n;
    return 0;
}

/* The tuple put into the batch (rc 0), or the batch rolled back; the
 * batch committed when it is full or old. */
static int writer_put_done(ApprofSweepWriter *w, int rc)
{
    if (rc < 0) {
        writer_abort(w);
        return rc;
    }
    w->pending++;
    if (w->pending >= w->commit_every || costdb_monotonic_seconds() - w->opened_at >= w->max_seconds)
        return approf_sweep_writer_commit(w);
    return 0;
}

int approf_sweep_writer_put(ApprofSweepWriter *w, const CostdbEntry *entries, size_t n,
                            const CostdbPlacement *placements, size_t n_placements)
{
    int rc = writer_begin(w);
    if (rc < 0)
        return rc;
    rc = n ? held_add(w, entries, n) : 0;
    if (rc == 0 && n_placements)
        rc = costdb_placements_put(w->db, w->sweep_id, placements, n_placements);
    return writer_put_done(w, rc);
}

int approf_sweep_writer_put_keyed(ApprofSweepWriter *w, const CostdbEntry *entries, size_t n,
                                  const CostdbPlacementKey *key, CostdbPlacementRows rows,
                                  void *ctx)
{
    int rc = writer_begin(w);
    if (rc < 0)
        return rc;
    rc = n ? held_add(w, entries, n) : 0;
    if (rc == 0)
        rc = costdb_placements_put_keyed(w->db, w->sweep_id, key, rows, ctx);
    return writer_put_done(w, rc);
}

/* Writes the held entries and commits the open batch, if any; the held
 * entries' block is kept for the next batch (a sweep commits tens of
 * thousands of batches: 55,000 on the 405B full space, each of which freed
 * and took again an 82 kB block, which the writer thread's heap trimmed
 * and faulted in again). */
int approf_sweep_writer_commit(ApprofSweepWriter *w)
{
    int rc;
    if (!w->in_txn) {
        w->n_held = 0;
        return 0;
    }
    if ((rc = held_write(w)) < 0) {
        writer_abort(w);
        return rc;
    }
    rc = costdb_commit(w->db);
    w->in_txn = 0;
    w->pending = 0;
    if (rc < 0)
        costdb_rollback(w->db);
    return rc;
}

void approf_sweep_writer_release(ApprofSweepWriter *w)
{
    free(w->held);
    w->held = NULL;
    w->n_held = 0;
}

int approf_sweep_writer_flush(ApprofSweepWriter *w)
{
    int rc = approf_sweep_writer_commit(w);
    approf_sweep_writer_release(w);
    return rc;
}

static int record_model(Sweep *sw, const ApprofSweepConfig *cfg, CostdbModel *m, char *err,
                        size_t errlen)
{
    CostdbLayer *layers;
    char sigsrc[512];
    int rc;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s",
             cfg->model_file ? sw->graph->name : cfg->model_name);
    approf_graph_hash(sw->graph, m->graph_hash, sizeof m->graph_hash);
    snprintf(m->dtype, sizeof m->dtype, "%s", approf_dtype_name(sw->graph->dtype));
    m->batch_size = sw->graph->batch_size;
    m->num_params = approf_graph_num_params(sw->graph);
    m->num_layers = sw->layering.n_layers;
    snprintf(m->layer_option, sizeof m->layer_option, "%s", sw->layering.option);
    {
        /* A mixture of experts' routing, which no placement shows: top_k
         * and the slots per expert and sample of its dispatch (apsolve's
         * ep= prices the token all-to-all from them, docs/expert-parallel.md);
         * recorded when every router and dispatch of the graph agree. */
        int top_k = 0, agree = 1;
        int64_t cap = 0;
        char moe[96] = "";
        for (size_t o = 0; o < sw->graph->n_ops; o++) {
            const ApprofOp *op = &sw->graph->ops[o];
            if (op->kind == APPROF_OP_TOPK_ROUTER) {
                agree &= !top_k || top_k == op->attrs.top_k;
                top_k = op->attrs.top_k;
            } else if (op->kind == APPROF_OP_MOE_DISPATCH) {
                agree &= !cap || cap == op->attrs.capacity;
                cap = op->attrs.capacity;
            }
        }
        if (agree && top_k > 0 && cap > 0)
            snprintf(moe, sizeof moe, ",\"moe_top_k\":%d,\"moe_capacity\":%lld", top_k,
                     (long long)cap);
        /* The attention's query heads, which no placement shows either
         * (apsolve's cp_comm a2a splits them over cp, docs/context-
         * parallel.md): the fused op's query [B, S, Hkv, G, D] holds Hkv x G,
         * the eager softmax's scores [B, H, S, S'] H; recorded when every
         * attention of the graph agrees. */
        int64_t heads = 0;
        for (size_t o = 0; o < sw->graph->n_ops; o++) {
            const ApprofOp *op = &sw->graph->ops[o];
            const ApprofTensor *t;
            int64_t h = 0;
            if ((op->kind != APPROF_OP_ATTENTION && op->kind != APPROF_OP_SOFTMAX) ||
                op->n_inputs < 1)
                continue;
            t = &sw->graph->tensors[op->inputs[0]];
            if (op->kind == APPROF_OP_ATTENTION && t->ndim == 5)
                h = t->dims[2] * t->dims[3];
            else if (op->kind == APPROF_OP_SOFTMAX && t->ndim == 4 && op->attrs.axis == 3)
                h = t->dims[1];
            if (h > 0 && heads && h != heads)
                heads = -1;
            else if (h > 0 && heads >= 0)
                heads = h;
        }
        char att[48] = "";
        if (heads > 0)
            snprintf(att, sizeof att, ",\"attention_heads\":%lld", (long long)heads);
        /* a config's facts (cfg->hf_facts) only when the whole object fits:
         * a cut one would read as no object at all */
        for (int facts = cfg->hf_facts != NULL; facts >= 0; facts--)
            if (snprintf(m->options, sizeof m->options,
                         "{\"preset\":\"%s\",\"dataset\":\"%s\",\"model_file\":\"%s\"%s%s%s}",
                         cfg->preset ? cfg->preset : "", cfg->dataset ? cfg->dataset : "",
                         cfg->model_file ? "yes" : "", moe, att, facts ? cfg->hf_facts : "") <
                (int)sizeof m->options)
                break;
    }
    layers = calloc((size_t)m->num_layers, sizeof *layers);
    if (!layers)
        return APPROF_ENOMEM;
    {
        /* signature: graph hash + layer boundaries */
        snprintf(sigsrc, sizeof sigsrc, "%s|", m->graph_hash);
        uint64_t h = fnv1a(sigsrc);
        for (int i = 0; i < m->num_layers; i++) {
            ApprofLayerStats st;
            char b[48];
            rc = approf_layer_stats(sw->graph, &sw->layering, i, &st);
            if (rc < 0) {
                free(layers);
                snprintf(err, errlen, "layer %d: %s", i, approf_strerror(rc));
                return rc;
            }
            layers[i] = (CostdbLayer){i, sw->layering.op_begin[i], sw->layering.op_end[i],
                                      st.fwd_flops, st.bwd_flops, st.param_bytes,
                                      st.activation_bytes, st.inbound_bytes};
            snprintf(b, sizeof b, "%d-%d;", sw->layering.op_begin[i], sw->layering.op_end[i]);
            h ^= fnv1a(b) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        }
        snprintf(m->signature, sizeof m->signature, "%.100s:%016llx", m->graph_hash,
                 (unsigned long long)h);
    }
    rc = costdb_model_upsert(sw->db, m, layers, (size_t)m->num_layers);
    free(layers);
    if (rc < 0) {
        snprintf(err, errlen, "%s", costdb_errmsg(sw->db));
        return APPROF_EDB;
    }
    return 0;
}

static void fill_sweep_row(const Sweep *sw, const ApprofSweepConfig *cfg, const CostdbModel *m,
                           int64_t hardware_id, int64_t global_batch, CostdbSweep *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", m->name);
    s->model_id = m->id;
    s->hardware_id = hardware_id;
    s->cluster_hosts = sw->cluster_hosts;
    s->cluster_gpus = sw->cluster_gpus;
    s->global_batch = global_batch;
    s->micro_batches = cfg->micro_batches;
    s->micro_batch_size = sw->graph->batch_size; /* the graph is built for one micro-batch */
    s->num_layers = sw->layering.n_layers;
    snprintf(s->layer_option, sizeof s->layer_option, "%s", sw->layering.option);
    if (cfg->submesh_space == APPROF_SUBMESH_MANUAL) {
        size_t off = (size_t)snprintf(s->submesh_space, sizeof s->submesh_space, "manual:");
        for (int i = 0; i < cfg->n_manual_submeshes && off < sizeof s->submesh_space; i++)
            off += (size_t)snprintf(s->submesh_space + off, sizeof s->submesh_space - off,
                                    "%s%dx%d", i ? "," : "", cfg->manual_submeshes[i].n,
                                    cfg->manual_submeshes[i].m);
    } else {
        snprintf(s->submesh_space, sizeof s->submesh_space, "%s",
                 approf_submesh_space_name(cfg->submesh_space));
    }
    snprintf(s->logical_space, sizeof s->logical_space, "%s",
             approf_logical_space_name(cfg->logical_space));
    snprintf(s->profile_mode, sizeof s->profile_mode, "%s",
             cfg->individual ? "individual" : "composition");
    snprintf(s->dtype, sizeof s->dtype, "%s", approf_dtype_name(sw->graph->dtype));
    snprintf(s->backend, sizeof s->backend, "%s", sw->backend.name);
    snprintf(s->tool_version, sizeof s->tool_version, "%s",
             cfg->tool_version ? cfg->tool_version : "");
    {
        /* everything that changes the figures beyond the columns above: a
         * resume or merge only continues a sweep with equal options */
        CostdbVariantSpace space = costdb_variant_space_resolve(cfg->variants);
        size_t off = (size_t)snprintf(s->options, sizeof s->options,
                                      "{\"sharding_solver\":\"%s\"",
                                      cfg->sharding_method == APPROF_ILP_ELIMINATE_TREES_THEN_CBC ? "cbc"
                                                                       : "series-parallel");
        if (off < sizeof s->options && !costdb_variant_space_is_plain(space))
            off += (size_t)snprintf(s->options + off, sizeof s->options - off,
                                    ",\"memory_levels\":%d,\"recompute_mask\":%u,"
                                    "\"zero_mask\":%u", space.memory_levels,
                                    space.recompute_mask & 15u, space.zero_mask & 15u);
        if (cfg->imbalance_tol >= 0 && off < sizeof s->options)
            off += (size_t)snprintf(s->options + off, sizeof s->options - off,
                                    ",\"stage_imbalance_tolerance\":%.17g", cfg->imbalance_tol);
        if (sw->curves && off < sizeof s->options) {
            char h[32];
            approf_comm_curves_hash(sw->curves, h, sizeof h);
            off += (size_t)snprintf(s->options + off, sizeof s->options - off,
                                    ",\"comm_curves\":\"%s\"", h);
        }
        if (sw->hw.gemm_table && off < sizeof s->options) {
            char h[32];
            approf_gemm_table_hash(sw->hw.gemm_table, h, sizeof h);
            off += (size_t)snprintf(s->options + off, sizeof s->options - off,
                                    ",\"gemm_table\":\"%s\"", h);
        }
        /* the precision (docs/fp8.md): a 16-bit sweep keeps its options */
        if (sw->hw.fp8 && off < sizeof s->options)
            off += (size_t)snprintf(s->options + off, sizeof s->options - off,
                                    ",\"precision\":\"fp8\",\"fp8_recipe\":\"%s\"%s",
                                    costdb_fp8_recipe(sw->hw.fp8)->name,
                                    /* FP8 primary weights (the spec's
                                     * fp8_param_gather): the launch files
                                     * write Megatron's --fp8-param-gather */
                                    sw->hw.fp8_param_gather ? ",\"fp8_param_gather\":1" : "");
        /* Megatron-Core's fused gated activation (--activation-fusion or a
         * model file's "rerun" ops, docs/models.md): the launch files say
         * that the frameworks with an eager MLP keep more than was priced */
        if (approf_graph_has_rerun(sw->graph) && off < sizeof s->options)
            off += (size_t)snprintf(s->options + off, sizeof s->options - off,
                                    ",\"activation_fusion\":1");
        /* ZeRO-3's overlap (docs/variants.md, "ZeRO-3 overlap"): a serial
         * sweep keeps its options */
        if (sw->hw.zero3_schedule && off < sizeof s->options)
            off += (size_t)snprintf(s->options + off, sizeof s->options - off,
                                    ",\"zero3_schedule\":\"%s\"",
                                    approf_zero3_schedule_name(sw->hw.zero3_schedule));
        if (off < sizeof s->options)
            snprintf(s->options + off, sizeof s->options - off, "}");
    }
    if (cfg->shard_n > 1)
        snprintf(s->shard, sizeof s->shard, "%d/%d", cfg->shard_k, cfg->shard_n);
    if (cfg->model_file)
        snprintf(s->source, sizeof s->source, "%s", cfg->model_file);
    costdb_now(s->started_at, sizeof s->started_at);
    s->status = COSTDB_SWEEP_RUNNING;
}

/* --resume found nothing: says so, and why when an earlier sweep has these
 * inputs on a hardware row of the same spec name with other figures (a
 * built-in's figures changed in an approf update, or the spec file was
 * edited): the fingerprint keys the rows, so that sweep's entries are not
 * this one's (docs/hardware.md, "Host link"). */
static void say_no_resumable(Sweep *sw, const ApprofSweepCallbacks *cb, const CostdbSweep *want)
{
    CostdbSweep *all = NULL;
    CostdbHardware old, now;
    size_t n = 0;
    int64_t found = 0;
    if (costdb_sweep_list(sw->db, &all, &n) == 0) {
        for (size_t i = n; i-- > 0 && !found;) {
            unsigned differ = 0, rest = 0;
            if (costdb_setup_diff(sw->db, &all[i], sw->db, want, COSTDB_SETUP_IGNORE_RESUME,
                                  &differ) < 0 || differ != COSTDB_SETUP_HARDWARE ||
                costdb_setup_diff(sw->db, &all[i], sw->db, want, COSTDB_SETUP_HARDWARE,
                                  &rest) < 0 || rest != 0 ||
                costdb_hardware_get(sw->db, all[i].hardware_id, &old) < 0 ||
                costdb_hardware_get(sw->db, want->hardware_id, &now) < 0 ||
                strcmp(old.spec_name, now.spec_name))
                continue;
            found = all[i].id;
        }
    }
    free(all);
    if (!found) {
        approf_sweep_notice(cb, "--resume: no unfinished sweep with these inputs; starting one");
        return;
    }
    approf_sweep_notice(cb, "--resume: sweep %lld has these inputs but hardware %s, and '%s' is "
                        "now %s: its figures changed (a built-in's in an approf update, "
                        "docs/hardware.md), so that sweep's entries do not price this one; "
                        "starting a new sweep (sweep %lld stays in the database; pass a spec "
                        "file written from its figures to continue it)", (long long)found,
                        old.fingerprint, now.spec_name, now.fingerprint, (long long)found);
}

static int create_or_resume(Sweep *sw, const ApprofSweepConfig *cfg,
                            const ApprofSweepCallbacks *cb, CostdbSweep *row,
                            ApprofSweepSummary *sum, int *was_complete, char *err,
                            size_t errlen)
{
    CostdbSubmesh subs[APPROF_MAX_SUBMESHES];
    CostdbConfig *confs;
    size_t nc = 0;
    int64_t existing = 0;
    int rc, complete = 0;
    if (cfg->resume) {
        rc = approf_sweep_find_resumable(sw->db, row, &existing, &complete);
        if (rc < 0)
            goto dberr;
        if (existing) {
            row->id = existing;
            sum->resumed = 1;
            if (complete) {
                /* nothing to compute: every tuple is present, the
                 * dominated variants it left out too (sweep_dominated.h) */
                *was_complete = 1;
                approf_sweep_notice(cb, "--resume: sweep %lld with these inputs is already complete",
                       (long long)existing);
                return 0;
            }
            rc = approf_sweep_claim(sw, cfg, cb, existing, err, errlen);
            if (rc < 0)
                return rc;
            rc = costdb_sweep_set_status(sw->db, existing, COSTDB_SWEEP_RUNNING, 0);
            if (rc < 0)
                goto dberr;
            approf_sweep_notice(cb, "resuming sweep %lld", (long long)existing);
            return 0;
        }
        say_no_resumable(sw, cb, row);
    } else if (approf_sweep_find_resumable(sw->db, row, &existing, &complete) == 0 && existing) {
        /* a second identical sweep is what was asked for; say it, and what
         * reuses the first */
        approf_sweep_notice(cb, "sweep %lld with these inputs is already %s in this database; "
                            "this adds another (--resume %s it)", (long long)existing,
                            complete ? "complete" : "there, unfinished",
                            complete ? "reuses" : "continues");
    }
    confs = calloc((size_t)sw->n_submeshes * APPROF_MAX_CONFIGS, sizeof *confs);
    if (!confs)
        return APPROF_ENOMEM;
    for (int s = 0; s < sw->n_submeshes; s++) {
        subs[s] = (CostdbSubmesh){s, sw->submeshes[s].n, sw->submeshes[s].m};
        for (int c = 0; c < sw->n_configs[s]; c++)
            confs[nc++] = (CostdbConfig){s, c, sw->configs[s][c].logical_a,
                                         sw->configs[s][c].logical_b,
                                         sw->configs[s][c].force_batch_dim,
                                         sw->configs[s][c].variant};
    }
    rc = costdb_sweep_create(sw->db, row, subs, (size_t)sw->n_submeshes, confs, nc);
    free(confs);
    if (rc < 0)
        goto dberr;
    return approf_sweep_claim(sw, cfg, cb, row->id, err, errlen);
dberr:
    approf_sweep_db_error(sw, cfg, err, errlen);
    return APPROF_EDB;
}

/* The write-ahead log's pages between the sweep connection's automatic
 * checkpoints: 32 MiB at 4 kB pages (SQLite's default is 1,000 pages). */
#define SWEEP_WAL_PAGES 8192

/* The database rows (hardware, model, sweep) and, on resume, which tuples
 * already have entries: have[k] bit 0 fwd, bit 1 bwd (every tuple of a
 * complete sweep). Rank 0 only. */
int approf_sweep_open_db(Sweep *sw, const ApprofSweepConfig *cfg,
                         const ApprofSweepCallbacks *cb, int64_t global_batch, CostdbSweep *row,
                         unsigned char *have, ApprofSweepSummary *sum, char *err,
                         size_t errlen)
{
    CostdbHardware hwrow;
    CostdbModel model;
    char dberrbuf[1024];
    int complete = 0;
    int rc = costdb_open(cfg->db_path, 0, &sw->db, dberrbuf, sizeof dberrbuf);
    if (rc < 0) {
        snprintf(err, errlen, "%s", dberrbuf);
        return APPROF_EDB;
    }
    /* the writer's commits checkpoint every SWEEP_WAL_PAGES pages, not
     * every 1,000: a 126-layer full sweep synced 1,000 times (docs/perf-wrmemo.md) */
    if (costdb_wal_autocheckpoint(sw->db, SWEEP_WAL_PAGES) < 0) {
        approf_sweep_db_error(sw, cfg, err, errlen);
        return APPROF_EDB;
    }
    if (cfg->hardware_id > 0) {
        /* a stored row (approf probe's, say): its measured curves and GEMM
         * rates, the spec for the rest */
        rc = costdb_hardware_get(sw->db, cfg->hardware_id, &hwrow);
        if (rc == COSTDB_ENOTFOUND) {
            snprintf(err, errlen, "%s: no hardware row %lld", cfg->db_path,
                     (long long)cfg->hardware_id);
            return APPROF_EINVAL;
        }
        if (rc < 0) {
            approf_sweep_db_error(sw, cfg, err, errlen);
            return APPROF_EDB;
        }
        approf_sweep_notice(cb, "hardware row %lld (%s): its measured curves and GEMM rates where"
                            " it has them, the spec '%s' for the rest", (long long)hwrow.id,
                            hwrow.fingerprint, sw->hw.name);
    } else if (sw->have_gpu_info && sw->n_devices > 0 && !strcmp(sw->backend.name, "cuda")) {
        /* measured on this machine: its measured: row (approf probe's, with
         * the curves it stored; else a new one, without curves) */
        char fp[COSTDB_TEXT_MAX];
        approf_probe_fingerprint(&sw->gpu_info, fp, sizeof fp);
        rc = costdb_hardware_find(sw->db, fp, &hwrow);
        if (rc == COSTDB_ENOTFOUND) {
            rc = approf_probe_hardware_row(&sw->gpu_info, NULL, 0, NULL, 0, &hwrow);
            if (rc < 0) {
                snprintf(err, errlen, "%s: cannot describe this machine", cfg->db_path);
                return APPROF_EINVAL;
            }
            approf_sweep_notice(cb, "no 'approf probe' results for this machine in %s: collectives use the "
                       "alpha-beta model of '%s' (run approf probe --db %s first to measure "
                       "them)", cfg->db_path, sw->hw.name, cfg->db_path);
        } else if (rc < 0) {
            approf_sweep_db_error(sw, cfg, err, errlen);
            return APPROF_EDB;
        }
    } else {
        approf_hardware_to_costdb(&sw->hw, &hwrow);
    }
    if (costdb_hardware_upsert(sw->db, &hwrow) < 0 ||
        costdb_comm_list(sw->db, hwrow.id, &sw->comm_pts, &sw->n_comm_pts) < 0 ||
        costdb_gemm_get(sw->db, hwrow.id, approf_gemm_table_dtype(&sw->hw, sw->graph->dtype),
                        &sw->gemm_pts, &sw->n_gemm_pts) < 0) {
        approf_sweep_db_error(sw, cfg, err, errlen);
        return APPROF_EDB;
    }
    rc = approf_sweep_use_gemm(sw, cb, hwrow.id);
    if (rc < 0) {
        snprintf(err, errlen, "GEMM rates: %s", approf_strerror(rc));
        return rc;
    }
    rc = approf_sweep_use_curves(sw, sum);
    if (rc < 0) {
        snprintf(err, errlen, "communication curves: %s", approf_strerror(rc));
        return rc;
    }
    if (sw->curves) {
        size_t np;
        size_t nc = approf_comm_curves_count(sw->curves, &np);
        approf_sweep_notice(cb, "collectives from %zu measured curve%s (%zu points) of hardware %lld; "
                   "the alpha-beta model of '%s' elsewhere",
               nc, nc == 1 ? "" : "s", np, (long long)hwrow.id, sw->hw.name);
    }
    rc = record_model(sw, cfg, &model, err, errlen);
    if (rc < 0)
        return rc;
    {
        /* A model row written before the graph's family had a zoo name of
         * its own (qwen3 was built as qwen2, ...; docs/models.md, "Graph
         * names") is found by its signature and keeps its name: this sweep
         * takes it too, and says so. */
        CostdbModel stored;
        if (costdb_model_get(sw->db, model.id, &stored) == 0 && strcmp(stored.name, model.name)) {
            approf_sweep_notice(cb, "model %lld is stored as '%s', this graph's name when it was "
                                "written (approf now names it '%s'); this sweep keeps '%s'. A sweep "
                                "of another batch size is stored as '%s' and apsolve does not join "
                                "it with these", (long long)model.id, stored.name, model.name,
                                stored.name, model.name);
            snprintf(model.name, sizeof model.name, "%s", stored.name);
        }
    }
    fill_sweep_row(sw, cfg, &model, hwrow.id, global_batch, row);
    rc = create_or_resume(sw, cfg, cb, row, sum, &complete, err, errlen);
    if (rc < 0)
        return rc;
    sum->sweep_id = row->id;
    for (size_t k = 0; sum->resumed && k < sw->n_tuples; k++) {
        const ApprofTuple *t = &sw->tuples[k];
        if ((int)(k % (size_t)cfg->shard_n) != cfg->shard_k)
            continue;
        if (complete) {
            have[k] = 3;
            continue;
        }
        for (int ph = 0; ph < 2; ph++) {
            int x = 0;
            if (costdb_entry_exists(sw->db, row->id, t->start, t->end, t->submesh, t->config,
                                    ph ? COSTDB_BWD : COSTDB_FWD, &x) < 0) {
                snprintf(err, errlen, "%s: %s", cfg->db_path, costdb_errmsg(sw->db));
                return APPROF_EDB;
            }
            if (x)
                have[k] |= (unsigned char)(1u << ph);
        }
    }
    return 0;
}
