#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hand-written seeds for the ONNX fuzz harness (corpus/onnx/), written as raw
protobuf bytes so that no ONNX tooling is needed, and the large files that
docs/reliability.md times.

    onnx_seeds.py corpus DIR        the seeds
    onnx_seeds.py inputs N FILE     N initializers, each also a graph input
    onnx_seeds.py nested N FILE     N subgraphs nested Graph->Node->Attribute
"""
import os
import struct
import sys


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def f_int(field, v):
    return varint(field << 3) + varint(v)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return varint(field << 3 | 2) + varint(len(data)) + data


def value_info(name, dims, field=11, sym=None):
    shape = b"".join(f_bytes(1, f_bytes(2, sym) if (sym and i == 0) else f_int(1, d))
                     for i, d in enumerate(dims))
    tt = f_int(1, 1) + f_bytes(2, shape)
    return f_bytes(field, f_bytes(1, name) + f_bytes(2, f_bytes(1, tt)))


def initializer(name, dims, dtype=1, raw=None):
    t = b"".join(f_int(1, d) for d in dims) + f_int(2, dtype) + f_bytes(8, name)
    if raw is not None:
        t += f_bytes(9, raw)
    return f_bytes(5, t)


def attr_int(name, v):
    return f_bytes(5, f_bytes(1, name) + f_int(20, 2) + f_int(3, v))


def attr_ints(name, vs):
    return f_bytes(5, f_bytes(1, name) + f_int(20, 7) + b"".join(f_int(8, v) for v in vs))


def attr_float(name, v):
    return f_bytes(5, f_bytes(1, name) + f_int(20, 1) + varint(2 << 3 | 5) + struct.pack("<f", v))


def node(op, name, ins, outs, attrs=b""):
    n = b"".join(f_bytes(1, i) for i in ins) + b"".join(f_bytes(2, o) for o in outs)
    if name is not None:
        n += f_bytes(3, name)
    return f_bytes(1, n + f_bytes(4, op) + attrs)


def model(graph, name="g"):
    return f_int(1, 8) + f_bytes(7, graph + f_bytes(2, name))


def nested(depth):
    g = value_info("x", [2, 4]) + node("Relu", "r", ["x"], ["y"])
    for _ in range(depth):
        a = f_bytes(5, f_bytes(1, "then_branch") + f_int(20, 5) + f_bytes(6, g))
        g = node("If", None, ["x"], ["y"], a)
    return model(value_info("x", [2, 4]) + g, "nested")


def many_inputs(n):
    g = value_info("x", [2, 4])
    for i in range(n):
        g += initializer("w%d" % i, [4])
        g += value_info("w%d" % i, [4])
    g += node("Relu", "r", ["x"], ["y"])
    return model(g, "inputs")


def seeds():
    x4 = value_info("x", [1, 4, 8, 8], sym="batch")
    w = initializer("w", [4, 4, 3, 3])
    b = initializer("b", [4])
    x2 = value_info("x", [2, 8])
    s = {}
    s["relu"] = model(x2 + node("Relu", "r", ["x"], ["y"]))
    s["conv"] = model(x4 + w + b + node("Conv", "conv", ["x", "w", "b"], ["y"],
                                        attr_ints("kernel_shape", [3, 3]) + attr_ints("pads", [1, 1, 1, 1]) +
                                        attr_ints("strides", [1, 1]) + attr_int("group", 1)) +
                      node("Relu", "act", ["y"], ["z"]) +
                      node("MaxPool", "pool", ["z"], ["p"], attr_ints("kernel_shape", [2, 2]) +
                           attr_ints("strides", [2, 2])) +
                      node("GlobalAveragePool", "gap", ["p"], ["q"]) +
                      node("Flatten", "fl", ["q"], ["f"], attr_int("axis", 1)))
    s["conv-wide-kernel"] = model(x4 + w + node("Conv", "conv", ["x", "w"], ["y"],
                                                attr_ints("kernel_shape", [(1 << 32) + 3] * 2)))
    s["conv-wide-group"] = model(x4 + w + node("Conv", "conv", ["x", "w"], ["y"], attr_int("group", (1 << 32) + 1)))
    s["transpose-wide-perm"] = model(x2 + node("Transpose", "tr", ["x"], ["y"], attr_ints("perm", [(1 << 32) + 1, 0])))
    s["flatten-wide-axis"] = model(x2 + node("Flatten", "fl", ["x"], ["y"], attr_int("axis", (1 << 32) + 1)))
    s["matmul-bias"] = model(x2 + initializer("w", [8, 4]) + initializer("bias", [4]) +
                             node("MatMul", "mm", ["x", "w"], ["h"]) + node("Add", "add", ["h", "bias"], ["y"]) +
                             node("Softmax", "sm", ["y"], ["p"], attr_int("axis", -1)))
    s["split-overflow"] = model(x2 + node("Split", "sp", ["x"], ["a", "b", "c"],
                                          attr_int("axis", 1) + attr_ints("split", [(1 << 63) - 1, (1 << 63) - 1, 10])))
    s["split"] = model(x2 + node("Split", "sp", ["x"], ["a", "b"], attr_int("axis", 1) + attr_ints("split", [3, 5])) +
                       node("Relu", "r", ["b"], ["y"]))
    s["slice"] = model(x2 + initializer("st", [1], 7, struct.pack("<q", 2)) +
                       initializer("en", [1], 7, struct.pack("<q", 6)) +
                       initializer("ax", [1], 7, struct.pack("<q", 1)) +
                       node("Slice", "sl", ["x", "st", "en", "ax"], ["y"]))
    s["slice-huge-start"] = model(x2 + initializer("st", [1], 7, struct.pack("<q", (1 << 63) - 1)) +
                                  initializer("en", [1], 7, struct.pack("<q", -1)) +
                                  node("Slice", "sl", ["x", "st", "en"], ["y"]))
    s["dropout"] = model(x2 + node("Dropout", "d", ["x"], ["y"], attr_float("ratio", 0.1)))
    s["name-not-utf8"] = model(x2 + node("Relu", b"r\xff\xfe", ["x"], ["y"]))
    s["names-long-shared-prefix"] = model(x2 + node("Relu", "n" * 199 + "a", ["x"], ["y"]) +
                                          node("Relu", "n" * 199 + "b", ["y"], ["z"]))
    s["name-twice"] = model(x2 + node("Relu", "same", ["x"], ["y"]) + node("Relu", "same", ["y"], ["z"]))
    s["graph-name-5000"] = model(x2 + node("Relu", "r", ["x"], ["y"]), "g" * 5000)
    s["identity-only"] = model(x2 + node("Identity", "id", ["x"], ["y"]))
    s["nested-4"] = nested(4)
    s["nested-40"] = nested(40)
    s["inputs-64"] = many_inputs(64)
    s["not-topological"] = model(x2 + node("Relu", "b", ["y"], ["z"]) + node("Relu", "a", ["x"], ["y"]))
    return s


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "corpus":
        os.makedirs(sys.argv[2], exist_ok=True)
        for name, data in seeds().items():
            with open(os.path.join(sys.argv[2], "seed-" + name), "wb") as f:
                f.write(data)
    elif len(sys.argv) == 4 and sys.argv[1] in ("inputs", "nested"):
        n = int(sys.argv[2])
        with open(sys.argv[3], "wb") as f:
            f.write(many_inputs(n) if sys.argv[1] == "inputs" else nested(n))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
