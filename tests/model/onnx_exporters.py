# SPDX-License-Identifier: Apache-2.0
"""Writes ONNX graphs as exporters write them, for tests/model/cli_onnx_exporters.sh.

  onnx_exporters.py OUTDIR

For each model NAME it writes OUTDIR/NAME.onnx with onnx.helper and, for
the ones that load, OUTDIR/NAME.json: the same network written directly in
approf's model format (schemas/model-format.md), op by op, with the output
shapes ONNX's own rules give (the convolution and pooling sizes are computed
here, not by approf), and OUTDIR/NAME.params: the parameter count, the sum
of the sizes of the initializers an operator reads as a weight or bias.
The test compares approf's parameters and FLOPs of NAME.onnx with those.

  ops11, ops13   every new operator and pattern, at opset 11 (Squeeze and
                 Unsqueeze axes, Dropout ratio as attributes) and opset 13
                 (as inputs): Conv with auto_pad SAME_UPPER, VALID and
                 asymmetric pads, LRN, MaxPool SAME_LOWER, AveragePool, Sum
                 of three, LeakyRelu, Tanh, a lone Sigmoid, Clip, Sub, Div by
                 a tensor, Dropout with its
                 unused mask output, GlobalAveragePool + Squeeze, Unsqueeze +
                 Squeeze, Gemm with a [n] bias, transB + alpha + a [1, n]
                 bias, transA + an [m, n] bias, beta 0
  cnn            a model-zoo style CNN at opset 9 (Caffe2's exports of
                 AlexNet / GoogLeNet): Conv with auto_pad SAME_UPPER and
                 stride 2, LRN, MaxPool with pads [0, 0, 1, 1], a grouped
                 Conv, Sum of a residual and two branches, an AveragePool
                 of one window with pads [0, 0, 1, 1] at stride 1 (the zoo
                 GoogLeNet's last pool), Reshape, Gemm
                 (transB) + Relu + Dropout with its mask output, Softmax
  dec13, dec17,  a decoder block (self-attention and an MLP) as torch.onnx
  dec18          writes it before LayerNormalization and Gelu: LayerNorm
                 decomposed (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
                 Div, Mul, Add; the ReduceMean axes as attribute at opset
                 13 and 17, as input at 18) and GELU as Erf (Div or Mul by
                 1/sqrt 2; the products by x and 0.5 in three orders)
  tanh13, tanh17 the same with GELU's tanh form: x^3 as a Pow (Hugging
                 Face's NewGELU) at 13, as x * (x * x) (torch.onnx) at 17
  ref17          the same block with LayerNormalization and Gelu
  mask_used      refused: a Dropout mask that a Mul reads
  pad_misfit     refused: MaxPool pads [0, 0, 1, 1] at stride 1 (no
                 symmetric padding gives that output)
  squeeze_bad    refused: Squeeze of an axis that is not 1
  ln_leak        refused: a decomposed LayerNorm whose Sub output a node
                 outside it reads
  gelu_leak      refused: an Erf GELU whose Erf output a node outside it
                 reads
  tanh_leak      refused: a tanh GELU whose Tanh output a node outside it
                 reads
"""
import json
import os
import sys

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_models import Builder  # noqa: E402


class IR:
    """A model in approf's JSON model format, and its parameter count."""

    def __init__(self, name, batch):
        self.name, self.batch = name, batch
        self.tensors, self.ops, self.params = [], [], 0

    def input(self, name, shape, batch_dim=0):
        self.tensors.append({"name": name, "role": "input", "dtype": "f32", "shape": shape,
                             "batch_dim": batch_dim})
        return name

    def param(self, name, shape):
        self.tensors.append({"name": name, "role": "param", "dtype": "f32", "shape": shape,
                             "batch_dim": -1})
        n = 1
        for d in shape:
            n *= d
        self.params += n
        return name

    def op(self, name, kind, inputs, out_shape=None, **attrs):
        o = {"name": name, "op": kind, "inputs": inputs}
        o.update(attrs)
        if out_shape is not None:
            o["outputs"] = [{"name": name + ":out0", "shape": out_shape}]
        self.ops.append(o)
        return name + ":out0"

    def save(self, path):
        with open(path + ".json", "w") as f:
            json.dump({"format": "approf-model", "version": 1, "name": self.name, "dtype": "f32",
                       "batch_size": self.batch, "tensors": self.tensors, "ops": self.ops}, f)
        with open(path + ".params", "w") as f:
            f.write("%d\n" % self.params)


def onnx_out(n, k, s, pb, pe):
    """ONNX's output size of a window k at stride s over n padded pb, pe."""
    return (n + pb + pe - k) // s + 1


def same_out(n, s):
    return -(-n // s)


def sym_pad(n, k, s, want):
    """A symmetric padding giving the output size want."""
    for p in range(k + 1):
        if n + 2 * p - k >= 0 and (n + 2 * p - k) // s + 1 == want:
            return p
    raise ValueError("no symmetric padding")


def conv(ir, x, name, n, cin, cout, k, s, want, bias=True, groups=1):
    """ir's conv2d over [b, cin, n, n] giving the ONNX output size want."""
    w = ir.param(name + ".w", [cout, cin // groups, k, k])
    ins = [x, w] + ([ir.param(name + ".b", [cout])] if bias else [])
    p = sym_pad(n, k, s, want)
    return ir.op(name, "conv2d", ins, [ir.batch, cout, want, want], kernel=[k, k], stride=[s, s],
                 padding=[p, p], groups=groups, bias=bias)


def pool(ir, x, name, kind, c, n, k, s, want):
    p = sym_pad(n, k, s, want)
    return ir.op(name, kind, [x], [ir.batch, c, want, want], kernel=[k, k], stride=[s, s], padding=[p, p])


def save(b, path, name, inputs, out, opset):
    g = helper.make_graph(b.nodes, name, inputs, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                          b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path + ".onnx")


def axes_arg(b, node_inputs, name, axes, opset):
    """Squeeze / Unsqueeze axes: an attribute before opset 13, an input from it on."""
    if opset >= 13:
        return node_inputs + [b.const_ints(name + ".axes", axes)], {}
    return node_inputs, {"axes": axes}


def ops(out, opset):
    B, C = 2, 4
    b, ir = Builder(), IR("ops%d" % opset, B)
    x = ir.input("x", [B, C, 8, 8])
    # Conv, auto_pad SAME_UPPER: 8 -> 8
    y = b.node("Conv", ["x", b.init("c1.w", [8, C, 3, 3]), b.init("c1.b", [8])], "c1",
               kernel_shape=[3, 3], auto_pad="SAME_UPPER")
    t = conv(ir, x, "c1", 8, C, 8, 3, 1, same_out(8, 1))
    y = b.node("LRN", [y], "lrn", size=5, alpha=1e-4, beta=0.75, bias=1.0)
    t = ir.op("lrn", "gelu", [t])
    # MaxPool SAME_LOWER, stride 2: 8 -> 4
    y = b.node("MaxPool", [y], "p1", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER")
    t = pool(ir, t, "p1", "max_pool", 8, 8, 3, 2, same_out(8, 2))
    # three branches of 4 -> 2: VALID, asymmetric pads, an average pool
    y2 = b.node("Conv", [y, b.init("c2.w", [8, 8, 2, 2])], "c2", strides=[2, 2], auto_pad="VALID")
    t2 = conv(ir, t, "c2", 4, 8, 8, 2, 2, onnx_out(4, 2, 2, 0, 0), bias=False)
    y3 = b.node("Conv", [y, b.init("c3.w", [8, 8, 3, 3])], "c3", strides=[2, 2], pads=[0, 0, 1, 1])
    t3 = conv(ir, t, "c3", 4, 8, 8, 3, 2, onnx_out(4, 3, 2, 0, 1), bias=False)
    y4 = b.node("AveragePool", [y], "a1", kernel_shape=[2, 2], strides=[2, 2])
    t4 = pool(ir, t, "a1", "avg_pool", 8, 4, 2, 2, onnx_out(4, 2, 2, 0, 0))
    y = ys = b.node("Sum", [y2, y3, y4], "sum")
    t = ts = ir.op("sum", "add", [ir.op("sum/add1", "add", [t2, t3]), t4])
    # standalone activations
    y = b.node("LeakyRelu", [y], "lrelu", alpha=0.1)
    t = ir.op("lrelu", "relu", [t])
    y = b.node("Tanh", [y], "tanh")
    t = ir.op("tanh", "silu", [t])
    y = b.node("Sigmoid", [y], "sigmoid")
    t = ir.op("sigmoid", "silu", [t])
    # Clip (ReLU6, min and max as inputs from opset 11 on), Sub, Div by a tensor
    b.inits += [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (("lo", 0.0), ("hi", 6.0))]
    y = b.node("Clip", [y, "lo", "hi"], "relu6")
    t = ir.op("relu6", "relu", [t])
    z = b.node("Sub", [y, ys], "sub")
    tz = ir.op("sub", "add", [t, ts])
    y = b.node("Div", [y, z], "div")
    t = ir.op("div", "mul", [t, tz])
    # Dropout with its mask output, which nothing reads
    if opset >= 12:
        b.inits.append(helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.1]))
        y = b.node("Dropout", [y, "ratio"], "drop", n_out=2)[0]
    else:
        y = b.node("Dropout", [y], "drop", n_out=2, ratio=0.1)[0]
    t = ir.op("drop", "dropout", [t], rate=0.1)
    # GlobalAveragePool [B, 8, 1, 1] + Squeeze; Unsqueeze + Squeeze: reshapes
    y = b.node("GlobalAveragePool", [y], "gap")
    t = ir.op("gap", "global_pool", [t], [B, 8])
    ins, at = axes_arg(b, [y], "sq1", [2, 3], opset)
    y = b.node("Squeeze", ins, "sq1", **at)
    ins, at = axes_arg(b, [y], "us", [0], opset)
    y = b.node("Unsqueeze", ins, "us", **at)
    ins, at = axes_arg(b, [y], "sq2", [0], opset)
    y = b.node("Squeeze", ins, "sq2", **at)
    # Gemm: bias [n]; transB, alpha and bias [1, n]; transA and bias [m, n]; beta 0
    y = b.node("Gemm", [y, b.init("g1.w", [8, 10]), b.init("g1.b", [10])], "g1")
    t = ir.op("g1", "matmul", [t, ir.param("g1.w", [8, 10]), ir.param("g1.b", [10])], bias=True)
    y = b.node("Gemm", [y, b.init("g2.w", [6, 10]), b.init("g2.b", [1, 6])], "g2", transB=1, alpha=0.5)
    t = ir.op("g2", "matmul", [t, ir.param("g2.w", [6, 10]), ir.param("g2.b", [6])], bias=True,
              transpose_b=True)
    y = b.node("Transpose", [y], "tr", perm=[1, 0])
    t = ir.op("tr", "transpose", [t], perm=[1, 0])
    y = b.node("Gemm", [y, b.init("g3.w", [6, 5]), b.init("g3.c", [B, 5])], "g3", transA=1)
    t = ir.op("g3", "batch_matmul", [t, ir.param("g3.w", [6, 5])], transpose_a=True)
    t = ir.op("g3/bias", "add", [t, ir.param("g3.c", [B, 5])])
    y = b.node("Gemm", [y, b.init("g4.w", [5, 3]), b.init("g4.c", [3])], "g4", beta=0.0)
    t = ir.op("g4", "matmul", [t, ir.param("g4.w", [5, 3])])
    save(b, out, "ops%d" % opset, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, C, 8, 8])], y,
         opset)
    ir.save(out)


def cnn(out):
    b, ir = Builder(), IR("cnn", 1)
    x = ir.input("data", [1, 3, 32, 32])
    # conv1: 5x5 stride 2, auto_pad SAME_UPPER: 32 -> 16
    y = b.node("Conv", ["data", b.init("conv1.w", [16, 3, 5, 5]), b.init("conv1.b", [16])], "conv1",
               kernel_shape=[5, 5], strides=[2, 2], auto_pad="SAME_UPPER")
    t = conv(ir, x, "conv1", 32, 3, 16, 5, 2, same_out(32, 2))
    y = b.node("LRN", [b.node("Relu", [y], "relu1")], "norm1", size=5, alpha=1e-4, beta=0.75)
    t = ir.op("norm1", "gelu", [ir.op("relu1", "relu", [t])])
    # pool1: 3x3 stride 2, pads [0, 0, 1, 1] (Caffe's ceil rounding): 16 -> 8
    y = b.node("MaxPool", [y], "pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1])
    t = pool(ir, t, "pool1", "max_pool", 16, 16, 3, 2, onnx_out(16, 3, 2, 0, 1))
    # conv2: grouped
    y = b.node("Conv", [y, b.init("conv2.w", [32, 8, 3, 3]), b.init("conv2.b", [32])], "conv2",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2)
    t = conv(ir, t, "conv2", 8, 16, 32, 3, 1, 8, groups=2)
    r = b.node("Relu", [y], "relu2")
    tr = ir.op("relu2", "relu", [t])
    ya = b.node("Conv", [r, b.init("conv3a.w", [32, 32, 1, 1])], "conv3a", kernel_shape=[1, 1])
    ta = conv(ir, tr, "conv3a", 8, 32, 32, 1, 1, 8, bias=False)
    yb = b.node("Conv", [r, b.init("conv3b.w", [32, 32, 3, 3])], "conv3b", kernel_shape=[3, 3],
                pads=[1, 1, 1, 1])
    tb = conv(ir, tr, "conv3b", 8, 32, 32, 3, 1, 8, bias=False)
    y = b.node("Sum", [r, ya, yb], "sum3")
    t = ir.op("sum3", "add", [ir.op("sum3/add1", "add", [ta, tb]), tr])
    y = b.node("LRN", [b.node("Relu", [y], "relu3")], "norm3", size=5, alpha=1e-4, beta=0.75)
    t = ir.op("norm3", "gelu", [ir.op("relu3", "relu", [t])])
    y = b.node("MaxPool", [y], "pool3", kernel_shape=[2, 2], strides=[2, 2])
    t = pool(ir, t, "pool3", "max_pool", 32, 8, 2, 2, onnx_out(8, 2, 2, 0, 0))
    # pool5: one 5x5 window over 4x4 with pads [0, 0, 1, 1] at stride 1 (the
    # zoo's GoogLeNet: 7x7 over 6x6), no symmetric padding at stride 1: the
    # IR's one window is any padding that fits it, with any stride
    y = b.node("AveragePool", [y], "pool5", kernel_shape=[5, 5], strides=[1, 1], pads=[0, 0, 1, 1])
    assert onnx_out(4, 5, 1, 0, 1) == 1
    t = ir.op("pool5", "avg_pool", [t], [1, 32, 1, 1], kernel=[5, 5], stride=[3, 3], padding=[1, 1])
    y = b.node("Reshape", [y, b.const_ints("flat_shape", [1, -1])], "flatten")
    t = ir.op("flatten", "reshape", [t], shape=[1, 32])
    y = b.node("Gemm", [y, b.init("fc6.w", [64, 32]), b.init("fc6.b", [64])], "fc6", transB=1)
    t = ir.op("fc6", "matmul", [t, ir.param("fc6.w", [64, 32]), ir.param("fc6.b", [64])], bias=True,
              transpose_b=True)
    y = b.node("Dropout", [b.node("Relu", [y], "relu6")], "drop6", n_out=2, ratio=0.5)[0]
    t = ir.op("drop6", "dropout", [ir.op("relu6", "relu", [t])], rate=0.5)
    y = b.node("Gemm", [y, b.init("fc7.w", [10, 64]), b.init("fc7.b", [10])], "fc7", transB=1)
    t = ir.op("fc7", "matmul", [t, ir.param("fc7.w", [10, 64]), ir.param("fc7.b", [10])], bias=True,
              transpose_b=True)
    y = b.node("Softmax", [y], "prob", axis=1)
    ir.op("prob", "softmax", [t], axis=1)
    save(b, out, "cnn", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 32, 32])], y, 9)
    ir.save(out)


def fconst(b, name, v, as_node=False):
    """A float scalar: an initializer, or a Constant node (as torch writes
    them, just before their reader)."""
    t = helper.make_tensor(name, TensorProto.FLOAT, [], [v])
    if as_node:
        b.nodes.append(helper.make_node("Constant", [], [name], name=name, value=t))
    else:
        b.inits.append(t)
    return name


def layer_norm(b, x, name, opset, leak=False):
    """LayerNorm over the last axis as torch.onnx writes it before opset 17."""
    def mean(v, nm):
        if opset >= 18:
            return b.node("ReduceMean", [v, b.const_ints(nm + ".axes", [-1])], nm)
        return b.node("ReduceMean", [v], nm, axes=[-1])
    m = mean(x, name + ".mean")
    d = b.node("Sub", [x, m], name + ".sub")
    p = b.node("Pow", [d, fconst(b, name + ".two", 2.0, as_node=True)], name + ".pow")
    v = mean(p, name + ".var")
    v = b.node("Add", [v, fconst(b, name + ".eps", 1e-5)], name + ".addeps")
    s = b.node("Sqrt", [v], name + ".sqrt")
    y = b.node("Div", [d, s], name + ".div")
    y = b.node("Mul", [y, b.init(name + ".g", [x_dim(b, x)])], name + ".mul")
    y = b.node("Add", [y, b.init(name + ".b", [x_dim(b, x)])], name + ".add")
    if leak:
        y = b.node("Add", [y, d], "leak")
    return y


def x_dim(b, x):
    return b.hidden


def gelu_erf(b, x, name, order, leak=False):
    """x * 0.5 * (1 + erf(x / sqrt 2)), the products in order 0: (x * a) *
    0.5, 1: (x * 0.5) * a, 2: x * (a * 0.5) (and x * (1 / sqrt 2))."""
    h = b.node("Mul", [x, fconst(b, name + ".half0", 0.5)], name + ".xhalf") if order == 1 else None
    if order == 2:
        q = b.node("Mul", [x, fconst(b, name + ".rsqrt2", 0.7071067811865476, as_node=True)], name + ".div")
    else:
        q = b.node("Div", [x, fconst(b, name + ".sqrt2", 1.4142135623730951, as_node=True)], name + ".div")
    e = b.node("Erf", [q], name + ".erf")
    a = b.node("Add", [e, fconst(b, name + ".one", 1.0, as_node=True)], name + ".add1")
    if order == 0:
        y = b.node("Mul", [b.node("Mul", [x, a], name + ".mulx"), fconst(b, name + ".half", 0.5)], name + ".mulh")
    elif order == 1:
        y = b.node("Mul", [h, a], name + ".mul")
    else:
        y = b.node("Mul", [x, b.node("Mul", [a, fconst(b, name + ".half", 0.5)], name + ".mulh")], name + ".mulx")
    if leak:
        y = b.node("Add", [y, e], "leak")
    return y


def gelu_tanh(b, x, name, cube_by_pow, order, leak=False):
    """x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), x^3 a Pow
    (Hugging Face's NewGELU) or x * (x * x) (torch.onnx's tanh GELU)."""
    h = b.node("Mul", [x, fconst(b, name + ".half0", 0.5)], name + ".xhalf") if order == 1 else None
    if cube_by_pow:
        c = b.node("Pow", [x, fconst(b, name + ".three", 3.0, as_node=True)], name + ".pow")
    else:
        c = b.node("Mul", [x, b.node("Mul", [x, x], name + ".sq")], name + ".cube")
    c = b.node("Mul", [fconst(b, name + ".kappa", 0.044715, as_node=True), c], name + ".kappa_x3")
    c = b.node("Add", [x, c], name + ".inner")
    c = b.node("Mul", [fconst(b, name + ".beta", 0.7978845608028654), c], name + ".scaled")
    a = b.node("Add", [fconst(b, name + ".one", 1.0), b.node("Tanh", [c], name + ".tanh")], name + ".add1")
    if order == 0:
        y = b.node("Mul", [fconst(b, name + ".half", 0.5), b.node("Mul", [x, a], name + ".mulx")], name + ".mulh")
    else:
        y = b.node("Mul", [h, a], name + ".mul")
    if leak:
        y = b.node("Add", [y, name + ".tanh"], "leak")
    return y


def decoder(out, name, opset, ref=False, tanh=None):
    """A decoder block: LayerNorm, self-attention (one head), residual,
    LayerNorm, MLP with GELU, residual."""
    B, S, H = 2, 16, 32
    b, ir = Builder(), IR(name, B)
    b.hidden = H
    x = ir.input("x", [B, S, H])

    def ln(y, t, nm):
        if ref:
            y = b.node("LayerNormalization", [y, b.init(nm + ".g", [H]), b.init(nm + ".b", [H])], nm, axis=-1)
        else:
            y = layer_norm(b, y, nm, opset)
        return y, ir.op(nm, "layer_norm", [t, ir.param(nm + ".g", [H]), ir.param(nm + ".b", [H])])

    def linear(y, t, nm, cin, cout):
        y = b.node("MatMul", [y, b.init(nm + ".w", [cin, cout])], nm)
        y = b.node("Add", [y, b.init(nm + ".bias", [cout])], nm + ".add")
        return y, ir.op(nm, "matmul", [t, ir.param(nm + ".w", [cin, cout]), ir.param(nm + ".bias", [cout])],
                        bias=True)

    y, t = ln("x", x, "ln1")
    q, tq = linear(y, t, "q", H, H)
    k, tk = linear(y, t, "k", H, H)
    v, tv = linear(y, t, "v", H, H)
    kt = b.node("Transpose", [k], "kt", perm=[0, 2, 1])
    tkt = ir.op("kt", "transpose", [tk], perm=[0, 2, 1])
    s = b.node("Softmax", [b.node("MatMul", [q, kt], "scores")], "probs", axis=-1)
    ts = ir.op("probs", "softmax", [ir.op("scores", "batch_matmul", [tq, tkt])], axis=2)
    y = b.node("MatMul", [s, v], "ctx")
    t = ir.op("ctx", "batch_matmul", [ts, tv])
    y, t = linear(y, t, "proj", H, H)
    r = b.node("Add", ["x", y], "res1")
    tr = ir.op("res1", "add", [x, t])
    y, t = ln(r, tr, "ln2")
    y, t = linear(y, t, "fc1", H, 4 * H)
    if ref:
        y = b.node("Gelu", [y], "gelu")
    elif tanh is not None:
        y = gelu_tanh(b, y, "gelu", tanh == "pow", {13: 0}.get(opset, 1))
    else:
        y = gelu_erf(b, y, "gelu", {13: 0, 17: 1}.get(opset, 2))
    t = ir.op("gelu", "gelu", [t])
    y, t = linear(y, t, "fc2", 4 * H, H)
    y = b.node("Add", [r, y], "res2")
    ir.op("res2", "add", [tr, t])
    save(b, out, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, H])], y, opset)
    ir.save(out)


def refused(out, which):
    b = Builder()
    shape = [2, 8] if which != "pad_misfit" else [1, 1, 4, 4]
    if which == "mask_used":
        y, m = b.node("Dropout", ["x"], "drop", n_out=2, ratio=0.1)
        y = b.node("Mul", [y, b.node("Cast", [m], "mask_float", to=TensorProto.FLOAT)], "masked")
        opset = 11
    elif which == "pad_misfit":
        y = b.node("MaxPool", ["x"], "pool", kernel_shape=[2, 2], pads=[0, 0, 1, 1])
        opset = 11
    elif which == "ln_leak":
        b.hidden = 8
        y = layer_norm(b, "x", "ln", 13, leak=True)
        opset = 13
    elif which == "gelu_leak":
        y = gelu_erf(b, "x", "gelu", 0, leak=True)
        opset = 13
    elif which == "tanh_leak":
        y = gelu_tanh(b, "x", "gelu", False, 0, leak=True)
        opset = 13
    else:
        y = b.node("Squeeze", ["x", b.const_ints("axes", [1])], "sq")
        opset = 13
    save(b, out, which, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], y, opset)


if __name__ == "__main__":
    d = sys.argv[1]
    ops(os.path.join(d, "ops11"), 11)
    ops(os.path.join(d, "ops13"), 13)
    cnn(os.path.join(d, "cnn"))
    for o in (13, 17, 18):
        decoder(os.path.join(d, "dec%d" % o), "dec%d" % o, o)
    decoder(os.path.join(d, "ref17"), "ref17", 17, ref=True)
    decoder(os.path.join(d, "tanh13"), "tanh13", 13, tanh="pow")
    decoder(os.path.join(d, "tanh17"), "tanh17", 17, tanh="mul")
    for w in ("mask_used", "pad_misfit", "squeeze_bad", "ln_leak", "gelu_leak", "tanh_leak"):
        refused(os.path.join(d, w), w)
