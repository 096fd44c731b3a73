/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parsers for the plan text Alpa's ManualStageOption takes, in the
 * Python-ish syntax users copy from their scripts: forward_stage_layer_ids
 * "[[0, 1], [2, 3]]", shapes "[(1, 4), (1, 4)]" (tuples or lists) and option
 * dicts "[{}, {'force_batch_dim_to_mesh_dim': 0}]" (single or double
 * quotes). Errors name the 1-based column.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "grow.h"

typedef struct Parser {
    const char *s;
    size_t pos;
    char *err;
    size_t errlen;
} Parser;

static int perr(Parser *ps, const char *what)
{
    if (ps->err && ps->errlen)
        snprintf(ps->err, ps->errlen, "column %zu: %s", ps->pos + 1, what);
    return APSOLVE_EPARSE;
}

static void skip_ws(Parser *ps)
{
    while (ps->s[ps->pos] == ' ' || ps->s[ps->pos] == '\t' || ps->s[ps->pos] == '\n')
        ps->pos++;
}

/* Consumes c (after blanks) and returns 1, or returns 0 and consumes nothing. */
static int accept(Parser *ps, char c)
{
    skip_ws(ps);
    if (ps->s[ps->pos] == c) {
        ps->pos++;
        return 1;
    }
    return 0;
}

static int parse_int(Parser *ps, int *out)
{
    char *end = NULL;
    long v;
    skip_ws(ps);
    errno = 0;
    v = strtol(ps->s + ps->pos, &end, 10);
    if (end == ps->s + ps->pos)
        return perr(ps, "expected an integer");
    if (errno || v < -1000000000L || v > 1000000000L)
        return perr(ps, "integer out of range");
    ps->pos = (size_t)(end - ps->s);
    *out = (int)v;
    return 0;
}

/* Grows an int array to hold at least n + 1 values. */
static int grow(int **a, size_t n, size_t *cap)
{
    return UTIL_GROW(*a, *cap, n + 1) < 0 ? APSOLVE_ENOMEM : 0;
}

/* After an element: ',' then more (or a trailing ',' before close), or close. */
static int next_or_close(Parser *ps, char close, int *done)
{
    if (accept(ps, ',')) {
        *done = accept(ps, close);
        return 0;
    }
    if (accept(ps, close)) {
        *done = 1;
        return 0;
    }
    return perr(ps, close == ']' ? "expected ',' or ']'" : "expected ',' or ')'");
}

static int finish(Parser *ps)
{
    skip_ws(ps);
    if (ps->s[ps->pos] != '\0')
        return perr(ps, "unexpected text after the list");
    return 0;
}

int apsolve_parse_layer_ids(const char *s, int **starts, int **ends, size_t *n,
                            char *errbuf, size_t errlen)
{
    Parser ps = {s, 0, errbuf, errlen};
    size_t cap_s = 0, cap_e = 0, cnt = 0;
    int *st = NULL, *en = NULL, rc = 0, done = 0;

    if (!s || !starts || !ends || !n)
        return APSOLVE_EINVAL;
    if (!accept(&ps, '['))
        return perr(&ps, "expected '['");
    done = accept(&ps, ']');
    while (!done) {
        int first, prev, v, inner_done = 0;
        if (!accept(&ps, '[')) {
            rc = perr(&ps, "expected '[' opening a stage's layer list");
            goto cleanup;
        }
        if ((rc = parse_int(&ps, &first)))
            goto cleanup;
        if (first < 0) {
            rc = perr(&ps, "layer ids must be >= 0");
            goto cleanup;
        }
        prev = first;
        if ((rc = next_or_close(&ps, ']', &inner_done)))
            goto cleanup;
        while (!inner_done) {
            if ((rc = parse_int(&ps, &v)))
                goto cleanup;
            if (v != prev + 1) {
                rc = perr(&ps, "a stage's layers must be consecutive and ascending");
                goto cleanup;
            }
            prev = v;
            if ((rc = next_or_close(&ps, ']', &inner_done)))
                goto cleanup;
        }
        if ((rc = grow(&st, cnt, &cap_s)) || (rc = grow(&en, cnt, &cap_e)))
            goto cleanup;
        st[cnt] = first;
        en[cnt] = prev;
        cnt++;
        if ((rc = next_or_close(&ps, ']', &done)))
            goto cleanup;
    }
    if ((rc = finish(&ps)))
        goto cleanup;
    *starts = st;
    *ends = en;
    *n = cnt;
    st = en = NULL;
cleanup:
    free(st);
    free(en);
    return rc;
}

int apsolve_parse_shapes(const char *s, int **a, int **b, size_t *n, char *errbuf,
                         size_t errlen)
{
    Parser ps = {s, 0, errbuf, errlen};
    size_t cap_a = 0, cap_b = 0, cnt = 0;
    int *va = NULL, *vb = NULL, rc = 0, done = 0;

    if (!s || !a || !b || !n)
        return APSOLVE_EINVAL;
    if (!accept(&ps, '['))
        return perr(&ps, "expected '['");
    done = accept(&ps, ']');
    while (!done) {
        int x, y;
        char close;
        if (accept(&ps, '('))
            close = ')';
        else if (accept(&ps, '['))
            close = ']';
        else {
            rc = perr(&ps, "expected '(' opening a shape");
            goto cleanup;
        }
        if ((rc = parse_int(&ps, &x)))
            goto cleanup;
        if (!accept(&ps, ',')) {
            rc = perr(&ps, "expected ',' inside a shape");
            goto cleanup;
        }
        if ((rc = parse_int(&ps, &y)))
            goto cleanup;
        accept(&ps, ',');
        if (!accept(&ps, close)) {
            rc = perr(&ps, close == ')' ? "expected ')' closing a shape"
                                        : "expected ']' closing a shape");
            goto cleanup;
        }
        if (x < 1 || y < 1) {
            rc = perr(&ps, "shape dimensions must be >= 1");
            goto cleanup;
        }
        if ((rc = grow(&va, cnt, &cap_a)) || (rc = grow(&vb, cnt, &cap_b)))
            goto cleanup;
        va[cnt] = x;
        vb[cnt] = y;
        cnt++;
        if ((rc = next_or_close(&ps, ']', &done)))
            goto cleanup;
    }
    if ((rc = finish(&ps)))
        goto cleanup;
    *a = va;
    *b = vb;
    *n = cnt;
    va = vb = NULL;
cleanup:
    free(va);
    free(vb);
    return rc;
}

static int parse_key(Parser *ps, char *key, size_t len)
{
    char q;
    size_t k = 0;
    skip_ws(ps);
    q = ps->s[ps->pos];
    if (q != '\'' && q != '"')
        return perr(ps, "expected a quoted option name");
    ps->pos++;
    while (ps->s[ps->pos] && ps->s[ps->pos] != q) {
        if (k + 1 >= len)
            return perr(ps, "option name too long");
        key[k++] = ps->s[ps->pos++];
    }
    if (ps->s[ps->pos] != q)
        return perr(ps, "unterminated option name");
    ps->pos++;
    key[k] = '\0';
    return 0;
}

int apsolve_parse_option_dicts(const char *s, int **force, size_t *n, char *errbuf,
                               size_t errlen)
{
    Parser ps = {s, 0, errbuf, errlen};
    size_t cap = 0, cnt = 0;
    int *vf = NULL, rc = 0, done = 0;

    if (!s || !force || !n)
        return APSOLVE_EINVAL;
    if (!accept(&ps, '['))
        return perr(&ps, "expected '['");
    done = accept(&ps, ']');
    while (!done) {
        int fb = -1, inner_done;
        if (!accept(&ps, '{')) {
            rc = perr(&ps, "expected '{' opening an option dict");
            goto cleanup;
        }
        inner_done = accept(&ps, '}');
        while (!inner_done) {
            char key[64];
            int v;
            if ((rc = parse_key(&ps, key, sizeof key)))
                goto cleanup;
            if (strcmp(key, "force_batch_dim_to_mesh_dim") != 0) {
                rc = perr(&ps, "unknown option (only 'force_batch_dim_to_mesh_dim' is known)");
                goto cleanup;
            }
            if (!accept(&ps, ':')) {
                rc = perr(&ps, "expected ':'");
                goto cleanup;
            }
            if ((rc = parse_int(&ps, &v)))
                goto cleanup;
            if (v < 0 || v > 1) {
                rc = perr(&ps, "force_batch_dim_to_mesh_dim must be 0 or 1");
                goto cleanup;
            }
            fb = v;
            if (accept(&ps, ','))
                inner_done = accept(&ps, '}');
            else if (accept(&ps, '}'))
                inner_done = 1;
            else {
                rc = perr(&ps, "expected ',' or '}'");
                goto cleanup;
            }
        }
        if ((rc = grow(&vf, cnt, &cap)))
            goto cleanup;
        vf[cnt++] = fb;
        if ((rc = next_or_close(&ps, ']', &done)))
            goto cleanup;
    }
    if ((rc = finish(&ps)))
        goto cleanup;
    *force = vf;
    *n = cnt;
    vf = NULL;
cleanup:
    free(vf);
    return rc;
}
