/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Alpa-compatible debug dumps (docs/alpa-semantics.md "Sharding specs and report
 * formats"): placement specs nested by parameter path, resharding tasks
 * (plus bytes, strategy and estimated time), per-stage memory usage and the
 * last DP result; the plan as paste-able code (alpa.ManualStageOption and,
 * for uniform plans, LiBai / Megatron settings); and apreport_write_all,
 * which writes every output through one table of writers.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "outfile.h"
#include "plural.h"
#include "report_int.h"

typedef struct {
    char path[COSTDB_NAME_MAX * 2 + 16];
    char text[4 * COSTDB_TEXT_MAX + 4 * COSTDB_NAME_MAX + 256];
} Leaf;

/* The first line of every text output of an infeasible plan. */
static void infeasible_note(const ApreportReport *r, FILE *f)
{
    if (!r->plan.feasible)
        fprintf(f, "# %s\n", rep_infeasible_text(r));
}

/* A dtype as a Python token: the JAX name when it is an identifier (1),
 * else a string literal (0; a dtype is database text). */
static int dtype_text(const char *dtype, char *out, size_t len)
{
    const char *j = rep_dtype_jax(dtype);
    for (const char *p = j; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9'))) {
            rep_py_quote(j, strlen(j), out, len);
            return 0;
        }
    snprintf(out, len, "%s", j);
    return 1;
}

static void placement_text(const ApreportReport *r, const RepTensor *t, const int *mesh_ids,
                           const char *const *specs, int n, char *out, size_t len)
{
    char shape[160], dtype[4 * COSTDB_NAME_MAX + 3], spec[4 * COSTDB_TEXT_MAX + 3];
    size_t pos;
    int64_t dims[APREPORT_MAX_DIMS];
    int clean;
    rep_shape_text(t->pl.shape, 1, shape, sizeof(shape));
    clean = dtype_text(t->pl.dtype, dtype, sizeof(dtype)) &&
            costdb_shape_parse(t->pl.shape, dims, APREPORT_MAX_DIMS) >= 0;
    /* Alpa's float32[2048,8192]; a quoted dtype or shape as two arguments */
    pos = (size_t)snprintf(out, len, "PlacementSpec(aval=ShapedArray(%s%s%s), mesh_ids=(", dtype,
                           clean ? "" : ", ", shape);
    for (int i = 0; i < n && pos < len; i++)
        pos += (size_t)snprintf(out + pos, len - pos, "%s%d", i ? ", " : "", mesh_ids[i]);
    if (pos < len)
        pos += (size_t)snprintf(out + pos, len - pos, "%s), sharding_specs=(", n == 1 ? "," : "");
    for (int i = 0; i < n && pos < len; i++) {
        const CostdbPlanStage *st = &r->stages[mesh_ids[i]].st;
        rep_spec_text(specs[i], st->logical_a, st->logical_b, spec, sizeof(spec));
        pos += (size_t)snprintf(out + pos, len - pos, "%s%s", i ? ", " : "", spec);
    }
    if (pos < len)
        snprintf(out + pos, len - pos, "%s))", n == 1 ? "," : "");
    else if (len > 4)
        snprintf(out, len, "None");   /* too long to write whole: never half a literal */
}

/* Length of the first depth+1 path components of p (up to the '/' after). */
static size_t prefix_len(const char *p, int depth)
{
    const char *s = p;
    for (int d = 0; d <= depth; d++) {
        const char *slash = strchr(s, '/');
        if (!slash)
            return strlen(p);
        s = slash + 1;
    }
    return (size_t)(s - p - 1);
}

static void indent(FILE *f, int n)
{
    for (int i = 0; i < n; i++)
        fputs("  ", f);
}

/* Writes leaves idx[0..n) (all sharing the first depth components) as a
 * Python dict, grouping by the next component in order of first appearance. */
static int write_tree(FILE *f, const Leaf *leaves, const size_t *idx, size_t n, int depth,
                      int ind)
{
    unsigned char *done = calloc(n ? n : 1, 1);
    size_t *sub = malloc(sizeof(size_t) * (n ? n : 1));
    char key[4 * sizeof(leaves[0].path) + 3];
    int rc = 0;
    if (!done || !sub) {
        rc = APREPORT_ENOMEM;
        goto cleanup;
    }
    fputs("{\n", f);
    for (size_t i = 0; i < n; i++) {
        const char *p = leaves[idx[i]].path;
        size_t start = depth ? prefix_len(p, depth - 1) + 1 : 0, pl = prefix_len(p, depth), ns = 0;
        if (done[i])
            continue;
        if (start > strlen(p))
            start = strlen(p);
        indent(f, ind + 1);
        rep_py_quote(p + start, pl - start, key, sizeof(key));
        fprintf(f, "%s: ", key);
        if (pl == strlen(p)) {
            fprintf(f, "%s,\n", leaves[idx[i]].text);
            done[i] = 1;
            continue;
        }
        for (size_t j = i; j < n; j++) {
            const char *q = leaves[idx[j]].path;
            if (!done[j] && strlen(q) > pl && !strncmp(q, p, pl) && q[pl] == '/') {
                sub[ns++] = idx[j];
                done[j] = 1;
            }
        }
        if ((rc = write_tree(f, leaves, sub, ns, depth + 1, ind + 1)) < 0)
            goto cleanup;
        fputs(",\n", f);
    }
    indent(f, ind);
    fputs("}", f);
cleanup:
    free(done);
    free(sub);
    return rc;
}

/* Collects parameters (merged over stages by name) under "params/" and, for
 * the input file, the graph inputs under "batch/"; for the output file the
 * last stage's outputs under "outputs/". */
static int write_specs(const ApreportReport *r, FILE *f, int output)
{
    size_t cap = 0, n = 0;
    Leaf *leaves;
    size_t *idx;
    int rc;
    for (size_t k = 0; k < r->n_stages; k++)
        cap += r->stages[k].n_tensors;
    leaves = calloc(cap ? cap : 1, sizeof(Leaf));
    idx = malloc(sizeof(size_t) * (cap ? cap : 1));
    if (!leaves || !idx) {
        free(leaves);
        free(idx);
        return APREPORT_ENOMEM;
    }
    for (size_t k = 0; k < r->n_stages; k++)
        for (size_t i = 0; i < r->stages[k].n_tensors; i++) {
            const RepTensor *t = &r->stages[k].tensors[i];
            const char *group = NULL;
            int ids[16], ni = 0;
            const char *specs[16];
            if (!strcmp(t->pl.role, "param")) {
                int seen = 0;
                for (size_t kk = 0; kk < k && !seen; kk++)
                    for (size_t j = 0; j < r->stages[kk].n_tensors; j++)
                        seen |= !strcmp(r->stages[kk].tensors[j].pl.role, "param") &&
                                !strcmp(r->stages[kk].tensors[j].pl.tensor_name, t->pl.tensor_name);
                if (seen)
                    continue;
                group = "params";
                for (size_t kk = k; kk < r->n_stages && ni < 16; kk++)
                    for (size_t j = 0; j < r->stages[kk].n_tensors && ni < 16; j++)
                        if (!strcmp(r->stages[kk].tensors[j].pl.role, "param") &&
                            !strcmp(r->stages[kk].tensors[j].pl.tensor_name, t->pl.tensor_name)) {
                            ids[ni] = (int)kk;
                            specs[ni++] = r->stages[kk].tensors[j].pl.sharding_spec;
                        }
            } else if (!output && !strcmp(t->pl.role, "input")) {
                int produced = 0;
                if (k > 0)
                    for (size_t j = 0; j < r->stages[k - 1].n_tensors; j++)
                        produced |= !strcmp(r->stages[k - 1].tensors[j].pl.role, "output") &&
                                    r->stages[k - 1].tensors[j].pl.tensor_index == t->pl.tensor_index;
                if (produced)
                    continue;
                group = "batch";
            } else if (output && !strcmp(t->pl.role, "output") && k + 1 == r->n_stages) {
                group = "outputs";
            } else {
                continue;
            }
            if (!ni) {
                ids[0] = (int)k;
                specs[0] = t->pl.sharding_spec;
                ni = 1;
            }
            snprintf(leaves[n].path, sizeof(leaves[n].path), "%s/%s", group, t->pl.tensor_name);
            placement_text(r, t, ids, specs, ni, leaves[n].text, sizeof(leaves[n].text));
            idx[n] = n;
            n++;
        }
    infeasible_note(r, f);
    rc = write_tree(f, leaves, idx, n, 0, 0);
    fputc('\n', f);
    free(leaves);
    free(idx);
    return rc < 0 ? rc : ferror(f) ? APREPORT_EIO : 0;
}

int apreport_write_input_specs(const ApreportReport *r, FILE *f)
{
    return write_specs(r, f, 0);
}

int apreport_write_output_specs(const ApreportReport *r, FILE *f)
{
    return write_specs(r, f, 1);
}

int apreport_write_resharding(const ApreportReport *r, FILE *f)
{
    infeasible_note(r, f);
    for (size_t i = 0; i < r->n_tasks; i++) {
        const CostdbReshardingTask *t = &r->tasks[i];
        char shape[160], src[4 * COSTDB_TEXT_MAX + 3], dst[4 * COSTDB_TEXT_MAX + 3];
        int sa = 0, sb = 0, da = 0, db = 0;
        if (t->src_stage >= 0 && (size_t)t->src_stage < r->n_stages)
            sa = r->stages[t->src_stage].st.logical_a, sb = r->stages[t->src_stage].st.logical_b;
        if (t->dst_stage >= 0 && (size_t)t->dst_stage < r->n_stages)
            da = r->stages[t->dst_stage].st.logical_a, db = r->stages[t->dst_stage].st.logical_b;
        rep_shape_text(t->shape, 0, shape, sizeof(shape));
        rep_spec_text(t->src_spec, sa, sb, src, sizeof(src));
        rep_spec_text(t->dst_spec, da, db, dst, sizeof(dst));
        fprintf(f, "%sReshardingTask(shape: %s, mesh_id: %d->%d,\n%s ->\n%s)\n",
                !strcmp(t->strategy, "broadcast") ? "B-" : "", shape, t->src_stage, t->dst_stage,
                src, dst);
        fputs("# tensor: ", f);
        rep_py_text(f, t->tensor_name);
        fprintf(f, ", bytes: %lld, strategy: ", (long long)t->bytes);
        rep_py_text(f, t->strategy);
        fprintf(f, ", estimated_time: %.6f s\n\n", t->seconds);
    }
    return ferror(f) ? APREPORT_EIO : 0;
}

int apreport_write_mem_usage(const ApreportReport *r, int stage, FILE *f)
{
    const RepStage *s;
    if (stage < 0 || (size_t)stage >= r->n_stages)
        return APREPORT_EINVAL;
    s = &r->stages[stage];
    infeasible_note(r, f);
    fprintf(f, "total_allocation_size: %.3f GB\n", rep_gb(s->st.peak_memory));
    fprintf(f, "# peak_memory: %lld bytes\n", (long long)s->st.peak_memory);
    fprintf(f, "# intermediate_size: %lld bytes, initial_size: %lld bytes\n",
            (long long)s->intermediate, (long long)s->initial);
    if (r->schedule == APREPORT_SCHED_1F1B) {
        fprintf(f, "# in_flight_micro_batches (1F1B): %d\n", r->sched[0]->peak_in_flight[stage]);
    } else {
        char label[64];
        rep_schedule_label(r, label, sizeof(label));
        fprintf(f, "# in_flight_micro_batches (%s): %.4g\n", label,
                rep_schedule(r)->in_flight[stage]);
    }
    fprintf(f, "# memory_needed: %.3f GB, available_memory: %.3f GB\n",
            rep_gb(s->memory_implied), rep_gb(s->st.available_memory));
    return ferror(f) ? APREPORT_EIO : 0;
}

static void layer_ids(const ApreportReport *r, FILE *f)
{
    fputc('[', f);
    for (size_t k = 0; k < r->n_stages; k++) {
        fprintf(f, "%s[", k ? ", " : "");
        for (int l = r->stages[k].st.start_layer; l <= r->stages[k].st.end_layer; l++)
            fprintf(f, "%s%d", l > r->stages[k].st.start_layer ? ", " : "", l);
        fputc(']', f);
    }
    fputc(']', f);
}

static void shapes(const ApreportReport *r, FILE *f, int logical)
{
    fputc('[', f);
    for (size_t k = 0; k < r->n_stages; k++) {
        const CostdbPlanStage *s = &r->stages[k].st;
        fprintf(f, "%s(%d, %d)", k ? ", " : "", logical ? s->logical_a : s->submesh_hosts,
                logical ? s->logical_b : s->submesh_gpus);
    }
    fputc(']', f);
}

static void dicts(const ApreportReport *r, FILE *f)
{
    char d[64];
    fputc('[', f);
    for (size_t k = 0; k < r->n_stages; k++) {
        rep_option_dict(r->stages[k].st.force_batch_dim, d, sizeof(d));
        fprintf(f, "%s%s", k ? ", " : "", d);
    }
    fputc(']', f);
}

int apreport_write_dp_result(const ApreportReport *r, FILE *f)
{
    char name[sizeof(r->db_label) + 32];
    infeasible_note(r, f);
    snprintf(name, sizeof(name), "%s#sweep=%lld", r->db_label, (long long)r->sweep.id);
    fputs("compute_cost_file_name: ", f);
    rep_py_string(f, name);
    fputc('\n', f);
    fputs("forward_stage_layer_ids: ", f);
    layer_ids(r, f);
    fputs("\nsubmesh_shapes: ", f);
    shapes(r, f, 0);
    fputs("\nlogical_mesh_shapes: ", f);
    shapes(r, f, 1);
    fputs("\nautosharding_option_dicts: ", f);
    dicts(r, f);
    fputc('\n', f);
    return ferror(f) ? APREPORT_EIO : 0;
}

/* Uniform: same submesh, logical mesh and option on every stage and layer
 * counts differing by at most one. Then dp = a, tp = b. */
int rep_plan_uniform(const ApreportReport *r)
{
    const CostdbPlanStage *s0 = &r->stages[0].st;
    int lo = 1 << 30, hi = 0;
    for (size_t k = 0; k < r->n_stages; k++) {
        const CostdbPlanStage *s = &r->stages[k].st;
        int n = s->end_layer - s->start_layer + 1;
        if (s->submesh_hosts != s0->submesh_hosts || s->submesh_gpus != s0->submesh_gpus ||
            s->logical_a != s0->logical_a || s->logical_b != s0->logical_b ||
            (s->force_batch_dim >= 0) != (s0->force_batch_dim >= 0))
            return 0;
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
    }
    return hi - lo <= 1;
}

int apreport_write_code(const ApreportReport *r, FILE *f)
{
    if (!r->plan.feasible && !r->allow_infeasible)
        return APREPORT_EINFEASIBLE;
    infeasible_note(r, f);
    fprintf(f, "# Plan %lld of ", (long long)r->plan.id);
    rep_py_text(f, r->db_label);
    fprintf(f, " (sweep %lld): paste into an Alpa training script.\n", (long long)r->sweep.id);
    fputs("import alpa\n\nstage_option = alpa.ManualStageOption(\n    forward_stage_layer_ids=", f);
    layer_ids(r, f);
    fputs(",\n    submesh_physical_shapes=", f);
    shapes(r, f, 0);
    fputs(",\n    submesh_logical_shapes=", f);
    shapes(r, f, 1);
    fputs(",\n    submesh_autosharding_option_dicts=", f);
    dicts(r, f);
    fprintf(f, ")\nmethod = alpa.PipeshardParallel(num_micro_batches=%d,\n"
               "                                layer_option=alpa.AutoLayerOption(layer_num=%d),\n"
               "                                stage_option=stage_option)\n",
            r->plan.micro_batches, r->num_layers);
    if (rep_plan_uniform(r)) {
        rep_write_framework_args(r, f);
    } else {
        fputs("\n# The plan is not uniform (stages differ in submesh, logical mesh or size):\n"
              "# LiBai / Megatron cannot express it.\n", f);
    }
    return ferror(f) ? APREPORT_EIO : 0;
}

int apreport_write_summary(const ApreportReport *r, FILE *f)
{
    size_t counts[APREPORT_VERDICT_ACT_SHARDED + 1] = {0};
    fprintf(f, "plan %lld (%s, %s): %zu %s, %d %s, T = %.6f s\n",
            (long long)r->plan.id, r->plan.kind, r->plan.objective, r->n_stages,
            costdb_plural((long long)r->n_stages, "stage", "stages"), r->plan.micro_batches,
            costdb_plural(r->plan.micro_batches, "micro-batch", "micro-batches"), r->plan.cost);
    fprintf(f, "simulated iteration: 1F1B %.6f s (bubble %.1f%%), GPipe %.6f s (bubble %.1f%%)\n",
            r->sched[0]->iteration_time, 100 * r->sched[0]->bubble_fraction,
            r->sched[1]->iteration_time, 100 * r->sched[1]->bubble_fraction);
    if (r->sched[2])
        fprintf(f, "simulated iteration: interleaved with %d chunks per stage %.6f s (bubble %.1f%%)\n",
                r->virtual_stages, r->sched[2]->iteration_time, 100 * r->sched[2]->bubble_fraction);
    if (r->sched[3])
        fprintf(f, "simulated iteration: ZB-H1 %.6f s (bubble %.1f%%)\n",
                r->sched[3]->iteration_time, 100 * r->sched[3]->bubble_fraction);
    if (r->sched[4])
        fprintf(f, "simulated iteration: interleaved zero bubble with %d chunks per stage "
                "%.6f s (bubble %.1f%%)\n", r->virtual_stages, r->sched[4]->iteration_time,
                100 * r->sched[4]->bubble_fraction);
    if (r->sched[5])
        fprintf(f, "simulated iteration: ZB-V %.6f s (bubble %.1f%%)\n",
                r->sched[5]->iteration_time, 100 * r->sched[5]->bubble_fraction);
    for (size_t k = 0; k < r->n_stages; k++)
        for (size_t i = 0; i < r->stages[k].n_tensors; i++)
            if (r->stages[k].tensors[i].layout_ok)
                counts[r->stages[k].tensors[i].verdict]++;
    for (int v = 0; v <= APREPORT_VERDICT_ACT_SHARDED; v++)
        if (counts[v])
            fprintf(f, "  %zu x %s\n", counts[v], apreport_verdict_name((ApreportVerdict)v));
    fprintf(f, "resharding tasks: %zu%s; conversions: %zu\n", r->n_tasks,
            r->tasks_stored ? " (stored)" : "", r->n_convs);
    for (size_t k = 0; k < r->n_stages && r->opts.has_layout &&
                       r->opts.layout.recompute_layers > 0; k++) {
        int first[64], last[64], n = rep_recomputed_ranges(&r->stages[k], first, last, 64);
        fprintf(f, "recompute_layers %d, stage %zu: fully recomputes %s",
                r->opts.layout.recompute_layers, k, n ? "layers" : "none");
        for (int i = 0; i < n; i++)
            fprintf(f, "%s %d-%d", i ? "," : "", first[i], last[i]);
        fputc('\n', f);
    }
    for (size_t k = 0; k < r->n_stages && r->opts.has_layout && r->opts.layout.offload > 0; k++) {
        const RepStage *s = &r->stages[k];
        const ApsolveOffloadStage *x = &s->offload;
        if (!s->have_offload) {
            fprintf(f, "activation offload %d, stage %zu: not priced: %s\n",
                    r->opts.layout.offload, k, s->offload_why);
            continue;
        }
        fprintf(f, "activation offload, stage %zu: the first %d of %d layers' saved activations, "
                "%.0f bytes a micro-batch each way at %.6g GB/s (%.6g s each way); %lld bytes "
                "freed; copies exposed %.6g s forward, %.6g s backward\n",
                k, x->offloaded, x->layers, x->saved_bytes, x->host_bandwidth / 1e9, x->d2h,
                (long long)x->freed, x->exposed_fwd, x->exposed_bwd);
    }
    for (int i = 0; i < r->n_warnings; i++)
        fprintf(f, "warning: %s\n", r->warnings[i]);
    return ferror(f) ? APREPORT_EIO : 0;
}

typedef int (*WriterFn)(const ApreportReport *r, FILE *f);

static const struct {
    const char *suffix;               /* appended to "<name>_", or a whole name */
    int prefixed;
    WriterFn fn;
    unsigned export_bit;              /* a launch configuration: written when selected */
} writers[] = {
    {"input_placement_specs.txt", 1, apreport_write_input_specs},
    {"output_placement_specs.txt", 1, apreport_write_output_specs},
    {"resharding_tasks.txt", 1, apreport_write_resharding},
    {"plan.py", 1, apreport_write_code},
    {"dp_result.txt", 0, apreport_write_dp_result},
    {"report.json", 0, apreport_write_json},
    {"report.html", 0, apreport_write_html},
    {"trace.json", 0, apreport_write_trace},
    {"megatron.args", 1, apreport_write_megatron, APREPORT_EXPORT_MEGATRON},
    {"deepspeed.json", 1, apreport_write_deepspeed, APREPORT_EXPORT_DEEPSPEED},
    {"torchtitan.toml", 1, apreport_write_torchtitan, APREPORT_EXPORT_TORCHTITAN},
};

/* One output through a temporary file renamed into place (outfile.h). */
static int write_file(const char *path, const ApreportReport *r, WriterFn fn, int stage,
                      char *err, size_t errlen)
{
    ApsolveOutfile *o = NULL;
    FILE *f = NULL;
    int rc;
    if (apsolve_outfile_open(path, &o, &f, err, errlen) < 0)
        return APREPORT_EIO;
    errno = 0;
    rc = fn ? fn(r, f) : apreport_write_mem_usage(r, stage, f);
    if (rc == APREPORT_EIO) {
        /* the stream's error flag: errno still says why (ENOSPC, EFBIG, EIO) */
        int e = errno ? errno : EIO;
        apsolve_outfile_abort(&o);
        snprintf(err, errlen, "%s: cannot write: %s (the previous file, if any, is unchanged)",
                 path, strerror(e));
        return rc;
    }
    if (rc < 0) {
        apsolve_outfile_abort(&o);
        snprintf(err, errlen, "%s: %s", path, apreport_strerror(rc));
        return rc;
    }
    if (apsolve_outfile_commit(&o, err, errlen) < 0)
        return APREPORT_EIO;
    return 0;
}

int apreport_write_all(const ApreportReport *r, const char *dir, char *err, size_t errlen)
{
    char path[4096];
    int rc;
    if (!r || !dir)
        return APREPORT_EINVAL;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create the directory: %s", dir, strerror(errno));
        return APREPORT_EIO;
    }
    for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
        int code = writers[i].fn == apreport_write_code || writers[i].export_bit;
        if (code && !r->plan.feasible && !r->allow_infeasible)
            continue;
        if (writers[i].export_bit && !(r->exports & writers[i].export_bit))
            continue;
        if (writers[i].prefixed)
            snprintf(path, sizeof(path), "%s/%s_%s", dir, r->name, writers[i].suffix);
        else
            snprintf(path, sizeof(path), "%s/%s", dir, writers[i].suffix);
        if ((rc = write_file(path, r, writers[i].fn, 0, err, errlen)) < 0)
            return rc;
    }
    for (size_t k = 0; k < r->n_stages; k++) {
        snprintf(path, sizeof(path), "%s/%s_stage_%zu.mem_usage.txt", dir, r->name, k);
        if ((rc = write_file(path, r, NULL, (int)k, err, errlen)) < 0)
            return rc;
    }
    return 0;
}
