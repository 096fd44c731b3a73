/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sharding layouts: Alpa ShardingSpec text to and from ApreportLayout, the
 * SBP (split / broadcast / partial-sum) of a layout per mesh axis, the
 * classification of layout conversions and the verdict per tensor
 * (docs/alpa-semantics.md "Sharding specs"). The text format is the one the profiler's
 * sharding pass writes: per dimension NoSharding() or Chunked(k); then per
 * mesh axis of size > 1, in axis order, ShardedAxis(axis=i) (i = the index
 * among the chunked dimensions) or Replicated(replicas=r); a dimension split
 * over both axes is one Chunked(a*b) with one ShardedAxis entry; a fully
 * replicated tensor has the single entry Replicated(replicas=a*b).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apreport.h"

const char *apreport_strerror(int err)
{
    switch (err) {
    case APREPORT_OK: return "success";
    case APREPORT_ENOMEM: return "out of memory";
    case APREPORT_EINVAL: return "invalid argument";
    case APREPORT_EPARSE: return "malformed sharding spec";
    case APREPORT_EDB: return "database error";
    case APREPORT_EIO: return "cannot write output";
    case APREPORT_ENOTFOUND: return "not found";
    case APREPORT_ESOLVE: return "solver failed";
    case APREPORT_EINFEASIBLE:
        return "the plan is infeasible: no paste-ready code (apreport --allow-infeasible writes it "
               "marked as such)";
    default: return "unknown error";
    }
}

static void cat(char *out, size_t len, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos >= len)
        return;
    if (n >= len - *pos)
        n = len - *pos - 1;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
}

void apreport_spec_format(const ApreportLayout *l, char *out, size_t len)
{
    size_t pos = 0;
    char buf[64];
    int a, b, n[2], chunk_of_dim[APREPORT_MAX_DIMS], ct = 0, entries = 0;
    if (!out || len == 0)
        return;
    out[0] = '\0';
    if (!l || l->ndim < 0 || l->ndim > APREPORT_MAX_DIMS)
        return;
    a = l->logical_a, b = l->logical_b;
    n[0] = a, n[1] = b;
    cat(out, len, &pos, "ShardingSpec((");
    for (int d = 0; d < l->ndim; d++) {
        int x = l->mesh_axis_of_dim[d];
        chunk_of_dim[d] = -1;
        if (d)
            cat(out, len, &pos, ", ");
        if (x < 0) {
            cat(out, len, &pos, "NoSharding()");
        } else {
            snprintf(buf, sizeof(buf), "Chunked(%d)", x == 2 ? a * b : n[x]);
            cat(out, len, &pos, buf);
            chunk_of_dim[d] = ct++;
        }
    }
    cat(out, len, &pos, l->ndim == 1 ? ",), (" : "), (");
    if (ct == 0) {
        snprintf(buf, sizeof(buf), "Replicated(replicas=%d)", a * b);
        cat(out, len, &pos, buf);
        entries = 1;
    } else {
        for (int x = 0; x < 2; x++) {
            int dim = -1, both = 0;
            if (n[x] <= 1)
                continue;
            for (int d = 0; d < l->ndim; d++)
                if (l->mesh_axis_of_dim[d] == x || l->mesh_axis_of_dim[d] == 2) {
                    dim = d;
                    both = l->mesh_axis_of_dim[d] == 2;
                }
            if (both && x == 1)
                continue;
            if (dim >= 0)
                snprintf(buf, sizeof(buf), "ShardedAxis(axis=%d)", chunk_of_dim[dim]);
            else
                snprintf(buf, sizeof(buf), "Replicated(replicas=%d)", n[x]);
            if (entries++)
                cat(out, len, &pos, ", ");
            cat(out, len, &pos, buf);
        }
    }
    cat(out, len, &pos, entries == 1 ? ",))" : "))");
}

/* ---- parsing ------------------------------------------------------------- */

typedef struct {
    const char *s, *p;
    char *err;
    size_t errlen;
} Parser;

static int fail(Parser *ps, const char *what)
{
    if (ps->err && ps->errlen)
        snprintf(ps->err, ps->errlen, "column %d: %s", (int)(ps->p - ps->s) + 1, what);
    return APREPORT_EPARSE;
}

static void ws(Parser *ps)
{
    while (*ps->p && isspace((unsigned char)*ps->p))
        ps->p++;
}

static int lit(Parser *ps, const char *word)
{
    size_t n = strlen(word);
    ws(ps);
    if (strncmp(ps->p, word, n))
        return 0;
    ps->p += n;
    return 1;
}

static int number(Parser *ps, long *out)
{
    char *end;
    ws(ps);
    if (!isdigit((unsigned char)*ps->p))
        return fail(ps, "expected a number");
    errno = 0;
    *out = strtol(ps->p, &end, 10);
    if (errno || *out > 1 << 20)
        return fail(ps, "number out of range");
    ps->p = end;
    return 0;
}

/* Parses "(" item ("," item)* [","] ")" where item is Name(...) handled by
 * fn; an empty "()" is allowed. */
typedef int (*ItemFn)(Parser *ps, void *ctx);

static int tuple(Parser *ps, ItemFn fn, void *ctx)
{
    if (!lit(ps, "("))
        return fail(ps, "expected '('");
    if (lit(ps, ")"))
        return 0;
    for (;;) {
        int rc = fn(ps, ctx);
        if (rc < 0)
            return rc;
        if (lit(ps, ")"))
            return 0;
        if (!lit(ps, ","))
            return fail(ps, "expected ',' or ')'");
        if (lit(ps, ")"))
            return 0;
    }
}

typedef struct {
    int ndim;
    long chunks[APREPORT_MAX_DIMS];   /* 0: NoSharding */
    int n_map;
    long map_sharded[2 * APREPORT_MAX_DIMS + 2]; /* chunk index, or -1 */
    long map_replicas[2 * APREPORT_MAX_DIMS + 2];
} Raw;

static int dim_item(Parser *ps, void *ctx)
{
    Raw *r = ctx;
    long k = 0;
    int rc;
    if (r->ndim >= APREPORT_MAX_DIMS)
        return fail(ps, "too many dimensions");
    if (lit(ps, "NoSharding()")) {
        r->chunks[r->ndim++] = 0;
        return 0;
    }
    if (!lit(ps, "Chunked("))
        return fail(ps, "expected NoSharding() or Chunked(k)");
    lit(ps, "chunks=");
    lit(ps, "[");
    if ((rc = number(ps, &k)) < 0)
        return rc;
    lit(ps, "]");
    if (!lit(ps, ")"))
        return fail(ps, "expected ')' after the chunk count");
    if (k < 1)
        return fail(ps, "chunk count must be positive");
    r->chunks[r->ndim++] = k;
    return 0;
}

static int map_item(Parser *ps, void *ctx)
{
    Raw *r = ctx;
    long v = 0;
    int rc, sharded;
    if (r->n_map >= (int)(sizeof(r->map_sharded) / sizeof(r->map_sharded[0])))
        return fail(ps, "too many mesh mapping entries");
    if (lit(ps, "ShardedAxis(")) {
        sharded = 1;
        lit(ps, "axis=");
    } else if (lit(ps, "Replicated(")) {
        sharded = 0;
        lit(ps, "replicas=");
    } else {
        return fail(ps, "expected ShardedAxis(axis=i) or Replicated(replicas=r)");
    }
    if ((rc = number(ps, &v)) < 0)
        return rc;
    if (!lit(ps, ")"))
        return fail(ps, "expected ')'");
    r->map_sharded[r->n_map] = sharded ? v : -1;
    r->map_replicas[r->n_map] = sharded ? 0 : v;
    r->n_map++;
    return 0;
}

int apreport_spec_parse(const char *text, int logical_a, int logical_b, ApreportLayout *out,
                        char *err, size_t errlen)
{
    Parser ps = {text, text, err, errlen};
    Raw r;
    int rc, n[2] = {logical_a, logical_b}, dim_of_chunk[APREPORT_MAX_DIMS], ct = 0, idx = 0;
    if (!text || !out || logical_a < 1 || logical_b < 1)
        return APREPORT_EINVAL;
    memset(&r, 0, sizeof(r));
    memset(out, 0, sizeof(*out));
    if (!lit(&ps, "ShardingSpec("))
        return fail(&ps, "expected 'ShardingSpec('");
    lit(&ps, "sharding=");
    if ((rc = tuple(&ps, dim_item, &r)) < 0)
        return rc;
    if (!lit(&ps, ","))
        return fail(&ps, "expected ',' after the dimensions");
    lit(&ps, "mesh_mapping=");
    if ((rc = tuple(&ps, map_item, &r)) < 0)
        return rc;
    if (!lit(&ps, ")"))
        return fail(&ps, "expected ')' closing ShardingSpec");
    ws(&ps);
    if (*ps.p)
        return fail(&ps, "trailing text");
    out->ndim = r.ndim;
    out->logical_a = logical_a;
    out->logical_b = logical_b;
    for (int d = 0; d < r.ndim; d++) {
        out->mesh_axis_of_dim[d] = -1;
        if (r.chunks[d])
            dim_of_chunk[ct++] = d;
    }
    if (ct == 0) {
        if (r.n_map != 1 || r.map_sharded[0] >= 0 || r.map_replicas[0] != logical_a * logical_b)
            return fail(&ps, "an unsharded tensor needs one Replicated(replicas=a*b) entry");
        return 0;
    }
    for (int x = 0; x < 2; x++) {
        if (n[x] <= 1)
            continue;
        if (x == 1 && idx > 0 && r.map_sharded[idx - 1] >= 0 &&
            out->mesh_axis_of_dim[dim_of_chunk[r.map_sharded[idx - 1]]] == 2)
            continue; /* covered by the entry of a dimension split over both */
        if (idx >= r.n_map)
            return fail(&ps, "too few mesh mapping entries for the logical mesh");
        if (r.map_sharded[idx] < 0) {
            if (r.map_replicas[idx] != n[x])
                return fail(&ps, "Replicated(replicas=r) does not match the mesh axis size");
        } else {
            long k = r.map_sharded[idx];
            int d;
            if (k >= ct)
                return fail(&ps, "ShardedAxis names no chunked dimension");
            d = dim_of_chunk[k];
            if (out->mesh_axis_of_dim[d] != -1)
                return fail(&ps, "a dimension is mapped twice");
            if (r.chunks[d] == n[x])
                out->mesh_axis_of_dim[d] = x;
            else if (x == 0 && n[1] > 1 && r.chunks[d] == (long)n[0] * n[1])
                out->mesh_axis_of_dim[d] = 2;
            else
                return fail(&ps, "chunk count does not match the mesh axis size");
        }
        idx++;
    }
    if (idx != r.n_map)
        return fail(&ps, "too many mesh mapping entries for the logical mesh");
    for (int k = 0; k < ct; k++)
        if (out->mesh_axis_of_dim[dim_of_chunk[k]] == -1 && r.chunks[dim_of_chunk[k]] > 1)
            return fail(&ps, "a chunked dimension has no mesh axis");
    return 0;
}

int apreport_shape_parse(const char *s, int64_t *dims, int cap)
{
    int n = 0;
    const char *p = s;
    if (!s)
        return -1;
    while (*p == ' ' || *p == '(' || *p == '[')
        p++;
    if (!*p || *p == ')' || *p == ']')
        return 0;
    for (;;) {
        char *end;
        long long v;
        errno = 0;
        v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || n >= cap)
            return -1;
        dims[n++] = v;
        p = end;
        while (*p == ' ')
            p++;
        if (*p == ',') {
            p++;
            while (*p == ' ')
                p++;
            if (!*p || *p == ')' || *p == ']')
                return n;
            continue;
        }
        if (!*p || *p == ')' || *p == ']')
            return n;
        return -1;
    }
}

/* ---- SBP, conversions, verdicts ------------------------------------------ */

ApreportSbp apreport_layout_sbp(const ApreportLayout *l, int axis)
{
    ApreportSbp s = {APREPORT_SBP_B, -1};
    int size = axis == 0 ? l->logical_a : l->logical_b;
    if (size <= 1)
        return s;
    for (int d = 0; d < l->ndim; d++)
        if (l->mesh_axis_of_dim[d] == axis || l->mesh_axis_of_dim[d] == 2) {
            s.kind = APREPORT_SBP_S;
            s.dim = d;
        }
    return s;
}

ApreportConversion apreport_classify(ApreportSbp src, ApreportSbp dst)
{
    switch (src.kind) {
    case APREPORT_SBP_S:
        if (dst.kind == APREPORT_SBP_B)
            return APREPORT_CONV_SPLIT_GATHER;
        if (dst.kind == APREPORT_SBP_P)
            return APREPORT_CONV_SPLIT_PSUM;
        return src.dim == dst.dim ? APREPORT_CONV_NONE : APREPORT_CONV_SPLIT_SPLIT;
    case APREPORT_SBP_P:
        if (dst.kind == APREPORT_SBP_B)
            return APREPORT_CONV_PSUM_ALLREDUCE;
        if (dst.kind == APREPORT_SBP_S)
            return APREPORT_CONV_PSUM_REDUCE_SCATTER;
        return APREPORT_CONV_NONE;
    case APREPORT_SBP_B:
    default:
        if (dst.kind == APREPORT_SBP_S)
            return APREPORT_CONV_BCAST_SPLIT;
        if (dst.kind == APREPORT_SBP_P)
            return APREPORT_CONV_BCAST_PSUM;
        return APREPORT_CONV_NONE;
    }
}

const char *apreport_conversion_name(ApreportConversion c)
{
    static const char *const names[] = {
        "none", "split->gather", "partial-sum->all-reduce", "partial-sum->reduce-scatter",
        "broadcast->split", "broadcast->partial-sum", "split->split", "split->partial-sum",
    };
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

const char *apreport_conversion_collective(ApreportConversion c)
{
    static const char *const names[] = {
        "none", "all-gather", "all-reduce", "reduce-scatter", "local slice",
        "zero non-root replicas", "all-to-all", "zero padding",
    };
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

int apreport_conversion_flagged(ApreportConversion c, const char *role)
{
    return c == APREPORT_CONV_BCAST_PSUM && role && !strcmp(role, "param");
}

ApreportVerdict apreport_verdict(const char *role, const char *name, const ApreportLayout *l)
{
    int split = 0, only_batch = 1;
    if (l->logical_a * l->logical_b <= 1)
        return APREPORT_VERDICT_SINGLE;
    for (int d = 0; d < l->ndim; d++)
        if (l->mesh_axis_of_dim[d] >= 0) {
            split = 1;
            if (d != 0)
                only_batch = 0;
        }
    if (role && !strcmp(role, "param")) {
        if (!split)
            return APREPORT_VERDICT_REPLICATED;
        return name && strstr(name, "opt_state") ? APREPORT_VERDICT_SHARDED_OPT
                                                 : APREPORT_VERDICT_SHARDED_WEIGHT;
    }
    if (!split)
        return APREPORT_VERDICT_ACT_REPLICATED;
    return only_batch ? APREPORT_VERDICT_BATCH_SHARDED : APREPORT_VERDICT_ACT_SHARDED;
}

const char *apreport_verdict_name(ApreportVerdict v)
{
    static const char *const names[] = {
        "single device",
        "replicated (data parallel)",
        "sharded weight (tensor/model parallel)",
        "sharded optimizer state",
        "sharded on the batch axis only (data parallel)",
        "replicated activation",
        "sharded activation (model parallel)",
    };
    return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}
