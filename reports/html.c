/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.html: one self-contained page (inline CSS and SVG, no script, no
 * network): the plan and its warnings, the cluster mesh with the devices of
 * each stage, the simulated 1F1B timeline (Gantt), memory per stage against
 * the memory available, the cost breakdown, the per-tensor sharding table
 * with verdicts, layout conversions (flagged ones in red), resharding tasks
 * and the plan as code.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
};
#define NPAL (sizeof(palette) / sizeof(palette[0]))

static const char css[] =
    "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
    "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px;"
    "text-align:left}th{background:#f0f0f0}td.n{text-align:right}"
    ".warn{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px;margin:4px 0}"
    "tr.flag td{background:#f8d7da}code,pre{font-family:monospace;font-size:12px}"
    "pre{background:#f6f6f6;padding:10px;border:1px solid #ddd;overflow-x:auto}"
    ".legend span{display:inline-block;margin-right:14px;font-size:12px}"
    ".sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}";

static void mesh_svg(const ApreportReport *r, FILE *f)
{
    int N = r->sweep.cluster_hosts, M = r->sweep.cluster_gpus, cell = 56;
    int w = 90 + M * cell, h = 10 + N * cell;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", w, h);
    for (int host = 0; host < N; host++) {
        fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"12\">host %d</text>\n",
                10 + host * cell + cell / 2, host);
        for (int g = 0; g < M; g++) {
            int owner = -1;
            for (size_t k = 0; k < r->n_stages && owner < 0; k++) {
                const RepStage *s = &r->stages[k];
                if (s->first_host >= 0 && host >= s->first_host &&
                    host < s->first_host + s->st.submesh_hosts && g >= s->first_gpu &&
                    g < s->first_gpu + s->st.submesh_gpus)
                    owner = (int)k;
            }
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"%s\" "
                       "stroke=\"#333\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"11\" "
                       "text-anchor=\"middle\" fill=\"%s\">%s%d</text>\n",
                    84 + g * cell, 6 + host * cell, cell - 8, cell - 8,
                    owner >= 0 ? palette[owner % NPAL] : "#eee", 84 + g * cell + (cell - 8) / 2,
                    6 + host * cell + (cell - 8) / 2 + 4, owner >= 0 ? "#fff" : "#666",
                    owner >= 0 ? "S" : "gpu", owner >= 0 ? owner : host * M + g);
        }
    }
    fputs("</svg>\n<div class=\"legend\">", f);
    for (size_t k = 0; k < r->n_stages; k++)
        fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>stage %zu: layers %d-%d on "
                   "(%d, %d), logical (%d, %d)</span>",
                palette[k % NPAL], k, r->stages[k].st.start_layer, r->stages[k].st.end_layer,
                r->stages[k].st.submesh_hosts, r->stages[k].st.submesh_gpus,
                r->stages[k].st.logical_a, r->stages[k].st.logical_b);
    fputs("</div>\n", f);
}

static void gantt_svg(const ApreportReport *r, const ApreportSchedule *s, FILE *f)
{
    int W = 1100, row = 28, left = 70, h = 30 + row * s->n_stages;
    double T = s->iteration_time > 0 ? s->iteration_time : 1, sx = W / T;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n",
            left + W + 20, h);
    for (int k = 0; k < s->n_stages; k++)
        fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"12\">stage %d</text>\n", 18 + k * row + 4, k);
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        double x = left + e->start * sx, w = (e->end - e->start) * sx;
        if (e->kind > APREPORT_EV_BWD)
            continue;
        fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                   "fill-opacity=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>%s mb %d: "
                   "%.6f-%.6f s</title></rect>\n",
                x, 4 + e->stage * row, w > 0.5 ? w : 0.5, row - 6,
                palette[e->stage % NPAL], e->kind == APREPORT_EV_FWD ? "0.55" : "1",
                e->kind == APREPORT_EV_FWD ? "forward" : "backward", e->micro_batch, e->start,
                e->end);
        if (w > 18)
            fprintf(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" fill=\"#fff\" "
                       "text-anchor=\"middle\">%c%d</text>\n",
                    x + w / 2, 4 + e->stage * row + row / 2 + 1,
                    e->kind == APREPORT_EV_FWD ? 'F' : 'B', e->micro_batch);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"11\">0</text>"
               "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.6f s</text>\n</svg>\n",
            left, h - 16, left + W, h - 16, left, h - 3, left + W, h - 3, s->iteration_time);
    (void)r;
}

static void memory_svg(const ApreportReport *r, FILE *f)
{
    int W = 700, row = 34, left = 70, h = 10 + row * (int)r->n_stages;
    int64_t mx = 1;
    for (size_t k = 0; k < r->n_stages; k++) {
        if (r->stages[k].memory_implied > mx)
            mx = r->stages[k].memory_implied;
        if (r->stages[k].st.available_memory > mx)
            mx = r->stages[k].st.available_memory;
    }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n",
            left + W + 320, h);
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        double wn = (double)s->memory_implied / (double)mx * W;
        double wa = (double)s->st.available_memory / (double)mx * W;
        int over = s->st.available_memory > 0 && s->memory_implied > s->st.available_memory;
        int y = 6 + (int)k * row;
        fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"12\">stage %zu</text>\n", y + 16, k);
        if (s->st.available_memory > 0)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#e8e8e8\"/>\n",
                    left, y, wa, row - 10);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>\n", left,
                y + 4, wn, row - 18, over ? "#d62728" : palette[k % NPAL]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%.3f GB needed / %.3f GB "
                   "available</text>\n",
                left + W + 8, y + 16, rep_gb(s->memory_implied), rep_gb(s->st.available_memory));
    }
    fputs("</svg>\n", f);
}

static void cost_table(const ApreportReport *r, FILE *f)
{
    int B = r->plan.micro_batches;
    fputs("<table><tr><th>stage</th><th>layers</th><th>forward (s)</th><th>backward (s)</th>"
          "<th>B x (fwd+bwd) (s)</th><th>send to next (s)</th><th>in flight (", f);
    {
        char label[64];
        rep_schedule_label(r, label, sizeof(label));
        fputs(label, f);
    }
    fputs(")</th></tr>\n", f);
    for (size_t k = 0; k < r->n_stages; k++) {
        const CostdbPlanStage *s = &r->stages[k].st;
        fprintf(f, "<tr><td>%zu</td><td>%d-%d</td><td class=\"n\">%.6f</td><td class=\"n\">%.6f"
                   "</td><td class=\"n\">%.6f</td><td class=\"n\">%.6f</td><td class=\"n\">%.4g</td>"
                   "</tr>\n",
                k, s->start_layer, s->end_layer, s->fwd_cost, s->bwd_cost,
                B * (s->fwd_cost + s->bwd_cost), k + 1 < r->n_stages ? r->xfer[k] : 0.0,
                rep_schedule(r)->in_flight[k]);
    }
    fprintf(f, "</table>\n<p>Alpa objective T = &Sigma; stage costs + (B &minus; 1) &middot; max "
               "stage cost = <b>%.6f s</b>; simulated iteration with transfers: 1F1B <b>%.6f s</b> "
               "(bubble %.1f%%), GPipe <b>%.6f s</b> (bubble %.1f%%).</p>\n",
            r->plan.cost, r->sched[0]->iteration_time, 100 * r->sched[0]->bubble_fraction,
            r->sched[1]->iteration_time, 100 * r->sched[1]->bubble_fraction);
    if (r->sched[2])
        fprintf(f, "<p>Interleaved 1F1B with %d model chunks per stage: <b>%.6f s</b> "
                   "(bubble %.1f%%).</p>\n",
                r->virtual_stages, r->sched[2]->iteration_time, 100 * r->sched[2]->bubble_fraction);
}

static void sharding_table(const ApreportReport *r, FILE *f)
{
    fputs("<table><tr><th>stage</th><th>tensor</th><th>role</th><th>shape</th><th>dtype</th>"
          "<th>sharding spec</th><th>per device</th><th>verdict</th></tr>\n", f);
    for (size_t k = 0; k < r->n_stages; k++)
        for (size_t i = 0; i < r->stages[k].n_tensors; i++) {
            const RepTensor *t = &r->stages[k].tensors[i];
            fprintf(f, "<tr><td>%zu</td><td><code>", k);
            rep_html_escape(f, t->pl.tensor_name);
            fprintf(f, "</code></td><td>%s</td><td>", t->pl.role);
            rep_html_escape(f, t->pl.shape);
            fputs("</td><td>", f);
            rep_html_escape(f, t->pl.dtype);
            fputs("</td><td><code>", f);
            rep_html_escape(f, t->pl.sharding_spec);
            fprintf(f, "</code></td><td class=\"n\">%lld</td><td>%s</td></tr>\n",
                    (long long)t->local_bytes,
                    t->layout_ok ? apreport_verdict_name(t->verdict) : "unreadable spec");
        }
    fputs("</table>\n", f);
}

static void conversions_table(const ApreportReport *r, FILE *f)
{
    if (!r->n_convs) {
        fputs("<p>No layout conversions.</p>\n", f);
        return;
    }
    fputs("<table><tr><th>stage</th><th>from</th><th>tensor</th><th>role</th><th>mesh axis</th>"
          "<th>conversion</th><th>collective</th><th>why</th></tr>\n", f);
    for (size_t i = 0; i < r->n_convs; i++) {
        const RepConversion *c = &r->convs[i];
        fprintf(f, "<tr%s><td>%d</td><td>", c->flagged ? " class=\"flag\"" : "", c->stage);
        if (c->src_stage >= 0)
            fprintf(f, "stage %d", c->src_stage);
        else
            fputs("-", f);
        fputs("</td><td><code>", f);
        rep_html_escape(f, c->tensor);
        fprintf(f, "</code></td><td>%s</td><td>", c->role);
        if (c->axis >= 0)
            fprintf(f, "%d", c->axis);
        else
            fputs("all", f);
        fprintf(f, "</td><td>%s%s</td><td>%s</td><td>", apreport_conversion_name(c->kind),
                c->flagged ? " (flagged)" : "", apreport_conversion_collective(c->kind));
        rep_html_escape(f, c->why);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void tasks_table(const ApreportReport *r, FILE *f)
{
    if (!r->n_tasks) {
        fputs("<p>No tensor crosses a stage boundary (no placements recorded).</p>\n", f);
        return;
    }
    fputs("<table><tr><th>mesh</th><th>tensor</th><th>shape</th><th>bytes</th><th>strategy</th>"
          "<th>estimated (s)</th><th>source spec</th><th>destination spec</th></tr>\n", f);
    for (size_t i = 0; i < r->n_tasks; i++) {
        const CostdbReshardingTask *t = &r->tasks[i];
        fprintf(f, "<tr><td>%d&rarr;%d</td><td><code>", t->src_stage, t->dst_stage);
        rep_html_escape(f, t->tensor_name);
        fputs("</code></td><td>", f);
        rep_html_escape(f, t->shape);
        fprintf(f, "</td><td class=\"n\">%lld</td><td>%s</td><td class=\"n\">%.6f</td><td><code>",
                (long long)t->bytes, t->strategy, t->seconds);
        rep_html_escape(f, t->src_spec);
        fputs("</code></td><td><code>", f);
        rep_html_escape(f, t->dst_spec);
        fputs("</code></td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static int code_block(const ApreportReport *r, FILE *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int rc;
    if (!m)
        return APREPORT_ENOMEM;
    rc = apreport_write_code(r, m);
    if (fclose(m) != 0 && rc == 0)
        rc = APREPORT_ENOMEM;
    if (rc == 0) {
        fputs("<pre>", f);
        rep_html_escape(f, buf);
        fputs("</pre>\n", f);
    }
    free(buf);
    return rc;
}

int apreport_write_html(const ApreportReport *r, FILE *f)
{
    int rc;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>approf plan ",
          f);
    fprintf(f, "%lld</title>\n<style>%s</style></head><body>\n", (long long)r->plan.id, css);
    fprintf(f, "<h1>Plan %lld &mdash; ", (long long)r->plan.id);
    rep_html_escape(f, r->has_model ? r->model.name : r->sweep.name);
    fputs("</h1>\n<p>Database <code>", f);
    rep_html_escape(f, r->db_label);
    fprintf(f, "</code>, sweep %lld, %s plan (%s), cluster %d &times; %d, %d layers, %d "
               "micro-batches, global batch %lld%s.</p>\n",
            (long long)r->sweep.id, r->plan.kind, r->plan.objective, r->sweep.cluster_hosts,
            r->sweep.cluster_gpus, r->num_layers, r->plan.micro_batches,
            (long long)r->global_batch, r->plan.feasible ? "" : " &mdash; <b>infeasible</b>");
    for (int i = 0; i < r->n_warnings; i++) {
        fputs("<div class=\"warn\">&#9888; ", f);
        rep_html_escape(f, r->warnings[i]);
        fputs("</div>\n", f);
    }
    fputs("<h2>Cluster mesh: devices of each stage</h2>\n", f);
    mesh_svg(r, f);
    {
        char label[64];
        rep_schedule_label(r, label, sizeof(label));
        fprintf(f, "<h2>Pipeline timeline (simulated %s, one iteration)</h2>\n", label);
    }
    gantt_svg(r, rep_schedule(r), f);
    fputs("<h2>Memory per stage (peak + optimizer state + in-flight activations)</h2>\n", f);
    memory_svg(r, f);
    fputs("<h2>Cost breakdown</h2>\n", f);
    cost_table(r, f);
    fputs("<h2>Sharding per parameter and activation</h2>\n", f);
    sharding_table(r, f);
    fputs("<h2>Layout conversions</h2>\n", f);
    conversions_table(r, f);
    fputs("<h2>Resharding between stages</h2>\n", f);
    tasks_table(r, f);
    fputs("<h2>The plan as code</h2>\n", f);
    if ((rc = code_block(r, f)) < 0)
        return rc;
    fputs("</body></html>\n", f);
    return ferror(f) ? APREPORT_EIO : 0;
}
