/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stored plan options (plan_options.h): one writer and one reader of
 * the JSON object in plan.options. The reader is a small recursive-descent
 * parser of the JSON subset the writer produces (objects, strings, integers,
 * numbers, booleans, null), strict about syntax, tolerant of keys it does
 * not know, and bounded: the text comes from a database someone else may
 * have written.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "plan_options.h"

#define MAX_DEPTH 8

static const char *objective_name(CostdbObjective o)
{
    return o == COSTDB_OBJECTIVE_FULL ? "full" : "alpa";
}

/* Appends s to out as a JSON string literal (quotes, escapes). */
static void put_string(char *out, size_t len, size_t *at, const char *s)
{
    char buf[8];
    size_t n = *at;
    for (const char *p = "\""; *p && n + 1 < len; p++)
        out[n++] = *p;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *e = NULL;
        if (*p == '"')
            e = "\\\"";
        else if (*p == '\\')
            e = "\\\\";
        else if (*p < 0x20) {
            snprintf(buf, sizeof buf, "\\u%04x", *p);
            e = buf;
        }
        if (e) {
            for (; *e && n + 1 < len; e++)
                out[n++] = *e;
        } else if (n + 1 < len) {
            out[n++] = (char)*p;
        }
    }
    if (n + 1 < len)
        out[n++] = '"';
    out[n < len ? n : len - 1] = '\0';
    *at = n;
}

static void put_raw(char *out, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (*at >= len)
        return;
    va_start(ap, fmt);
    w = vsnprintf(out + *at, len - *at, fmt, ap);
    va_end(ap);
    *at += w > 0 ? (size_t)w : 0;
}

int costdb_plan_options_format(const CostdbPlanOptions *o, char *out, size_t len)
{
    size_t at = 0;
    if (!o || !out || len < 2)
        return COSTDB_EINVAL;
    out[0] = '\0';
    put_raw(out, len, &at, "{\"tool\": ");
    put_string(out, len, &at, o->tool);
    put_raw(out, len, &at, ", \"stage_option\": ");
    put_string(out, len, &at, o->stage_option);
    put_raw(out, len, &at,
            ", \"micro_batches\": %d, \"global_batch\": %lld, \"micro_batch_size\": %lld, "
            "\"memory_budget\": %lld, \"max_stages\": %d, \"inference\": %s, "
            "\"objective\": \"%s\", \"schedule\": ",
            o->micro_batches, (long long)o->global_batch, (long long)o->micro_batch_size,
            (long long)o->memory_budget, o->max_stages, o->inference ? "true" : "false",
            objective_name(o->objective));
    put_string(out, len, &at, o->schedule[0] ? o->schedule : "1f1b");
    put_raw(out, len, &at, ", \"virtual_stages\": %d",
            o->virtual_stages > 1 ? o->virtual_stages : 1);
    if (o->has_layout) {
        const CostdbPlanLayout *l = &o->layout;
        put_raw(out, len, &at,
                ", \"parallel\": {\"dp\": %d, \"tp\": %d, \"pp\": %d, \"sp\": %d, "
                "\"zero\": %d, \"recompute\": ",
                l->dp, l->tp, l->pp, l->sp, l->zero);
        put_string(out, len, &at, l->recompute[0] ? l->recompute : "none");
        put_raw(out, len, &at, ", \"vpp\": %d, \"mbs\": %d}", l->vpp > 0 ? l->vpp : 1, l->mbs);
    }
    put_raw(out, len, &at, "}");
    return at < len ? 0 : COSTDB_EINVAL;
}

/* ---- reader ------------------------------------------------------------ */

typedef struct Parser {
    const char *s, *p;
    char *err;
    size_t errlen;
    int failed;
} Parser;

static int fail(Parser *ps, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    if (ps->failed)
        return COSTDB_EPARSE;
    ps->failed = 1;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ps->err && ps->errlen)
        snprintf(ps->err, ps->errlen, "options: column %zu: %s", (size_t)(ps->p - ps->s) + 1, msg);
    return COSTDB_EPARSE;
}

static void skip_ws(Parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

/* A string literal into out (len bytes; longer strings fail). \uXXXX
 * escapes below 0x80 are decoded, others refused (the writer never makes
 * them). */
static int read_string(Parser *ps, char *out, size_t len)
{
    size_t n = 0;
    if (*ps->p != '"')
        return fail(ps, "a string expected");
    ps->p++;
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '\0')
            return fail(ps, "unterminated string");
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20)
            return fail(ps, "control character in a string");
        if (c == '\\') {
            char e = ps->p[1];
            ps->p += 2;
            if (e == 'u') {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = ps->p[i];
                    int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                            : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (d < 0)
                        return fail(ps, "bad \\u escape");
                    v = v * 16 + (unsigned)d;
                }
                if (v == 0 || v >= 0x80)
                    return fail(ps, "unsupported \\u escape");
                ps->p += 4;
                c = (unsigned char)v;
            } else {
                const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
                const char *q = e ? strchr(from, e) : NULL;
                if (!q)
                    return fail(ps, "bad escape");
                c = (unsigned char)to[q - from];
            }
        } else {
            ps->p++;
        }
        if (n + 1 >= len)
            return fail(ps, "string longer than %zu bytes", len - 1);
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return 0;
}

/* An integer in [lo, hi]. */
static int read_int(Parser *ps, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(ps->p, &end, 10);
    if (end == ps->p || *end == '.' || *end == 'e' || *end == 'E')
        return fail(ps, "an integer expected");
    if (errno == ERANGE || x < lo || x > hi)
        return fail(ps, "%lld is outside %lld..%lld", x, lo, hi);
    ps->p = end;
    *v = x;
    return 0;
}

static int read_bool(Parser *ps, int *v)
{
    if (!strncmp(ps->p, "true", 4)) {
        ps->p += 4;
        *v = 1;
        return 0;
    }
    if (!strncmp(ps->p, "false", 5)) {
        ps->p += 5;
        *v = 0;
        return 0;
    }
    return fail(ps, "true or false expected");
}

/* Skips any JSON value (a key this reader does not know). */
static int skip_value(Parser *ps, int depth)
{
    char tmp[4096];
    skip_ws(ps);
    if (depth > MAX_DEPTH)
        return fail(ps, "nested deeper than %d", MAX_DEPTH);
    if (*ps->p == '"')
        return read_string(ps, tmp, sizeof tmp);
    if (*ps->p == '{' || *ps->p == '[') {
        char close = *ps->p == '{' ? '}' : ']';
        int first = 1;
        ps->p++;
        for (;;) {
            skip_ws(ps);
            if (*ps->p == close) {
                ps->p++;
                return 0;
            }
            if (!first) {
                if (*ps->p != ',')
                    return fail(ps, "',' or '%c' expected", close);
                ps->p++;
                skip_ws(ps);
            }
            first = 0;
            if (close == '}') {
                if (read_string(ps, tmp, sizeof tmp))
                    return COSTDB_EPARSE;
                skip_ws(ps);
                if (*ps->p != ':')
                    return fail(ps, "':' expected");
                ps->p++;
            }
            if (skip_value(ps, depth + 1))
                return COSTDB_EPARSE;
        }
    }
    if (!strncmp(ps->p, "null", 4)) {
        ps->p += 4;
        return 0;
    }
    if (*ps->p == 't' || *ps->p == 'f') {
        int b;
        return read_bool(ps, &b);
    }
    {
        char *end;
        (void)strtod(ps->p, &end);
        if (end == ps->p)
            return fail(ps, "a value expected");
        ps->p = end;
    }
    return 0;
}

typedef int (*MemberFn)(Parser *ps, const char *key, void *ctx, int depth);

/* An object whose members go to fn, one key at a time. */
static int read_object(Parser *ps, MemberFn fn, void *ctx, int depth)
{
    char key[64];
    int first = 1;
    skip_ws(ps);
    if (*ps->p != '{')
        return fail(ps, "'{' expected");
    ps->p++;
    for (;;) {
        skip_ws(ps);
        if (*ps->p == '}') {
            ps->p++;
            return 0;
        }
        if (!first) {
            if (*ps->p != ',')
                return fail(ps, "',' or '}' expected");
            ps->p++;
            skip_ws(ps);
        }
        first = 0;
        if (read_string(ps, key, sizeof key))
            return COSTDB_EPARSE;
        skip_ws(ps);
        if (*ps->p != ':')
            return fail(ps, "':' expected after \"%s\"", key);
        ps->p++;
        skip_ws(ps);
        if (fn(ps, key, ctx, depth))
            return COSTDB_EPARSE;
    }
}

#define INT_MEMBER(name, lo, hi, field)                                                        \
    if (!strcmp(key, name)) {                                                                  \
        long long v_;                                                                          \
        if (read_int(ps, lo, hi, &v_))                                                         \
            return COSTDB_EPARSE;                                                              \
        field = v_;                                                                            \
        return 0;                                                                              \
    }

static int layout_member(Parser *ps, const char *key, void *ctx, int depth)
{
    CostdbPlanLayout *l = ctx;
    INT_MEMBER("dp", 1, 1 << 24, l->dp)
    INT_MEMBER("tp", 1, 1 << 24, l->tp)
    INT_MEMBER("pp", 1, 1 << 24, l->pp)
    INT_MEMBER("sp", 0, 1, l->sp)
    INT_MEMBER("zero", 0, 3, l->zero)
    INT_MEMBER("vpp", 1, 1024, l->vpp)
    INT_MEMBER("mbs", 0, 1 << 24, l->mbs)
    if (!strcmp(key, "recompute")) {
        if (read_string(ps, l->recompute, sizeof l->recompute))
            return COSTDB_EPARSE;
        if (strcmp(l->recompute, "none") && strcmp(l->recompute, "selective") &&
            strcmp(l->recompute, "full"))
            return fail(ps, "recompute \"%s\" is not none, selective or full", l->recompute);
        return 0;
    }
    return skip_value(ps, depth + 1);
}

static int options_member(Parser *ps, const char *key, void *ctx, int depth)
{
    CostdbPlanOptions *o = ctx;
    if (!strcmp(key, "tool"))
        return read_string(ps, o->tool, sizeof o->tool);
    if (!strcmp(key, "stage_option"))
        return read_string(ps, o->stage_option, sizeof o->stage_option);
    INT_MEMBER("micro_batches", 0, 1 << 24, o->micro_batches)
    INT_MEMBER("global_batch", 0, (long long)1 << 40, o->global_batch)
    INT_MEMBER("micro_batch_size", 0, (long long)1 << 40, o->micro_batch_size)
    INT_MEMBER("memory_budget", 0, INT64_MAX, o->memory_budget)
    INT_MEMBER("max_stages", 0, 1 << 24, o->max_stages)
    INT_MEMBER("virtual_stages", 1, 1024, o->virtual_stages)
    if (!strcmp(key, "inference"))
        return read_bool(ps, &o->inference);
    if (!strcmp(key, "objective")) {
        char v[16];
        if (read_string(ps, v, sizeof v))
            return COSTDB_EPARSE;
        if (!strcmp(v, "full"))
            o->objective = COSTDB_OBJECTIVE_FULL;
        else if (!strcmp(v, "alpa"))
            o->objective = COSTDB_OBJECTIVE_ALPA;
        else
            return fail(ps, "objective \"%s\" is not full or alpa", v);
        return 0;
    }
    if (!strcmp(key, "schedule")) {
        if (read_string(ps, o->schedule, sizeof o->schedule))
            return COSTDB_EPARSE;
        if (strcmp(o->schedule, "1f1b") && strcmp(o->schedule, "gpipe") &&
            strcmp(o->schedule, "interleaved"))
            return fail(ps, "schedule \"%s\" is not 1f1b, gpipe or interleaved", o->schedule);
        return 0;
    }
    if (!strcmp(key, "parallel")) {
        o->has_layout = 1;
        o->layout = (CostdbPlanLayout){1, 1, 1, 0, 0, 1, 0, "none"};
        return read_object(ps, layout_member, &o->layout, depth + 1);
    }
    return skip_value(ps, depth + 1);
}

int costdb_plan_options_parse(const char *text, CostdbPlanOptions *o, char *err, size_t errlen)
{
    Parser ps = {text, text, err, errlen, 0};
    if (!o)
        return COSTDB_EINVAL;
    memset(o, 0, sizeof *o);
    o->virtual_stages = 1;
    if (err && errlen)
        err[0] = '\0';
    if (!text)
        return 0;
    skip_ws(&ps);
    if (*ps.p == '\0')
        return 0;
    if (read_object(&ps, options_member, o, 0))
        return COSTDB_EPARSE;
    skip_ws(&ps);
    if (*ps.p)
        return fail(&ps, "text after the object");
    return 0;
}
