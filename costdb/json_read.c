/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reader of the JSON the database stores (json_read.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"
#include "json_read.h"

int cjr_fail(CjrParser *ps, const char *fmt, ...)
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
        snprintf(ps->err, ps->errlen, "%s: column %zu: %s", ps->what ? ps->what : "json",
                 (size_t)(ps->p - ps->s) + 1, msg);
    return COSTDB_EPARSE;
}

void cjr_skip_ws(CjrParser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

/* A string literal into out (len bytes; longer strings fail). \uXXXX
 * escapes below 0x80 are decoded, others refused (the writer never makes
 * them). */
int cjr_string(CjrParser *ps, char *out, size_t len)
{
    size_t n = 0;
    if (*ps->p != '"')
        return cjr_fail(ps, "a string expected");
    ps->p++;
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '\0')
            return cjr_fail(ps, "unterminated string");
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20)
            return cjr_fail(ps, "control character in a string");
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
                        return cjr_fail(ps, "bad \\u escape");
                    v = v * 16 + (unsigned)d;
                }
                if (v == 0 || v >= 0x80)
                    return cjr_fail(ps, "unsupported \\u escape");
                ps->p += 4;
                c = (unsigned char)v;
            } else {
                const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
                const char *q = e ? strchr(from, e) : NULL;
                if (!q)
                    return cjr_fail(ps, "bad escape");
                c = (unsigned char)to[q - from];
            }
        } else {
            ps->p++;
        }
        if (n + 1 >= len)
            return cjr_fail(ps, "string longer than %zu bytes", len - 1);
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return 0;
}

/* An integer in [lo, hi]. */
int cjr_int(CjrParser *ps, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(ps->p, &end, 10);
    if (end == ps->p || *end == '.' || *end == 'e' || *end == 'E')
        return cjr_fail(ps, "an integer expected");
    if (errno == ERANGE || x < lo || x > hi)
        return cjr_fail(ps, "%lld is outside %lld..%lld", x, lo, hi);
    ps->p = end;
    *v = x;
    return 0;
}

int cjr_number(CjrParser *ps, double *v)
{
    char *end;
    double x;
    if (!(*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')))
        return cjr_fail(ps, "a number expected");
    x = strtod(ps->p, &end);
    if (end == ps->p || !isfinite(x))
        return cjr_fail(ps, "a finite number expected");
    ps->p = end;
    *v = x;
    return 0;
}

int cjr_bool(CjrParser *ps, int *v)
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
    return cjr_fail(ps, "true or false expected");
}

/* Skips any JSON value (a key this reader does not know). */
int cjr_skip_value(CjrParser *ps, int depth)
{
    char tmp[4096];
    cjr_skip_ws(ps);
    if (depth > CJR_MAX_DEPTH)
        return cjr_fail(ps, "nested deeper than %d", CJR_MAX_DEPTH);
    if (*ps->p == '"')
        return cjr_string(ps, tmp, sizeof tmp);
    if (*ps->p == '{' || *ps->p == '[') {
        char close = *ps->p == '{' ? '}' : ']';
        int first = 1;
        ps->p++;
        for (;;) {
            cjr_skip_ws(ps);
            if (*ps->p == close) {
                ps->p++;
                return 0;
            }
            if (!first) {
                if (*ps->p != ',')
                    return cjr_fail(ps, "',' or '%c' expected", close);
                ps->p++;
                cjr_skip_ws(ps);
            }
            first = 0;
            if (close == '}') {
                if (cjr_string(ps, tmp, sizeof tmp))
                    return COSTDB_EPARSE;
                cjr_skip_ws(ps);
                if (*ps->p != ':')
                    return cjr_fail(ps, "':' expected");
                ps->p++;
            }
            if (cjr_skip_value(ps, depth + 1))
                return COSTDB_EPARSE;
        }
    }
    if (!strncmp(ps->p, "null", 4)) {
        ps->p += 4;
        return 0;
    }
    if (*ps->p == 't' || *ps->p == 'f') {
        int b;
        return cjr_bool(ps, &b);
    }
    {
        char *end;
        (void)strtod(ps->p, &end);
        if (end == ps->p)
            return cjr_fail(ps, "a value expected");
        ps->p = end;
    }
    return 0;
}

/* An object whose members go to fn, one key at a time. */
int cjr_object(CjrParser *ps, CjrMemberFn fn, void *ctx, int depth)
{
    char key[64];
    int first = 1;
    cjr_skip_ws(ps);
    if (*ps->p != '{')
        return cjr_fail(ps, "'{' expected");
    ps->p++;
    for (;;) {
        cjr_skip_ws(ps);
        if (*ps->p == '}') {
            ps->p++;
            return 0;
        }
        if (!first) {
            if (*ps->p != ',')
                return cjr_fail(ps, "',' or '}' expected");
            ps->p++;
            cjr_skip_ws(ps);
        }
        first = 0;
        if (cjr_string(ps, key, sizeof key))
            return COSTDB_EPARSE;
        cjr_skip_ws(ps);
        if (*ps->p != ':')
            return cjr_fail(ps, "':' expected after \"%s\"", key);
        ps->p++;
        cjr_skip_ws(ps);
        if (fn(ps, key, ctx, depth))
            return COSTDB_EPARSE;
    }
}

typedef struct MemberText {
    const char *key;
    char *out;
    size_t len;
    int found;
} MemberText;

static int member_text(CjrParser *ps, const char *key, void *ctx, int depth)
{
    MemberText *m = ctx;
    if (strcmp(key, m->key) || *ps->p != '"')
        return cjr_skip_value(ps, depth + 1);
    if (cjr_string(ps, m->out, m->len))
        return COSTDB_EPARSE;
    m->found = 1;
    return 0;
}

int costdb_json_member_text(const char *json, const char *key, char *out, size_t len)
{
    MemberText m = {key, out, len, 0};
    CjrParser ps = {json, json, "json", NULL, 0, 0};
    if (!out || len == 0)
        return -1;
    out[0] = '\0';
    if (!json || !key)
        return -1;
    cjr_skip_ws(&ps);
    if (*ps.p != '{' || cjr_object(&ps, member_text, &m, 0) || !m.found) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

/* One member of a JSON object: a non-negative integer (ival) or any
 * number (dval), found by key at the top level. */
typedef struct Member {
    const char *key;
    long long *ival;
    double *dval;
    int found;
} Member;

static int member_value(CjrParser *ps, const char *key, void *ctx, int depth)
{
    Member *m = ctx;
    int digit = *ps->p >= '0' && *ps->p <= '9';
    if (strcmp(key, m->key) || !(digit || (m->dval && *ps->p == '-')))
        return cjr_skip_value(ps, depth + 1);
    if (m->ival ? cjr_int(ps, 0, (long long)1 << 53, m->ival) : cjr_number(ps, m->dval))
        return COSTDB_EPARSE;
    m->found = 1;
    return 0;
}

static int member_find(const char *json, Member *m)
{
    CjrParser ps = {json, json, "json", NULL, 0, 0};
    if (!json || !m->key)
        return -1;
    cjr_skip_ws(&ps);
    if (*ps.p != '{' || cjr_object(&ps, member_value, m, 0) || !m->found)
        return -1;
    return 0;
}

int costdb_json_member_int(const char *json, const char *key, long long *out)
{
    long long v = 0;
    Member m = {key, &v, NULL, 0};
    if (!out)
        return -1;
    *out = 0;
    if (member_find(json, &m))
        return -1;
    *out = v;
    return 0;
}

int costdb_json_member_number(const char *json, const char *key, double *out)
{
    double v = 0;
    Member m = {key, NULL, &v, 0};
    if (!out)
        return -1;
    *out = 0;
    if (member_find(json, &m))
        return -1;
    *out = v;
    return 0;
}
