/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shape arithmetic folded to constants (docs/models.md, section ONNX): the
 * chains exporters write for a reshape of dynamic dims, such as PyTorch's
 * x.view(x.size(0), x.size(1), heads, -1) -- Shape, Gather, Unsqueeze,
 * Concat, Reshape -- are computed here once the input shapes are bound, so
 * that Reshape sees a constant shape. A node folds when its operands are
 * small integer constants (initializers, Constant outputs, folded values)
 * or, for Shape, any tensor; it then defines a constant and adds no
 * operator. torch.onnx's expand(B, 1, -1, -1) adds ConstantOfShape, Mul,
 * Equal and Where over the size vector (fold_logic). Called first by
 * onnx_ops.c's ox_map_node.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "onnx_int.h"

/* The longest folded vector: shapes and indices, not data. */
#define FOLD_MAX 16
/* At most this many folded values in one graph (each one allocation). */
#define FOLD_LIMIT ((size_t)1 << 16)

typedef struct {
    Onnx__TensorProto tp;
    int64_t dims[1];
    int64_t vals[FOLD_MAX];
} OxFold;

/* The integer constant behind input k of at most FOLD_MAX elements and at
 * most rank 1: its count (0..FOLD_MAX) with *rank, or -1. */
static int int_in(Ox *c, const OxNode *nd, int k, int64_t *v, int *rank)
{
    const Onnx__TensorProto *tp = ox_has_input(nd, k) ? ox_const_in(c, nd, k) : NULL;
    int n;
    if (!tp || tp->n_dims > 1)
        return -1;
    n = ox_tp_ints(tp, v, FOLD_MAX);
    *rank = (int)tp->n_dims;
    return n;
}

/* Defines output 0 of nd as the int64 constant v[0..n) of rank 0 or 1. */
static int define(Ox *c, const OxNode *nd, const int64_t *v, int n, int rank)
{
    OxFold *f;
    if (!nd->n->n_output || !nd->n->output[0] || !*nd->n->output[0])
        return 0;
    if (c->n_folds >= FOLD_LIMIT)
        return ox_err(c, APPROF_EINVAL, "%s: more than %zu folded shape constants", nd->what, FOLD_LIMIT);
    if (UTIL_GROW(c->folds, c->cap_folds, c->n_folds + 1) < 0)
        return APPROF_ENOMEM;
    if (!(f = calloc(1, sizeof *f)))
        return APPROF_ENOMEM;
    c->folds[c->n_folds++] = f;
    onnx__tensor_proto__init(&f->tp);
    f->tp.has_data_type = 1;
    f->tp.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    f->dims[0] = n;
    f->tp.n_dims = rank ? 1 : 0;
    f->tp.dims = f->dims;
    memcpy(f->vals, v, sizeof(int64_t) * (size_t)n);
    f->tp.n_int64_data = (size_t)n;
    f->tp.int64_data = f->vals;
    return ox_val_def(c, nd->n->output[0], V_CONST, -1, &f->tp) < 0
               ? ox_err(c, APPROF_EINVAL, "%s: too many values", nd->what) : 0;
}

/* Shape of a tensor or a constant, with opset 15's start and end. */
static int fold_shape(Ox *c, const OxNode *nd)
{
    int vi = nd->n->n_input ? ox_val_find(c, nd->n->input[0]) : -1;
    int64_t d[APPROF_MAX_DIMS], st, en;
    int r;
    if (vi < 0 || c->vals[vi].kind < 0)
        return 1;
    if (c->vals[vi].kind == V_TENSOR) {
        r = T(c, c->vals[vi].idx)->ndim;
        memcpy(d, T(c, c->vals[vi].idx)->dims, sizeof(int64_t) * (size_t)r);
    } else {
        const Onnx__TensorProto *tp = c->vals[vi].tp;
        if (!tp || tp->n_dims > APPROF_MAX_DIMS)
            return 1;
        r = (int)tp->n_dims;
        for (int i = 0; i < r; i++)
            d[i] = tp->dims[i];
    }
    st = ox_attr_i(nd->n, "start", 0);
    en = ox_attr_i(nd->n, "end", r);
    if (st < 0)
        st += r;
    if (en < 0)
        en += r;
    st = st < 0 ? 0 : st > r ? r : st;
    en = en < st ? st : en > r ? r : en;
    return define(c, nd, d + st, (int)(en - st), 1);
}

/* Elementwise Add, Sub, Mul, Div of integer vectors (a scalar or [1]
 * broadcasts). */
static int fold_arith(Ox *c, const OxNode *nd, char op)
{
    int64_t a[FOLD_MAX], b[FOLD_MAX], y[FOLD_MAX];
    int ra = 0, rb = 0, na = int_in(c, nd, 0, a, &ra), nb = int_in(c, nd, 1, b, &rb), n;
    if (na < 1 || nb < 1 || (na != nb && na != 1 && nb != 1))
        return 1;
    n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t x = a[na == 1 ? 0 : i], z = b[nb == 1 ? 0 : i];
        if (op == 'D' && z == 0)
            return ox_err(c, APPROF_EINVAL, "%s: division by zero in a shape computation", nd->what);
        /* shape arithmetic stays far below 2^62: wrap rather than overflow */
        y[i] = op == 'A' ? (int64_t)((uint64_t)x + (uint64_t)z) : op == 'S' ? (int64_t)((uint64_t)x - (uint64_t)z)
               : op == 'M' ? (int64_t)((uint64_t)x * (uint64_t)z) : (x == INT64_MIN && z == -1 ? x : x / z);
    }
    return define(c, nd, y, n, ra || rb);
}

/* An input with a dimension bound to 0: no IR tensor, but a shape that a
 * Shape node may read (torch.onnx computes a past cache's length as
 * Shape(past)[2]); also a constant of known shape and no values (a slice
 * of a mask buffer). */
typedef struct {
    Onnx__TensorProto tp;
    int64_t dims[APPROF_MAX_DIMS];
} OxEmpty;

int ox_def_empty(Ox *c, const char *name, const int64_t *dims, int n)
{
    return ox_def_shaped(c, name, V_EMPTY, 0, dims, n);
}

int ox_def_shaped(Ox *c, const char *name, int kind, int32_t dtype, const int64_t *dims, int n)
{
    OxEmpty *e;
    if (n < 0 || n > APPROF_MAX_DIMS)
        return APPROF_EINVAL;
    if (UTIL_GROW(c->folds, c->cap_folds, c->n_folds + 1) < 0)
        return APPROF_ENOMEM;
    if (!(e = calloc(1, sizeof *e)))
        return APPROF_ENOMEM;
    c->folds[c->n_folds++] = e;
    onnx__tensor_proto__init(&e->tp);
    e->tp.n_dims = (size_t)n;
    e->tp.dims = e->dims;
    e->tp.has_data_type = dtype != 0;
    e->tp.data_type = dtype;
    memcpy(e->dims, dims, sizeof(int64_t) * (size_t)n);
    return ox_val_def(c, name, kind, -1, &e->tp);
}

/* A shape-only node (Identity, Cast, Transpose, Squeeze, Unsqueeze, Split)
 * of an empty input: its outputs are empty too, of the shapes it gives
 * (torch.onnx splits and squeezes a past cache before concatenating it
 * with the new keys). 1 with *rc, else 0. */
static int fold_empty(Ox *c, const OxNode *nd, const char *op, int *rc)
{
    int v = nd->n->n_input ? ox_val_find(c, nd->n->input[0]) : -1, rank, k;
    int64_t d[APPROF_MAX_DIMS], o[APPROF_MAX_DIMS], ax[FOLD_MAX];
    const Onnx__TensorProto *tp;
    if (v < 0 || c->vals[v].kind != V_EMPTY || !(tp = c->vals[v].tp))
        return 0;
    rank = (int)tp->n_dims;
    memcpy(d, tp->dims, sizeof(int64_t) * (size_t)rank);
    *rc = 0;
    if (strcmp(op, "Identity") && strcmp(op, "Cast") && strcmp(op, "Transpose") && strcmp(op, "Squeeze") &&
        strcmp(op, "Unsqueeze") && strcmp(op, "Split"))
        return 0;
    if (strcmp(op, "Split") && (!nd->n->n_output || !nd->n->output[0] || !*nd->n->output[0]))
        return 1;   /* no output: nothing to define */
    if (!strcmp(op, "Identity") || !strcmp(op, "Cast")) {
        *rc = ox_def_empty(c, nd->n->output[0], d, rank);
    } else if (!strcmp(op, "Transpose")) {
        k = ox_attr_ints(nd->n, "perm", ax, APPROF_MAX_DIMS);
        for (int i = 0; k == -1 && i < rank; i++)
            ax[i] = rank - 1 - i;
        if (k != -1 && k != rank)
            return *rc = ox_err(c, APPROF_EPARSE, "%s: field attribute perm: expected %d values", nd->what, rank), 1;
        for (int i = 0; i < rank; i++) {
            if (ax[i] < 0 || ax[i] >= rank)
                return *rc = ox_err(c, APPROF_EPARSE, "%s: field attribute perm: out of range", nd->what), 1;
            o[i] = d[ax[i]];
        }
        *rc = ox_def_empty(c, nd->n->output[0], o, rank);
    } else if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) {
        /* axes: an attribute before opset 13, a constant input from it on */
        int sq = op[0] == 'S', r1, m = 0, out, j = 0;
        unsigned char mark[APPROF_MAX_DIMS] = {0};
        k = ox_attr_ints(nd->n, "axes", ax, APPROF_MAX_DIMS);
        if (k == -1 && ox_has_input(nd, 1))
            k = int_in(c, nd, 1, ax, &r1);
        out = sq ? rank : rank + k;
        if (k < 1 || out > APPROF_MAX_DIMS)
            return *rc = ox_err(c, APPROF_EPARSE, "%s: field axes: expected constant axes", nd->what), 1;
        for (int i = 0; i < k; i++) {
            int64_t x = ax[i] < 0 ? ax[i] + out : ax[i];
            if (x < 0 || x >= out || mark[x])
                return *rc = ox_err(c, APPROF_EPARSE, "%s: field axes: axis %lld out of range or repeated", nd->what,
                                    (long long)ax[i]), 1;
            mark[x] = 1;
        }
        for (int i = 0; i < out; i++) {
            if (sq && !mark[i])
                o[m++] = d[i];
            else if (sq && d[i] != 1)
                return *rc = ox_err(c, APPROF_EPARSE, "%s: field axes: axis %d is not of size 1", nd->what, i), 1;
            else if (!sq)
                o[m++] = mark[i] ? 1 : d[j++];
        }
        *rc = ox_def_empty(c, nd->n->output[0], o, m);
    } else if (!strcmp(op, "Split")) {
        int64_t sizes[APPROF_MAX_OUTPUTS];
        int cnt = (int)nd->n->n_output, a = norm_axis(ox_attr_i(nd->n, "axis", 0), rank), r;
        if (a < 0 || cnt < 1 || cnt > APPROF_MAX_OUTPUTS)
            return *rc = ox_err(c, APPROF_EPARSE, "%s: field attribute axis: out of range", nd->what), 1;
        k = ox_has_input(nd, 1) ? int_in(c, nd, 1, sizes, &r) : ox_attr_ints(nd->n, "split", sizes, APPROF_MAX_OUTPUTS);
        if (k < 0 && !ox_has_input(nd, 1) && d[a] % cnt == 0)
            for (k = 0; k < cnt; k++)
                sizes[k] = d[a] / cnt;
        if (k != cnt)
            return *rc = ox_err(c, APPROF_EPARSE, "%s: field split: expected %d sizes", nd->what, cnt), 1;
        for (int j = 0; j < cnt && *rc >= 0; j++) {
            d[a] = sizes[j];
            if (nd->n->output[j] && *nd->n->output[j])
                *rc = ox_def_empty(c, nd->n->output[j], d, rank);
        }
    } else {
        return 0;
    }
    if (*rc < 0 && *rc != APPROF_ENOMEM)
        *rc = ox_err(c, APPROF_EINVAL, "%s: too many values", nd->what);
    return 1;
}

/* The integer fill of ConstantOfShape (attribute value, one element;
 * absent: float 0, not folded): 1 with *v, else 0. Booleans read as 0/1. */
static int fill_int(const OxNode *nd, int64_t *v)
{
    const Onnx__AttributeProto *a = ox_attr(nd->n, "value");
    const Onnx__TensorProto *t = a ? a->t : NULL;
    if (!t || ox_tp_elements(t) != 1)
        return 0;
    if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
        if (t->n_int32_data == 1)
            *v = t->int32_data[0] != 0;
        else if (t->has_raw_data && t->raw_data.len == 1)
            *v = t->raw_data.data[0] != 0;
        else
            return 0;
        return 1;
    }
    return ox_tp_ints(t, v, 1) == 1;
}

/* The shape math torch.onnx writes for x.expand(B, 1, -1, -1) and
 * torch.full over a computed shape (onnx/docs/Operators.md, opset 17):
 * ConstantOfShape of an integer fill over a vector shape, the comparisons
 * Equal, Less, Greater (OrEqual), Not, And, Or and Where, each over
 * integer vectors (a scalar or [1] broadcasts; booleans as 0 and 1).
 * 1 with *rc when op is one of them, else 0 (*rc 1: not constant). */
static int fold_logic(Ox *c, const OxNode *nd, const char *op, int *rc)
{
    int64_t a[FOLD_MAX], b[FOLD_MAX], w[FOLD_MAX], y[FOLD_MAX];
    int ra = 0, rb = 0, rw = 0, na, nb, nw = 1, n;
    if (!strcmp(op, "ConstantOfShape")) {
        int64_t f;
        if ((na = int_in(c, nd, 0, a, &ra)) == 1 && ra == 1 && a[0] >= 0 && a[0] <= FOLD_MAX && fill_int(nd, &f)) {
            for (int i = 0; i < a[0]; i++)
                y[i] = f;
            *rc = define(c, nd, y, (int)a[0], 1);
        }
        return 1;
    }
    if (!strcmp(op, "Not")) {
        if ((na = int_in(c, nd, 0, a, &ra)) >= 0) {
            for (int i = 0; i < na; i++)
                y[i] = !a[i];
            *rc = define(c, nd, y, na, ra);
        }
        return 1;
    }
    if (strcmp(op, "Equal") && strcmp(op, "Less") && strcmp(op, "Greater") && strcmp(op, "LessOrEqual") &&
        strcmp(op, "GreaterOrEqual") && strcmp(op, "And") && strcmp(op, "Or") && strcmp(op, "Where"))
        return 0;
    if (op[0] == 'W') {
        /* Where(cond, a, b): a and b are inputs 1 and 2 */
        if ((nw = int_in(c, nd, 0, w, &rw)) < 1)
            return 1;
        na = int_in(c, nd, 1, a, &ra);
        nb = int_in(c, nd, 2, b, &rb);
    } else {
        na = int_in(c, nd, 0, a, &ra);
        nb = int_in(c, nd, 1, b, &rb);
    }
    if (na < 1 || nb < 1)
        return 1;
    n = na > nb ? na : nb;
    n = nw > n ? nw : n;
    if ((na != n && na != 1) || (nb != n && nb != 1) || (nw != n && nw != 1))
        return 1;
    for (int i = 0; i < n; i++) {
        int64_t x = a[na == 1 ? 0 : i], z = b[nb == 1 ? 0 : i];
        y[i] = op[0] == 'W' ? (w[nw == 1 ? 0 : i] ? x : z) : !strcmp(op, "Equal") ? x == z
               : !strcmp(op, "Less") ? x < z : !strcmp(op, "Greater") ? x > z : !strcmp(op, "LessOrEqual") ? x <= z
               : !strcmp(op, "GreaterOrEqual") ? x >= z : !strcmp(op, "And") ? (x && z) : (x || z);
    }
    *rc = define(c, nd, y, n, ra || rb || rw);
    return 1;
}

int ox_fold(Ox *c, const OxNode *nd, int *rc)
{
    const char *op = nd->n->op_type ? nd->n->op_type : "";
    int64_t v[FOLD_MAX], w[FOLD_MAX], y[FOLD_MAX];
    int r, n, m;
    if (fold_empty(c, nd, op, rc))
        return 1;
    *rc = 1;
    if (fold_logic(c, nd, op, rc)) {
        ;
    } else if (!strcmp(op, "Shape")) {
        *rc = fold_shape(c, nd);
    } else if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div")) {
        *rc = fold_arith(c, nd, op[0]);
    } else if (!strcmp(op, "Identity") || !strcmp(op, "Cast")) {
        if ((n = int_in(c, nd, 0, v, &r)) >= 0)
            *rc = define(c, nd, v, n, r);
    } else if (!strcmp(op, "Unsqueeze")) {
        /* a scalar to [1] (a vector would become a matrix: not folded) */
        if ((n = int_in(c, nd, 0, v, &r)) == 1 && r == 0)
            *rc = define(c, nd, v, 1, 1);
    } else if (!strcmp(op, "Squeeze")) {
        if ((n = int_in(c, nd, 0, v, &r)) == 1)
            *rc = define(c, nd, v, 1, 0);
    } else if (!strcmp(op, "Gather")) {
        int ri;
        if ((n = int_in(c, nd, 0, v, &r)) >= 0 && r == 1 && (m = int_in(c, nd, 1, w, &ri)) >= 0) {
            for (int i = 0; i < m; i++) {
                int64_t j = w[i] < 0 ? w[i] + n : w[i];
                if (j < 0 || j >= n) {
                    *rc = ox_err(c, APPROF_EINVAL, "%s: field input[1]: index %lld outside %d", nd->what,
                                 (long long)w[i], n);
                    return 1;
                }
                y[i] = v[j];
            }
            *rc = define(c, nd, y, m, ri);
        }
    } else if (!strcmp(op, "Concat")) {
        n = 0;
        for (size_t k = 0; k < nd->n->n_input; k++) {
            m = int_in(c, nd, (int)k, w, &r);
            if (m < 0 || n + m > FOLD_MAX)
                return 0;
            memcpy(y + n, w, sizeof(int64_t) * (size_t)m);
            n += m;
        }
        *rc = nd->n->n_input ? define(c, nd, y, n, 1) : 1;
    } else if (!strcmp(op, "Slice")) {
        int64_t st, en, step = 1, ax = 0;
        int rs;
        if ((n = int_in(c, nd, 0, v, &r)) >= 0 && r == 1 && int_in(c, nd, 1, &st, &rs) == 1 &&
            int_in(c, nd, 2, &en, &rs) == 1 && (!ox_has_input(nd, 3) || int_in(c, nd, 3, &ax, &rs) == 1) &&
            (!ox_has_input(nd, 4) || int_in(c, nd, 4, &step, &rs) == 1) && step == 1 && (ax == 0 || ax == -1)) {
            st = st < 0 ? st + n : st;
            en = en < 0 ? en + n : en;
            st = st < 0 ? 0 : st > n ? n : st;
            en = en < st ? st : en > n ? n : en;
            *rc = define(c, nd, v + st, (int)(en - st), 1);
        }
    }
    return *rc != 1;
}
