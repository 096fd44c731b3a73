/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.json (schemas/report.schema.json) and the simulated 1F1B timeline
 * as a Chrome trace (trace.json: "traceEvents" with complete "X" events in
 * microseconds, pid = stage, tid 0 = compute, tid 1 = sends, tid 2 = the
 * summary of the micro-batches not drawn in full: REP_SHOWN_MICRO), the
 * format chrome://tracing and Perfetto open. Numbers go through
 * costdb_json_number (shortest text that reads back exactly; a non-finite
 * number is null).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "headline.h"
#include "report_int.h"

static void num(FILE *f, double v)
{
    costdb_json_number(f, v);
}

/* Microseconds in trace.json: %.3f, null when not finite (a cost of 5e307 s
 * overflows the timeline). */
static void num_us(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.3f", v);
    else
        fputs("null", f);
}

/* "ts" and "dur" of a complete event from start to end (seconds), in
 * microseconds rounded to the nanosecond: the duration is the difference of
 * the rounded ends, so an event never reaches past the rounded start of one
 * that begins where it ends (Perfetto drops overlapping complete events). */
static void ts_dur(FILE *f, double start, double end)
{
    double a = nearbyint(start * 1e9) / 1e3, b = nearbyint(end * 1e9) / 1e3;
    fputs("\"ts\": ", f);
    num_us(f, a);
    fputs(", \"dur\": ", f);
    num_us(f, isfinite(a) && isfinite(b) && b > a ? b - a : isfinite(a) && isfinite(b) ? 0 : NAN);
}

static void key(FILE *f, const char *k)
{
    rep_json_string(f, k);
    fputs(": ", f);
}

static void shape_array(FILE *f, const char *shape)
{
    int64_t d[APREPORT_MAX_DIMS];
    int n = costdb_shape_parse(shape, d, APREPORT_MAX_DIMS);
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)d[i]);
    fputc(']', f);
}

/* The plan's recompute_layers and offload knobs as priced for stage s
 * (docs/variants.md, "Partial recomputation", "Activation offload"): only
 * in a plan that has them. */
static void stage_knobs_json(const ApreportReport *r, const RepStage *s, FILE *f)
{
    if (r->opts.has_layout && r->opts.layout.recompute_layers > 0) {
        int first[64], last[64], n = rep_recomputed_ranges(s, first, last, 64);
        fprintf(f, ", \"recompute_layers\": {\"composed\": %s", s->rl_chunks > 0 ? "true" : "false");
        if (s->rl_chunks > 0)
            fprintf(f, ", \"per_chunk\": %d, \"chunks\": %d, \"chunk_layers\": %d", s->rl_k,
                    s->rl_chunks, s->rl_chunk_layers);
        fputs(", \"layers\": [", f);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s[%d, %d]", i ? ", " : "", first[i], last[i]);
        fputs("]}", f);
    }
    if (r->opts.has_layout && r->opts.layout.offload > 0) {
        const ApsolveOffloadStage *x = &s->offload;
        fprintf(f, ", \"offload\": {\"layers\": %d", r->opts.layout.offload);
        if (!s->have_offload) {
            fputs(", \"not_priced\": ", f);
            rep_json_string(f, s->offload_why);
            fputc('}', f);
            return;
        }
        fprintf(f, ", \"stage_layers\": %d, \"freed_bytes\": %lld, \"saved_bytes\": ", x->layers,
                (long long)x->freed);
        num(f, x->saved_bytes);
        fputs(", \"device_window_bytes\": ", f);
        num(f, x->window_bytes);
        fputs(", \"host_bandwidth\": ", f);
        num(f, x->host_bandwidth);
        fputs(", \"d2h_seconds\": ", f);
        num(f, x->d2h);
        fputs(", \"h2d_seconds\": ", f);
        num(f, x->h2d);
        fputs(", \"exposed_forward_seconds\": ", f);
        num(f, x->exposed_fwd);
        fputs(", \"exposed_backward_seconds\": ", f);
        num(f, x->exposed_bwd);
        fputs(", \"exposed_seconds\": ", f);
        num(f, x->exposed_fwd + x->exposed_bwd);
        fputc('}', f);
    }
}

static void stage_json(const ApreportReport *r, size_t k, FILE *f)
{
    const RepStage *s = &r->stages[k];
    const CostdbPlanStage *p = &s->st;
    int M = r->sweep.cluster_gpus, first = 1;
    fprintf(f, "    {\"index\": %zu, \"layers\": [%d, %d], \"submesh\": [%d, %d], "
               "\"logical_mesh\": [%d, %d], \"force_batch_dim\": ",
            k, p->start_layer, p->end_layer, p->submesh_hosts, p->submesh_gpus, p->logical_a,
            p->logical_b);
    if (p->force_batch_dim >= 0)
        fprintf(f, "%d", p->force_batch_dim);
    else
        fputs("null", f);
    fputs(", \"devices\": [", f);
    if (s->first_host >= 0)
        for (int h = 0; h < p->submesh_hosts; h++)
            for (int g = 0; g < p->submesh_gpus; g++) {
                fprintf(f, "%s%d", first ? "" : ", ", (s->first_host + h) * M + s->first_gpu + g);
                first = 0;
            }
    fputs("]", f);
    /* a stage no layout keeps where its profile priced it (stage_layout.h) */
    if (s->domains > s->priced_domains)
        fprintf(f, ", \"straddles\": {\"domains\": %d, \"priced_domains\": %d}", s->domains,
                s->priced_domains);
    fputs(", \"fwd_cost\": ", f);
    num(f, p->fwd_cost);
    fputs(", \"bwd_cost\": ", f);
    num(f, p->bwd_cost);
    fprintf(f, ", \"peak_memory\": %lld, \"intermediate_size\": %lld, \"initial_size\": %lld, "
               "\"in_flight_1f1b\": %d, \"memory_needed\": %lld, \"available_memory\": %lld",
            (long long)p->peak_memory, (long long)s->intermediate, (long long)s->initial,
            r->sched[0]->peak_in_flight[k], (long long)s->memory_implied,
            (long long)p->available_memory);
    stage_knobs_json(r, s, f);
    fputs(",\n     \"tensors\": [", f);
    for (size_t i = 0; i < s->n_tensors; i++) {
        const RepTensor *t = &s->tensors[i];
        fputs(i ? ",\n      {" : "\n      {", f);
        key(f, "name");
        rep_json_string(f, t->pl.tensor_name);
        fputs(", ", f);
        key(f, "role");
        rep_json_string(f, t->pl.role);
        fprintf(f, ", \"tensor_index\": %d, \"shape\": ", t->pl.tensor_index);
        shape_array(f, t->pl.shape);
        fputs(", ", f);
        key(f, "dtype");
        rep_json_string(f, t->pl.dtype);
        fputs(", ", f);
        key(f, "sharding_spec");
        rep_json_string(f, t->pl.sharding_spec);
        fputs(", ", f);
        key(f, "verdict");
        if (t->layout_ok)
            rep_json_string(f, apreport_verdict_name(t->verdict));
        else
            fputs("null", f);
        fprintf(f, ", \"bytes\": %lld, \"local_bytes\": %lld}", (long long)t->bytes,
                (long long)t->local_bytes);
    }
    fputs("]}", f);
}

static void sched_json(FILE *f, const ApreportSchedule *s)
{
    fputs("{\"iteration_time\": ", f);
    num(f, s->iteration_time);
    fputs(", \"bubble_fraction\": ", f);
    num(f, s->bubble_fraction);
    fputs(", \"peak_in_flight\": [", f);
    for (int k = 0; k < s->n_stages; k++)
        fprintf(f, "%s%d", k ? ", " : "", s->peak_in_flight[k]);
    if (s->kind == APREPORT_SCHED_INTERLEAVED || s->kind == APREPORT_SCHED_INTERLEAVED_ZB ||
        s->kind == APREPORT_SCHED_ZBV) {
        fprintf(f, "], \"virtual_stages\": %d, \"in_flight\": [", s->virtual_stages);
        for (int k = 0; k < s->n_stages; k++) {
            fputs(k ? ", " : "", f);
            num(f, s->in_flight[k]);
        }
    }
    fputs("]}", f);
}

/* The headline (headline.h): null for a figure that is not known. */
static void headline_json(const ApreportReport *r, FILE *f)
{
    const RepHeadline *h = &r->headline;
    fputs("{\"iteration_seconds\": ", f);
    num(f, h->iteration);
    fputs(", \"iteration_source\": ", f);
    rep_json_string(f, h->source);
    fprintf(f, ", \"gpus\": %d, \"samples_per_second_per_gpu\": ", h->gpus);
    h->samples_per_gpu > 0 ? num(f, h->samples_per_gpu) : (void)fputs("null", f);
    fputs(", \"tokens_per_second_per_gpu\": ", f);
    h->tokens_per_gpu > 0 ? num(f, h->tokens_per_gpu) : (void)fputs("null", f);
    fputs(", \"mfu\": ", f);
    h->mfu > 0 ? num(f, h->mfu) : (void)fputs("null", f);
    fputs(", \"layout\": ", f);
    rep_json_string(f, h->layout);
    fputs(", \"memory\": [", f);
    for (size_t k = 0; k < h->n_stages; k++) {
        const RepStageMemory *m = &h->mem[k];
        fprintf(f, "%s{\"stage\": %zu, \"needed\": ", k ? ", " : "", k);
        num(f, m->total);
        fputs(", \"available\": ", f);
        m->available > 0 ? num(f, m->available) : (void)fputs("null", f);
        fputs(", \"free\": ", f);
        m->available > 0 ? num(f, m->available - m->total) : (void)fputs("null", f);
        fputs(", \"reserve\": ", f);
        num(f, m->reserve);
        if (m->exact) {
            fputs(", \"parameters\": ", f);
            num(f, m->params);
            fputs(", \"optimizer_state\": ", f);
            num(f, m->optimizer);
            fputs(", \"activations\": ", f);
            num(f, m->activations);
            fputs(", \"rest\": ", f);
            num(f, m->rest);
        }
        fputs("}", f);
    }
    fputs("], \"frameworks\": {\"runs\": [", f);
    for (int fw = 0, n = 0; fw < APSOLVE_FW_COUNT; fw++)
        if (r->frameworks.runs & (1u << fw))
            fprintf(f, "%s\"%s\"", n++ ? ", " : "", apsolve_framework_key(fw));
    fputs("], \"why_not\": {", f);
    for (int fw = 0, n = 0; fw < APSOLVE_FW_COUNT; fw++)
        if (!(r->frameworks.runs & (1u << fw))) {
            fprintf(f, "%s\"%s\": ", n++ ? ", " : "", apsolve_framework_key(fw));
            rep_json_string(f, r->frameworks.why[fw]);
        }
    fputs("}}}", f);
}

int apreport_write_json(const ApreportReport *r, FILE *f)
{
    fputs("{\n  \"format\": \"approf-report\",\n  \"version\": 1,\n  \"database\": ", f);
    rep_json_string(f, r->db_label);
    fputs(",\n  \"name\": ", f);
    rep_json_string(f, r->name);
    fprintf(f, ",\n  \"plan\": {\"id\": %lld, \"sweep_id\": %lld, \"kind\": ", (long long)r->plan.id,
            (long long)r->plan.sweep_id);
    rep_json_string(f, r->plan.kind);
    fputs(", \"objective\": ", f);
    rep_json_string(f, r->plan.objective);
    fprintf(f, ", \"micro_batches\": %d, \"global_batch\": %lld, \"cost\": ", r->plan.micro_batches,
            (long long)r->global_batch);
    num(f, r->plan.cost);
    fprintf(f, ", \"feasible\": %s", r->plan.feasible ? "true" : "false");
    if (r->opts.has_layout && r->opts.layout.recompute_layers > 0) /* the plan's knobs */
        fprintf(f, ", \"recompute_layers\": %d", r->opts.layout.recompute_layers);
    if (r->opts.has_layout && r->opts.layout.offload > 0)
        fprintf(f, ", \"offload\": %d", r->opts.layout.offload);
    fputs("},\n", f);
    fprintf(f, "  \"cluster\": {\"hosts\": %d, \"gpus_per_host\": %d},\n  \"num_layers\": %d,\n",
            r->sweep.cluster_hosts, r->sweep.cluster_gpus, r->num_layers);
    fputs("  \"model\": ", f);
    if (r->has_model) {
        fputs("{\"name\": ", f);
        rep_json_string(f, r->model.name);
        fputs(", \"signature\": ", f);
        rep_json_string(f, r->model.signature);
        fputs("}", f);
    } else {
        fputs("null", f);
    }
    fputs(",\n  \"hardware\": ", f);
    if (r->has_hw) {
        fputs("{\"gpu_model\": ", f);
        rep_json_string(f, r->hw.gpu_model);
        fputs(", \"kind\": ", f);
        rep_json_string(f, r->hw.kind);
        fputs("}", f);
    } else {
        fputs("null", f);
    }
    fputs(",\n  \"stages\": [\n", f);
    for (size_t k = 0; k < r->n_stages; k++) {
        stage_json(r, k, f);
        fputs(k + 1 < r->n_stages ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"resharding_tasks\": [", f);
    for (size_t i = 0; i < r->n_tasks; i++) {
        const CostdbReshardingTask *t = &r->tasks[i];
        fprintf(f, "%s\n    {\"src_stage\": %d, \"dst_stage\": %d, \"tensor\": ", i ? "," : "",
                t->src_stage, t->dst_stage);
        rep_json_string(f, t->tensor_name);
        fputs(", \"shape\": ", f);
        shape_array(f, t->shape);
        fputs(", \"dtype\": ", f);
        rep_json_string(f, t->dtype);
        fputs(", \"src_spec\": ", f);
        rep_json_string(f, t->src_spec);
        fputs(", \"dst_spec\": ", f);
        rep_json_string(f, t->dst_spec);
        fprintf(f, ", \"bytes\": %lld, \"strategy\": ", (long long)t->bytes);
        rep_json_string(f, t->strategy);
        fputs(", \"seconds\": ", f);
        num(f, t->seconds);
        fputs("}", f);
    }
    fputs("],\n  \"conversions\": [", f);
    for (size_t i = 0; i < r->n_convs; i++) {
        const RepConversion *c = &r->convs[i];
        fprintf(f, "%s\n    {\"stage\": %d, \"src_stage\": ", i ? "," : "", c->stage);
        if (c->src_stage >= 0)
            fprintf(f, "%d", c->src_stage);
        else
            fputs("null", f);
        fputs(", \"tensor\": ", f);
        rep_json_string(f, c->tensor);
        fputs(", \"role\": ", f);
        rep_json_string(f, c->role);
        fputs(", \"axis\": ", f);
        if (c->axis >= 0)
            fprintf(f, "%d", c->axis);
        else
            fputs("null", f);
        fputs(", \"kind\": ", f);
        rep_json_string(f, apreport_conversion_name(c->kind));
        fputs(", \"collective\": ", f);
        rep_json_string(f, apreport_conversion_collective(c->kind));
        fprintf(f, ", \"flagged\": %s, \"reason\": ", c->flagged ? "true" : "false");
        rep_json_string(f, c->why);
        fputs("}", f);
    }
    fputs("],\n  \"schedules\": {\"1f1b\": ", f);
    sched_json(f, r->sched[0]);
    fputs(", \"gpipe\": ", f);
    sched_json(f, r->sched[1]);
    if (r->sched[2]) {
        fputs(", \"interleaved\": ", f);
        sched_json(f, r->sched[2]);
    }
    for (int k = APREPORT_SCHED_ZB_H1; k < APREPORT_SCHED_COUNT; k++)
        if (r->sched[k]) {
            fprintf(f, ", \"%s\": ", apreport_schedule_name((ApreportScheduleKind)k));
            sched_json(f, r->sched[k]);
        }
    if (r->schedule != APREPORT_SCHED_1F1B) {
        fputs(", \"selected\": ", f);
        rep_json_string(f, apreport_schedule_name(r->schedule));
    }
    fprintf(f, "},\n  \"deadlock\": {\"deadlocked\": %s, \"cycle\": [",
            r->deadlock.deadlocked ? "true" : "false");
    for (int i = 0; i < r->deadlock.cycle_len; i++)
        fprintf(f, "%s%d", i ? ", " : "", r->deadlock.cycle[i]);
    fputs("], \"message\": ", f);
    rep_json_string(f, r->deadlock.message);
    fputs("},\n  \"warnings\": [", f);
    for (int i = 0; i < r->n_warnings; i++) {
        fputs(i ? ", " : "", f);
        rep_json_string(f, r->warnings[i]);
    }
    fputs("],\n  \"headline\": ", f);
    headline_json(r, f);
    fputs("\n}\n", f);
    return ferror(f) ? APREPORT_EIO : 0;
}

/* One complete event per stage and thread on tid 2 for the summarised
 * micro-batches (their own track: they overlap the events drawn in full). */
static void trace_summaries(const ApreportSchedule *s, const RepSummary *sum, FILE *f)
{
    int first, last;
    if (!sum || !rep_micro_summarised(s, &first, &last))
        return;
    for (int k = 0; k < s->n_stages; k++)
        for (int t = 0; t < 2; t++) {
            const RepSummary *u = &sum[k * 2 + t];
            if (!u->events)
                continue;
            fprintf(f, ",\n{\"name\": \"micro-batches %d-%d (summarised)\", \"cat\": \"summarised\", "
                       "\"ph\": \"X\", ", first, last);
            ts_dur(f, u->start, u->end);
            fprintf(f, ", \"pid\": %d, \"tid\": 2, \"args\": {\"what\": \"%s\", "
                       "\"first_micro_batch\": %d, \"last_micro_batch\": %d, \"events\": %zu}}",
                    k, t ? "send" : "compute", first, last, u->events);
        }
}

int apreport_write_trace(const ApreportReport *r, FILE *f)
{
    const ApreportSchedule *s = rep_schedule(r);
    RepSummary *sum = NULL;
    int first = 1, lo, hi;
    if (rep_summaries(s, &sum) < 0)
        return APREPORT_ENOMEM;
    fputs("{\"displayTimeUnit\": \"ms\", ", f);
    if (rep_micro_summarised(s, &lo, &hi))
        fprintf(f, "\"otherData\": {\"summarised_micro_batches\": [%d, %d], \"note\": "
                   "\"micro-batches %d to %d of %d are one event per stage and thread on tid 2 "
                   "(approf bounds the trace; docs/reports.md)\"},\n", lo, hi, lo, hi,
                s->micro_batches);
    fputs("\"traceEvents\": [\n", f);
    for (size_t k = 0; k < r->n_stages; k++) {
        fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %zu, \"tid\": 0, "
                   "\"args\": {\"name\": \"stage %zu (%d, %d) layers %d-%d\"}}",
                first ? "" : ",\n", k, k, r->stages[k].st.submesh_hosts,
                r->stages[k].st.submesh_gpus, r->stages[k].st.start_layer,
                r->stages[k].st.end_layer);
        first = 0;
        fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %zu, \"tid\": 0, "
                   "\"args\": {\"name\": \"compute\"}}", k);
        fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %zu, \"tid\": 1, "
                   "\"args\": {\"name\": \"send\"}}", k);
        if (sum)
            fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %zu, \"tid\": 2, "
                       "\"args\": {\"name\": \"summarised micro-batches\"}}", k);
    }
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        if (!rep_micro_shown(s, e->micro_batch))
            continue;
        static const char *const kinds[] = {"forward", "backward", "weight gradient",
                                            "send activation", "send gradient"};
        static const char *const letters[] = {"F", "B", "W", "A", "G"};
        char chunk[32] = "";
        if (s->virtual_stages > 1)
            snprintf(chunk, sizeof(chunk), ".%d", e->chunk);
        fprintf(f, ",\n{\"name\": \"%s%d%s\", \"cat\": \"%s\", \"ph\": \"X\", ",
                letters[e->kind], e->micro_batch, chunk, kinds[e->kind]);
        ts_dur(f, e->start, e->end);
        fprintf(f, ", \"pid\": %d, \"tid\": %d, \"args\": {\"micro_batch\": %d", e->stage,
                e->kind >= APREPORT_EV_SEND_ACT, e->micro_batch);
        if (s->virtual_stages > 1)
            fprintf(f, ", \"chunk\": %d", e->chunk);
        if (e->peer >= 0)
            fprintf(f, ", \"to_stage\": %d", e->peer);
        fputs("}}", f);
    }
    trace_summaries(s, sum, f);
    free(sum);
    fputs("\n]}\n", f);
    return ferror(f) ? APREPORT_EIO : 0;
}
