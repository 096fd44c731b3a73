# SPDX-License-Identifier: Apache-2.0
"""Counts an ONNX graph's trainable parameters and the FLOPs of its
convolutions and matrix products, with python3-onnx alone (no approf code):
the independent figures tests/model/cli_onnx_real.sh checks approf against.

  onnx_counts.py FILE...           one line per file: NAME PARAMS GEMM_FLOPS
  onnx_counts.py --params FILE...  NAME PARAMS only: no shape inference, so
                                   also for graphs of operators onnx does not
                                   know (onnxruntime's com.microsoft ones)

Parameters: the elements of every float tensor a node reads that is an
initializer, or the output of a ConstantOfShape of a constant shape (what
onnx's replace_initializer_by_constant_of_shape writes in place of an
initializer), except BatchNormalization's running mean and variance
(inputs 3 and 4: statistics, not trained), and one-element tensors (a
scale, an epsilon, a masked fill value: constants an exporter may store as
initializers; approf folds them); a tensor read twice counts once.
GEMM FLOPs: 2 per multiply-add of Conv (N Cout Ho Wo Cin/group kh kw),
Gemm (M N K) and MatMul, with the shapes onnx's shape inference gives; bias
additions are not counted.
"""
import sys

import onnx
from onnx import numpy_helper, shape_inference, TensorProto

FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}


def prod(v):
    p = 1
    for x in v:
        p *= int(x)
    return p


def counts(path, params_only=False):
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    consts = {}     # name -> (dtype, dims)
    ints = {t.name: t for t in g.initializer}
    for t in g.initializer:
        consts[t.name] = (t.data_type, list(t.dims))
    for n in g.node:
        if n.op_type == 'ConstantOfShape' and n.input and n.input[0] in ints:
            dims = [int(x) for x in numpy_helper.to_array(ints[n.input[0]]).ravel()]
            val = [a for a in n.attribute if a.name == 'value']
            consts[n.output[0]] = (val[0].t.data_type if val else TensorProto.FLOAT, dims)
    seen = set()
    params = 0
    for n in g.node:
        for k, name in enumerate(n.input):
            if n.op_type == 'BatchNormalization' and k >= 3:
                continue
            if n.op_type == 'ConstantOfShape':
                continue
            if name in consts and name not in seen and consts[name][0] in FLOATS and prod(consts[name][1]) != 1:
                seen.add(name)
                params += prod(consts[name][1])
    if params_only:
        return g.name, params, None
    mi = shape_inference.infer_shapes(m, strict_mode=True)
    shapes = {}
    for v in list(mi.graph.value_info) + list(mi.graph.input) + list(mi.graph.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for name, (_, dims) in consts.items():
        shapes.setdefault(name, dims)
    flops = 0
    for n in g.node:
        if n.op_type == 'Conv':
            w = shapes[n.input[1]]
            y = shapes[n.output[0]]
            flops += 2 * prod(y) * prod(w[1:])
        elif n.op_type == 'Gemm':
            a = shapes[n.input[0]]
            b = shapes[n.input[1]]
            ta = [x.i for x in n.attribute if x.name == 'transA']
            k = a[0] if ta and ta[0] else a[1]
            y = shapes[n.output[0]]
            flops += 2 * prod(y) * k
        elif n.op_type == 'MatMul':
            a = shapes[n.input[0]]
            y = shapes[n.output[0]]
            flops += 2 * prod(y) * a[-1]
    return g.name, params, flops


only = len(sys.argv) > 1 and sys.argv[1] == '--params'
for p in sys.argv[1 + only:]:
    name, params, flops = counts(p, only)
    print(p, params) if only else print(p, params, flops)
