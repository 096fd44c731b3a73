/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hand count of the activations each pipeline rank keeps in flight under
 * Megatron-Core's interleaved schedule, against approf's count
 * (apsolve_schedule_in_flight, solver/schedule.c) and the stage need built
 * on it (apsolve_stage_memory_need).
 *
 * The replay follows megatron/core/pipeline_parallel/schedules.py at
 * 92c8482e6d (the Megatron-LM that Megatron-Bridge 5776a6d90 pins as
 * 3rdparty/Megatron-LM, the source of the mb2511-* rows of
 * bench/plans_cases.tsv): get_schedule_table (lines 762-789) orders the
 * forwards of each rank in groups of microbatch_group_size_per_vp_stage
 * micro-batches (default: the pipeline size, model_parallel_config.py
 * lines 400-401), chunk by chunk; get_pp_rank_microbatches (lines
 * 702-759) gives rank k (pp - k - 1) x 2 + (vpp - 1) x group warm-up
 * forwards, capped at every forward there is; then each steady step runs
 * one forward and then one backward (convert_schedule_table_to_order,
 * lines 792-815: the backward of the i-th table entry, chunks reversed),
 * and the cool-down the remaining backwards. A forward's saved
 * activations live until the backward of the same (micro-batch, chunk)
 * ends, so the most a rank holds is counted here pass by pass, in model
 * chunks, without the closed form.
 *
 * The cases include the two held-out rows judged out of memory (issue 33):
 * mb2511-gb200-llama3.1-405b (pp 16, vpp 4, 384 micro-batches) and
 * mb2511-qwen3-30b-a3b-ep8 (pp 2, vpp 24, 32 micro-batches).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>

#include "cunit_run.h"
#include "schedule.h"

/* get_schedule_table: entry i of the forward order of every rank is
 * (micro-batch mb[i], chunk ch[i]). */
static int schedule_table(int B, int v, int group, int *mb, int *ch)
{
    int i = 0;
    for (int lo = 0; lo < B; lo += group) {
        int hi = lo + group >= B ? B : lo + group;
        for (int c = 0; c < v; c++)
            for (int m = lo; m < hi; m++) {
                mb[i] = m;
                ch[i] = c;
                i++;
            }
        if (hi == B)
            break;
    }
    return i;
}

/* Most (micro-batch, chunk) activations rank k of n holds at once, by
 * replaying its order; -1 on a bad table. */
static int replay_peak_chunks(int B, int v, int n, int k)
{
    int total = B * v, warm, held = 0, peak = 0, f = 0, b = 0;
    int *mb = malloc(sizeof *mb * (size_t)total), *ch = malloc(sizeof *ch * (size_t)total);
    unsigned char *alive = calloc((size_t)total, 1);
    if (!mb || !ch || !alive || schedule_table(B, v, n, mb, ch) != total) {
        free(mb);
        free(ch);
        free(alive);
        return -1;
    }
    warm = 2 * (n - k - 1) + (v - 1) * n;
    if (warm > total)
        warm = total;
    /* warm-up forwards, then forward + backward, then the cool-down */
    while (b < total) {
        if (f < total && (f < warm || f - warm <= b)) {
            alive[mb[f] * v + ch[f]] = 1;
            held++;
            f++;
            if (held > peak)
                peak = held;
            if (f <= warm)
                continue;
        }
        /* the backward of table entry b runs chunk v - 1 - ch[b] */
        {
            int slot = mb[b] * v + (v - 1 - ch[b]);
            if (!alive[slot]) {
                peak = -1;
                break;
            }
            alive[slot] = 0;
            held--;
            b++;
        }
    }
    free(mb);
    free(ch);
    free(alive);
    return peak;
}

static void check_case(int B, int v, int n)
{
    for (int k = 0; k < n; k++) {
        int hand = replay_peak_chunks(B, v, n, k);
        double approf = apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, v, B, n, k);
        CU_ASSERT(hand > 0);
        /* approf counts micro-batches of the whole stage: chunks / v */
        CU_ASSERT_DOUBLE_EQUAL(approf * v, hand, 1e-9);
        if (fabs(approf * v - hand) > 1e-9)
            fprintf(stderr, "B %d v %d n %d rank %d: hand %d chunks, approf %g\n", B, v, n, k,
                    hand, approf * v);
    }
}

/* Every rank of small pipelines, B a multiple of n (Megatron-Core
 * refuses the others under its default group), and B small enough that
 * every forward is warm-up. */
static void test_grid(void)
{
    for (int n = 2; n <= 8; n++)
        for (int v = 2; v <= 5; v++)
            for (int B = n; B <= 4 * n; B += n)
                check_case(B, v, n);
}

/* The two rows: the first rank holds the most, each later rank two chunks
 * fewer (its warm-up is two forwards shorter). */
static void test_rows(void)
{
    /* mb2511-gb200-llama3.1-405b: GBS 1536 / (mbs 1 x dp 4) = 384 */
    check_case(384, 4, 16);
    CU_ASSERT_EQUAL(replay_peak_chunks(384, 4, 16, 0), 79);
    CU_ASSERT_EQUAL(replay_peak_chunks(384, 4, 16, 1), 77);
    CU_ASSERT_EQUAL(replay_peak_chunks(384, 4, 16, 15), 49);
    CU_ASSERT_DOUBLE_EQUAL(apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, 4, 384, 16, 1),
                           19.25, 1e-12);
    /* mb2511-qwen3-30b-a3b-ep8: GBS 512 / (mbs 2 x dp 8) = 32 */
    check_case(32, 24, 2);
    CU_ASSERT_EQUAL(replay_peak_chunks(32, 24, 2, 0), 49);
    CU_ASSERT_EQUAL(replay_peak_chunks(32, 24, 2, 1), 47);
}

/* The need of a stage from its profiled figures: the backward's peak holds
 * one micro-batch of the whole stage's saved activations (all v chunks),
 * so the other (chunks held - v) / v come on top. Rank 1 of the 405B row
 * with 8 layers in 4 chunks of 2 as Megatron-Bridge splits 126 layers
 * (account_for_embedding/loss_in_pipeline_split): 77 chunks of 2 layers.
 * Figures of one layer in bytes (a, w, o: saved activations a
 * micro-batch, weights and gradients, optimizer shard), small round
 * numbers: the test is of the composition, not of the row. */
static void test_need_by_hand(void)
{
    const long long a = 1000, w = 300, o = 200, t = 7;
    const int layers = 8, v = 4, chunks = 77;
    long long peak = layers * (a + w) + t, initial = layers * o, inter = layers * a;
    double f = apsolve_schedule_in_flight(APSOLVE_SCHEDULE_INTERLEAVED, v, 384, 16, 1);
    long long hand = layers * (w + o) + t + (long long)chunks * (layers / v) * a;
    CU_ASSERT_EQUAL(apsolve_stage_memory_need(APSOLVE_MEMORY_EXACT, peak, initial, inter, f), hand);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"interleaved in flight: every rank by replay", test_grid},
        {"interleaved in flight: the two held-out rows", test_rows},
        {"stage need from the chunks held, by hand", test_need_by_hand},
    };
    return CUNIT_RUN("solver-megatron-inflight", tests);
}
