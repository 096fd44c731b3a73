/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The database's text formats (costdb_text.h): Alpa's ShardingSpec text of
 * a placement, written by the profiler and read by the solver and the
 * reports; shape text ("2048,8192"); dtype names and their sizes. One
 * writer and one reader each (docs/alpa-semantics.md, "Sharding specs").
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "costdb_text.h"

/* ---- writing --------------------------------------------------------------- */

/* Appends s at *pos, truncating at len - 1 (out stays terminated). */
static void cat(char *out, size_t len, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos + n >= len)
        n = *pos + 1 < len ? len - 1 - *pos : 0;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
}

/* Appends prefix, the decimal n and ")" (the spec's numbers are small and
 * non-negative; no printf machinery per placement). */
static void cat_num(char *out, size_t len, size_t *pos, const char *prefix, int n)
{
    char buf[48];
    size_t k = strlen(prefix), d = 0;
    char digits[12];
    unsigned u = n < 0 ? 0u : (unsigned)n;
    memcpy(buf, prefix, k);
    do {
        digits[d++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && d < sizeof digits);
    while (d)
        buf[k++] = digits[--d];
    buf[k++] = ')';
    buf[k] = '\0';
    cat(out, len, pos, buf);
}

/* Follows Alpa's hlo_sharding_to_sharding_spec: one Chunked(k) per split
 * dimension numbered in tensor order, mesh mapping in mesh-axis order over
 * the axes of size > 1 (ShardedAxis(axis=i) or Replicated(replicas=n); a
 * dimension split over both axes is one chunk and one entry), and a fully
 * replicated tensor is (Replicated(replicas=a*b),). */
void costdb_spec_format(const CostdbLayout *l, char *out, size_t len)
{
    size_t pos = 0;
    int ndim, a, b, n[2], chunk_of_dim[COSTDB_MAX_DIMS], ct = 0;
    const int *axis_of_dim;
    if (!out || len == 0)
        return;
    out[0] = '\0';
    if (!l || l->ndim < 0 || l->ndim > COSTDB_MAX_DIMS)
        return;
    ndim = l->ndim;
    axis_of_dim = l->mesh_axis_of_dim;
    a = n[0] = l->logical_a;
    b = n[1] = l->logical_b;
    cat(out, len, &pos, "ShardingSpec((");
    for (int d = 0; d < ndim; d++) {
        int x = axis_of_dim[d];
        chunk_of_dim[d] = -1;
        if (d)
            cat(out, len, &pos, ", ");
        if (x < 0) {
            cat(out, len, &pos, "NoSharding()");
        } else {
            int k = x == 2 ? a * b : n[x];
            cat_num(out, len, &pos, "Chunked(", k);
            chunk_of_dim[d] = ct++;
        }
    }
    cat(out, len, &pos, ndim == 1 ? ",), (" : "), (");
    int entries = 0;
    if (ct == 0) {
        cat_num(out, len, &pos, "Replicated(replicas=", a * b);
        entries = 1;
    } else {
        for (int x = 0; x < 2; x++) {
            if (n[x] <= 1)
                continue;
            int dim = -1, both = 0;
            for (int d = 0; d < ndim; d++)
                if (axis_of_dim[d] == x || axis_of_dim[d] == 2) {
                    dim = d;
                    both = axis_of_dim[d] == 2;
                }
            if (both && x == 1)
                continue; /* one entry for a dimension over both axes */
            if (entries++)
                cat(out, len, &pos, ", ");
            if (dim >= 0)
                cat_num(out, len, &pos, "ShardedAxis(axis=", chunk_of_dim[dim]);
            else
                cat_num(out, len, &pos, "Replicated(replicas=", n[x]);
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
    return COSTDB_EPARSE;
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
    long chunks[COSTDB_MAX_DIMS];   /* 0: NoSharding */
    int n_map;
    long map_sharded[2 * COSTDB_MAX_DIMS + 2]; /* chunk index, or -1 */
    long map_replicas[2 * COSTDB_MAX_DIMS + 2];
} Raw;

static int dim_item(Parser *ps, void *ctx)
{
    Raw *r = ctx;
    long k = 0;
    int rc;
    if (r->ndim >= COSTDB_MAX_DIMS)
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

int costdb_spec_parse(const char *text, int logical_a, int logical_b, CostdbLayout *out,
                      char *err, size_t errlen)
{
    Parser ps = {text, text, err, errlen};
    Raw r;
    int rc, n[2] = {logical_a, logical_b}, dim_of_chunk[COSTDB_MAX_DIMS], ct = 0, idx = 0;
    if (!text || !out || logical_a < 1 || logical_b < 1)
        return COSTDB_EINVAL;
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

int costdb_shape_parse(const char *s, int64_t *dims, int cap)
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

void costdb_shape_format(const int64_t *dims, int n, char *out, size_t len)
{
    size_t off = 0;
    if (!out || len == 0)
        return;
    out[0] = '\0';
    for (int d = 0; d < n && off < len; d++) {
        int w = snprintf(out + off, len - off, "%s%lld", d ? "," : "", (long long)dims[d]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

/* ---- dtypes ---------------------------------------------------------------- */

int costdb_dtype_bytes(const char *dtype)
{
    if (!dtype)
        return 4;
    if (!strcmp(dtype, "f16") || !strcmp(dtype, "bf16") || !strcmp(dtype, "float16") ||
        !strcmp(dtype, "bfloat16") || !strcmp(dtype, "i16"))
        return 2;
    if (!strcmp(dtype, "f64") || !strcmp(dtype, "float64") || !strcmp(dtype, "i64") ||
        !strcmp(dtype, "int64"))
        return 8;
    if (!strcmp(dtype, "i8") || !strcmp(dtype, "int8") || !strcmp(dtype, "u8") ||
        !strcmp(dtype, "bool"))
        return 1;
    return 4;
}

/* ---- shard text -------------------------------------------------------------- */

/* A canonical decimal in 0..max at *s (no sign, no blank, no leading zero):
 * its end, or NULL. */
static const char *shard_number(const char *s, long max, long *out)
{
    long v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
        return NULL;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((v = v * 10 + (*p - '0')) > max)
            return NULL;
    *out = v;
    return p;
}

int costdb_shard_parse(const char *s, int *k, int *n)
{
    long a, b;
    const char *p = s ? shard_number(s, 1L << 20, &a) : NULL;
    if (!p || *p != '/' || !(p = shard_number(p + 1, 1L << 20, &b)) || *p || a >= b)
        return -1;
    *k = (int)a;
    *n = (int)b;
    return 0;
}

int costdb_weight_whole_on_axis1(const CostdbPlacement *pl, int a, int b)
{
    CostdbLayout l;
    char err[8];
    int64_t dims[COSTDB_MAX_DIMS];
    int nd = costdb_shape_parse(pl->shape, dims, COSTDB_MAX_DIMS);
    if (strcmp(pl->role, "param") || nd < 2 ||
        costdb_spec_parse(pl->sharding_spec, a, b, &l, err, sizeof err) < 0 || l.ndim != nd)
        return -1;
    for (int d = 0; d < l.ndim && d < COSTDB_MAX_DIMS; d++)
        if (l.mesh_axis_of_dim[d] == 1 || l.mesh_axis_of_dim[d] == 2)
            return 0;
    return 1;
}

/* Pieces a dimension mapped to mesh axis x of (a, b) is cut into. */
static int axis_pieces(int x, int a, int b)
{
    return x == 0 ? a : x == 1 ? b : x == 2 ? a * b : 1;
}

int costdb_expert_split(const CostdbPlacement *pl, int a, int b, int *ep, int *etp,
                        int64_t *experts)
{
    CostdbLayout l;
    char err[8];
    int64_t dims[COSTDB_MAX_DIMS];
    int nd = costdb_shape_parse(pl->shape, dims, COSTDB_MAX_DIMS), d;
    if (strcmp(pl->role, "param") || !strstr(pl->tensor_name, "/experts/") || nd < 3 ||
        costdb_spec_parse(pl->sharding_spec, a, b, &l, err, sizeof err) < 0 || l.ndim != nd)
        return -1;
    d = nd - 3;
    *ep = axis_pieces(l.mesh_axis_of_dim[d], a, b);
    *etp = 1;
    for (int j = d + 1; j < nd; j++) {
        int inner = axis_pieces(l.mesh_axis_of_dim[j], a, b);
        *etp = inner > *etp ? inner : *etp;
    }
    *experts = dims[d];
    return 0;
}

int costdb_expert_split_stride(const CostdbPlacement *pl, int a, int b)
{
    CostdbLayout l;
    char err[8];
    int64_t dims[COSTDB_MAX_DIMS];
    int nd = costdb_shape_parse(pl->shape, dims, COSTDB_MAX_DIMS), best = 1, axis = -1;
    if (strcmp(pl->role, "param") || !strstr(pl->tensor_name, "/experts/") || nd < 3 ||
        costdb_spec_parse(pl->sharding_spec, a, b, &l, err, sizeof err) < 0 || l.ndim != nd)
        return -1;
    for (int j = nd - 2; j < nd; j++)
        if (axis_pieces(l.mesh_axis_of_dim[j], a, b) > best) {
            best = axis_pieces(l.mesh_axis_of_dim[j], a, b);
            axis = l.mesh_axis_of_dim[j];
        }
    /* a logical mesh is laid out row-major: axis 1's ranks are neighbours,
     * axis 0's b apart (profiler/sharding/sharding_mesh.c) */
    return axis < 0 ? -1 : axis == 0 ? b : 1;
}

int costdb_activation_seq_split(const CostdbPlacement *pl, int a, int b)
{
    CostdbLayout l;
    char err[8];
    if (!strcmp(pl->role, "param") ||
        costdb_spec_parse(pl->sharding_spec, a, b, &l, err, sizeof err) < 0 || l.ndim != 3)
        return -1;
    return l.mesh_axis_of_dim[1] == 1 || l.mesh_axis_of_dim[1] == 2;
}

void costdb_block_key(const char *name, char *key, size_t len)
{
    const char *slash = strchr(name, '/');
    size_t n = slash ? (size_t)(slash - name) : strlen(name), d = n;
    if (!len)
        return;
    key[0] = '\0';
    while (d > 0 && isdigit((unsigned char)name[d - 1]))
        d--;
    if (!slash || d == n || d < 2 || name[d - 1] != '.' || n >= len)
        return;
    memcpy(key, name, n);
    key[n] = '\0';
}

int costdb_attention_name(const char *name)
{
    return strstr(name, "attn") || strstr(name, "attention") || strstr(name, "/query/") ||
           strstr(name, "/key/") || strstr(name, "/value/");
}

typedef struct BlockSeen {
    char key[COSTDB_BLOCK_KEY_MAX];
    size_t stage;
    int attention;
} BlockSeen;

int costdb_stage_blocks(CostdbPlacementAt at, const void *ctx, size_t nstages, int *blocks,
                        char *why, size_t whylen)
{
    BlockSeen *b = NULL;
    size_t nb = 0, cap = 0;
    int rc = -1, any_attention = 0;
    for (size_t k = 0; k < nstages; k++) {
        blocks[k] = 0;
        for (size_t i = 0; at(ctx, k, i); i++)
            cap++;
    }
    if (!(b = calloc(cap ? cap : 1, sizeof *b))) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (size_t k = 0; k < nstages; k++) {
        const CostdbPlacement *pl;
        int params = 0;
        for (size_t i = 0; (pl = at(ctx, k, i)) != NULL; i++) {
            char key[COSTDB_BLOCK_KEY_MAX];
            size_t j;
            if (strcmp(pl->role, "param"))
                continue;
            params++;
            costdb_block_key(pl->tensor_name, key, sizeof key);
            if (!key[0])
                continue;
            for (j = 0; j < nb && strcmp(b[j].key, key); j++)
                ;
            if (j == nb) {
                snprintf(b[nb].key, sizeof b[nb].key, "%s", key);
                b[nb++].stage = k;
                blocks[k]++;
            } else if (b[j].stage != k) {
                snprintf(why, whylen, "transformer block %.60s is split between stages %zu and %zu",
                         key, b[j].stage, k);
                rc = -2;
                goto cleanup;
            }
            if (costdb_attention_name(pl->tensor_name))
                b[j].attention = 1;
        }
        if (!params) {
            snprintf(why, whylen, "stage %zu has no parameter placements in the database", k);
            goto cleanup;
        }
    }
    for (size_t j = 0; j < nb; j++)
        any_attention |= b[j].attention;
    if (!any_attention) {
        snprintf(why, whylen, "the parameter names show no transformer blocks");
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(b);
    return rc;
}
