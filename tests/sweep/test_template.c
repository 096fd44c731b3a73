/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sweep's program templates (profiler/sweep/sweep_template.c): the
 * store holds at most its byte cap (plus one template), a template found
 * again is kept while others are dropped, and a template's placements,
 * stored as runs of a repeated block, come back row for row.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "sweep/sweep_template.h"

static const char *const specs[] = {"R", "S0", "S1", "S01"};

/* A row of a template: its spec's length with it. */
static TemplatePlacement row(int role, int ordinal, const char *spec)
{
    return (TemplatePlacement){.role = (unsigned short)role,
                               .spec_len = (unsigned short)strlen(spec),
                               .ordinal = ordinal,
                               .spec = spec};
}

/* A range of `layers` alike layers: a prologue, `layers` blocks of
 * `per` rows (ordinals advancing by `per` a layer), an epilogue. */
static int layered_rows(TemplatePlacement *r, int layers, int per)
{
    int n = 0;
    r[n++] = row(1, 0, specs[0]);
    r[n++] = row(0, 1, specs[3]);
    for (int l = 0; l < layers; l++)
        for (int q = 0; q < per; q++)
            r[n++] = row(q % 3 ? 0 : 1, 2 + l * per + q, specs[q % 4]);
    r[n++] = row(2, 2 + layers * per, specs[1]);
    return n;
}

static void check_rows(const ProgTemplate *tp, const TemplatePlacement *r, int n)
{
    TemplateCursor c = {0, 0, 0, 0};
    CU_ASSERT_EQUAL_FATAL(tp->n_pl, n);
    for (int k = 0; k < n; k++) {
        TemplatePlacement x = template_placement_next(tp, &c);
        CU_ASSERT_FATAL(x.role == r[k].role && x.ordinal == r[k].ordinal && x.spec == r[k].spec &&
                        x.spec_len == r[k].spec_len);
    }
}

static void test_runs(void)
{
    TemplatePlacement r[4096];
    ProgTemplate tp;
    memset(&tp, 0, sizeof tp);
    int n = layered_rows(r, 100, 20);
    CU_ASSERT_EQUAL_FATAL(template_set_placements(&tp, r, n), 0);
    check_rows(&tp, r, n);
    /* a hundred layers' rows held as one layer's block and a few runs */
    int held = tp.run[tp.n_runs - 1].at + tp.run[tp.n_runs - 1].len;
    CU_ASSERT(held <= 2 * 20 + 3);
    CU_ASSERT(tp.n_runs <= 4);
    /* rows without a pattern: kept as they are */
    srand(7);
    for (int k = 0; k < 1000; k++)
        r[k] = row(rand() % 3, rand() % 50, specs[rand() % 4]);
    CU_ASSERT_EQUAL_FATAL(template_set_placements(&tp, r, 1000), 0);
    check_rows(&tp, r, 1000);
    /* short repeats inside random rows */
    for (int k = 100; k < 400; k++)
        r[k] = row(k % 2, 7 + (k - 100) / 2 * 3 + k % 2, specs[k % 2]);
    CU_ASSERT_EQUAL_FATAL(template_set_placements(&tp, r, 1000), 0);
    check_rows(&tp, r, 1000);
    template_free(&tp);
}

/* A template of key k with placements of `layers` layers. */
static ProgTemplate make(uint64_t k, int layers)
{
    static TemplatePlacement r[4096];
    ProgTemplate tp;
    memset(&tp, 0, sizeof tp);
    tp.key[0] = k * 0x9e3779b97f4a7c15ULL;
    tp.key[1] = k;
    tp.measured = 1;
    tp.pl_kept = 1;
    tp.e = calloc(2, sizeof *tp.e);
    CU_ASSERT_FATAL(tp.e != NULL);
    tp.e[0].error = strdup("needs 338.5 GiB, 79.0 GiB available");
    CU_ASSERT_FATAL(template_set_placements(&tp, r, layered_rows(r, layers, 7)) == 0);
    return tp;
}

static void test_cap(void)
{
    const size_t cap = 64 << 10;
    TemplateStore s;
    size_t largest = 0;
    memset(&s, 0, sizeof s);
    s.cap_bytes = cap;
    /* 5,000 templates of about 300 bytes: many times the cap */
    for (uint64_t k = 1; k <= 5000; k++) {
        ProgTemplate tp = make(k, 1 + (int)(k % 40));
        CU_ASSERT_EQUAL_FATAL(template_store_put(&s, &tp), 0);
        ProgTemplate *got = template_store_find(&s, (uint64_t[2]){k * 0x9e3779b97f4a7c15ULL, k});
        CU_ASSERT_FATAL(got != NULL);
        if (got->bytes > largest)
            largest = got->bytes;
        /* the cap, with one slot array and one template beyond it */
        CU_ASSERT_FATAL(template_store_bytes(&s) <= cap + largest + 64 * sizeof(ProgTemplate));
        /* template 1, asked for again and again, is never dropped */
        CU_ASSERT_FATAL(template_store_find(&s, (uint64_t[2]){0x9e3779b97f4a7c15ULL, 1}) != NULL);
    }
    CU_ASSERT(s.dropped > 4000);
    /* a key already held keeps its template */
    ProgTemplate again = make(1, 3);
    CU_ASSERT_EQUAL(template_store_put(&s, &again), 0);
    ProgTemplate *one = template_store_find(&s, (uint64_t[2]){0x9e3779b97f4a7c15ULL, 1});
    CU_ASSERT_FATAL(one != NULL);
    CU_ASSERT_EQUAL(one->n_pl, 3 + 2 * 7);
    template_store_clear(&s);
    CU_ASSERT_EQUAL(template_store_bytes(&s), 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"placements as runs come back row for row", test_runs},
        {"the store holds its byte cap", test_cap},
    };
    return CUNIT_RUN("sweep_template", tests);
}
