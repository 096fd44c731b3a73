/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading a report: a plan with its sweep, model, hardware, stages, their
 * entries and placements; then what the report derives. Devices: where
 * costdb_stage_layout places the stages (first fit, kept inside a scale-up
 * domain where the profile priced them; the solver's full estimate prices
 * the same layout). Resharding tasks: each output of stage k that stage k+1
 * reads as an input (same tensor_index) crosses the boundary; strategy and
 * time as docs/reports.md states (send-recv when the destination holds no
 * replicas, broadcast when neither side is split, else send a 1/D slice to
 * each destination device and all-gather locally). Conversions: per mesh
 * axis of every task (same logical shape on both sides; else per tensor),
 * plus the gradient of each parameter over the stage's batch axes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "context_parallel.h"
#include "expert_parallel.h"
#include "grow.h"
#include "headline.h"
#include "plural.h"
#include "report_int.h"
#include "schedule.h"
#include "stage_layout.h"

#define DEF_BW_INTRA 100e9
#define DEF_LAT_INTRA 5e-6
#define DEF_BW_INTER 12.5e9
#define DEF_LAT_INTER 1e-5

static void seterr(char *err, size_t len, const char *fmt, const char *a, const char *b)
{
    if (err && len)
        snprintf(err, len, fmt, a, b);
}

/* "PATH: message" for a costdb failure, without naming the file twice
 * (costdb's messages often start with the path already). */
static void db_error(char *err, size_t len, Costdb *db)
{
    const char *path = costdb_path(db), *msg = costdb_errmsg(db);
    size_t n = strlen(path);
    if (!err || !len)
        return;
    if (!strncmp(msg, path, n) && msg[n] == ':')
        snprintf(err, len, "%s", msg);
    else
        snprintf(err, len, "%s: %s", path, msg);
}

static int add_conv(ApreportReport *r, const RepConversion *c)
{
    if (UTIL_GROW(r->convs, r->cap_convs, r->n_convs + 1) < 0)
        return APREPORT_ENOMEM;
    r->convs[r->n_convs++] = *c;
    return 0;
}

static void add_warning(ApreportReport *r, const char *msg)
{
    if (r->n_warnings < (int)(sizeof(r->warnings) / sizeof(r->warnings[0])))
        snprintf(r->warnings[r->n_warnings++], sizeof(r->warnings[0]), "%s", msg);
}

/* Where the stages sit: costdb_stage_layout, the placement the solver's
 * full estimate prices, on the sweep's hardware (its scale-up domain). */
static void assign_devices(ApreportReport *r)
{
    CostdbFabric fab;
    CostdbStageSpot *spot = calloc(r->n_stages ? r->n_stages : 1, sizeof *spot);
    int *hosts = calloc(r->n_stages ? r->n_stages : 1, sizeof *hosts);
    int *gpus = calloc(r->n_stages ? r->n_stages : 1, sizeof *gpus);
    memset(&fab, 0, sizeof fab);
    if (r->has_hw)
        costdb_fabric_from_hardware(&r->hw, &fab);
    for (size_t k = 0; k < r->n_stages; k++) {
        r->stages[k].first_host = r->stages[k].first_gpu = -1;
        r->stages[k].domains = r->stages[k].priced_domains = 0;
    }
    if (spot && hosts && gpus) {
        for (size_t k = 0; k < r->n_stages; k++) {
            hosts[k] = r->stages[k].st.submesh_hosts;
            gpus[k] = r->stages[k].st.submesh_gpus;
        }
        costdb_stage_layout(r->has_hw ? &fab : NULL, r->sweep.cluster_hosts,
                            r->sweep.cluster_gpus, hosts, gpus, r->n_stages, spot);
        for (size_t k = 0; k < r->n_stages; k++) {
            r->stages[k].first_host = spot[k].first_host;
            r->stages[k].first_gpu = spot[k].first_gpu;
            r->stages[k].domains = spot[k].domains;
            r->stages[k].priced_domains = spot[k].priced_domains;
            if (spot[k].domains > spot[k].priced_domains) {
                char msg[200];
                snprintf(msg, sizeof msg, "stage %zu straddles %d NVLink domains (profiled in "
                         "%d): no layout of the plan's submeshes keeps it in one; its gradient "
                         "all-reduce is priced over the network", k, spot[k].domains,
                         spot[k].priced_domains);
                add_warning(r, msg);
            }
        }
    }
    free(spot);
    free(hosts);
    free(gpus);
}

static int64_t shards_of(const ApreportLayout *l)
{
    int64_t k = 1;
    for (int d = 0; d < l->ndim; d++) {
        int x = l->mesh_axis_of_dim[d];
        if (x >= 0)
            k *= x == 2 ? (int64_t)l->logical_a * l->logical_b : x == 0 ? l->logical_a : l->logical_b;
    }
    return k;
}

static int load_stage(Costdb *db, ApreportReport *r, RepStage *s, const CostdbEntry *e, size_t ne)
{
    CostdbPlacement *pl = NULL;
    size_t np = 0;
    int rc;
    s->wgrad = -1.0;
    for (size_t i = 0; i < ne; i++)
        if (e[i].start_layer == s->st.start_layer && e[i].end_layer == s->st.end_layer &&
            e[i].submesh_index == s->st.submesh_index && e[i].config_index == s->st.config_index) {
            s->have_entries++;
            if (e[i].phase == COSTDB_BWD)
                s->wgrad = e[i].wgrad_cost;
            if (e[i].intermediate_size > s->intermediate)
                s->intermediate = e[i].intermediate_size;
            if (e[i].initial_size > s->initial)
                s->initial = e[i].initial_size;
        }
    /* a cp plan's entries are those of (dp x cp, tp): a cp stage saves
     * 1/cp of their activations (solver/context_parallel.h) */
    if (r->opts.has_layout && r->opts.layout.cp > 1) {
        s->intermediate = apsolve_cp_intermediate(s->intermediate, r->opts.layout.cp);
        /* the weight GEMMs see 1/cp of the tokens (solver/context_parallel.c) */
        if (s->wgrad > 0)
            s->wgrad /= r->opts.layout.cp;
    }
    /* an ep plan's stage holds 1/(ep etp) of the expert weights' state
     * where apsolve transformed its entry (solver/expert_parallel.h: the
     * peak is the stored stage's; the initial state comes from here) */
    if (r->opts.has_layout && r->opts.layout.ep > 0 && r->opts.layout.etp > 0 &&
        s->st.submesh_index >= 0 && s->st.config_index >= 0) {
        ApsolveEpLayout l = {s->st.logical_a, s->st.logical_b, r->opts.layout.ep,
                             r->opts.layout.etp, s->variant.zero, 0, 0};
        ApsolveEpStage x;
        char why[200];
        if (apsolve_ep_stage(db, r->sweep.id, r->sweep.cluster_gpus, s->st.start_layer,
                             s->st.end_layer, s->st.submesh_index, s->st.config_index, &l, &x,
                             why, sizeof why) == 0 && x.usable == 2)
            s->initial = s->initial + x.initial_delta > 0 ? s->initial + x.initial_delta : 0;
    }
    if (s->st.submesh_index < 0 || s->st.config_index < 0)
        return 0;
    rc = costdb_placements_get(db, r->sweep.id, s->st.start_layer, s->st.end_layer,
                               s->st.submesh_index, s->st.config_index, &pl, &np);
    if (rc < 0)
        return APREPORT_EDB;
    s->tensors = calloc(np ? np : 1, sizeof(RepTensor));
    if (!s->tensors) {
        free(pl);
        return APREPORT_ENOMEM;
    }
    for (size_t i = 0; i < np; i++) {
        RepTensor *t = &s->tensors[i];
        int64_t dims[APREPORT_MAX_DIMS];
        int nd = costdb_shape_parse(pl[i].shape, dims, APREPORT_MAX_DIMS);
        char perr[128];
        t->pl = pl[i];
        t->bytes = costdb_dtype_bytes(pl[i].dtype);
        for (int d = 0; d < nd; d++)
            t->bytes *= dims[d];
        t->layout_ok = costdb_spec_parse(pl[i].sharding_spec, s->st.logical_a, s->st.logical_b,
                                           &t->layout, perr, sizeof(perr)) == 0 &&
                       t->layout.ndim == (nd < 0 ? -2 : nd);
        if (t->layout_ok) {
            t->verdict = apreport_verdict(pl[i].role, pl[i].tensor_name, &t->layout);
            t->local_bytes = t->bytes / shards_of(&t->layout);
        } else {
            char msg[256];
            snprintf(msg, sizeof(msg), "stage %d: cannot read the sharding spec of %.80s",
                     s->st.stage_index, pl[i].tensor_name);
            add_warning(r, msg);
            t->local_bytes = t->bytes;
        }
    }
    s->n_tensors = np;
    free(pl);
    return 0;
}

static int crosses_hosts(const RepStage *a, const RepStage *b)
{
    if (a->first_host < 0 || b->first_host < 0)
        return 1;
    return a->st.submesh_hosts > 1 || b->st.submesh_hosts > 1 || a->first_host != b->first_host;
}

static void task_cost(const ApreportReport *r, const RepStage *src, const RepStage *dst,
                      const RepTensor *ts, const RepTensor *td, CostdbReshardingTask *t)
{
    int64_t dd = (int64_t)dst->st.submesh_hosts * dst->st.submesh_gpus;
    int64_t dshards = td->layout_ok ? shards_of(&td->layout) : 1;
    int64_t sshards = ts->layout_ok ? shards_of(&ts->layout) : 1;
    int64_t drepl = dd > 0 ? dd / (dshards ? dshards : 1) : 1;
    int cross = crosses_hosts(src, dst);
    double bw = cross ? r->bw_inter : r->bw_intra, lat = cross ? r->lat_inter : r->lat_intra;
    double bytes = (double)t->bytes;
    if (drepl <= 1) {
        snprintf(t->strategy, sizeof(t->strategy), "send-recv");
        t->seconds = lat + bytes / (double)dshards / bw;
    } else if (sshards == 1 && dshards == 1) {
        snprintf(t->strategy, sizeof(t->strategy), "broadcast");
        t->seconds = lat + bytes / bw;
    } else {
        int dcross = dst->st.submesh_hosts > 1;
        double bwl = dcross ? r->bw_inter : r->bw_intra, latl = dcross ? r->lat_inter : r->lat_intra;
        snprintf(t->strategy, sizeof(t->strategy), "local-allgather");
        t->seconds = lat + bytes / (double)dd / bw + latl +
                     (double)(drepl - 1) / (double)drepl * bytes / (double)dshards / bwl;
    }
}

static int derive_tasks(ApreportReport *r)
{
    size_t cap = 0;
    for (size_t k = 0; k + 1 < r->n_stages; k++)
        cap += r->stages[k].n_tensors;
    r->tasks = calloc(cap ? cap : 1, sizeof(CostdbReshardingTask));
    if (!r->tasks)
        return APREPORT_ENOMEM;
    for (size_t k = 0; k + 1 < r->n_stages; k++) {
        RepStage *a = &r->stages[k], *b = &r->stages[k + 1];
        for (size_t i = 0; i < a->n_tensors; i++) {
            RepTensor *ta = &a->tensors[i];
            if (strcmp(ta->pl.role, "output"))
                continue;
            for (size_t j = 0; j < b->n_tensors; j++) {
                RepTensor *tb = &b->tensors[j];
                if (strcmp(tb->pl.role, "input") || tb->pl.tensor_index != ta->pl.tensor_index)
                    continue;
                CostdbReshardingTask *t = &r->tasks[r->n_tasks];
                t->task_index = (int)r->n_tasks++;
                t->src_stage = (int)k;
                t->dst_stage = (int)k + 1;
                snprintf(t->tensor_name, sizeof(t->tensor_name), "%s", ta->pl.tensor_name);
                snprintf(t->shape, sizeof(t->shape), "%s", ta->pl.shape);
                snprintf(t->dtype, sizeof(t->dtype), "%s", ta->pl.dtype);
                snprintf(t->src_spec, sizeof(t->src_spec), "%s", ta->pl.sharding_spec);
                snprintf(t->dst_spec, sizeof(t->dst_spec), "%s", tb->pl.sharding_spec);
                t->bytes = ta->bytes;
                task_cost(r, a, b, ta, tb, t);
                break;
            }
        }
    }
    return 0;
}

static const RepTensor *find_tensor(const RepStage *s, const char *role, const char *name)
{
    for (size_t i = 0; i < s->n_tensors; i++)
        if (!strcmp(s->tensors[i].pl.role, role) && !strcmp(s->tensors[i].pl.tensor_name, name))
            return &s->tensors[i];
    return NULL;
}

/* Overall SBP of a layout on a mesh of another shape: S on its first split
 * dimension, else B. */
static ApreportSbp overall_sbp(const ApreportLayout *l)
{
    ApreportSbp s = {APREPORT_SBP_B, -1};
    for (int d = 0; d < l->ndim && s.kind == APREPORT_SBP_B; d++)
        if (l->mesh_axis_of_dim[d] >= 0)
            s.kind = APREPORT_SBP_S, s.dim = d;
    return s;
}

static int derive_conversions(ApreportReport *r)
{
    int rc;
    for (size_t i = 0; i < r->n_tasks; i++) {
        const CostdbReshardingTask *t = &r->tasks[i];
        const RepStage *a = &r->stages[t->src_stage], *b = &r->stages[t->dst_stage];
        const RepTensor *ta = find_tensor(a, "output", t->tensor_name);
        const RepTensor *tb = find_tensor(b, "input", t->tensor_name);
        RepConversion c;
        if (!ta || !tb || !ta->layout_ok || !tb->layout_ok)
            continue;
        memset(&c, 0, sizeof(c));
        c.stage = t->dst_stage;
        c.src_stage = t->src_stage;
        snprintf(c.tensor, sizeof(c.tensor), "%s", t->tensor_name);
        snprintf(c.role, sizeof(c.role), "%s", "input");
        snprintf(c.why, sizeof(c.why), "cross-stage resharding (%s)", t->strategy);
        int same = a->st.logical_a == b->st.logical_a && a->st.logical_b == b->st.logical_b;
        for (int x = 0; x < (same ? 2 : 1); x++) {
            ApreportSbp s = same ? apreport_layout_sbp(&ta->layout, x) : overall_sbp(&ta->layout);
            ApreportSbp d = same ? apreport_layout_sbp(&tb->layout, x) : overall_sbp(&tb->layout);
            c.axis = same ? x : -1;
            c.kind = apreport_classify(s, d);
            /* Across meshes of different shapes, the same split dimension
             * with fewer pieces on the destination still gathers. */
            if (!same && c.kind == APREPORT_CONV_NONE && s.kind == APREPORT_SBP_S &&
                shards_of(&tb->layout) < shards_of(&ta->layout))
                c.kind = APREPORT_CONV_SPLIT_GATHER;
            c.flagged = apreport_conversion_flagged(c.kind, c.role);
            if (c.kind != APREPORT_CONV_NONE && (rc = add_conv(r, &c)) < 0)
                return rc;
        }
    }
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        int batch_axis[2] = {0, 0};
        for (size_t i = 0; i < s->n_tensors; i++) {
            const RepTensor *t = &s->tensors[i];
            if (strcmp(t->pl.role, "input") || !t->layout_ok || t->layout.ndim < 1)
                continue;
            int x = t->layout.mesh_axis_of_dim[0];
            if (x == 0 || x == 2)
                batch_axis[0] = 1;
            if (x == 1 || x == 2)
                batch_axis[1] = 1;
        }
        if (s->st.force_batch_dim == 0 && s->st.logical_a > 1)
            batch_axis[0] = 1;
        for (size_t i = 0; i < s->n_tensors; i++) {
            const RepTensor *t = &s->tensors[i];
            if (strcmp(t->pl.role, "param") || !t->layout_ok)
                continue;
            for (int x = 0; x < 2; x++) {
                RepConversion c;
                ApreportSbp psum = {APREPORT_SBP_P, -1};
                if (!batch_axis[x] || (x == 0 ? s->st.logical_a : s->st.logical_b) <= 1)
                    continue;
                memset(&c, 0, sizeof(c));
                c.stage = (int)k;
                c.src_stage = -1;
                c.axis = x;
                snprintf(c.tensor, sizeof(c.tensor), "%s", t->pl.tensor_name);
                snprintf(c.role, sizeof(c.role), "%s", "param");
                snprintf(c.why, sizeof(c.why), "gradient over the batch axis (once per iteration)");
                c.kind = apreport_classify(psum, apreport_layout_sbp(&t->layout, x));
                c.flagged = apreport_conversion_flagged(c.kind, c.role);
                if ((rc = add_conv(r, &c)) < 0)
                    return rc;
            }
        }
    }
    return 0;
}

static int simulate(ApreportReport *r)
{
    int S = (int)r->n_stages, rc = APREPORT_ENOMEM;
    double *f = calloc((size_t)S, sizeof(double)), *b = calloc((size_t)S, sizeof(double));
    double *w = calloc((size_t)S, sizeof(double));
    ApreportCommProgram *prog = NULL;
    r->xfer = calloc((size_t)S, sizeof(double));
    if (!f || !b || !w || !r->xfer)
        goto cleanup;
    for (int k = 0; k < S; k++) {
        f[k] = isfinite(r->stages[k].st.fwd_cost) ? r->stages[k].st.fwd_cost : 0;
        b[k] = isfinite(r->stages[k].st.bwd_cost) ? r->stages[k].st.bwd_cost : 0;
        /* the zero-bubble W, within the stored backward (load checked it is known) */
        w[k] = r->stages[k].wgrad > 0 ? fmin(r->stages[k].wgrad, b[k]) : 0;
    }
    for (size_t i = 0; i < r->n_tasks; i++)
        if (r->tasks[i].src_stage >= 0 && r->tasks[i].src_stage + 1 < S &&
            r->tasks[i].dst_stage == r->tasks[i].src_stage + 1)
            r->xfer[r->tasks[i].src_stage] += r->tasks[i].seconds;
    ApreportPipeline p = {S, r->plan.micro_batches, f, b, r->xfer, r->virtual_stages, w};
    if ((rc = apreport_simulate(&p, APREPORT_SCHED_1F1B, &r->sched[0])) < 0 ||
        (rc = apreport_simulate(&p, APREPORT_SCHED_GPIPE, &r->sched[1])) < 0 ||
        (r->schedule > APREPORT_SCHED_GPIPE &&
         (rc = apreport_simulate(&p, r->schedule, &r->sched[r->schedule])) < 0) ||
        (rc = apreport_comm_program(rep_schedule(r), &prog)) < 0 ||
        (rc = apreport_deadlock_check(prog, &r->deadlock)) < 0)
        goto cleanup;
    for (int k = 0; k < S; k++) {
        RepStage *s = &r->stages[k];
        const ApreportSchedule *sc = rep_schedule(r);
        /* apsolve's rule (solver/schedule.h), under the plan's objective:
         * the schedule's in-flight count in closed form, which the
         * simulation's peak_in_flight matches (tests/reports) */
        ApsolveMemoryRule rule = r->opts.objective == COSTDB_OBJECTIVE_FULL
                                     ? APSOLVE_MEMORY_EXACT : APSOLVE_MEMORY_ALPA;
        s->mem_in_flight = apsolve_stage_in_flight_a2a(
            rule, (ApsolveSchedule)r->schedule, sc->virtual_stages, r->plan.micro_batches, S, k,
            r->opts.has_layout && r->opts.layout.moe_a2a_overlap);
        s->memory_implied = apsolve_stage_memory_need(rule, s->st.peak_memory, s->initial,
                                                      s->intermediate, s->mem_in_flight);
    }
    rc = 0;
cleanup:
    apreport_comm_program_free(&prog);
    free(f);
    free(b);
    free(w);
    return rc;
}

/* A stage on logical mesh (a, b), b > 1, is launched as dp a x tp b (the
 * launch files), and a framework's tensor parallelism holds 1/b of each
 * weight matrix. When the priced sharding (the ILP's) keeps weight matrices
 * whole over axis 1, the price is not that framework's: say so, with the
 * count (issue "One plan, one truth"; docs/reports.md). */
static void tp_layout_warning(ApreportReport *r, RepStage *s)
{
    char msg[512];
    size_t weights = 0, whole = 0;
    const char *first = NULL;
    int tp = s->st.logical_b;
    if (tp <= 1)
        return;
    for (size_t i = 0; i < s->n_tensors; i++) {
        int w = costdb_weight_whole_on_axis1(&s->tensors[i].pl, s->st.logical_a, tp);
        weights += w >= 0;
        whole += w == 1;
        if (w == 1 && !first)
            first = s->tensors[i].pl.tensor_name;
    }
    s->tp_weights = weights;
    s->tp_whole = whole;
    if (!whole)
        return;
    snprintf(msg, sizeof(msg),
             "stage %d runs as tp %d in the launch files, but %zu of its %zu weight matrices "
             "(e.g. %.60s) are priced whole on every device of the tp axis, not split %d ways "
             "as tensor parallelism holds them: its memory and collectives are the sharding "
             "ILP's, not a tp %d run's",
             s->st.stage_index, tp, whole, weights, first, tp, tp);
    add_warning(r, msg);
}

static void collect_warnings(ApreportReport *r)
{
    char msg[256];
    if (!r->plan.feasible) {
        snprintf(msg, sizeof(msg), "plan %lld is INFEASIBLE (%s): it does not fit the devices or "
                 "their memory; do not run it as it is", (long long)r->plan.id,
                 isfinite(r->plan.cost) ? "stored as infeasible" : "its cost is not finite");
        add_warning(r, msg);
    }
    if (apreport_microbatch_warning((int)r->n_stages, r->plan.micro_batches, msg, sizeof(msg)))
        add_warning(r, msg);
    if (r->deadlock.deadlocked || r->deadlock.pair_src >= 0)
        add_warning(r, r->deadlock.message);
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        if (s->st.available_memory > 0 && s->memory_implied > s->st.available_memory) {
            char label[64];
            rep_schedule_label(r, label, sizeof(label));
            snprintf(msg, sizeof(msg),
                     "stage %zu needs %.3f GiB with %.4g micro-batches in flight (%s) but has %.3f GiB",
                     k, rep_gb(s->memory_implied), s->mem_in_flight, label,
                     rep_gb(s->st.available_memory));
            add_warning(r, msg);
        }
        if (s->first_host < 0) {
            snprintf(msg, sizeof(msg), "stage %zu: submesh (%d, %d) does not fit the free devices",
                     k, s->st.submesh_hosts, s->st.submesh_gpus);
            add_warning(r, msg);
        }
    }
    for (size_t k = 0; k < r->n_stages; k++)
        tp_layout_warning(r, &r->stages[k]);
    for (size_t i = 0; i < r->n_convs; i++)
        if (r->convs[i].flagged) {
            snprintf(msg, sizeof(msg),
                     "parameter %.100s: broadcast->partial-sum conversion in stage %d "
                     "(the unusual conversion behind the LiBai 3-D deadlock)",
                     r->convs[i].tensor, r->convs[i].stage);
            add_warning(r, msg);
        }
}

int apreport_load(Costdb *db, const ApreportOptions *opt, ApreportReport **out, char *err,
                  size_t errlen)
{
    ApreportReport *r = NULL;
    CostdbPlanStage *st = NULL;
    CostdbEntry *e = NULL;
    CostdbConfig *cfg = NULL;
    size_t nst = 0, ne = 0, ncfg = 0;
    int64_t plan_id;
    int rc;
    if (!db || !opt || !out)
        return APREPORT_EINVAL;
    *out = NULL;
    plan_id = opt->plan_id;
    if (plan_id <= 0 && costdb_plan_latest(db, 0, &plan_id) < 0) {
        seterr(err, errlen, "%s: no plan in the database (run apsolve first)%s", costdb_path(db), "");
        return APREPORT_ENOTFOUND;
    }
    if (!(r = calloc(1, sizeof(*r))))
        return APREPORT_ENOMEM;
    rc = costdb_plan_get(db, plan_id, &r->plan, &st, &nst);
    if (rc == COSTDB_ENOTFOUND) {
        char id[32];
        snprintf(id, sizeof(id), "%lld", (long long)plan_id);
        seterr(err, errlen, "%s: no plan %s", costdb_path(db), id);
        rc = APREPORT_ENOTFOUND;
        goto cleanup;
    }
    if (rc == 0 && costdb_plan_options_parse(r->plan.options, &r->opts, err, errlen) < 0) {
        char why[256];
        snprintf(why, sizeof(why), "plan %lld %s", (long long)plan_id, err ? err : "");
        seterr(err, errlen, "%s: %s", costdb_path(db), why);
        rc = APREPORT_EDB;
        goto cleanup;
    }
    if (rc < 0 || costdb_sweep_get(db, r->plan.sweep_id, &r->sweep) < 0 ||
        costdb_entries_get(db, r->plan.sweep_id, &e, &ne) < 0) {
        db_error(err, errlen, db);
        rc = APREPORT_EDB;
        goto cleanup;
    }
    if (r->sweep.model_id > 0 && costdb_model_get(db, r->sweep.model_id, &r->model) == 0) {
        CostdbLayer *ly = NULL;
        size_t nl = 0;
        r->has_model = 1;
        /* the model's FLOPs (the layers' counts at the graph's batch), for
         * the headline's MFU; a row that cannot say leaves it unknown */
        if (r->model.batch_size > 0 && costdb_model_layers(db, r->sweep.model_id, &ly, &nl) == 0) {
            double sum = 0;
            for (size_t i = 0; i < nl; i++)
                if (isfinite(ly[i].fwd_flops) && isfinite(ly[i].bwd_flops) &&
                    ly[i].fwd_flops >= 0 && ly[i].bwd_flops >= 0)
                    sum += ly[i].fwd_flops + ly[i].bwd_flops;
            r->flops_per_sample = sum / (double)r->model.batch_size;
        }
        free(ly);
    }
    if (r->sweep.hardware_id > 0 && costdb_hardware_get(db, r->sweep.hardware_id, &r->hw) == 0)
        r->has_hw = 1;
    r->bw_intra = DEF_BW_INTRA;
    if (r->has_hw && r->hw.intra_host_bandwidth > 0) {
        /* a transfer between two GPUs of a host: one link on a full mesh
         * (MI300X), the switch's bandwidth on NVSwitch (costdb_intra_bandwidth) */
        CostdbFabric fab;
        costdb_fabric_from_hardware(&r->hw, &fab);
        r->bw_intra = costdb_intra_bandwidth(&fab, 2);
    }
    r->lat_intra = r->has_hw && r->hw.intra_host_bandwidth > 0 ? r->hw.intra_host_latency : DEF_LAT_INTRA;
    r->bw_inter = r->has_hw && r->hw.inter_host_bandwidth > 0 ? r->hw.inter_host_bandwidth : DEF_BW_INTER;
    r->lat_inter = r->has_hw && r->hw.inter_host_bandwidth > 0 ? r->hw.inter_host_latency : DEF_LAT_INTER;
    {
        const char *path = costdb_path(db), *slash = strrchr(path, '/');
        snprintf(r->db_label, sizeof(r->db_label), "%s", slash ? slash + 1 : path);
    }
    if (opt->name && *opt->name)
        snprintf(r->name, sizeof(r->name), "%s", opt->name);
    else
        snprintf(r->name, sizeof(r->name), "plan%lld", (long long)plan_id);
    r->num_layers = r->sweep.num_layers;
    r->allow_infeasible = opt->allow_infeasible;
    /* a stored plan with a non-finite cost is never feasible */
    if (!isfinite(r->plan.cost))
        r->plan.feasible = 0;
    ApreportOptions eff = *opt;
    if (opt->schedule_from_plan) {
        /* the schedule apsolve stored with the plan */
        int k = apsolve_schedule_parse(r->opts.schedule);
        if (k >= 0) {
            eff.schedule = (ApreportScheduleKind)k;
            eff.virtual_stages = r->opts.virtual_stages >= 2 ? r->opts.virtual_stages : 2;
        }
    }
    opt = &eff;
    r->schedule = opt->schedule;
    r->virtual_stages = opt->schedule == APREPORT_SCHED_INTERLEAVED ||
                                opt->schedule == APREPORT_SCHED_INTERLEAVED_ZB
                            ? opt->virtual_stages
                        : opt->schedule == APREPORT_SCHED_ZBV ? 2 : 1;
    if (opt->schedule == APREPORT_SCHED_INTERLEAVED) {
        char why[160];
        if (!apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, opt->virtual_stages,
                                    r->plan.micro_batches, (int)nst, why, sizeof(why)) ||
            opt->virtual_stages < 2) {
            seterr(err, errlen, "%s: %s", r->name,
                   opt->virtual_stages < 2 ? "interleaved: needs at least 2 virtual stages per stage"
                                           : why);
            rc = APREPORT_EINVAL;
            goto cleanup;
        }
    } else if (apsolve_schedule_zero_bubble((int)opt->schedule)) {
        char why[160];
        if (!apsolve_schedule_valid((ApsolveSchedule)opt->schedule, r->virtual_stages,
                                    r->plan.micro_batches, (int)nst, why, sizeof(why))) {
            seterr(err, errlen, "%s: %s", r->name, why);
            rc = APREPORT_EINVAL;
            goto cleanup;
        }
        /* checked once the stages are loaded: every stage's W */
    } else if (opt->schedule != APREPORT_SCHED_1F1B && opt->schedule != APREPORT_SCHED_GPIPE) {
        rc = APREPORT_EINVAL;
        goto cleanup;
    }
    r->global_batch = r->plan.global_batch > 0 ? r->plan.global_batch : r->sweep.global_batch;
    if (nst == 0) {
        seterr(err, errlen, "%s: the plan has no stages%s", costdb_path(db), "");
        rc = APREPORT_EINVAL;
        goto cleanup;
    }
    /* The simulation holds every pass of every schedule: bounded before it
     * starts (the outputs are bounded by their writers) */
    if ((double)nst * r->plan.micro_batches * r->virtual_stages > REP_MAX_PASSES) {
        char what[160];
        snprintf(what, sizeof(what), "plan %lld: %zu stages x %d micro-batches x %d chunks is %.0f "
                 "passes to simulate", (long long)plan_id, nst, r->plan.micro_batches,
                 r->virtual_stages, (double)nst * r->plan.micro_batches * r->virtual_stages);
        seterr(err, errlen, "%s, more than %s (REP_MAX_PASSES; re-plan with fewer micro-batches)",
               what, REP_MAX_PASSES_TEXT);
        rc = APREPORT_EINVAL;
        goto cleanup;
    }
    r->stages = calloc(nst, sizeof(RepStage));
    if (!r->stages) {
        rc = APREPORT_ENOMEM;
        goto cleanup;
    }
    r->n_stages = nst;
    if (costdb_sweep_configs(db, r->sweep.id, &cfg, &ncfg) < 0) {
        db_error(err, errlen, db);
        rc = APREPORT_EDB;
        goto cleanup;
    }
    for (size_t k = 0; k < nst; k++) {
        r->stages[k].st = st[k];
        for (size_t i = 0; i < ncfg; i++)
            if (cfg[i].submesh_index == st[k].submesh_index &&
                cfg[i].config_index == st[k].config_index) {
                r->stages[k].variant_known = 1;
                r->stages[k].variant = cfg[i].variant;
            }
        if ((rc = load_stage(db, r, &r->stages[k], e, ne)) < 0) {
            db_error(err, errlen, db);
            goto cleanup;
        }
        /* a zero-bubble schedule is simulated from each stage's W, never a
         * guessed one */
        if (apsolve_schedule_zero_bubble((int)r->schedule) && !(r->stages[k].wgrad >= 0)) {
            char why[200];
            snprintf(why, sizeof(why), "the %s schedule: stage %zu's backward has no "
                     "weight-gradient seconds (a database before schema 12, or an import)",
                     apreport_schedule_name(r->schedule), k);
            seterr(err, errlen, "%s: %s", r->name, why);
            rc = APREPORT_EINVAL;
            goto cleanup;
        }
    }
    if ((rc = rep_recompute_layers_stages(db, r)) < 0 || (rc = rep_offload_stages(db, r)) < 0) {
        db_error(err, errlen, db);
        goto cleanup;
    }
    assign_devices(r);
    if (costdb_resharding_get(db, plan_id, &r->tasks, &r->n_tasks) < 0) {
        db_error(err, errlen, db);
        rc = APREPORT_EDB;
        goto cleanup;
    }
    if (r->n_tasks == 0) {
        free(r->tasks);
        r->tasks = NULL;
        if ((rc = derive_tasks(r)) < 0)
            goto cleanup;
        if (opt->store_resharding && r->n_tasks) {
            if (costdb_resharding_put(db, plan_id, r->tasks, r->n_tasks) < 0) {
                seterr(err, errlen, "%s: storing resharding tasks: %s", costdb_path(db),
                       costdb_errmsg(db));
                rc = APREPORT_EDB;
                goto cleanup;
            }
            r->tasks_stored = 1;
        }
    }
    if ((rc = derive_conversions(r)) < 0)
        goto cleanup;
    if ((rc = simulate(r)) < 0) {
        char what[96];
        snprintf(what, sizeof(what), "plan %lld: cannot simulate its schedule (%d %s, %d %s)",
                 (long long)plan_id, (int)r->n_stages,
                 costdb_plural((long long)r->n_stages, "stage", "stages"), r->plan.micro_batches,
                 costdb_plural(r->plan.micro_batches, "micro-batch", "micro-batches"));
        seterr(err, errlen, "%s: %s", what, apreport_strerror(rc));
        goto cleanup;
    }
    collect_warnings(r);
    r->exports = opt->exports ? opt->exports & APREPORT_EXPORT_ALL : APREPORT_EXPORT_ALL;
    rep_frameworks(r, &r->frameworks); /* which frameworks run it as priced */
    if (r->exports)
        rep_closest_price(db, r);     /* the solver prices what a runtime can run */
    if ((rc = rep_headline(r, &r->headline)) < 0) /* once, for report.html and report.json */
        goto cleanup;
    *out = r;
    r = NULL;
    rc = 0;
cleanup:
    apreport_free(&r);
    free(st);
    free(e);
    free(cfg);
    return rc;
}

int apreport_feasible(const ApreportReport *r)
{
    return r && r->plan.feasible;
}

const ApreportSchedule *rep_schedule(const ApreportReport *r)
{
    return r->sched[r->schedule] ? r->sched[r->schedule] : r->sched[0];
}

void rep_schedule_label(const ApreportReport *r, char *out, size_t len)
{
    if (r->schedule == APREPORT_SCHED_INTERLEAVED)
        snprintf(out, len, "interleaved, %d chunks per stage", r->virtual_stages);
    else if (r->schedule == APREPORT_SCHED_ZB_H1)
        snprintf(out, len, "ZB-H1 (zero bubble)");
    else if (r->schedule == APREPORT_SCHED_INTERLEAVED_ZB)
        snprintf(out, len, "interleaved zero bubble, %d chunks per stage", r->virtual_stages);
    else if (r->schedule == APREPORT_SCHED_ZBV)
        snprintf(out, len, "ZB-V (zero bubble, 2 chunks per stage in a V)");
    else
        snprintf(out, len, "%s", r->schedule == APREPORT_SCHED_GPIPE ? "GPipe" : "1F1B");
}

void apreport_free(ApreportReport **rp)
{
    ApreportReport *r;
    if (!rp || !*rp)
        return;
    r = *rp;
    for (size_t k = 0; k < r->n_stages; k++)
        free(r->stages[k].tensors);
    free(r->stages);
    free(r->tasks);
    free(r->convs);
    free(r->xfer);
    for (int k = 0; k < APREPORT_SCHED_COUNT; k++)
        apreport_schedule_free(&r->sched[k]);
    rep_headline_free(&r->headline);
    free(r);
    *rp = NULL;
}
