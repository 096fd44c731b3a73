/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util: growable arrays (first growth, doubling, a need past the double,
 * nothing to do, zeroed growth, sizes that overflow or cannot be
 * allocated, the array left whole on failure), the JSON writer (one
 * escaping rule for the stream and the buffer, cut buffers, numbers) and
 * text masked for a terminal.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "grow.h"
#include "json_write.h"
#include "text_mask.h"

typedef struct Wide {
    double v[5];
} Wide;

static void test_grow_zero_need(void)
{
    int *a = NULL;
    size_t cap = 0;
    /* nothing asked: nothing allocated */
    CU_ASSERT_EQUAL(UTIL_GROW(a, cap, 0), 0);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(cap, 0);
    CU_ASSERT_EQUAL(util_grow_zero((void **)&a, &cap, 0, sizeof *a), 0);
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(cap, 0);
}

static void test_grow_growth(void)
{
    Wide *w = NULL, *before;
    size_t cap = 0, n = 0, moves = 0;
    /* a first element: UTIL_GROW_MIN of them */
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, 1) == 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    /* within the capacity: the array stays where it is */
    before = w;
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, UTIL_GROW_MIN), 0);
    CU_ASSERT_PTR_EQUAL(w, before);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    /* one past: doubled */
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, UTIL_GROW_MIN + 1) == 0);
    CU_ASSERT_EQUAL(cap, 2 * UTIL_GROW_MIN);
    /* past the double: exactly what was asked */
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, 1000) == 0);
    CU_ASSERT_EQUAL(cap, 1000);
    free(w);
    /* 100000 appends: every element kept, the capacity doubled each time */
    w = NULL;
    cap = 0;
    for (n = 0; n < 100000; n++) {
        size_t old = cap;
        if (UTIL_GROW(w, cap, n + 1) < 0)
            break;
        if (cap != old && ++moves && old && cap != 2 * old) {
            CU_FAIL("the capacity did not double");
            break;
        }
        w[n].v[0] = (double)n;
        w[n].v[4] = -(double)n;
    }
    CU_ASSERT_EQUAL_FATAL(n, 100000);
    CU_ASSERT(cap >= n && cap < 2 * n);
    CU_ASSERT(moves <= 14); /* 16 .. 131072 */
    for (size_t i = 0; i < n; i++)
        if (w[i].v[0] != (double)i || w[i].v[4] != -(double)i) {
            CU_FAIL("an element was lost when the array grew");
            break;
        }
    free(w);
}

static void test_grow_zeroed(void)
{
    unsigned char *b = NULL;
    size_t cap = 0;
    CU_ASSERT_FATAL(util_grow_zero((void **)&b, &cap, 3, 1) == 0);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    for (size_t i = 0; i < cap; i++)
        CU_ASSERT_EQUAL(b[i], 0);
    memset(b, 0xab, cap);
    /* the old bytes kept, every added one zero */
    CU_ASSERT_FATAL(util_grow_zero((void **)&b, &cap, 100, 1) == 0);
    CU_ASSERT_EQUAL(cap, 100);
    for (size_t i = 0; i < cap; i++)
        CU_ASSERT_EQUAL(b[i], i < UTIL_GROW_MIN ? 0xab : 0);
    free(b);
}

static void test_grow_overflow(void)
{
    Wide *w = NULL, *before;
    size_t cap = 0;
    CU_ASSERT_FATAL(UTIL_GROW(w, cap, 5) == 0);
    w[4].v[0] = 42;
    before = w;
    /* need * elem past SIZE_MAX, or past PTRDIFF_MAX: refused before any
     * multiplication, the array and its capacity unchanged */
    errno = 0;
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, SIZE_MAX / sizeof *w + 1), -1);
    CU_ASSERT_EQUAL(errno, ENOMEM);
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, SIZE_MAX), -1);
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, (size_t)PTRDIFF_MAX / sizeof *w + 1), -1);
    CU_ASSERT_EQUAL(util_grow_zero((void **)&w, &cap, SIZE_MAX / 2 + 1, 2), -1);
    CU_ASSERT_EQUAL(util_grow((void **)&w, &cap, cap + 1, SIZE_MAX / 2 + 1), -1);
    CU_ASSERT_PTR_EQUAL(w, before);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    CU_ASSERT_EQUAL(w[4].v[0], 42);
    /* representable but more than memory holds: realloc fails, the same */
    errno = 0;
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, (size_t)PTRDIFF_MAX / sizeof *w), -1);
    CU_ASSERT_EQUAL(errno, ENOMEM);
    CU_ASSERT_PTR_EQUAL(w, before);
    CU_ASSERT_EQUAL(cap, UTIL_GROW_MIN);
    CU_ASSERT_EQUAL(w[4].v[0], 42);
    /* still usable afterwards */
    CU_ASSERT_EQUAL(UTIL_GROW(w, cap, 40), 0);
    CU_ASSERT_EQUAL(w[4].v[0], 42);
    free(w);
}

/* What costdb_json_string writes for s. */
static char *json_of(const char *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    costdb_json_string(f, s);
    fclose(f);
    return text;
}

static void test_json_string(void)
{
    static const struct { const char *in, *out; } cases[] = {
        {"", "\"\""},
        {"plain text", "\"plain text\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"line\nnext\ttab", "\"line\\nnext\\ttab\""},
        {"\x01\x1f\r\b", "\"\\u0001\\u001f\\u000d\\u0008\""},
        {"\x7f/\xc3\xa9", "\"\x7f/\xc3\xa9\""}, /* DEL, '/' and UTF-8 as they are */
    };
    char *t;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        t = json_of(cases[i].in);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_STRING_EQUAL(t, cases[i].out);
        free(t);
    }
    t = json_of(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(t, "\"\"");
    free(t);
}

/* The buffer writer follows the stream writer's rule byte for byte. */
static void test_json_escape_same_rule(void)
{
    for (int c = 1; c < 256; c++) {
        char in[4] = {'x', (char)c, 'y', '\0'}, body[16];
        char *t = json_of(in);
        size_t n = costdb_json_escape(body, sizeof body, in);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        CU_ASSERT_EQUAL(n, strlen(body));
        CU_ASSERT_EQUAL(strlen(t), n + 2);
        CU_ASSERT(t[0] == '"' && !strncmp(t + 1, body, n) && t[n + 1] == '"');
        free(t);
    }
}

static void test_json_escape_cut(void)
{
    char buf[8];
    /* the whole length comes back, as snprintf's; the text is its prefix */
    CU_ASSERT_EQUAL(costdb_json_escape(buf, sizeof buf, "ab\"cd\nef"), 10);
    CU_ASSERT_STRING_EQUAL(buf, "ab\\\"cd\\");
    CU_ASSERT_EQUAL(costdb_json_escape(buf, 3, "\x01"), 6);
    CU_ASSERT_STRING_EQUAL(buf, "\\u");
    CU_ASSERT_EQUAL(costdb_json_escape(buf, 1, "abc"), 3);
    CU_ASSERT_STRING_EQUAL(buf, "");
    memset(buf, 'z', sizeof buf);
    CU_ASSERT_EQUAL(costdb_json_escape(buf, 0, "abc"), 3);
    CU_ASSERT_EQUAL(buf[0], 'z'); /* len 0: nothing written */
    CU_ASSERT_EQUAL(costdb_json_escape(buf, sizeof buf, NULL), 0);
    CU_ASSERT_STRING_EQUAL(buf, "");
    CU_ASSERT_EQUAL(costdb_json_escape(buf, sizeof buf, "1234567"), 7); /* just fits */
    CU_ASSERT_STRING_EQUAL(buf, "1234567");
}

/* One JSON number writer: the shortest of %.15g..%.17g that reads back
 * exactly, null for what JSON cannot hold. */
static void test_json_number(void)
{
    static const double vals[] = {0.1, 0.0576 * 1.0000000000000002, 1.0 / 3, 5e-324, 1e300,
                                  123456789012345678.0, 1200000000000.0, -2.5, 0.0};
    char buf[32];
    CU_ASSERT_STRING_EQUAL(costdb_json_number_text(0.1, buf, sizeof buf), "0.1");
    CU_ASSERT_STRING_EQUAL(costdb_json_number_text(1200000000000.0, buf, sizeof buf),
                           "1200000000000");
    CU_ASSERT_STRING_EQUAL(costdb_json_number_text(1.0 / 3, buf, sizeof buf),
                           "0.3333333333333333");
    CU_ASSERT_STRING_EQUAL(costdb_json_number_text(INFINITY, buf, sizeof buf), "null");
    CU_ASSERT_STRING_EQUAL(costdb_json_number_text(NAN, buf, sizeof buf), "null");
    CU_ASSERT_STRING_EQUAL(costdb_json_number_text(0.1, buf, 8), "");
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        costdb_json_number_text(vals[i], buf, sizeof buf);
        CU_ASSERT_EQUAL(strtod(buf, NULL), vals[i]);
        CU_ASSERT_PTR_NULL(strpbrk(buf, "in")); /* no inf/nan text in JSON */
    }
}

/* Text for a terminal: control characters (and DEL) masked, the rest as
 * it is, cut to the buffer. */
static void test_text_mask(void)
{
    char out[16];
    CU_ASSERT_STRING_EQUAL(costdb_text_mask("\x1b]0;t\x07x\r\n\x7f\xc3\xa9", out, sizeof out),
                           "?]0;t?x???\xc3\xa9");
    CU_ASSERT_STRING_EQUAL(costdb_text_mask("0123456789abcdefgh", out, sizeof out),
                           "0123456789abcde");
    CU_ASSERT_STRING_EQUAL(costdb_text_mask(NULL, out, sizeof out), "");
    CU_ASSERT_STRING_EQUAL(costdb_text_mask("abc", out, 1), "");
    CU_ASSERT_STRING_EQUAL(costdb_text_mask("abc", NULL, 0), "");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"grow: nothing asked", test_grow_zero_need},
        {"grow: first, doubled, past the double, appends", test_grow_growth},
        {"grow: added elements zeroed", test_grow_zeroed},
        {"grow: overflow and no memory", test_grow_overflow},
        {"JSON strings", test_json_string},
        {"JSON buffer escape: the stream's rule", test_json_escape_same_rule},
        {"JSON buffer escape: cut", test_json_escape_cut},
        {"JSON numbers", test_json_number},
        {"text for a terminal", test_text_mask},
    };
    return CUNIT_RUN("util", tests);
}
