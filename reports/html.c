/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.html: one self-contained page (inline CSS and SVG, no script, no
 * network): the plan and its warnings, the cluster mesh with the devices of
 * each stage, the simulated 1F1B timeline (Gantt), memory per stage against
 * the memory available (timeline, mesh and tables bounded: REP_SHOWN_MICRO,
 * REP_MESH_MAX, REP_HTML_MAX_ROWS, each cut said on the page), the cost breakdown, the per-tensor sharding table
 * with verdicts, layout conversions (flagged ones in red), resharding tasks
 * and the plan as code.
 *
 * Every byte of the page goes through rep_html(): the format string is the
 * page's markup and every %s / %c argument is escaped there, so a name, a
 * strategy, a plan kind or any other text read from a database can never
 * become markup, whichever call site prints it. Non-finite numbers print
 * as "n/a".
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "headline.h"
#include "plural.h"
#include "report_int.h"

static void html_escape(FILE *f, const char *s, size_t n)
{
    assert(f && (s || !n));
    for (size_t i = 0; i < n && s[i]; i++) {
        switch (s[i]) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(s[i], f);
        }
    }
}

void rep_html(FILE *f, const char *fmt, ...)
{
    va_list ap;
    assert(f && fmt);  /* fmt is the program's, the arguments the database's */
    va_start(ap, fmt);
    while (*fmt) {
        char spec[32], conv, buf[128];
        size_t n = 0;
        int lmod = 0;                 /* 1 l, 2 ll, 3 z */
        if (*fmt != '%') {
            const char *next = strchr(fmt, '%');
            size_t len = next ? (size_t)(next - fmt) : strlen(fmt);
            fwrite(fmt, 1, len, f);
            fmt += len;
            continue;
        }
        if (fmt[1] == '%') {
            fputc('%', f);
            fmt += 2;
            continue;
        }
        spec[n++] = *fmt++;
        while (*fmt && strchr("-+ #0123456789.", *fmt) && n < sizeof(spec) - 4)
            spec[n++] = *fmt++;
        while ((*fmt == 'l' || *fmt == 'z') && n < sizeof(spec) - 2) {
            lmod = *fmt == 'z' ? 3 : lmod + 1;
            spec[n++] = *fmt++;
        }
        conv = *fmt ? *fmt++ : 's';
        spec[n++] = conv;
        spec[n] = '\0';
        switch (conv) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            const char *dot = strchr(spec, '.');
            size_t max = (size_t)-1;
            if (dot)
                max = (size_t)strtoul(dot + 1, NULL, 10);
            html_escape(f, s ? s : "", max);
            continue;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            html_escape(f, &c, 1);
            continue;
        }
        case 'f': case 'g': case 'e': case 'F': case 'G': case 'E': {
            double v = va_arg(ap, double);
            if (!isfinite(v))
                snprintf(buf, sizeof(buf), "n/a");
            else
                snprintf(buf, sizeof(buf), spec, v);
            break;
        }
        case 'd': case 'i':
            if (lmod == 2)
                snprintf(buf, sizeof(buf), spec, va_arg(ap, long long));
            else if (lmod == 1)
                snprintf(buf, sizeof(buf), spec, va_arg(ap, long));
            else if (lmod == 3)
                snprintf(buf, sizeof(buf), spec, va_arg(ap, ssize_t));
            else
                snprintf(buf, sizeof(buf), spec, va_arg(ap, int));
            break;
        case 'u': case 'x': case 'X':
            if (lmod == 2)
                snprintf(buf, sizeof(buf), spec, va_arg(ap, unsigned long long));
            else if (lmod == 1)
                snprintf(buf, sizeof(buf), spec, va_arg(ap, unsigned long));
            else if (lmod == 3)
                snprintf(buf, sizeof(buf), spec, va_arg(ap, size_t));
            else
                snprintf(buf, sizeof(buf), spec, va_arg(ap, unsigned));
            break;
        default:
            /* an unsupported conversion is a bug in a format string here */
            snprintf(buf, sizeof(buf), "?");
            break;
        }
        html_escape(f, buf, sizeof(buf));
    }
    va_end(ap);
}

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

/* A note under a table cut at REP_HTML_MAX_ROWS rows: what was left out. */
static void rows_left_out(FILE *f, size_t total, const char *what)
{
    if (total > REP_HTML_MAX_ROWS)
        rep_html(f, "<p class=\"warn\">%zu more %s are not shown (report.json lists all %zu).</p>\n",
                 total - REP_HTML_MAX_ROWS, what, total);
}

static void mesh_svg(const ApreportReport *r, FILE *f)
{
    int N = r->sweep.cluster_hosts, M = r->sweep.cluster_gpus, cell = 56;
    int n = N < REP_MESH_MAX ? N : REP_MESH_MAX, m = M < REP_MESH_MAX ? M : REP_MESH_MAX;
    int w = 90 + m * cell, h = 10 + n * cell;
    int owner[REP_MESH_MAX][REP_MESH_MAX];
    /* the owner of each drawn device, the first stage holding it */
    for (int host = 0; host < n; host++)
        for (int g = 0; g < m; g++)
            owner[host][g] = -1;
    for (size_t k = r->n_stages; k-- > 0;) {
        const RepStage *s = &r->stages[k];
        if (s->first_host < 0)
            continue;
        for (int host = s->first_host; host < s->first_host + s->st.submesh_hosts && host < n; host++)
            for (int g = s->first_gpu; g < s->first_gpu + s->st.submesh_gpus && g < m; g++)
                owner[host][g] = (int)k;
    }
    rep_html(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", w, h);
    for (int host = 0; host < n; host++) {
        rep_html(f, "<text x=\"4\" y=\"%d\" font-size=\"12\">host %d</text>\n",
                10 + host * cell + cell / 2, host);
        for (int g = 0; g < m; g++) {
            int o = owner[host][g];
            rep_html(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"4\" fill=\"%s\" "
                       "stroke=\"#333\"/>\n<text x=\"%d\" y=\"%d\" font-size=\"11\" "
                       "text-anchor=\"middle\" fill=\"%s\">%s%d</text>\n",
                    84 + g * cell, 6 + host * cell, cell - 8, cell - 8,
                    o >= 0 ? palette[o % NPAL] : "#eee", 84 + g * cell + (cell - 8) / 2,
                    6 + host * cell + (cell - 8) / 2 + 4, o >= 0 ? "#fff" : "#666",
                    o >= 0 ? "S" : "gpu", o >= 0 ? o : host * M + g);
        }
    }
    rep_html(f, "</svg>\n");
    if (n < N || m < M) {
        rep_html(f, "<p class=\"warn\">The cluster has %d &times; %d devices: ", N, M);
        if (n < N)
            rep_html(f, "hosts %d to %d%s", n, N - 1, m < M ? " and " : "");
        if (m < M)
            rep_html(f, "GPUs %d to %d of each host", m, M - 1);
        rep_html(f, " are not drawn (report.json lists every stage's devices).</p>\n");
    }
    rep_html(f, "<div class=\"legend\">");
    for (size_t k = 0; k < r->n_stages && k < REP_HTML_MAX_ROWS; k++)
        rep_html(f, "<span><i class=\"sw\" style=\"background:%s\"></i>stage %zu: layers %d-%d on "
                   "(%d, %d), logical (%d, %d)</span>",
                palette[k % NPAL], k, r->stages[k].st.start_layer, r->stages[k].st.end_layer,
                r->stages[k].st.submesh_hosts, r->stages[k].st.submesh_gpus,
                r->stages[k].st.logical_a, r->stages[k].st.logical_b);
    rep_html(f, "</div>\n");
    rows_left_out(f, r->n_stages, "stages");
}

static int gantt_svg(const ApreportReport *r, const ApreportSchedule *s, FILE *f)
{
    int W = 1100, row = 28, left = 70, h = 30 + row * s->n_stages, lo, hi;
    double T = s->iteration_time > 0 ? s->iteration_time : 1, sx = W / T;
    RepSummary *sum = NULL;
    if (rep_summaries(s, &sum) < 0)
        return APREPORT_ENOMEM;
    rep_html(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n",
            left + W + 20, h);
    for (int k = 0; k < s->n_stages; k++)
        rep_html(f, "<text x=\"4\" y=\"%d\" font-size=\"12\">stage %d</text>\n", 18 + k * row + 4, k);
    /* the summarised micro-batches: one grey bar per stage, under the rest */
    for (int k = 0; sum && rep_micro_summarised(s, &lo, &hi) && k < s->n_stages; k++) {
        const RepSummary *u = &sum[k * 2];
        if (u->events)
            rep_html(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#bbb\">"
                       "<title>micro-batches %d-%d: %zu passes, %.6f-%.6f s (summarised)</title>"
                       "</rect>\n", left + u->start * sx, 4 + k * row,
                     (u->end - u->start) * sx > 0.5 ? (u->end - u->start) * sx : 0.5, row - 6,
                     lo, hi, u->events, u->start, u->end);
    }
    free(sum);
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        double x = left + e->start * sx, w = (e->end - e->start) * sx;
        if (e->kind >= APREPORT_EV_SEND_ACT || !rep_micro_shown(s, e->micro_batch))
            continue;
        rep_html(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                   "fill-opacity=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"><title>%s mb %d: "
                   "%.6f-%.6f s</title></rect>\n",
                x, 4 + e->stage * row, w > 0.5 ? w : 0.5, row - 6,
                palette[e->stage % NPAL], e->kind == APREPORT_EV_FWD ? "0.55" : "1",
                e->kind == APREPORT_EV_FWD ? "forward"
                : e->kind == APREPORT_EV_WGRAD ? "weight gradient" : "backward",
                e->micro_batch, e->start,
                e->end);
        if (w > 18)
            rep_html(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" fill=\"#fff\" "
                       "text-anchor=\"middle\">%c%d</text>\n",
                    x + w / 2, 4 + e->stage * row + row / 2 + 1,
                    e->kind == APREPORT_EV_FWD ? 'F' : e->kind == APREPORT_EV_WGRAD ? 'W' : 'B',
                    e->micro_batch);
    }
    rep_html(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"11\">0</text>"
               "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%.6f s</text>\n</svg>\n",
            left, h - 16, left + W, h - 16, left, h - 3, left + W, h - 3, s->iteration_time);
    if (rep_micro_summarised(s, &lo, &hi))
        rep_html(f, "<p class=\"warn\">Micro-batches %d to %d (%d of %d) are summarised: one grey "
                    "bar per stage spans their passes; trace.json makes the same cut.</p>\n",
                 lo, hi, hi - lo + 1, s->micro_batches);
    (void)r;
    return 0;
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
    rep_html(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n",
            left + W + 320, h);
    for (size_t k = 0; k < r->n_stages; k++) {
        const RepStage *s = &r->stages[k];
        double wn = (double)s->memory_implied / (double)mx * W;
        double wa = (double)s->st.available_memory / (double)mx * W;
        int over = s->st.available_memory > 0 && s->memory_implied > s->st.available_memory;
        int y = 6 + (int)k * row;
        rep_html(f, "<text x=\"4\" y=\"%d\" font-size=\"12\">stage %zu</text>\n", y + 16, k);
        if (s->st.available_memory > 0)
            rep_html(f, "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#e8e8e8\"/>\n",
                    left, y, wa, row - 10);
        rep_html(f, "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>\n", left,
                y + 4, wn, row - 18, over ? "#d62728" : palette[k % NPAL]);
        rep_html(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%.3f GiB needed / %.3f GiB "
                   "available</text>\n",
                left + W + 8, y + 16, rep_gb(s->memory_implied), rep_gb(s->st.available_memory));
    }
    rep_html(f, "</svg>\n");
}

static void cost_table(const ApreportReport *r, FILE *f)
{
    int B = r->plan.micro_batches;
    rep_html(f, "<table><tr><th>stage</th><th>layers</th><th>forward (s)</th><th>backward (s)</th>"
          "<th>B x (fwd+bwd) (s)</th><th>send to next (s)</th><th>in flight (");
    {
        char label[64];
        rep_schedule_label(r, label, sizeof(label));
        rep_html(f, "%s", label);
    }
    rep_html(f, ")</th></tr>\n");
    for (size_t k = 0; k < r->n_stages && k < REP_HTML_MAX_ROWS; k++) {
        const CostdbPlanStage *s = &r->stages[k].st;
        rep_html(f, "<tr><td>%zu</td><td>%d-%d</td><td class=\"n\">%.6f</td><td class=\"n\">%.6f"
                   "</td><td class=\"n\">%.6f</td><td class=\"n\">%.6f</td><td class=\"n\">%.4g</td>"
                   "</tr>\n",
                k, s->start_layer, s->end_layer, s->fwd_cost, s->bwd_cost,
                B * (s->fwd_cost + s->bwd_cost), k + 1 < r->n_stages ? r->xfer[k] : 0.0,
                rep_schedule(r)->in_flight[k]);
    }
    rep_html(f, "</table>\n");
    rows_left_out(f, r->n_stages, "stages");
    rep_html(f, "<p>Alpa objective T = &Sigma; stage costs + (B &minus; 1) &middot; max "
               "stage cost = <b>%.6f s</b>; simulated iteration with transfers: 1F1B <b>%.6f s</b> "
               "(bubble %.1f%%), GPipe <b>%.6f s</b> (bubble %.1f%%).</p>\n",
            r->plan.cost, r->sched[0]->iteration_time, 100 * r->sched[0]->bubble_fraction,
            r->sched[1]->iteration_time, 100 * r->sched[1]->bubble_fraction);
    if (r->sched[2])
        rep_html(f, "<p>Interleaved 1F1B with %d model chunks per stage: <b>%.6f s</b> "
                   "(bubble %.1f%%).</p>\n",
                r->virtual_stages, r->sched[2]->iteration_time, 100 * r->sched[2]->bubble_fraction);
    if (r->sched[3])
        rep_html(f, "<p>ZB-H1 (zero bubble, weight gradients deferred): <b>%.6f s</b> "
                   "(bubble %.1f%%).</p>\n",
                r->sched[3]->iteration_time, 100 * r->sched[3]->bubble_fraction);
    if (r->sched[4])
        rep_html(f, "<p>Interleaved zero bubble with %d model chunks per stage: <b>%.6f s</b> "
                   "(bubble %.1f%%).</p>\n",
                r->virtual_stages, r->sched[4]->iteration_time, 100 * r->sched[4]->bubble_fraction);
    if (r->sched[5])
        rep_html(f, "<p>ZB-V (zero bubble, 2 model chunks per stage in a V): <b>%.6f s</b> "
                   "(bubble %.1f%%).</p>\n",
                r->sched[5]->iteration_time, 100 * r->sched[5]->bubble_fraction);
}

static void sharding_table(const ApreportReport *r, FILE *f)
{
    rep_html(f, "<table><tr><th>stage</th><th>tensor</th><th>role</th><th>shape</th><th>dtype</th>"
          "<th>sharding spec</th><th>per device</th><th>verdict</th></tr>\n");
    size_t rows = 0;
    for (size_t k = 0; k < r->n_stages; k++)
        for (size_t i = 0; i < r->stages[k].n_tensors; i++) {
            const RepTensor *t = &r->stages[k].tensors[i];
            if (rows++ >= REP_HTML_MAX_ROWS)
                continue;
            rep_html(f, "<tr><td>%zu</td><td><code>", k);
            rep_html(f, "%s", t->pl.tensor_name);
            rep_html(f, "</code></td><td>%s</td><td>", t->pl.role);
            rep_html(f, "%s", t->pl.shape);
            rep_html(f, "</td><td>");
            rep_html(f, "%s", t->pl.dtype);
            rep_html(f, "</td><td><code>");
            rep_html(f, "%s", t->pl.sharding_spec);
            rep_html(f, "</code></td><td class=\"n\">%lld</td><td>%s</td></tr>\n",
                    (long long)t->local_bytes,
                    t->layout_ok ? apreport_verdict_name(t->verdict) : "unreadable spec");
        }
    rep_html(f, "</table>\n");
    rows_left_out(f, rows, "tensor placements");
}

static void conversions_table(const ApreportReport *r, FILE *f)
{
    if (!r->n_convs) {
        rep_html(f, "<p>No layout conversions.</p>\n");
        return;
    }
    rep_html(f, "<table><tr><th>stage</th><th>from</th><th>tensor</th><th>role</th><th>mesh axis</th>"
          "<th>conversion</th><th>collective</th><th>why</th></tr>\n");
    for (size_t i = 0; i < r->n_convs && i < REP_HTML_MAX_ROWS; i++) {
        const RepConversion *c = &r->convs[i];
        rep_html(f, c->flagged ? "<tr class=\"flag\"><td>%d</td><td>" : "<tr><td>%d</td><td>",
                 c->stage);
        if (c->src_stage >= 0)
            rep_html(f, "stage %d", c->src_stage);
        else
            rep_html(f, "-");
        rep_html(f, "</td><td><code>");
        rep_html(f, "%s", c->tensor);
        rep_html(f, "</code></td><td>%s</td><td>", c->role);
        if (c->axis >= 0)
            rep_html(f, "%d", c->axis);
        else
            rep_html(f, "all");
        rep_html(f, "</td><td>%s%s</td><td>%s</td><td>", apreport_conversion_name(c->kind),
                c->flagged ? " (flagged)" : "", apreport_conversion_collective(c->kind));
        rep_html(f, "%s", c->why);
        rep_html(f, "</td></tr>\n");
    }
    rep_html(f, "</table>\n");
    rows_left_out(f, r->n_convs, "layout conversions");
}

static void tasks_table(const ApreportReport *r, FILE *f)
{
    if (!r->n_tasks) {
        rep_html(f, "<p>No tensor crosses a stage boundary (no placements recorded).</p>\n");
        return;
    }
    rep_html(f, "<table><tr><th>mesh</th><th>tensor</th><th>shape</th><th>bytes</th><th>strategy</th>"
          "<th>estimated (s)</th><th>source spec</th><th>destination spec</th></tr>\n");
    for (size_t i = 0; i < r->n_tasks && i < REP_HTML_MAX_ROWS; i++) {
        const CostdbReshardingTask *t = &r->tasks[i];
        rep_html(f, "<tr><td>%d&rarr;%d</td><td><code>", t->src_stage, t->dst_stage);
        rep_html(f, "%s", t->tensor_name);
        rep_html(f, "</code></td><td>");
        rep_html(f, "%s", t->shape);
        rep_html(f, "</td><td class=\"n\">%lld</td><td>%s</td><td class=\"n\">%.6f</td><td><code>",
                (long long)t->bytes, t->strategy, t->seconds);
        rep_html(f, "%s", t->src_spec);
        rep_html(f, "</code></td><td><code>");
        rep_html(f, "%s", t->dst_spec);
        rep_html(f, "</code></td></tr>\n");
    }
    rep_html(f, "</table>\n");
    rows_left_out(f, r->n_tasks, "resharding tasks");
}

static int code_block(const ApreportReport *r, FILE *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m;
    int rc;
    if (!r->plan.feasible && !r->allow_infeasible) {
        rep_html(f, "<p>No code: the plan is infeasible (apreport --allow-infeasible writes it, "
                    "marked).</p>\n");
        return 0;
    }
    m = open_memstream(&buf, &len);
    if (!m)
        return APREPORT_ENOMEM;
    rc = apreport_write_code(r, m);
    if (fclose(m) != 0 && rc == 0)
        rc = APREPORT_ENOMEM;
    if (rc == 0) {
        rep_html(f, "<pre>");
        rep_html(f, "%s", buf);
        rep_html(f, "</pre>\n");
    }
    free(buf);
    return rc;
}

/* The plan's recompute_layers and offload as apsolve priced them per
 * stage (report_rlayers.c, report_offload.c; docs/variants.md). */
static void knobs_html(const ApreportReport *r, FILE *f)
{
    if (r->opts.has_layout && r->opts.layout.recompute_layers > 0) {
        rep_html(f, "<h3>Partial recomputation (recompute_layers %d)</h3>\n<table><tr>"
                    "<th>stage</th><th>layers</th><th>fully recomputed</th></tr>\n",
                 r->opts.layout.recompute_layers);
        for (size_t k = 0; k < r->n_stages && k < REP_HTML_MAX_ROWS; k++) {
            const RepStage *s = &r->stages[k];
            int first[64], last[64], n = rep_recomputed_ranges(s, first, last, 64);
            rep_html(f, "<tr><td>%zu</td><td>%d&ndash;%d</td><td>", k, s->st.start_layer,
                     s->st.end_layer);
            for (int i = 0; i < n; i++)
                rep_html(f, "%s%d&ndash;%d", i ? ", " : "", first[i], last[i]);
            if (!n)
                rep_html(f, "none");
            else if (s->rl_chunks > 0)
                rep_html(f, " (the first %d of each of %d %s of %d layers)", s->rl_k,
                         s->rl_chunks, costdb_plural(s->rl_chunks, "chunk", "chunks"),
                         s->rl_chunk_layers);
            else
                rep_html(f, " (every layer: the stored full entry)");
            rep_html(f, "</td></tr>\n");
        }
        rep_html(f, "</table>\n");
        rows_left_out(f, r->n_stages, "stages");
    }
    if (!r->opts.has_layout || r->opts.layout.offload <= 0)
        return;
    rep_html(f, "<h3>Activation offload (offload %d)</h3>\n<table><tr><th>stage</th>"
                "<th>layers offloaded</th><th>copied each way a micro-batch</th>"
                "<th>freed on the device</th><th>host link</th><th>copy each way</th>"
                "<th>exposed forward</th><th>exposed backward</th></tr>\n",
             r->opts.layout.offload);
    for (size_t k = 0; k < r->n_stages && k < REP_HTML_MAX_ROWS; k++) {
        const RepStage *s = &r->stages[k];
        const ApsolveOffloadStage *x = &s->offload;
        rep_html(f, "<tr><td>%zu</td>", k);
        if (!s->have_offload) {
            rep_html(f, "<td colspan=\"7\">not priced: %s</td></tr>\n", s->offload_why);
            continue;
        }
        rep_html(f, "<td>the first %d of %d</td><td class=\"n\">%.0f bytes</td>"
                    "<td class=\"n\">%lld bytes</td><td class=\"n\">%.6g GB/s</td>"
                    "<td class=\"n\">%.6g s</td><td class=\"n\">%.6g s</td>"
                    "<td class=\"n\">%.6g s</td></tr>\n",
                 x->offloaded, x->layers, x->saved_bytes, (long long)x->freed,
                 x->host_bandwidth / 1e9, x->d2h, x->exposed_fwd, x->exposed_bwd);
    }
    rep_html(f, "</table>\n");
    rows_left_out(f, r->n_stages, "stages");
}

/* The answer first: time, throughput, MFU, layout, memory per stage and
 * the launch files (headline.h). */
static void headline_html(const ApreportReport *r, FILE *f)
{
    const RepHeadline *h = &r->headline;
    static const struct {
        unsigned bit;
        const char *suffix, *what;
    } files[] = {{APREPORT_EXPORT_MEGATRON, "_megatron.args", "Megatron-LM"},
                 {APREPORT_EXPORT_DEEPSPEED, "_deepspeed.json", "DeepSpeed"},
                 {APREPORT_EXPORT_TORCHTITAN, "_torchtitan.toml", "torchtitan"}};
    int any = 0;
    rep_html(f, "<h2>At a glance</h2>\n<table class=\"glance\">\n");
    rep_html(f, "<tr><th>iteration</th><td><b>%.4g s</b> (%s)</td></tr>\n", h->iteration,
             h->source);
    if (h->samples_per_gpu > 0)
        rep_html(f, "<tr><th>throughput</th><td><b>%.4g samples/s per GPU</b>", h->samples_per_gpu);
    if (h->samples_per_gpu > 0 && h->tokens_per_gpu > 0)
        rep_html(f, ", %.4g tokens/s per GPU (%d tokens a sample)", h->tokens_per_gpu, h->seq);
    if (h->samples_per_gpu > 0)
        rep_html(f, " on %d %s</td></tr>\n", h->gpus, costdb_plural(h->gpus, "GPU", "GPUs"));
    if (h->mfu > 0)
        rep_html(f, "<tr><th>MFU</th><td><b>%.1f%%</b> of %.4g TFLOP/s per GPU (model FLOPs, "
                 "recomputation not counted)</td></tr>\n", 100 * h->mfu, h->peak_flops / 1e12);
    rep_html(f, "<tr><th>layout</th><td>");
    rep_html(f, "%s", h->layout);
    rep_html(f, "</td></tr>\n<tr><th>launch files</th><td>");
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (r->exports & files[i].bit) {
            rep_html(f, "%s<a href=\"", any++ ? ", " : "");
            rep_html(f, "%s", r->name);
            rep_html(f, "%s\">%s</a>", files[i].suffix, files[i].what);
        }
    if (!any)
        rep_html(f, "none written (apreport --export)");
    if (any && !r->plan.feasible && !r->allow_infeasible)
        rep_html(f, " (not written for an infeasible plan)");
    rep_html(f, "</td></tr>\n<tr><th>runs as priced in</th><td>");
    {
        char runs[96];
        apsolve_frameworks_list(r->frameworks.runs, runs, sizeof(runs));
        rep_html(f, "%s", runs);
        for (int fw = 0; fw < APSOLVE_FW_COUNT; fw++)
            if (!(r->frameworks.runs & (1u << fw))) {
                rep_html(f, "<br>not %s: ", apsolve_framework_name(fw));
                rep_html(f, "%s", r->frameworks.why[fw]);
            }
    }
    rep_html(f, "</td></tr>\n</table>\n");
    rep_html(f, "<table><tr><th>stage</th><th>parameters</th><th>optimizer state</th>"
                "<th>activations in flight</th><th>gradients, outputs, temporaries</th>"
                "<th>needed</th><th>available</th><th>free</th>"
                "<th>reserve for fragmentation (--memory-headroom)</th></tr>\n");
    for (size_t k = 0; k < h->n_stages && k < REP_HTML_MAX_ROWS; k++) {
        const RepStageMemory *m = &h->mem[k];
        rep_html(f, "<tr><td>%zu</td>", k);
        if (m->exact)
            rep_html(f, "<td class=\"n\">%.3f GiB</td><td class=\"n\">%.3f GiB</td>"
                        "<td class=\"n\">%.3f GiB</td><td class=\"n\">%.3f GiB</td>",
                     m->params / 1073741824.0, m->optimizer / 1073741824.0,
                     m->activations / 1073741824.0, m->rest / 1073741824.0);
        else
            rep_html(f, "<td colspan=\"4\">not separable (Alpa's memory rule)</td>");
        rep_html(f, "<td class=\"n\"><b>%.3f GiB</b></td>", m->total / 1073741824.0);
        if (m->available > 0)
            rep_html(f, "<td class=\"n\">%.3f GiB</td><td class=\"n\">%s%.3f GiB%s</td>"
                        "<td class=\"n\">%.3f GiB</td></tr>\n",
                     m->available / 1073741824.0, m->total > m->available ? "&minus;" : "",
                     fabs(m->available - m->total) / 1073741824.0,
                     m->available - m->total < m->reserve ? " (under the reserve)" : "",
                     m->reserve / 1073741824.0);
        else
            rep_html(f, "<td>unknown</td><td>&ndash;</td><td>&ndash;</td></tr>\n");
    }
    rep_html(f, "</table>\n");
    rows_left_out(f, h->n_stages, "stages");
    knobs_html(r, f);
}

int apreport_write_html(const ApreportReport *r, FILE *f)
{
    int rc;
    rep_html(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>approf plan ");
    rep_html(f, "%lld</title>\n<style>%s</style></head><body>\n", (long long)r->plan.id, css);
    rep_html(f, "<h1>Plan %lld &mdash; ", (long long)r->plan.id);
    rep_html(f, "%s", r->has_model ? r->model.name : r->sweep.name);
    rep_html(f, "</h1>\n<p>Database <code>");
    rep_html(f, "%s", r->db_label);
    rep_html(f, "</code>, sweep %lld, %s plan (%s), cluster %d &times; %d, %d layers, %d "
               "micro-batches, global batch %lld",
            (long long)r->sweep.id, r->plan.kind, r->plan.objective, r->sweep.cluster_hosts,
            r->sweep.cluster_gpus, r->num_layers, r->plan.micro_batches,
            (long long)r->global_batch);
    rep_html(f, r->plan.feasible ? ".</p>\n" : " &mdash; <b>infeasible</b>.</p>\n");
    for (int i = 0; i < r->n_warnings; i++) {
        rep_html(f, "<div class=\"warn\">&#9888; ");
        rep_html(f, "%s", r->warnings[i]);
        rep_html(f, "</div>\n");
    }
    headline_html(r, f);
    rep_html(f, "<h2>Cluster mesh: devices of each stage</h2>\n");
    mesh_svg(r, f);
    {
        char label[64];
        rep_schedule_label(r, label, sizeof(label));
        rep_html(f, "<h2>Pipeline timeline (simulated %s, one iteration)</h2>\n", label);
    }
    if ((rc = gantt_svg(r, rep_schedule(r), f)) < 0)
        return rc;
    rep_html(f, "<h2>Memory per stage (peak + optimizer state + in-flight activations)</h2>\n");
    memory_svg(r, f);
    rep_html(f, "<h2>Cost breakdown</h2>\n");
    cost_table(r, f);
    rep_html(f, "<h2>Sharding per parameter and activation</h2>\n<details><summary>every "
                "placement of every stage (open)</summary>\n");
    sharding_table(r, f);
    rep_html(f, "</details>\n<h2>Layout conversions</h2>\n<details><summary>every conversion "
                "(open)</summary>\n");
    conversions_table(r, f);
    rep_html(f, "</details>\n");
    rep_html(f, "<h2>Resharding between stages</h2>\n");
    tasks_table(r, f);
    rep_html(f, "<h2>The plan as code</h2>\n");
    if ((rc = code_block(r, f)) < 0)
        return rc;
    rep_html(f, "</body></html>\n");
    return ferror(f) ? APREPORT_EIO : 0;
}
