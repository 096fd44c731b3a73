/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ONNX reader on hostile files written here byte by byte (a small
 * protobuf writer, so no ONNX tooling is needed): nesting deep enough to
 * overflow a recursive unpacker, 64-bit attributes that do not fit the IR,
 * split sizes whose sum overflows, names the JSON writer could not write
 * back (not UTF-8, too long, clashing) and graphs that reduce to nothing.
 * Each is refused with a message naming the file; what is accepted exports
 * to JSON that loads back to the same graph.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "config.h"
#include "cunit_run.h"
#include "graph.h"
#include "model/modelfile.h"
#include "model/onnx.h"

#define ORIGIN "hostile.onnx"

/* ---- a protobuf writer ---------------------------------------------------- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} Buf;

static void put(Buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            abort();
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void varint(Buf *b, uint64_t v)
{
    unsigned char c;
    do {
        c = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        put(b, &c, 1);
    } while (v);
}

static void f_int(Buf *b, int field, int64_t v)
{
    varint(b, (uint64_t)field << 3);
    varint(b, (uint64_t)v);
}

static void f_bytes(Buf *b, int field, const void *d, size_t n)
{
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, d, n);
}

static void f_str(Buf *b, int field, const char *s)
{
    f_bytes(b, field, s, strlen(s));
}

/* Appends sub as a length-delimited field and frees it. */
static void f_msg(Buf *b, int field, Buf *sub)
{
    f_bytes(b, field, sub->p, sub->n);
    free(sub->p);
    memset(sub, 0, sizeof *sub);
}

/* ValueInfoProto of a float tensor. */
static void value_info(Buf *graph, int field, const char *name, const int64_t *dims, int nd)
{
    Buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (int d = 0; d < nd; d++) {
        Buf dim = {0};
        f_int(&dim, 1, dims[d]);
        f_msg(&sh, 1, &dim);
    }
    f_int(&tt, 1, 1);
    f_msg(&tt, 2, &sh);
    f_msg(&tp, 1, &tt);
    f_str(&vi, 1, name);
    f_msg(&vi, 2, &tp);
    f_msg(graph, field, &vi);
}

static void initializer(Buf *graph, const char *name, const int64_t *dims, int nd)
{
    Buf t = {0};
    for (int d = 0; d < nd; d++)
        f_int(&t, 1, dims[d]);
    f_int(&t, 2, 1);
    f_str(&t, 8, name);
    f_msg(graph, 5, &t);
}

static void attr_int(Buf *node, const char *name, int64_t v)
{
    Buf a = {0};
    f_str(&a, 1, name);
    f_int(&a, 20, 2);
    f_int(&a, 3, v);
    f_msg(node, 5, &a);
}

static void attr_ints(Buf *node, const char *name, const int64_t *v, int n)
{
    Buf a = {0};
    f_str(&a, 1, name);
    f_int(&a, 20, 7);
    for (int i = 0; i < n; i++)
        f_int(&a, 8, v[i]);
    f_msg(node, 5, &a);
}

/* A NodeProto; attrs (may be NULL) holds its attribute fields already. */
static void node(Buf *graph, const char *op, const char *name, const char *in0, const char *in1,
                 const char *out0, const char *out1, Buf *attrs)
{
    Buf n = {0};
    if (in0)
        f_str(&n, 1, in0);
    if (in1)
        f_str(&n, 1, in1);
    f_str(&n, 2, out0);
    if (out1)
        f_str(&n, 2, out1);
    if (name)
        f_str(&n, 3, name);
    f_str(&n, 4, op);
    if (attrs && attrs->n)
        put(&n, attrs->p, attrs->n);
    if (attrs) {
        free(attrs->p);
        memset(attrs, 0, sizeof *attrs);
    }
    f_msg(graph, 1, &n);
}

static void model(Buf *out, Buf *graph, const char *name)
{
    if (name)
        f_str(graph, 2, name);
    f_int(out, 1, 8);
    f_msg(out, 7, graph);
}

/* ---- checks --------------------------------------------------------------- */

static void expect_refused(Buf *m, const char *want1, const char *want2)
{
    ApprofGraph *g = NULL;
    char err[1024] = "";
    int rc = approf_onnx_parse(m->p, m->n, ORIGIN, 0, &g, err, sizeof err);
    CU_ASSERT(rc < 0);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ORIGIN ": "));
    if (want1)
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want1));
    if (want2)
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want2));
    if (rc >= 0 || (want1 && !strstr(err, want1)) || (want2 && !strstr(err, want2)))
        fprintf(stderr, "\n  rc %d, got: %s\n", rc, err);
    approf_graph_free(&g);
    free(m->p);
    memset(m, 0, sizeof *m);
}

/* Accepted, and the JSON export loads back to the same graph. */
static void expect_round_trip(Buf *m)
{
    ApprofGraph *g = NULL, *h = NULL;
    char err[1024] = "", h1[40], h2[40], *json = NULL;
    int rc = approf_onnx_parse(m->p, m->n, ORIGIN, 0, &g, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) {
        fprintf(stderr, "\n  got: %s\n", err);
        goto done;
    }
    CU_ASSERT_EQUAL_FATAL(approf_model_to_json(g, &json), 0);
    rc = approf_model_parse(json, "export.json", &h, err, sizeof err);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc) {
        fprintf(stderr, "\n  export does not load back: %s\n", err);
        goto done;
    }
    approf_graph_hash(g, h1, sizeof h1);
    approf_graph_hash(h, h2, sizeof h2);
    CU_ASSERT_STRING_EQUAL(h1, h2);
done:
    free(json);
    approf_graph_free(&g);
    approf_graph_free(&h);
    free(m->p);
    memset(m, 0, sizeof *m);
}

/* Graph -> Node -> Attribute -> Graph ... depth times around a Relu graph. */
static void nested(Buf *m, int depth)
{
    static const int64_t x[] = {2, 4};
    Buf g = {0};
    value_info(&g, 11, "x", x, 2);
    node(&g, "Relu", "r", "x", NULL, "y", NULL, NULL);
    for (int i = 0; i < depth; i++) {
        Buf a = {0}, attrs = {0}, outer = {0};
        f_str(&a, 1, "then_branch");
        f_int(&a, 20, 5);
        f_msg(&a, 6, &g);
        f_msg(&attrs, 5, &a);
        if (i == depth - 1)
            value_info(&outer, 11, "x", x, 2);
        node(&outer, "If", NULL, "x", NULL, "y", NULL, &attrs);
        g = outer;
    }
    model(m, &g, "nested");
}

static void test_nesting(void)
{
    Buf m = {0};
    /* the audit's file: about 3000 subgraphs crashed protobuf-c's unpacker */
    nested(&m, 3000);
    expect_refused(&m, "nested deeper than", "levels");
    nested(&m, 40);
    expect_refused(&m, "nested deeper than", NULL);
    /* a few levels are read, and refused for what they are: an If */
    nested(&m, 4);
    expect_refused(&m, "unsupported operator 'If'", NULL);
}

/* x[1, 4, 8, 8] -> Conv(w[4, 4, 3, 3]) with the attributes in attrs. */
static void conv(Buf *m, Buf *attrs)
{
    static const int64_t x[] = {1, 4, 8, 8}, w[] = {4, 4, 3, 3};
    Buf g = {0};
    value_info(&g, 11, "x", x, 4);
    initializer(&g, "w", w, 4);
    node(&g, "Conv", "conv", "x", "w", "y", NULL, attrs);
    model(m, &g, "conv");
}

static void test_wide_attributes(void)
{
    static const int64_t x2[] = {2, 4};
    Buf m = {0}, a = {0}, g = {0};
    const int64_t two32 = (int64_t)1 << 32;
    int64_t v[4];

    conv(&m, NULL);
    expect_round_trip(&m);
    v[0] = v[1] = two32 + 3;            /* read as 3 when narrowed */
    attr_ints(&a, "kernel_shape", v, 2);
    conv(&m, &a);
    expect_refused(&m, "node 'conv' (Conv)", "attribute kernel_shape");
    v[0] = v[1] = two32 + 1;
    attr_ints(&a, "strides", v, 2);
    conv(&m, &a);
    expect_refused(&m, "node 'conv' (Conv)", "attribute strides");
    v[0] = v[1] = v[2] = v[3] = two32;  /* read as 0 */
    attr_ints(&a, "pads", v, 4);
    conv(&m, &a);
    expect_refused(&m, "node 'conv' (Conv)", "attribute pads");
    attr_int(&a, "group", two32 + 1);
    conv(&m, &a);
    expect_refused(&m, "node 'conv' (Conv)", "attribute group");

    v[0] = two32 + 1;                   /* read as the permutation [1, 0] */
    v[1] = 0;
    attr_ints(&a, "perm", v, 2);
    value_info(&g, 11, "x", x2, 2);
    node(&g, "Transpose", "tr", "x", NULL, "y", NULL, &a);
    model(&m, &g, "t");
    expect_refused(&m, "node 'tr' (Transpose)", "attribute perm");

    attr_int(&a, "axis", two32 + 1);    /* read as 1 */
    value_info(&g, 11, "x", x2, 2);
    node(&g, "Flatten", "fl", "x", NULL, "y", NULL, &a);
    model(&m, &g, "f");
    expect_refused(&m, "node 'fl' (Flatten)", "attribute axis");
}

static void test_split_sizes(void)
{
    static const int64_t x[] = {2, 8};
    Buf m = {0}, a = {0}, g = {0};
    /* 2^63-1 + 2^63-1 + 10 wraps to 8, the dimension */
    int64_t v[3] = {INT64_MAX, INT64_MAX, 10};
    Buf n = {0};
    attr_int(&a, "axis", 1);
    attr_ints(&a, "split", v, 3);
    value_info(&g, 11, "x", x, 2);
    f_str(&n, 1, "x");
    f_str(&n, 2, "a");
    f_str(&n, 2, "b");
    f_str(&n, 2, "c");
    f_str(&n, 3, "sp");
    f_str(&n, 4, "Split");
    put(&n, a.p, a.n);
    free(a.p);
    f_msg(&g, 1, &n);
    model(&m, &g, "s");
    expect_refused(&m, "node 'sp' (Split)", NULL);
}

static void relu_graph(Buf *m, const char *name1, const char *name2, const char *graph_name)
{
    static const int64_t x[] = {2, 4};
    Buf g = {0};
    value_info(&g, 11, "x", x, 2);
    node(&g, "Relu", name1, "x", NULL, "y", NULL, NULL);
    node(&g, "Relu", name2, "y", NULL, "z", NULL, NULL);
    model(m, &g, graph_name);
}

static void test_names(void)
{
    static const int64_t x[] = {2, 4};
    char a[201], b[201], big[5001];
    Buf m = {0}, g = {0};

    relu_graph(&m, "r1", "r2", "ok");
    expect_round_trip(&m);
    relu_graph(&m, "r1\xff\xfe", "r2", "ok");
    expect_refused(&m, "not valid UTF-8", NULL);
    relu_graph(&m, "r1", "r2", "bad\xc3");
    expect_refused(&m, "graph", "not valid UTF-8");
    /* two 200-byte names that share their first 127 bytes */
    memset(a, 'n', 200);
    memcpy(b, a, 200);
    a[199] = 'a';
    b[199] = 'b';
    a[200] = b[200] = '\0';
    relu_graph(&m, a, b, "ok");
    expect_refused(&m, "200 bytes", "at most");
    memset(big, 'g', 5000);
    big[5000] = '\0';
    relu_graph(&m, "r1", "r2", big);
    expect_refused(&m, "field graph.name", "5000 bytes");
    /* two nodes of the same name would export two tensors of one name */
    relu_graph(&m, "same", "same", "ok");
    expect_refused(&m, "'same:out0'", "twice");
    /* only Identity: no operator left */
    value_info(&g, 11, "x", x, 2);
    node(&g, "Identity", "id", "x", NULL, "y", NULL, NULL);
    model(&m, &g, "empty");
    expect_refused(&m, "no operator", NULL);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"nesting depth", test_nesting},
        {"64-bit attributes", test_wide_attributes},
        {"split sizes", test_split_sizes},
        {"names the writer keeps", test_names},
    };
    return CUNIT_RUN("onnx hostile", tests);
}
