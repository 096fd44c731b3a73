/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cp stage's transient cut on hostile rows (solver/cp_memory.c,
 * docs/context-parallel.md "The transient's activation-sized part"). The
 * sweep writes peak >= temp_buffer_size >= temp_activation_size; the
 * driver (cp_hostile.sh) edits some stage_cost rows to an activation-sized
 * part above their peak, which the database accepts (that part is at most
 * the transient, edited with it). On such a sweep, for every entry that
 * can hold a cp stage and every cp:
 *
 * - --parallel's cut (apsolve_cp_transient_cut, entry by entry) is the
 *   auto search's (apsolve_cp_transients_read, one pass over the sweep):
 *   one rule, where the two disagreed on a row whose phases' peaks were
 *   both below their cut;
 * - the cut is the rule by hand: a phase's part counts only within its
 *   transient and its peak, so a hostile phase keeps its twin's peak and
 *   no cp stage's peak goes below what it still holds;
 * - cp 2's stage memory (peak and saved activations) of every entry is
 *   the same in --parallel's problem (apsolve_cp_problem) and in the auto
 *   search's table (apsolve_cp_problem_auto), and its peak is above zero.
 *
 * - an entry with one phase's row only (the driver deletes one entry's
 *   forward row) is no entry: both cut 0, where the auto table had
 *   cut from the phase it had.
 *
 * Usage: test_cp_hostile DB MICRO (sweep 1 of DB; MICRO its micro-batch
 * size). Prints "ok: N entries, H hostile, ...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "costdb_rows.h"
#include "session_int.h"
#include "sweep_problem.h"

static int failures;

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                      \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static int64_t up(int64_t a, int n)
{
    return (a + n - 1) / n;
}

/* The rule, written out: each phase's part within (0, min(temp, peak)],
 * else none; the entry's peak less the larger of the phases' peaks each
 * less a - ceil(a / cp). */
static int64_t by_hand(const CostdbPhaseTransient ph[2], int cp)
{
    int64_t before = 0, after = 0;
    for (int k = 0; k < 2; k++) {
        int64_t a = ph[k].temp_activation;
        if (!(a > 0 && a <= ph[k].temp && a <= ph[k].peak))
            a = 0;
        int64_t q = ph[k].peak - (a - up(a, cp));
        before = k == 0 || ph[k].peak > before ? ph[k].peak : before;
        after = k == 0 || q > after ? q : after;
    }
    return before - after;
}

static int hostile(const CostdbPhaseTransient ph[2])
{
    for (int k = 0; k < 2; k++)
        if (ph[k].temp_activation > ph[k].peak)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    Costdb *db = NULL;
    ApsolveProblem *p = NULL, *whole[1] = {NULL};
    ApsolveCpTransients *t = NULL;
    ApsolveOptions o;
    int64_t micro, seq = 0;
    int heads = 0, kv_heads = 0, attention = 0, cps[1] = {2}, comms[1] = {APSOLVE_CP_P2P};
    long entries = 0, bad = 0, compared = 0, lone = 0;
    char why[400];
    if (argc != 3 || (micro = atoll(argv[2])) <= 0) {
        fprintf(stderr, "usage: test_cp_hostile DB MICRO\n");
        return 2;
    }
    if (sweep_problem_open("test_cp_hostile", argv[1], &db, &o, &p))
        return 1;
    CHECK(apsolve_cp_transients_read(db, 1, p, &t, why, sizeof why) == APSOLVE_OK && t,
          "the auto search's transients: %s", t ? "" : why);
    for (int i = 0; t && i < p->num_layers; i++)
        for (int j = i; j < p->num_layers; j++)
            for (int s = 0; s < p->num_submeshes; s++)
                for (int c = 0; c < p->num_configs; c++) {
                    const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + c];
                    CostdbPhaseTransient ph[2];
                    int rc;
                    if (!cf->valid || cf->force_batch_dim != 0 || cf->logical_a % 2 ||
                        (rc = costdb_entry_transient(db, 1, i, j, s, c, ph)) < 0)
                        continue;
                    if (rc) { /* one phase's row only, or none: no entry, no cut */
                        lone++;
                        for (int cp = 2; cp <= 8; cp *= 2) {
                            int64_t cut = -1, tab = apsolve_cp_transients_cut(t, p, i, j, s, c, cp);
                            CHECK(apsolve_cp_transient_cut(db, 1, i, j, s, c, cp, &cut, why,
                                                           sizeof why) == 0 &&
                                      cut == 0 && tab == 0,
                                  "(%d..%d, %d, %d) cp=%d, a phase's row missing: --parallel "
                                  "cuts %lld, the auto table %lld (both must be 0)",
                                  i, j, s, c, cp, (long long)cut, (long long)tab);
                        }
                        continue;
                    }
                    entries++;
                    bad += hostile(ph);
                    for (int cp = 2; cp <= 8; cp *= 2) {
                        int64_t cut = -1, tab = apsolve_cp_transients_cut(t, p, i, j, s, c, cp);
                        CHECK(apsolve_cp_transient_cut(db, 1, i, j, s, c, cp, &cut, why,
                                                       sizeof why) == 0,
                              "(%d..%d, %d, %d): %s", i, j, s, c, why);
                        CHECK(cut == tab && cut == by_hand(ph, cp),
                              "(%d..%d, %d, %d) cp=%d%s: --parallel cuts %lld, the auto "
                              "table %lld, by hand %lld (peaks %lld %lld, parts %lld %lld)",
                              i, j, s, c, cp, hostile(ph) ? " (hostile)" : "",
                              (long long)cut, (long long)tab, (long long)by_hand(ph, cp),
                              (long long)ph[0].peak, (long long)ph[1].peak,
                              (long long)ph[0].temp_activation, (long long)ph[1].temp_activation);
                    }
                }
    CHECK(bad > 0, "no hostile entry among %ld: the driver's edit did not take", entries);
    CHECK(lone >= 1, "%ld entries with a phase's row missing: the driver's delete did not take",
          lone);
    apsolve_cp_heads(db, 1, p, &heads, &kv_heads);
    CHECK(apsolve_cp_problem_auto(db, 1, p, micro, &micro, 1, cps, comms, heads, kv_heads, 1,
                                  whole, NULL, &seq, &attention, why, sizeof why) == 0 &&
              whole[0],
          "the auto table: %s", why);
    /* cp 2's memory of every entry: --parallel's problem of a one-stage
     * spec naming it against the auto table's */
    for (int i = 0; whole[0] && i < p->num_layers; i++)
        for (int j = i; j < p->num_layers; j++)
            for (int s = 0; s < p->num_submeshes; s++)
                for (int c = 0; c < p->num_configs; c++) {
                    const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + c];
                    size_t idx = apsolve_index(p, i, j, s, c);
                    ApsolveStageSpec sp;
                    ApsolveCpLayout l;
                    ApsolveProblem *q = NULL;
                    int64_t qseq = 0;
                    int qatt = 0;
                    if (!cf->valid || cf->force_batch_dim != 0 || cf->logical_a % 2 ||
                        !p->memory)
                        continue;
                    memset(&sp, 0, sizeof sp);
                    sp.start_layer = i;
                    sp.end_layer = j;
                    sp.hosts = p->submeshes[s].hosts;
                    sp.gpus = p->submeshes[s].gpus;
                    memset(&l, 0, sizeof l);
                    l.dp = cf->logical_a / 2;
                    l.tp = cf->logical_b;
                    l.cp = 2;
                    l.comm = APSOLVE_CP_P2P;
                    if (apsolve_cp_problem(db, 1, p, &sp, 1, &l, &q, &qseq, &qatt, why,
                                           sizeof why) != 0) {
                        CHECK(0, "(%d..%d, %d, %d): --parallel's problem: %s", i, j, s, c, why);
                        continue;
                    }
                    const ApsolveMemory *a = apsolve_memory_at(q, idx),
                                        *b = apsolve_memory_at(whole[0], idx);
                    if (q->cost[idx] < 1e300 && whole[0]->cost[idx] < 1e300) {
                        compared++;
                        CHECK(a->peak == b->peak && a->intermediate == b->intermediate &&
                                  a->peak > 0,
                              "(%d..%d, %d, %d) cp=2: --parallel's memory %lld (saved %lld), "
                              "the auto table's %lld (saved %lld)", i, j, s, c,
                              (long long)a->peak, (long long)a->intermediate,
                              (long long)b->peak, (long long)b->intermediate);
                    }
                    apsolve_problem_free(&q);
                }
    CHECK(compared > 0, "no cp=2 entry priced by both");
    apsolve_problem_free(&whole[0]);
    apsolve_cp_transients_free(&t);
    apsolve_problem_free(&p);
    costdb_close(&db);
    if (failures)
        return 1;
    printf("ok: %ld entries, %ld hostile, %ld with a phase missing, %ld cp=2 memories "
           "compared\n", entries, bad, lone, compared);
    return 0;
}
