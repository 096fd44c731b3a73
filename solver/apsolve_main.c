/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve: the command line of the solver. Reads a sweep from the cost
 * database, finds the optimal stage/mesh plan (or evaluates a manual,
 * uniform or 3-D plan next to it), prints it as Alpa does plus a stage
 * table (or JSON) and stores it unless --no-store. Exit codes: 0 success,
 * 1 runtime failure, 2 usage error, 3 no feasible plan.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "config.h"
#include "costdb.h"

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
          "  --parallel dp=D,tp=T,pp=P Megatron-style 3-D plan, printed next to the auto plan\n"
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
    if (mul > 1)
        end++;
    if (*end == 'B' || (*end == 'i' && end[1] == 'B' && (end += 1)))
        end++;
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

/* "dp=2,tp=2,pp=2" in any order; each given once. */
static int parse_parallel(const char *s, int *dp, int *tp, int *pp)
{
    *dp = *tp = *pp = 0;
    while (*s) {
        int *dst;
        char *end = NULL;
        long v;
        if (!strncmp(s, "dp=", 3))
            dst = dp;
        else if (!strncmp(s, "tp=", 3))
            dst = tp;
        else if (!strncmp(s, "pp=", 3))
            dst = pp;
        else
            return -1;
        errno = 0;
        v = strtol(s + 3, &end, 10);
        if (errno || end == s + 3 || v < 1 || v > 65536 || *dst)
            return -1;
        *dst = (int)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return *dp && *tp && *pp ? 0 : -1;
}

typedef struct Args {
    const char *db, *format, *stage_option, *layer_ids, *submeshes, *logicals, *dicts;
    const char *parallel, *submesh, *logical;
    int64_t sweep;
    int no_store, quiet, num_stages, micro_batches;
    int64_t batch;                    /* --batch: re-evaluate at this global batch */
    int64_t plan;                     /* --plan: re-evaluate this stored plan */
    ApsolveOptions opt;
} Args;

static void warn_batches(const Args *a, const ApsolvePlan *pl, const char *label)
{
    int n = (int)pl->n_stages, b = pl->micro_batches;
    if (a->quiet || pl->inference)
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

static int store(Costdb *db, const Args *a, const ApsolveProblem *p, const ApsolvePlan *pl,
                 const char *kind, int64_t *id)
{
    char js[COSTDB_TEXT_MAX];
    snprintf(js, sizeof js, "{\"tool\": \"apsolve %s\", \"stage_option\": \"%s\", "
             "\"micro_batches\": %d, \"memory_budget\": %lld, \"max_stages\": %d, "
             "\"inference\": %s%s%s%s}", APPROF_VERSION, kind, a->opt.micro_batches,
             (long long)a->opt.memory_budget, a->opt.max_stages,
             a->opt.inference ? "true" : "false", a->parallel && !strcmp(kind, "3d")
             ? ", \"parallel\": \"" : "", a->parallel && !strcmp(kind, "3d") ? a->parallel : "",
             a->parallel && !strcmp(kind, "3d") ? "\"" : "");
    if (apsolve_plan_store(db, p, &a->opt, pl, kind, js, id)) {
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
                                   st->logical_a, st->logical_b, st->force_batch_dim};
    }
    return sp;
}

/* --batch: re-prices pl at the new micro-batch, exactly from a sweep at
 * that micro-batch when the database has one, else scaled. Sets *bad when
 * the plan cannot run as it is. Returns 0 or an exit code. */
static int rebatch_one(Costdb *db, const Args *a, const ApsolveProblem *p, int64_t sweep,
                       const CostdbSweep *sw, const ApsolvePlan *pl, Extra *x, int *bad)
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
        ApsolveOptions o = a->opt;
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

/* --plan ID: the stored plan's stages as specs, its inputs as defaults. */
static int load_plan(Costdb *db, Args *a, int64_t *sweep, ApsolveStageSpec **specs,
                     size_t *n, char *kind, size_t kindlen)
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
    if (np == 0 || !(*specs = calloc(np, sizeof **specs))) {
        free(ps);
        fprintf(stderr, "apsolve: plan %lld has no stages\n", (long long)a->plan);
        return 1;
    }
    for (size_t k = 0; k < np; k++)
        (*specs)[k] = (ApsolveStageSpec){ps[k].start_layer, ps[k].end_layer, ps[k].submesh_hosts,
                                         ps[k].submesh_gpus, ps[k].logical_a, ps[k].logical_b,
                                         ps[k].force_batch_dim};
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
    snprintf(kind, kindlen, "%s", cp.kind);
    free(ps);
    return 0;
}

static int run(Args *a)
{
    Costdb *db = NULL;
    ApsolveProblem *p = NULL;
    ApsolvePlan *autop = NULL, *given = NULL;
    ApsolveStageSpec *specs = NULL;
    ApsolveOutput outs[2];
    Extra extra[2];
    CostdbSweep sw;
    int rebatch_bad = 0;
    size_t nspec = 0, nout = 0;
    char err[512], label[96], stored_kind[16];
    const char *kind = NULL;
    int64_t sweep = a->sweep, id_auto = 0, id_given = 0;
    int rc = 1, e;

    memset(extra, 0, sizeof extra);
    if (costdb_open(a->db, a->no_store ? COSTDB_OPEN_READONLY : COSTDB_OPEN_NOCREATE, &db,
                    err, sizeof err)) {
        fprintf(stderr, "apsolve: %s\n", err);
        return 1;
    }
    if (a->plan > 0) {
        rc = load_plan(db, a, &sweep, &specs, &nspec, stored_kind, sizeof stored_kind);
        if (rc)
            goto cleanup;
        rc = 1;
        kind = stored_kind;
        snprintf(label, sizeof label, "plan %lld (%s)", (long long)a->plan, stored_kind);
    }
    if (sweep <= 0 && costdb_sweep_latest(db, &sweep)) {
        fprintf(stderr, "apsolve: %s: no sweep in the database\n", a->db);
        goto cleanup;
    }
    if (costdb_sweep_get(db, sweep, &sw)) {
        fprintf(stderr, "apsolve: sweep %lld: %s\n", (long long)sweep, costdb_errmsg(db));
        goto cleanup;
    }
    if (a->micro_batches <= 0)
        a->opt.micro_batches = sw.micro_batches > 0 ? sw.micro_batches : 1;
    else
        a->opt.micro_batches = a->micro_batches;
    if (a->batch > 0 && a->batch % a->opt.micro_batches) {
        fprintf(stderr, "apsolve: --batch %lld is not divisible by %d micro-batches\n"
                "Try 'apsolve --help'\n", (long long)a->batch, a->opt.micro_batches);
        rc = EXIT_USAGE;
        goto cleanup;
    }
    e = apsolve_problem_from_db(db, sweep, &a->opt, &p);
    if (e) {
        fprintf(stderr, "apsolve: sweep %lld: %s\n", (long long)sweep,
                e == APSOLVE_EDB ? costdb_errmsg(db) : apsolve_strerror(e));
        goto cleanup;
    }
    if (a->parallel) {
        int dp, tp, pp;
        parse_parallel(a->parallel, &dp, &tp, &pp);
        if (pp > p->num_layers || dp * tp * pp != p->num_devices ||
            (dp * tp > p->cluster_gpus && (dp * tp) % p->cluster_gpus)) {
            fprintf(stderr, "apsolve: --parallel %s does not fit: dp x tp x pp must be %d "
                    "(the %dx%d cluster) and pp <= %d layers\n", a->parallel, p->num_devices,
                    p->cluster_hosts, p->cluster_gpus, p->num_layers);
            rc = EXIT_USAGE;
            goto cleanup;
        }
        specs = calloc((size_t)pp, sizeof *specs);
        if (!specs)
            goto cleanup;
        apsolve_3d_specs(p->num_layers, p->cluster_gpus, dp, tp, pp, specs);
        nspec = (size_t)pp;
        kind = "3d";
        snprintf(label, sizeof label, "3-D %s", a->parallel);
    } else if (!specs && strcmp(a->stage_option, "auto")) {
        rc = build_specs(a, p, &specs, &nspec);
        if (rc)
            goto cleanup;
        rc = 1;
        kind = a->stage_option;
        snprintf(label, sizeof label, "%s", kind);
    }
    if (specs) {
        e = apsolve_evaluate(p, &a->opt, specs, nspec, &given, err, sizeof err);
        if (e) {
            fprintf(stderr, "apsolve: %s plan: %s\n", kind,
                    e == APSOLVE_EINVAL ? err : apsolve_strerror(e));
            rc = e == APSOLVE_EINVAL ? EXIT_USAGE : 1;
            goto cleanup;
        }
        outs[nout++] = (ApsolveOutput){.label = label, .kind = kind, .plan = given};
        warn_batches(a, given, label);
    }
    if (!specs || a->parallel) {
        e = apsolve_solve(p, &a->opt, &autop);
        if (e == APSOLVE_EINFEASIBLE) {
            apsolve_explain(p, &a->opt, err, sizeof err);
            fprintf(stderr, "apsolve: no feasible plan: %s\n", err);
            if (!given) {
                rc = EXIT_INFEASIBLE;
                goto cleanup;
            }
        } else if (e) {
            fprintf(stderr, "apsolve: %s\n", apsolve_strerror(e));
            goto cleanup;
        } else {
            outs[nout++] = (ApsolveOutput){.label = "auto", .kind = "auto", .plan = autop};
            warn_batches(a, autop, "auto");
            if (!a->quiet)
                fprintf(stderr, "apsolve: solved in %.3f ms (%ld threshold DPs over %ld distinct "
                        "stage costs)\n", autop->solve_seconds * 1e3, autop->dp_evaluations,
                        autop->candidates);
        }
    }
    for (size_t k = 0; k < nout; k++) {
        ApsolvePlan *pl = outs[k].plan == autop ? autop : given;
        Extra *x = &extra[k];
        x->stages = calloc(pl->n_stages ? pl->n_stages : 1, sizeof *x->stages);
        if (!x->stages)
            goto cleanup;
        if (apsolve_full_estimate_ex(db, sweep, pl, 1.0, &x->full, x->stages)) {
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
            if ((rc = rebatch_one(db, a, p, sweep, &sw, pl, x, &rebatch_bad)) != 0)
                goto cleanup;
            rc = 1;
            outs[k].rebatch = &x->reb;
            outs[k].rebatch_plan = x->rplan;
            outs[k].rebatch_full = &x->rfull;
        }
    }
    if (!a->no_store && a->plan <= 0) {
        if (given && store(db, a, p, given, kind, &id_given))
            goto cleanup;
        if (autop && store(db, a, p, autop, "auto", &id_auto))
            goto cleanup;
        for (size_t k = 0; k < nout; k++)
            outs[k].plan_id = outs[k].plan == autop ? id_auto : id_given;
    }
    if (apsolve_write(stdout, a->format, outs, nout)) {
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
                given->devices_used != p->num_devices ? "it does not use exactly all devices"
                                                      : "see the stage table");
        rc = EXIT_INFEASIBLE;
    }
cleanup:
    extra_free(&extra[0]);
    extra_free(&extra[1]);
    apsolve_plan_free(&autop);
    apsolve_plan_free(&given);
    free(specs);
    apsolve_problem_free(&p);
    costdb_close(&db);
    return rc;
}

int main(int argc, char **argv)
{
    enum { O_SWEEP = 256, O_MB, O_BUDGET, O_MAXST, O_INF, O_FMT, O_NOSTORE, O_STOPT, O_IDS,
           O_SUBS, O_LOGS, O_DICTS, O_PAR, O_NST, O_SUB, O_LOG, O_QUIET, O_VER, O_BATCH,
           O_PLAN };
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
            int x, y, z;
            if (parse_parallel(optarg, &x, &y, &z))
                return usage_error("bad --parallel '%s' (expected dp=N,tp=N,pp=N)", optarg);
            a.parallel = optarg;
            break;
        }
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
        case 'h': usage(stdout); return 0;
        case O_VER: printf("apsolve %s\n", APPROF_VERSION); return 0;
        default:
            if (optopt && optopt < 256)
                return usage_error("unknown or incomplete option '-%c'", (char[]){(char)optopt, 0});
            return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!a.db)
        return usage_error("--db FILE is required%s", NULL);
    if (a.plan > 0 && (a.parallel || strcmp(a.stage_option, "auto")))
        return usage_error("--plan cannot be combined with --parallel or --stage-option%s", NULL);
    if (a.parallel && strcmp(a.stage_option, "auto"))
        return usage_error("--parallel cannot be combined with --stage-option %s", a.stage_option);
    return run(&a);
}
