/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve: the command line of the solver. Reads a sweep from the cost
 * database, finds the optimal stage/mesh plan (or evaluates a manual,
 * uniform or 3-D plan next to it), prints it as Alpa does plus a stage
 * table (or JSON) and stores it unless --no-store. Exit codes: 0 success,
 * 1 runtime failure, 2 usage error, 3 no feasible plan.
 */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "config.h"
#include "costdb.h"
#include "outfile.h"
#include "schedule.h"

#define EXIT_USAGE 2
#define EXIT_INFEASIBLE 3

static void usage(FILE *out)
{
    fputs("Usage: apsolve --db FILE [options]\n"
          "Find the stage/mesh plan minimising Alpa's objective over a profiled sweep,\n"
          "or price a given plan, and report a full estimate beyond Alpa's objective.\n\n"
          "  --db FILE                 the cost database (required)\n"
          "  --sweep ID                sweep to plan (default: the newest)\n"
          "  --micro-batches B         micro-batches per iteration (default: the sweep's)\n"
          "  --memory-budget BYTES     per-device memory instead of available_memory\n"
          "                            (suffixes K, M, G = KiB, MiB, GiB)\n"
          "  --max-stages K            at most K pipeline stages\n"
          "  --inference               minimise stages x max stage cost (no memory term)\n"
          "  --format text|json        output format (default text)\n"
          "  --no-store                do not store the plan in the database\n"
          "  --quiet                   no warnings on stderr\n"
          "  --stage-option auto|manual|uniform   (default auto: the exact optimum)\n"
          "  manual:  --forward-stage-layer-ids '[[0,1],[2,3]]' --submesh-shapes '[(1,4),(1,4)]'\n"
          "           --logical-shapes '[(4,1),(1,4)]' --option-dicts '[{},{\"force_batch_dim_to_mesh_dim\":0}]'\n"
          "           (logical shapes and option dicts optional: the cheapest config is used)\n"
          "  uniform: --num-stages K --submesh NxM [--logical AxB] [--option-dicts '[{...}]']\n"
          "  --objective alpa|full     alpa: Alpa's T over the plain configs; full (the default\n"
          "                            when every entry has its apply_cost): T + the largest\n"
          "                            stage apply-grad (gradient sync + optimizer), over every\n"
          "                            config and variant (memory level, recompute, ZeRO)\n"
          "  --global-batch G          samples per iteration (default: the sweep's); the auto\n"
          "                            search tries every micro-batch size b with a sweep of\n"
          "                            this model, hardware and cluster, B = G / b\n"
          "  --micro-batch-size b      only micro-batch size b (a sweep at b must exist)\n"
          "  --schedule 1f1b|gpipe|interleaved  pipeline schedule (default 1f1b);\n"
          "  --virtual-stages V        interleaved: V model chunks per device (V >= 2)\n"
          "  --parallel dp=D,tp=T,pp=P[,sp=0|1][,zero=0..3][,recompute=none|selective|full]\n"
          "             [,vpp=V][,mbs=M]  Megatron-style 3-D plan, printed next to the auto plan;\n"
          "                            each stage takes logical (dp, tp), batch forced, the given\n"
          "                            recompute and ZeRO stage and the cheapest memory level that\n"
          "                            fits; vpp: interleaved schedule; mbs: Megatron's\n"
          "                            micro-batch per replica (approf micro-batch = mbs x dp);\n"
          "                            sp is recorded (the sharding ILP picks it by itself)\n"
          "  --plan ID                 re-evaluate stored plan ID on its sweep (its micro-batches,\n"
          "                            budget and objective unless given); never stores\n"
          "  --batch B                 also re-evaluate the plan(s) at global batch B (e.g. the\n"
          "                            last, smaller batch of an epoch) without a new search:\n"
          "                            micro-batch = B / micro-batches; exact from a sweep of the\n"
          "                            same model, hardware and cluster at that micro-batch if\n"
          "                            the database has one, else costs and activation memory\n"
          "                            scaled linearly with the micro-batch (an estimate); says\n"
          "                            whether every stage still fits in memory and whether each\n"
          "                            forced data-parallel config's dp still divides the\n"
          "                            micro-batch (else INVALID, exit 3)\n"
          "  --help, --version\n\n"
          "Besides Alpa's T = sum of stage costs + (B-1) x max stage cost, text and JSON\n"
          "give a full estimate (\"full_cost\", \"breakdown\") that adds cross-stage\n"
          "transfers, the gradient all-reduce and the optimizer step, from the sweep's\n"
          "placements and hardware link speeds, per stage and in all (docs/solver.md).\n"
          "It is stored as the plan's full_cost (NULL when unavailable: imported table).\n"
          "Warnings (stderr): micro-batches < stages, micro-batches < 2 x stages.\n\n"
          "Exit status: 0 ok, 1 failure, 2 usage error, 3 no feasible plan, the given plan\n"
          "is infeasible, or it cannot run at --batch (invalid config, out of memory).\n",
          out);
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("apsolve: ", stderr);
    fprintf(stderr, fmt, arg ? arg : "");
    fputs("\nTry 'apsolve --help'\n", stderr);
    return EXIT_USAGE;
}

/* rc, or 1 when standard output could not be written (apsolve > /dev/full):
 * data that did not arrive is a failure, whatever was computed. */
static int stdout_status(int rc)
{
    char err[256];
    if (apsolve_stdout_check(err, sizeof err) < 0) {
        fprintf(stderr, "apsolve: %s\n", err);
        return 1;
    }
    return rc;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_bytes(const char *s, int64_t *out)
{
    char *end = NULL;
    long long v;
    int64_t mul = 1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || v <= 0)
        return -1;
    if (*end == 'K' || *end == 'k')
        mul = 1LL << 10;
    else if (*end == 'M' || *end == 'm')
        mul = 1LL << 20;
    else if (*end == 'G' || *end == 'g')
        mul = 1LL << 30;
    if (mul > 1) {
        end++;
        if (end[0] == 'i' && end[1] == 'B') /* KiB, MiB, GiB */
            end += 2;
        else if (end[0] == 'B')             /* KB, MB, GB: binary too */
            end++;
    } else if (end[0] == 'B') {             /* plain bytes: 123B */
        end++;
    }
    if (*end || v > INT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

static int parse_pair(const char *s, int *a, int *b)
{
    char *end = NULL;
    long x, y;
    errno = 0;
    x = strtol(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X') || x < 1 || x > 1 << 20)
        return -1;
    s = end + 1;
    y = strtol(s, &end, 10);
    if (errno || end == s || *end || y < 1 || y > 1 << 20)
        return -1;
    *a = (int)x;
    *b = (int)y;
    return 0;
}

/* --parallel: Megatron's degrees and knobs. */
typedef struct Parallel {
    int dp, tp, pp;
    int sp;                           /* sequence parallelism: recorded (the ILP picks it) */
    int zero;                         /* 0..3 */
    int recompute;                    /* CostdbRecompute */
    int vpp;                          /* interleaved chunks per device; 0/1: plain 1F1B */
    int mbs;                          /* Megatron's per-replica micro-batch; 0: the sweep's */
} Parallel;

/* "dp=2,tp=2,pp=2[,sp=0|1][,zero=0..3][,recompute=none|selective|full]
 * [,vpp=V][,mbs=M]" in any order, each at most once. On error errbuf names
 * the knob. */
static int parse_parallel(const char *s, Parallel *par, char *errbuf, size_t errlen)
{
    static const struct { const char *name; long lo, hi; } knobs[] = {
        {"dp", 1, 65536}, {"tp", 1, 65536}, {"pp", 1, 65536}, {"sp", 0, 1},
        {"zero", 0, 3}, {"recompute", 0, 0}, {"vpp", 1, 1024}, {"mbs", 1, 1 << 24},
    };
    int seen[8] = {0};
    memset(par, 0, sizeof *par);
    while (*s) {
        const char *eq = strchr(s, '='), *end = strchr(s, ',');
        size_t klen, vlen, k;
        char val[32];
        long v = 0;
        if (!end)
            end = s + strlen(s);
        if (!eq || eq > end) {
            snprintf(errbuf, errlen, "'%.*s' is not KNOB=VALUE", (int)(end - s), s);
            return -1;
        }
        klen = (size_t)(eq - s);
        vlen = (size_t)(end - eq - 1);
        for (k = 0; k < sizeof knobs / sizeof knobs[0]; k++)
            if (strlen(knobs[k].name) == klen && !strncmp(s, knobs[k].name, klen))
                break;
        if (k == sizeof knobs / sizeof knobs[0]) {
            snprintf(errbuf, errlen, "unknown knob '%.*s' (dp, tp, pp, sp, zero, recompute, vpp, "
                     "mbs)", (int)klen, s);
            return -1;
        }
        if (seen[k]++) {
            snprintf(errbuf, errlen, "%s given twice", knobs[k].name);
            return -1;
        }
        snprintf(val, sizeof val, "%.*s", (int)(vlen < sizeof val ? vlen : sizeof val - 1),
                 eq + 1);
        if (!strcmp(knobs[k].name, "recompute")) {
            v = costdb_recompute_parse(val);
            if (v < 0 || vlen >= sizeof val) {
                snprintf(errbuf, errlen, "recompute must be none, selective or full, not '%s'",
                         val);
                return -1;
            }
        } else if (vlen == 0 || vlen >= sizeof val || parse_long(val, knobs[k].lo, knobs[k].hi, &v)) {
            snprintf(errbuf, errlen, "%s must be an integer in %ld..%ld, not '%s'", knobs[k].name,
                     knobs[k].lo, knobs[k].hi, val);
            return -1;
        }
        switch (k) {
        case 0: par->dp = (int)v; break;
        case 1: par->tp = (int)v; break;
        case 2: par->pp = (int)v; break;
        case 3: par->sp = (int)v; break;
        case 4: par->zero = (int)v; break;
        case 5: par->recompute = (int)v; break;
        case 6: par->vpp = (int)v; break;
        default: par->mbs = (int)v; break;
        }
        s = *end ? end + 1 : end;
    }
    if (!seen[0] || !seen[1] || !seen[2]) {
        snprintf(errbuf, errlen, "dp, tp and pp are required");
        return -1;
    }
    return 0;
}

typedef struct Args {
    const char *db, *format, *stage_option, *layer_ids, *submeshes, *logicals, *dicts;
    const char *parallel, *submesh, *logical;
    int64_t sweep;
    int no_store, quiet, num_stages, micro_batches;
    int64_t batch;                    /* --batch: re-evaluate at this global batch */
    int64_t plan;                     /* --plan: re-evaluate this stored plan */
    int64_t global_batch;             /* --global-batch; 0: the sweep's */
    int64_t micro_batch_size;         /* --micro-batch-size; 0: search every size */
    int objective;                    /* -1: default (full when apply costs are known) */
    int schedule, virtual_stages;     /* --schedule, --virtual-stages */
    int schedule_set;                 /* --schedule given (else --plan restores it) */
    Parallel par;
    ApsolveOptions opt;
} Args;

static void warn_batches(const Args *a, const ApsolvePlan *pl, const char *label)
{
    int n = (int)pl->n_stages, b = pl->micro_batches;
    if (a->quiet || pl->inference || n <= 1)
        return;
    if (b < n)
        fprintf(stderr, "apsolve: warning: %s plan: %d micro-batches < %d stages: the pipeline "
                "is mostly bubble\n", label, b, n);
    else if (b < 2 * n)
        fprintf(stderr, "apsolve: warning: %s plan: %d micro-batches < 2 x %d stages (rule of "
                "thumb: micro-batches >= 2 x stages)\n", label, b, n);
}

/* Builds the specs of a manual or uniform plan from the arguments. */
static int build_specs(const Args *a, const ApsolveProblem *p, ApsolveStageSpec **out,
                       size_t *n_out)
{
    char err[256] = "";
    int *st = NULL, *en = NULL, *sa = NULL, *sb = NULL, *la = NULL, *lb = NULL, *fb = NULL;
    size_t n = 0, ns = 0, nl = 0, nf = 0;
    ApsolveStageSpec *specs = NULL;
    int rc = EXIT_USAGE;

    if (!strcmp(a->stage_option, "uniform")) {
        int h, g, la1 = 0, lb1 = 0, f = -2;
        if (a->num_stages < 1 || !a->submesh)
            return usage_error("--stage-option uniform needs --num-stages and --submesh%s", NULL);
        if (parse_pair(a->submesh, &h, &g))
            return usage_error("bad --submesh '%s' (expected NxM)", a->submesh);
        if (a->logical && parse_pair(a->logical, &la1, &lb1))
            return usage_error("bad --logical '%s' (expected AxB)", a->logical);
        if (a->num_stages > p->num_layers)
            return usage_error("--num-stages is larger than the number of layers%s", NULL);
        if (a->dicts) {
            if (apsolve_parse_option_dicts(a->dicts, &fb, &nf, err, sizeof err) || nf != 1) {
                free(fb);
                fprintf(stderr, "apsolve: --option-dicts: %s\n", nf != 1 && !err[0]
                        ? "give exactly one dict for a uniform plan" : err);
                return EXIT_USAGE;
            }
            f = fb[0];
            free(fb);
        }
        specs = calloc((size_t)a->num_stages, sizeof *specs);
        if (!specs)
            return 1;
        apsolve_uniform_specs(p->num_layers, a->num_stages, h, g, la1, lb1, f, specs);
        *out = specs;
        *n_out = (size_t)a->num_stages;
        return 0;
    }
    if (!a->layer_ids || !a->submeshes)
        return usage_error("--stage-option manual needs --forward-stage-layer-ids and "
                           "--submesh-shapes%s", NULL);
    if (apsolve_parse_layer_ids(a->layer_ids, &st, &en, &n, err, sizeof err)) {
        fprintf(stderr, "apsolve: --forward-stage-layer-ids: %s\n", err);
        goto cleanup;
    }
    if (apsolve_parse_shapes(a->submeshes, &sa, &sb, &ns, err, sizeof err)) {
        fprintf(stderr, "apsolve: --submesh-shapes: %s\n", err);
        goto cleanup;
    }
    if (a->logicals && apsolve_parse_shapes(a->logicals, &la, &lb, &nl, err, sizeof err)) {
        fprintf(stderr, "apsolve: --logical-shapes: %s\n", err);
        goto cleanup;
    }
    if (a->dicts && apsolve_parse_option_dicts(a->dicts, &fb, &nf, err, sizeof err)) {
        fprintf(stderr, "apsolve: --option-dicts: %s\n", err);
        goto cleanup;
    }
    if (n == 0 || ns != n || (a->logicals && nl != n) || (a->dicts && nf != n)) {
        fprintf(stderr, "apsolve: the manual plan lists must all have one entry per stage "
                "(%zu stages)\nTry 'apsolve --help'\n", n);
        goto cleanup;
    }
    specs = calloc(n, sizeof *specs);
    if (!specs) {
        rc = 1;
        goto cleanup;
    }
    for (size_t k = 0; k < n; k++) {
        specs[k].start_layer = st[k];
        specs[k].end_layer = en[k];
        specs[k].hosts = sa[k];
        specs[k].gpus = sb[k];
        specs[k].logical_a = la ? la[k] : 0;
        specs[k].logical_b = lb ? lb[k] : 0;
        specs[k].force_batch_dim = fb ? fb[k] : -2;
    }
    *out = specs;
    *n_out = n;
    rc = 0;
cleanup:
    free(st);
    free(en);
    free(sa);
    free(sb);
    free(la);
    free(lb);
    free(fb);
    return rc;
}

static int store(Costdb *db, const Args *a, const ApsolveProblem *p, const ApsolveOptions *o,
                 const ApsolvePlan *pl, const char *kind, int64_t *id)
{
    char js[COSTDB_TEXT_MAX], par[160] = "";
    int is3d = a->parallel && !strcmp(kind, "3d");
    if (is3d)
        snprintf(par, sizeof par, ", \"parallel\": {\"dp\": %d, \"tp\": %d, \"pp\": %d, "
                 "\"sp\": %d, \"zero\": %d, \"recompute\": \"%s\", \"vpp\": %d, \"mbs\": %d}",
                 a->par.dp, a->par.tp, a->par.pp, a->par.sp, a->par.zero,
                 costdb_recompute_name(a->par.recompute), a->par.vpp ? a->par.vpp : 1,
                 a->par.mbs);
    snprintf(js, sizeof js, "{\"tool\": \"apsolve %s\", \"stage_option\": \"%s\", "
             "\"micro_batches\": %d, \"global_batch\": %lld, \"micro_batch_size\": %lld, "
             "\"memory_budget\": %lld, \"max_stages\": %d, \"inference\": %s, "
             "\"objective\": \"%s\", \"schedule\": \"%s\", \"virtual_stages\": %d%s}",
             APPROF_VERSION, kind, o->micro_batches, (long long)pl->global_batch,
             (long long)pl->micro_batch_size, (long long)o->memory_budget, o->max_stages,
             o->inference ? "true" : "false",
             o->objective == APSOLVE_OBJECTIVE_FULL ? "full" : "alpa",
             apsolve_schedule_name((ApsolveSchedule)o->schedule),
             o->virtual_stages > 1 ? o->virtual_stages : 1, par);
    if (apsolve_plan_store(db, p, o, pl, kind, js, id)) {
        fprintf(stderr, "apsolve: cannot store the plan: %s\n", costdb_errmsg(db));
        return 1;
    }
    return 0;
}

/* What one written plan carries beyond Alpa's T. */
typedef struct Extra {
    ApsolveFullEstimate full, rfull;
    ApsolveStageEstimate *stages;     /* per-stage parts of full */
    ApsolveRebatch reb;
    ApsolvePlan *rplan;               /* the plan at --batch */
    ApsolveProblem *xp;               /* the exact sweep's problem, if used */
} Extra;

static void extra_free(Extra *x)
{
    free(x->stages);
    apsolve_plan_free(&x->rplan);
    apsolve_problem_free(&x->xp);
}

/* Specs that name a priced plan's stages exactly (shape, logical mesh,
 * option), to price them on another sweep. */
static ApsolveStageSpec *exact_specs(const ApsolvePlan *pl)
{
    ApsolveStageSpec *sp = calloc(pl->n_stages, sizeof *sp);
    for (size_t k = 0; sp && k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        sp[k] = (ApsolveStageSpec){st->start_layer, st->end_layer, st->hosts, st->gpus,
                                   st->logical_a, st->logical_b, st->force_batch_dim,
                                   st->memory_level, st->recompute, st->zero};
    }
    return sp;
}

/* --batch: re-prices pl at the new micro-batch, exactly from a sweep at
 * that micro-batch when the database has one, else scaled. Sets *bad when
 * the plan cannot run as it is. Returns 0 or an exit code. */
static int rebatch_one(Costdb *db, const Args *a, const ApsolveOptions *opt,
                       const ApsolveProblem *p, int64_t sweep, const CostdbSweep *sw,
                       const ApsolvePlan *pl, Extra *x, int *bad)
{
    int64_t old_micro = sw->global_batch / (sw->micro_batches > 0 ? sw->micro_batches : 1);
    int64_t new_micro = a->batch / pl->micro_batches, xs = 0;
    ApsolveStageSpec *sp = NULL;
    char err[256];
    int e;

    if (old_micro <= 0)
        old_micro = 1;
    if (apsolve_find_batch_sweep(db, sweep, new_micro, &xs)) {
        fprintf(stderr, "apsolve: looking for a sweep at micro-batch %lld: %s\n",
                (long long)new_micro, costdb_errmsg(db));
        return 1;
    }
    if (xs > 0 && xs != sweep) {
        ApsolveOptions o = *opt;
        o.micro_batches = pl->micro_batches;
        o.inference = pl->inference;
        if (apsolve_problem_from_db(db, xs, &o, &x->xp) || !(sp = exact_specs(pl))) {
            fprintf(stderr, "apsolve: sweep %lld: %s\n", (long long)xs, costdb_errmsg(db));
            free(sp);
            return 1;
        }
        e = apsolve_evaluate(x->xp, &o, sp, pl->n_stages, &x->rplan, err, sizeof err);
        free(sp);
        if (e) {
            fprintf(stderr, "apsolve: pricing the plan on sweep %lld: %s\n", (long long)xs,
                    e == APSOLVE_EINVAL ? err : apsolve_strerror(e));
            return 1;
        }
        apsolve_rebatch_summary(x->rplan, old_micro, new_micro, &x->reb);
    } else {
        if (apsolve_rebatch_plan(p, pl, old_micro, new_micro, &x->rplan)) {
            fprintf(stderr, "apsolve: cannot re-evaluate the plan\n");
            return 1;
        }
        apsolve_rebatch_summary(x->rplan, old_micro, new_micro, &x->reb);
        xs = xs == sweep ? sweep : 0;
    }
    x->reb.exact_sweep = xs;
    x->reb.global_batch = a->batch;
    if (apsolve_full_estimate_ex(db, xs > 0 ? xs : sweep, x->rplan,
                                 xs > 0 ? 1.0 : x->reb.ratio, &x->rfull, NULL)) {
        fprintf(stderr, "apsolve: full estimate at --batch: %s\n", costdb_errmsg(db));
        return 1;
    }
    if (!x->reb.valid || !x->reb.fits || x->reb.missing_stage)
        *bad = 1;
    return 0;
}

/* --plan ID: the stored plan's stages as specs, its inputs as defaults.
 * configs gets each stage's config index (the variant is read from the
 * sweep once it is loaded). */
static int load_plan(Costdb *db, Args *a, int64_t *sweep, ApsolveStageSpec **specs,
                     int **configs, size_t *n, char *kind, size_t kindlen)
{
    CostdbPlan cp;
    CostdbPlanStage *ps = NULL;
    size_t np = 0;
    if (costdb_plan_get(db, a->plan, &cp, &ps, &np)) {
        fprintf(stderr, "apsolve: plan %lld: %s\n", (long long)a->plan, costdb_errmsg(db));
        return 1;
    }
    if (a->sweep > 0 && a->sweep != cp.sweep_id) {
        free(ps);
        fprintf(stderr, "apsolve: plan %lld belongs to sweep %lld, not %lld\nTry 'apsolve "
                "--help'\n", (long long)a->plan, (long long)cp.sweep_id, (long long)a->sweep);
        return EXIT_USAGE;
    }
    if (np == 0 || !(*specs = calloc(np, sizeof **specs)) || !(*configs = calloc(np, sizeof **configs))) {
        free(ps);
        fprintf(stderr, "apsolve: plan %lld has no stages\n", (long long)a->plan);
        return 1;
    }
    for (size_t k = 0; k < np; k++) {
        (*specs)[k] = (ApsolveStageSpec){ps[k].start_layer, ps[k].end_layer, ps[k].submesh_hosts,
                                         ps[k].submesh_gpus, ps[k].logical_a, ps[k].logical_b,
                                         ps[k].force_batch_dim, 0, 0, 0};
        (*configs)[k] = ps[k].config_index;
    }
    *n = np;
    *sweep = cp.sweep_id;
    if (a->micro_batches <= 0)
        a->micro_batches = cp.micro_batches;
    if (a->opt.memory_budget <= 0)
        a->opt.memory_budget = cp.memory_budget;
    if (a->opt.max_stages <= 0)
        a->opt.max_stages = cp.max_stages;
    if (!strcmp(cp.objective, "inference"))
        a->opt.inference = 1;
    /* The stored options name the objective and schedule the plan was made
     * with; the command line wins. */
    if (a->objective < 0 && strstr(cp.options, "\"objective\": \"full\""))
        a->objective = APSOLVE_OBJECTIVE_FULL;
    else if (a->objective < 0 && strstr(cp.options, "\"objective\": \"alpa\""))
        a->objective = APSOLVE_OBJECTIVE_ALPA;
    if (!a->schedule_set) {
        const char *sc = strstr(cp.options, "\"schedule\": \"");
        const char *vs = strstr(cp.options, "\"virtual_stages\": ");
        char name[16] = "";
        if (sc && sscanf(sc + strlen("\"schedule\": \""), "%15[a-z0-9]", name) == 1 &&
            apsolve_schedule_parse(name) >= 0)
            a->schedule = apsolve_schedule_parse(name);
        if (vs && a->schedule == APSOLVE_SCHEDULE_INTERLEAVED && a->virtual_stages < 2) {
            long v = strtol(vs + strlen("\"virtual_stages\": "), NULL, 10);
            a->virtual_stages = v >= 2 && v <= 1024 ? (int)v : 2;
        }
    }
    snprintf(kind, kindlen, "%s", cp.kind);
    free(ps);
    return 0;
}

/* The variant of each stored stage from its config index in p. */
static void specs_variants(const ApsolveProblem *p, ApsolveStageSpec *sp, const int *configs,
                           size_t n)
{
    for (size_t k = 0; k < n; k++) {
        int s = -1, c = configs[k];
        for (int q = 0; q < p->num_submeshes; q++)
            if (p->submeshes[q].hosts == sp[k].hosts && p->submeshes[q].gpus == sp[k].gpus)
                s = q;
        if (s >= 0 && c >= 0 && c < p->num_configs) {
            const ApsolveConfig *cf = &p->configs[s * p->num_configs + c];
            if (cf->valid && cf->logical_a == sp[k].logical_a &&
                cf->logical_b == sp[k].logical_b && cf->force_batch_dim == sp[k].force_batch_dim) {
                sp[k].memory_level = cf->memory_level;
                sp[k].recompute = cf->recompute;
                sp[k].zero = cf->zero;
            }
        }
    }
}

/* One sweep at one micro-batch size with its loaded problem. */
typedef struct Cand {
    int64_t sweep;
    CostdbSweep sw;
    ApsolveProblem *p;
    ApsolveOptions opt;
    int64_t global_batch, micro;
} Cand;

static void cand_free(Cand *c)
{
    apsolve_problem_free(&c->p);
}

/* Loads sweep id as a candidate with B = global_batch / micro. */
static int cand_load(Costdb *db, const Args *a, int64_t id, int64_t global_batch, int64_t micro,
                     int B, Cand *c)
{
    char why[256];
    int e;
    memset(c, 0, sizeof *c);
    c->sweep = id;
    if (costdb_sweep_get(db, id, &c->sw)) {
        fprintf(stderr, "apsolve: sweep %lld: %s\n", (long long)id, costdb_errmsg(db));
        return 1;
    }
    c->opt = a->opt;
    c->opt.micro_batches = B;
    c->global_batch = global_batch;
    c->micro = micro;
    e = apsolve_problem_from_db_msg(db, id, &c->opt, &c->p, why, sizeof why);
    if (e) {
        fprintf(stderr, "apsolve: sweep %lld: %s\n", (long long)id,
                e == APSOLVE_EDB ? costdb_errmsg(db) : why[0] ? why : apsolve_strerror(e));
        return 1;
    }
    return 0;
}

static void plan_batch(ApsolvePlan *pl, const Cand *c)
{
    pl->global_batch = c->global_batch;
    pl->micro_batch_size = c->micro;
}

static int better(const ApsolvePlan *x, const ApsolvePlan *y)
{
    return !y || x->total_cost < y->total_cost ||
           (x->total_cost == y->total_cost && x->cost < y->cost);
}

static int run(Args *a)
{
    Costdb *db = NULL;
    Cand main_c, auto_c, par_c;
    ApsolvePlan *autop = NULL, *given = NULL;
    ApsolveStageSpec *specs = NULL;
    ApsolveBatchSweep *bs = NULL;
    ApsolveOutput outs[2];
    const Cand *out_c[2];
    Extra extra[2];
    CostdbSweep sw;
    int *plan_configs = NULL;
    int rebatch_bad = 0, have_auto_c = 0, have_par_c = 0, auto_err = 0;
    size_t nspec = 0, nout = 0, nbs = 0;
    char err[512], label[96], stored_kind[16];
    const char *kind = NULL;
    int64_t sweep = a->sweep, id_auto = 0, id_given = 0, G, micro;
    int rc = 1, e, B;

    memset(extra, 0, sizeof extra);
    memset(&main_c, 0, sizeof main_c);
    memset(&auto_c, 0, sizeof auto_c);
    memset(&par_c, 0, sizeof par_c);
    if (costdb_open(a->db, a->no_store ? COSTDB_OPEN_READONLY : COSTDB_OPEN_NOCREATE, &db,
                    err, sizeof err)) {
        fprintf(stderr, "apsolve: %s\n", err);
        return 1;
    }
    if (a->plan > 0) {
        rc = load_plan(db, a, &sweep, &specs, &plan_configs, &nspec, stored_kind,
                       sizeof stored_kind);
        if (rc)
            goto cleanup;
        rc = 1;
        kind = stored_kind;
        snprintf(label, sizeof label, "plan %lld (%s)", (long long)a->plan, stored_kind);
    }
    /* every plan, searched or given, runs the same schedule (a --plan's
     * stored one unless --schedule says otherwise) */
    a->opt.schedule = a->schedule;
    a->opt.virtual_stages = a->virtual_stages;
    if (sweep <= 0 && costdb_sweep_latest(db, &sweep)) {
        fprintf(stderr, "apsolve: %s: no sweep in the database\n", a->db);
        goto cleanup;
    }
    if (costdb_sweep_get(db, sweep, &sw)) {
        fprintf(stderr, "apsolve: sweep %lld: %s\n", (long long)sweep, costdb_errmsg(db));
        goto cleanup;
    }
    if (apsolve_batch_sweeps(db, sweep, &bs, &nbs)) {
        fprintf(stderr, "apsolve: sweeps at other micro-batch sizes: %s\n", costdb_errmsg(db));
        goto cleanup;
    }
    /* The micro-batch size and global batch of the main sweep (given plans;
     * the auto search may try other sizes below). */
    micro = sw.micro_batches > 0 && sw.global_batch > 0 ? sw.global_batch / sw.micro_batches : 0;
    G = a->global_batch > 0 ? a->global_batch : sw.global_batch;
    if (a->micro_batch_size > 0 || (a->micro_batches > 0 && a->global_batch > 0)) {
        int64_t want = a->micro_batch_size;
        size_t k;
        if (a->micro_batches > 0 && a->global_batch > 0) {
            if (a->global_batch % a->micro_batches) {
                fprintf(stderr, "apsolve: --global-batch %lld is not divisible by "
                        "--micro-batches %d\nTry 'apsolve --help'\n", (long long)a->global_batch,
                        a->micro_batches);
                rc = EXIT_USAGE;
                goto cleanup;
            }
            if (want > 0 && want != a->global_batch / a->micro_batches) {
                fprintf(stderr, "apsolve: --global-batch %lld / --micro-batches %d is a "
                        "micro-batch of %lld, not --micro-batch-size %lld\nTry 'apsolve "
                        "--help'\n", (long long)a->global_batch, a->micro_batches,
                        (long long)(a->global_batch / a->micro_batches), (long long)want);
                rc = EXIT_USAGE;
                goto cleanup;
            }
            want = a->global_batch / a->micro_batches;
        }
        for (k = 0; k < nbs && bs[k].micro_batch_size != want; k++)
            ;
        if (k == nbs) {
            fprintf(stderr, "apsolve: no sweep of this model, hardware and cluster at "
                    "micro-batch size %lld (profile one with approf sweep "
                    "--micro-batch-sizes)\n", (long long)want);
            rc = EXIT_USAGE;
            goto cleanup;
        }
        sweep = bs[k].sweep_id;
        micro = want;
        if (costdb_sweep_get(db, sweep, &sw)) {
            fprintf(stderr, "apsolve: sweep %lld: %s\n", (long long)sweep, costdb_errmsg(db));
            goto cleanup;
        }
    }
    if (a->micro_batches > 0) {
        B = a->micro_batches;
        if (micro > 0 && a->global_batch <= 0) {
            G = (int64_t)B * micro;
            if (G != sw.global_batch && !a->quiet)
                fprintf(stderr, "apsolve: notice: --micro-batches %d at micro-batch size %lld: "
                        "the global batch becomes %lld (the sweep's is %lld)\n", B,
                        (long long)micro, (long long)G, (long long)sw.global_batch);
        }
    } else {
        B = sw.micro_batches > 0 ? sw.micro_batches : 1;
        if (micro > 0 && G > 0) {
            if (G % micro) {
                fprintf(stderr, "apsolve: global batch %lld is not divisible by the micro-batch "
                        "size %lld of sweep %lld\nTry 'apsolve --help'\n", (long long)G,
                        (long long)micro, (long long)sweep);
                rc = EXIT_USAGE;
                goto cleanup;
            }
            B = (int)(G / micro);
        }
    }
    if (micro <= 0)
        G = 0; /* an imported table without a batch: unknown */
    if (a->batch > 0 && a->batch % B) {
        fprintf(stderr, "apsolve: --batch %lld is not divisible by %d micro-batches\n"
                "Try 'apsolve --help'\n", (long long)a->batch, B);
        rc = EXIT_USAGE;
        goto cleanup;
    }
    if (cand_load(db, a, sweep, G, micro, B, &main_c))
        goto cleanup;
    /* The objective: full when every entry has its apply cost. */
    if (a->objective < 0) {
        if (!main_c.opt.inference && !apsolve_problem_apply_known(main_c.p)) {
            a->opt.objective = APSOLVE_OBJECTIVE_ALPA;
            if (!a->quiet)
                fprintf(stderr, "apsolve: notice: sweep %lld has entries without apply_cost "
                        "(a database before schema 2 or an import): objective alpa\n",
                        (long long)sweep);
        } else {
            a->opt.objective = APSOLVE_OBJECTIVE_FULL;
        }
    } else {
        a->opt.objective = a->objective;
        if (a->objective == APSOLVE_OBJECTIVE_FULL && !a->opt.inference &&
            !apsolve_problem_apply_known(main_c.p)) {
            fprintf(stderr, "apsolve: --objective full: sweep %lld has entries without "
                    "apply_cost (a database before schema 2 or an import); use --objective "
                    "alpa\nTry 'apsolve --help'\n", (long long)sweep);
            rc = EXIT_USAGE;
            goto cleanup;
        }
    }
    main_c.opt.objective = a->opt.objective;
    if (plan_configs)
        specs_variants(main_c.p, specs, plan_configs, nspec);
    if (a->parallel) {
        const Parallel *pr = &a->par;
        const ApsolveProblem *pp;
        Cand *pc = &main_c;
        int pv = pr->vpp > 1 ? pr->vpp : 0;
        if (pr->mbs > 0) {
            int64_t want = (int64_t)pr->mbs * pr->dp;
            size_t k;
            for (k = 0; k < nbs && bs[k].micro_batch_size != want; k++)
                ;
            if (k == nbs) {
                fprintf(stderr, "apsolve: --parallel %s: mbs=%d x dp=%d is a micro-batch of %lld "
                        "samples, and the database has no sweep of this model, hardware and "
                        "cluster at that micro-batch size\nTry 'apsolve --help'\n", a->parallel,
                        pr->mbs, pr->dp, (long long)want);
                rc = EXIT_USAGE;
                goto cleanup;
            }
            if (G <= 0 || G % want) {
                fprintf(stderr, "apsolve: --parallel %s: the global batch %lld is not a multiple "
                        "of mbs x dp = %lld\nTry 'apsolve --help'\n", a->parallel, (long long)G,
                        (long long)want);
                rc = EXIT_USAGE;
                goto cleanup;
            }
            if (bs[k].sweep_id != main_c.sweep || (int)(G / want) != B) {
                if (cand_load(db, a, bs[k].sweep_id, G, want, (int)(G / want), &par_c))
                    goto cleanup;
                par_c.opt.objective = a->opt.objective;
                have_par_c = 1;
                pc = &par_c;
            }
        }
        pp = pc->p;
        if (pr->pp > pp->num_layers || pr->dp * pr->tp * pr->pp != pp->num_devices ||
            (pr->dp * pr->tp > pp->cluster_gpus && (pr->dp * pr->tp) % pp->cluster_gpus)) {
            fprintf(stderr, "apsolve: --parallel %s does not fit: dp x tp x pp must be %d "
                    "(the %dx%d cluster) and pp <= %d layers\n", a->parallel, pp->num_devices,
                    pp->cluster_hosts, pp->cluster_gpus, pp->num_layers);
            rc = EXIT_USAGE;
            goto cleanup;
        }
        if (pv > 1 && !apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, pv,
                                              pc->opt.micro_batches, pr->pp, err, sizeof err)) {
            fprintf(stderr, "apsolve: --parallel %s: vpp=%d: %s\nTry 'apsolve --help'\n",
                    a->parallel, pv, err);
            rc = EXIT_USAGE;
            goto cleanup;
        }
        if (pv > 1) {
            pc->opt.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
            pc->opt.virtual_stages = pv;
        }
        specs = calloc((size_t)pr->pp, sizeof *specs);
        if (!specs)
            goto cleanup;
        apsolve_3d_specs(pp->num_layers, pp->cluster_gpus, pr->dp, pr->tp, pr->pp, specs);
        for (int k = 0; k < pr->pp; k++) {
            specs[k].recompute = pr->recompute;
            specs[k].zero = pr->zero;
        }
        nspec = (size_t)pr->pp;
        kind = "3d";
        snprintf(label, sizeof label, "3-D %s", a->parallel);
        e = apsolve_evaluate(pc->p, &pc->opt, specs, nspec, &given, err, sizeof err);
        out_c[nout] = pc;
    } else {
        if (!specs && strcmp(a->stage_option, "auto")) {
            rc = build_specs(a, main_c.p, &specs, &nspec);
            if (rc)
                goto cleanup;
            rc = 1;
            kind = a->stage_option;
            snprintf(label, sizeof label, "%s", kind);
        }
        e = specs ? apsolve_evaluate(main_c.p, &main_c.opt, specs, nspec, &given, err, sizeof err)
                  : 0;
        out_c[nout] = &main_c;
    }
    if (specs) {
        if (e) {
            fprintf(stderr, "apsolve: %s plan: %s\n", kind,
                    e == APSOLVE_EINVAL ? err : apsolve_strerror(e));
            rc = e == APSOLVE_EINVAL ? EXIT_USAGE : 1;
            goto cleanup;
        }
        if (given->n_stages && specs[0].recompute >= 0 && a->parallel)
            for (size_t k = 0; k < given->n_stages; k++)
                if (given->stages[k].config < 0 && !a->quiet)
                    fprintf(stderr, "apsolve: warning: 3-D stage %zu: no config with logical "
                            "(%d, %d), recompute %s, zero %d in the sweep\n", k, a->par.dp,
                            a->par.tp, costdb_recompute_name(a->par.recompute), a->par.zero);
        plan_batch(given, out_c[nout]);
        outs[nout++] = (ApsolveOutput){.label = label, .kind = kind, .plan = given};
        warn_batches(a, given, label);
    }
    if (!specs || a->parallel) {
        /* The auto search: every micro-batch size with a sweep whose size
         * divides the global batch (or the one asked for), best objective. */
        size_t tried = 0;
        /* --micro-batch-size and --micro-batches pin the size, and so does
         * --sweep unless --global-batch asks for the search. */
        int64_t asked = a->micro_batch_size > 0 || a->micro_batches > 0 ||
                                (a->sweep > 0 && a->global_batch <= 0)
                            ? micro : 0;
        for (size_t k = 0; k < nbs || (nbs == 0 && k == 0); k++) {
            Cand c;
            ApsolvePlan *pl = NULL;
            double obj;
            int64_t m = nbs ? bs[k].micro_batch_size : micro;
            int own = nbs == 0 || bs[k].sweep_id == main_c.sweep;
            if (asked > 0 && m != asked)
                continue;
            if (!own && (G <= 0 || m <= 0 || G % m || a->micro_batches > 0))
                continue;
            if (own) {
                c = main_c;
            } else {
                if (cand_load(db, a, bs[k].sweep_id, G, m, (int)(G / m), &c))
                    goto cleanup;
                c.opt.objective = a->opt.objective;
            }
            c.opt.schedule = a->schedule;
            c.opt.virtual_stages = a->virtual_stages;
            tried++;
            e = apsolve_solve(c.p, &c.opt, &pl);
            if (e && e != APSOLVE_EINFEASIBLE) {
                fprintf(stderr, "apsolve: solving sweep %lld (micro-batch size %lld): %s\n",
                        (long long)c.sweep, (long long)m, apsolve_strerror(e));
                if (!own)
                    cand_free(&c);
                goto cleanup;
            }
            obj = e ? NAN : pl->total_cost;
            if (!a->quiet && nbs > 1 && !asked)
                fprintf(stderr, "apsolve: micro-batch size %lld (sweep %lld, %d micro-batches): "
                        "%s %.6g s\n", (long long)m, (long long)c.sweep, c.opt.micro_batches,
                        e ? "infeasible," : "objective", obj);
            if (!e && better(pl, autop)) {
                apsolve_plan_free(&autop);
                autop = pl;
                plan_batch(autop, &c);
                if (have_auto_c)
                    cand_free(&auto_c);
                have_auto_c = !own;
                auto_c = c;
            } else {
                apsolve_plan_free(&pl);
                if (!own)
                    cand_free(&c);
            }
        }
        if (!autop) {
            ApsolveOptions o = main_c.opt;
            o.schedule = a->schedule;
            o.virtual_stages = a->virtual_stages;
            auto_err = 1;
            if (!tried)
                snprintf(err, sizeof err, "no sweep's micro-batch size divides the global batch "
                         "%lld", (long long)G);
            else
                apsolve_explain(main_c.p, &o, err, sizeof err);
            fprintf(stderr, "apsolve: no feasible plan: %s\n", err);
            if (!given) {
                rc = EXIT_INFEASIBLE;
                goto cleanup;
            }
        } else {
            out_c[nout] = have_auto_c ? &auto_c : &main_c;
            if (!have_auto_c) {
                /* the main candidate with the search's schedule */
                auto_c = main_c;
                auto_c.opt.schedule = a->schedule;
                auto_c.opt.virtual_stages = a->virtual_stages;
                out_c[nout] = &auto_c;
            }
            outs[nout++] = (ApsolveOutput){.label = "auto", .kind = "auto", .plan = autop};
            warn_batches(a, autop, "auto");
            if (!a->quiet)
                fprintf(stderr, "apsolve: solved in %.3f ms (%ld threshold DPs over %ld distinct "
                        "stage costs)\n", autop->solve_seconds * 1e3, autop->dp_evaluations,
                        autop->candidates);
        }
    }
    (void)auto_err;
    for (size_t k = 0; k < nout; k++) {
        ApsolvePlan *pl = outs[k].plan == autop ? autop : given;
        const Cand *c = out_c[k];
        Extra *x = &extra[k];
        x->stages = calloc(pl->n_stages ? pl->n_stages : 1, sizeof *x->stages);
        if (!x->stages)
            goto cleanup;
        if (apsolve_full_estimate_ex(db, c->sweep, pl, 1.0, &x->full, x->stages)) {
            fprintf(stderr, "apsolve: full estimate: %s\n", costdb_errmsg(db));
            goto cleanup;
        }
        outs[k].full = &x->full;
        if (x->full.available) {
            outs[k].full_stages = x->stages;
            pl->full_cost = x->full.total;
            pl->has_full_cost = 1;
        }
        if (a->batch > 0) {
            if ((rc = rebatch_one(db, a, &c->opt, c->p, c->sweep, &c->sw, pl, x,
                                  &rebatch_bad)) != 0)
                goto cleanup;
            rc = 1;
            outs[k].rebatch = &x->reb;
            outs[k].rebatch_plan = x->rplan;
            outs[k].rebatch_full = &x->rfull;
        }
    }
    if (!a->no_store && a->plan <= 0) {
        for (size_t k = 0; k < nout; k++) {
            const Cand *c = out_c[k];
            int is_auto = outs[k].plan == autop;
            if (store(db, a, c->p, &c->opt, outs[k].plan, is_auto ? "auto" : kind,
                      is_auto ? &id_auto : &id_given))
                goto cleanup;
            outs[k].plan_id = is_auto ? id_auto : id_given;
        }
    }
    if (apsolve_write(stdout, a->format, outs, nout)) {
        if (apsolve_stdout_check(err, sizeof err) < 0)
            fprintf(stderr, "apsolve: %s\n", err);
        else
            fprintf(stderr, "apsolve: cannot write the output\n");
        goto cleanup;
    }
    rc = 0;
    if (rebatch_bad) {
        fprintf(stderr, "apsolve: at --batch %lld the plan is not usable as it is (see above)\n",
                (long long)a->batch);
        rc = EXIT_INFEASIBLE;
    }
    if (given && !given->feasible) {
        fprintf(stderr, "apsolve: the %s plan is not feasible: %s\n", label,
                given->devices_used != main_c.p->num_devices
                    ? "it does not use exactly all devices" : "see the stage table");
        rc = EXIT_INFEASIBLE;
    }
cleanup:
    extra_free(&extra[0]);
    extra_free(&extra[1]);
    apsolve_plan_free(&autop);
    apsolve_plan_free(&given);
    free(specs);
    free(plan_configs);
    free(bs);
    if (have_auto_c)
        cand_free(&auto_c);
    if (have_par_c)
        cand_free(&par_c);
    cand_free(&main_c);
    costdb_close(&db);
    return rc;
}

int main(int argc, char **argv)
{
    enum { O_SWEEP = 256, O_MB, O_BUDGET, O_MAXST, O_INF, O_FMT, O_NOSTORE, O_STOPT, O_IDS,
           O_SUBS, O_LOGS, O_DICTS, O_PAR, O_NST, O_SUB, O_LOG, O_QUIET, O_VER, O_BATCH,
           O_PLAN, O_OBJ, O_GB, O_MBS, O_SCHED, O_VS };
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},
        {"sweep", required_argument, NULL, O_SWEEP},
        {"micro-batches", required_argument, NULL, O_MB},
        {"memory-budget", required_argument, NULL, O_BUDGET},
        {"max-stages", required_argument, NULL, O_MAXST},
        {"inference", no_argument, NULL, O_INF},
        {"format", required_argument, NULL, O_FMT},
        {"no-store", no_argument, NULL, O_NOSTORE},
        {"stage-option", required_argument, NULL, O_STOPT},
        {"forward-stage-layer-ids", required_argument, NULL, O_IDS},
        {"submesh-shapes", required_argument, NULL, O_SUBS},
        {"logical-shapes", required_argument, NULL, O_LOGS},
        {"option-dicts", required_argument, NULL, O_DICTS},
        {"parallel", required_argument, NULL, O_PAR},
        {"num-stages", required_argument, NULL, O_NST},
        {"submesh", required_argument, NULL, O_SUB},
        {"logical", required_argument, NULL, O_LOG},
        {"quiet", no_argument, NULL, O_QUIET},
        {"batch", required_argument, NULL, O_BATCH},
        {"plan", required_argument, NULL, O_PLAN},
        {"objective", required_argument, NULL, O_OBJ},
        {"global-batch", required_argument, NULL, O_GB},
        {"micro-batch-size", required_argument, NULL, O_MBS},
        {"schedule", required_argument, NULL, O_SCHED},
        {"virtual-stages", required_argument, NULL, O_VS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, O_VER},
        {NULL, 0, NULL, 0},
    };
    Args a;
    int c;
    long v;

    memset(&a, 0, sizeof a);
    a.format = "text";
    a.stage_option = "auto";
    a.objective = -1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': a.db = optarg; break;
        case O_SWEEP:
            if (parse_long(optarg, 1, INT32_MAX, &v))
                return usage_error("bad --sweep '%s'", optarg);
            a.sweep = v;
            break;
        case O_MB:
            if (parse_long(optarg, 1, 1 << 24, &v))
                return usage_error("bad --micro-batches '%s' (expected an integer >= 1)", optarg);
            a.micro_batches = (int)v;
            break;
        case O_BUDGET:
            if (parse_bytes(optarg, &a.opt.memory_budget))
                return usage_error("bad --memory-budget '%s' (bytes, or with K/M/G)", optarg);
            break;
        case O_MAXST:
            if (parse_long(optarg, 1, APSOLVE_MAX_LAYERS, &v))
                return usage_error("bad --max-stages '%s'", optarg);
            a.opt.max_stages = (int)v;
            break;
        case O_INF: a.opt.inference = 1; break;
        case O_FMT:
            if (strcmp(optarg, "text") && strcmp(optarg, "json"))
                return usage_error("bad --format '%s' (text or json)", optarg);
            a.format = optarg;
            break;
        case O_NOSTORE: a.no_store = 1; break;
        case O_STOPT:
            if (strcmp(optarg, "auto") && strcmp(optarg, "manual") && strcmp(optarg, "uniform"))
                return usage_error("bad --stage-option '%s' (auto, manual or uniform)", optarg);
            a.stage_option = optarg;
            break;
        case O_IDS: a.layer_ids = optarg; break;
        case O_SUBS: a.submeshes = optarg; break;
        case O_LOGS: a.logicals = optarg; break;
        case O_DICTS: a.dicts = optarg; break;
        case O_PAR: {
            char perr[200], msg[512];
            if (parse_parallel(optarg, &a.par, perr, sizeof perr)) {
                snprintf(msg, sizeof msg, "bad --parallel '%s': %s (expected dp=N,tp=N,pp=N"
                         "[,sp=0|1][,zero=0..3][,recompute=none|selective|full][,vpp=V][,mbs=M])",
                         optarg, perr);
                return usage_error("%s", msg);
            }
            a.parallel = optarg;
            break;
        }
        case O_OBJ:
            if (!strcmp(optarg, "alpa"))
                a.objective = APSOLVE_OBJECTIVE_ALPA;
            else if (!strcmp(optarg, "full"))
                a.objective = APSOLVE_OBJECTIVE_FULL;
            else
                return usage_error("bad --objective '%s' (alpa or full)", optarg);
            break;
        case O_GB:
            if (parse_long(optarg, 1, 1L << 40, &v))
                return usage_error("bad --global-batch '%s' (a positive integer)", optarg);
            a.global_batch = v;
            break;
        case O_MBS:
            if (parse_long(optarg, 1, 1L << 30, &v))
                return usage_error("bad --micro-batch-size '%s' (a positive integer)", optarg);
            a.micro_batch_size = v;
            break;
        case O_SCHED: {
            int sc = apsolve_schedule_parse(optarg);
            if (sc < 0)
                return usage_error("bad --schedule '%s' (1f1b, gpipe or interleaved)", optarg);
            a.schedule = sc;
            a.schedule_set = 1;
            break;
        }
        case O_VS:
            if (parse_long(optarg, 2, 1024, &v))
                return usage_error("bad --virtual-stages '%s' (an integer in 2..1024)", optarg);
            a.virtual_stages = (int)v;
            break;
        case O_NST:
            if (parse_long(optarg, 1, APSOLVE_MAX_LAYERS, &v))
                return usage_error("bad --num-stages '%s'", optarg);
            a.num_stages = (int)v;
            break;
        case O_SUB: a.submesh = optarg; break;
        case O_LOG: a.logical = optarg; break;
        case O_QUIET: a.quiet = 1; break;
        case O_BATCH:
            if (parse_long(optarg, 1, 1L << 40, &v))
                return usage_error("bad --batch '%s' (a positive integer)", optarg);
            a.batch = v;
            break;
        case O_PLAN:
            if (parse_long(optarg, 1, INT32_MAX, &v))
                return usage_error("bad --plan '%s' (a plan id)", optarg);
            a.plan = v;
            break;
        case 'h': usage(stdout); return stdout_status(0);
        case O_VER: printf("apsolve %s\n", APPROF_VERSION); return stdout_status(0);
        default:
            if (optopt && optopt < 256)
                return usage_error("unknown or incomplete option '-%s'", (char[]){(char)optopt, 0});
            return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!a.db)
        return usage_error("--db FILE is required%s", NULL);
    if (a.plan > 0 && (a.parallel || strcmp(a.stage_option, "auto")))
        return usage_error("--plan cannot be combined with --parallel or --stage-option%s", NULL);
    if (a.schedule == APSOLVE_SCHEDULE_INTERLEAVED && a.virtual_stages < 2)
        return usage_error("--schedule interleaved needs --virtual-stages V (V >= 2)%s", NULL);
    if (a.virtual_stages >= 2 && a.schedule != APSOLVE_SCHEDULE_INTERLEAVED)
        return usage_error("--virtual-stages needs --schedule interleaved%s", NULL);
    if (a.parallel && strcmp(a.stage_option, "auto"))
        return usage_error("--parallel cannot be combined with --stage-option %s", a.stage_option);
    return stdout_status(run(&a));
}
