/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers the report writers share: dtype JAX names, shape
 * text, Alpa's GB, the micro-batches the timelines draw in full and
 * their summaries, Python string literals (the one escaping function of
 * plan.py and the dumps), canonical sharding specs, Python option dicts.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "report_int.h"

const char *rep_dtype_jax(const char *dtype)
{
    static const struct { const char *a, *b; } map[] = {
        {"f32", "float32"}, {"f16", "float16"}, {"bf16", "bfloat16"}, {"f64", "float64"},
        {"i32", "int32"}, {"i64", "int64"}, {"i8", "int8"}, {"u8", "uint8"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (dtype && !strcmp(dtype, map[i].a))
            return map[i].b;
    return dtype && *dtype ? dtype : "float32";
}

void rep_shape_text(const char *shape, int jax, char *out, size_t len)
{
    int64_t dims[APREPORT_MAX_DIMS];
    int n;
    size_t pos = 0;
    assert(out || !len);
    n = costdb_shape_parse(shape, dims, APREPORT_MAX_DIMS);
    if (!len)
        return;
    out[0] = '\0';
    if (n < 0) {
        /* not a shape: a Python string, never raw text in a dump */
        rep_py_quote(shape, shape ? strlen(shape) : 0, out, len);
        return;
    }
    pos += (size_t)snprintf(out, len, "%s", jax ? "[" : "(");
    for (int i = 0; i < n && pos < len; i++)
        pos += (size_t)snprintf(out + pos, len - pos, "%s%lld", i ? (jax ? "," : ", ") : "",
                                (long long)dims[i]);
    if (pos < len)
        snprintf(out + pos, len - pos, "%s", jax ? "]" : n == 1 ? ",)" : ")");
}

double rep_gb(int64_t bytes)
{
    return (double)bytes / (double)(1LL << 30);
}

int rep_micro_shown(const ApreportSchedule *s, int mb)
{
    assert(s);
    return mb < REP_SHOWN_MICRO || mb >= s->micro_batches - REP_SHOWN_MICRO;
}

int rep_micro_summarised(const ApreportSchedule *s, int *first, int *last)
{
    if (s->micro_batches <= 2 * REP_SHOWN_MICRO)
        return 0;
    *first = REP_SHOWN_MICRO;
    *last = s->micro_batches - REP_SHOWN_MICRO - 1;
    return 1;
}

int rep_summaries(const ApreportSchedule *s, RepSummary **out)
{
    int first, last;
    RepSummary *sum;
    *out = NULL;
    if (!rep_micro_summarised(s, &first, &last))
        return 0;
    if (!(sum = calloc((size_t)s->n_stages * 2, sizeof(*sum))))
        return APREPORT_ENOMEM;
    for (size_t i = 0; i < s->n_events; i++) {
        const ApreportEvent *e = &s->events[i];
        RepSummary *u;
        if (rep_micro_shown(s, e->micro_batch) || e->stage < 0 || e->stage >= s->n_stages)
            continue;
        u = &sum[e->stage * 2 + (e->kind >= APREPORT_EV_SEND_ACT)];
        if (!u->events || e->start < u->start)
            u->start = e->start;
        if (!u->events || e->end > u->end)
            u->end = e->end;
        u->events++;
    }
    *out = sum;
    return 0;
}

/* Decodes one UTF-8 sequence at s (at most n bytes): its code point and
 * length, or 0 when it is not valid UTF-8 (overlong, surrogate, too big,
 * cut short). */
static int utf8_decode(const unsigned char *s, size_t n, unsigned long *cp)
{
    int len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    static const unsigned long min[] = {0, 0, 0x80, 0x800, 0x10000};
    unsigned long v;
    if (!len || s[0] > 0xf4 || (size_t)len > n)
        return 0;
    v = s[0] & (0x3f >> (len - 1));
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

void rep_py_quote(const char *s, size_t n, char *out, size_t len)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t pos = 0;
    assert(out || !len);
    if (len < 3) {
        if (len)
            out[0] = '\0';
        return;
    }
    out[pos++] = '\'';
    for (size_t i = 0; i < n && u[i];) {
        char esc[12];
        unsigned long cp;
        int step = 1, k;
        switch (u[i]) {
        case '\\': snprintf(esc, sizeof(esc), "\\\\"); break;
        case '\'': snprintf(esc, sizeof(esc), "\\'"); break;
        case '\n': snprintf(esc, sizeof(esc), "\\n"); break;
        case '\r': snprintf(esc, sizeof(esc), "\\r"); break;
        case '\t': snprintf(esc, sizeof(esc), "\\t"); break;
        default:
            if (u[i] >= 0x20 && u[i] < 0x7f) {
                esc[0] = (char)u[i];
                esc[1] = '\0';
            } else if (u[i] >= 0x80 && (k = utf8_decode(u + i, n - i, &cp)) > 0) {
                snprintf(esc, sizeof(esc), cp > 0xffff ? "\\U%08lx" : "\\u%04lx", cp);
                step = k;
            } else {
                snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
            }
        }
        k = (int)strlen(esc);
        if (pos + (size_t)k + 2 > len)
            break;
        memcpy(out + pos, esc, (size_t)k);
        pos += (size_t)k;
        i += (size_t)step;
    }
    out[pos++] = '\'';
    out[pos] = '\0';
}

void rep_json_string(FILE *f, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)u), pos = 0;
    unsigned long cp;
    char *clean;
    int k, valid = 1;
    assert(f);
    for (size_t i = 0; i < n && valid; i += k > 0 ? (size_t)k : 1) {
        k = u[i] < 0x80 ? 1 : utf8_decode(u + i, n - i, &cp);
        valid = k > 0;
    }
    if (valid) {
        costdb_json_string(f, s ? s : "");
        return;
    }
    clean = malloc(3 * n + 1);
    if (!clean) {
        fputs("null", f);
        return;
    }
    for (size_t i = 0; i < n;) {
        k = u[i] < 0x80 ? 1 : utf8_decode(u + i, n - i, &cp);
        if (k > 0) {
            memcpy(clean + pos, u + i, (size_t)k);
            pos += (size_t)k;
            i += (size_t)k;
        } else {
            memcpy(clean + pos, "\xef\xbf\xbd", 3); /* U+FFFD */
            pos += 3;
            i++;
        }
    }
    clean[pos] = '\0';
    costdb_json_string(f, clean);
    free(clean);
}

void rep_py_string(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0, len = 4 * n + 3;
    char *buf;
    assert(f);
    buf = malloc(len);
    if (!buf) {
        fputs("''", f);
        return;
    }
    rep_py_quote(s, n, buf, len);
    fputs(buf, f);
    free(buf);
}

void rep_py_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        if (*p < 0x20 || *p >= 0x7f) {
            rep_py_string(f, s);
            return;
        }
    fputs(s ? s : "", f);
}

void rep_spec_text(const char *spec, int logical_a, int logical_b, char *out, size_t len)
{
    ApreportLayout l;
    char err[64];
    if (costdb_spec_parse(spec, logical_a, logical_b, &l, err, sizeof(err)) == 0)
        costdb_spec_format(&l, out, len);
    else
        rep_py_quote(spec, spec ? strlen(spec) : 0, out, len);
}

void rep_option_dict(int force_batch_dim, char *out, size_t len)
{
    assert(out && len > 0);
    if (force_batch_dim < 0)
        snprintf(out, len, "{}");
    else
        snprintf(out, len, "{'force_batch_dim_to_mesh_dim': %d}", force_batch_dim);
}

/* Characters a POSIX shell word may hold unquoted. */
static int sh_safe(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("_@%+=:,./-", c));
}

void rep_sh_word(FILE *f, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    int safe = *u != '\0';
    assert(f);
    for (const unsigned char *p = u; *p && safe; p++)
        safe = sh_safe(*p);
    if (safe) {
        fputs((const char *)u, f);
        return;
    }
    fputc('\'', f);
    for (const unsigned char *p = u; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputc('\'', f);
}

void rep_toml_string(FILE *f, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)u);
    assert(f);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned long cp;
        int k;
        switch (u[i]) {
        case '"': fputs("\\\"", f); i++; continue;
        case '\\': fputs("\\\\", f); i++; continue;
        case '\b': fputs("\\b", f); i++; continue;
        case '\t': fputs("\\t", f); i++; continue;
        case '\n': fputs("\\n", f); i++; continue;
        case '\f': fputs("\\f", f); i++; continue;
        case '\r': fputs("\\r", f); i++; continue;
        default: break;
        }
        if (u[i] < 0x20 || u[i] == 0x7f) {
            fprintf(f, "\\u%04x", u[i]);
            i++;
        } else if (u[i] < 0x80) {
            fputc(u[i], f);
            i++;
        } else if ((k = utf8_decode(u + i, n - i, &cp)) > 0) {
            fwrite(u + i, 1, (size_t)k, f);
            i += (size_t)k;
        } else {
            fputs("\\ufffd", f); /* TOML is UTF-8: a stray byte becomes U+FFFD */
            i++;
        }
    }
    fputc('"', f);
}

const char *rep_infeasible_text(const ApreportReport *r)
{
    /* an auto plan stored as infeasible: the search found none that fits;
     * a plan given by hand (3-D, manual, uniform): this one does not */
    if (!strcmp(r->plan.kind, "auto"))
        return "INFEASIBLE PLAN: apsolve found no plan that fits (exit 3); this one does not fit "
               "the devices or their memory. Do not run it as it is.";
    return "INFEASIBLE PLAN: this plan, given to apsolve, does not fit the devices or their "
           "memory (apsolve's auto plan, priced beside it, may). Do not run it as it is.";
}
