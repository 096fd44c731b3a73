# SPDX-License-Identifier: Apache-2.0
"""Writes the ONNX models of tests/model/cli_onnx.sh with onnx.helper.

  onnx_models.py resnet OUT   ResNet-50 for 32x32 images, 10 classes, batch 2
                              (torchvision's layout: bottleneck blocks of
                              Conv, BatchNormalization, Relu, Add; Gemm head)
  onnx_models.py gpt2 OUT     one GPT-2 block, hidden 64, 4 heads, sequence 16,
                              vocabulary 100, 1024 positions, symbolic batch (HF's layout:
                              fused c_attn + Split, 1/sqrt(d) scale, tied head)

  onnx_models.py gpt2-dynamic OUT  the same with a symbolic sequence length
                                   ("sequence_length") as well as batch
  onnx_models.py gpt2-torch OUT    gpt2-dynamic with the head reshapes' shapes
                                   computed from the tensors, as torch.onnx
                                   writes them (Shape, Gather, Div, Unsqueeze,
                                   Concat)

  onnx_models.py gpt2-ort OUT      the GPT-2 block as onnxruntime's transformer
                                   optimizer writes a torch.onnx export with past
                                   (onnxruntime.transformers, the layout of
                                   onnxruntime-genai's tiny-random-gpt2 past.onnx):
                                   Cast, com.microsoft EmbedLayerNormalization,
                                   Attention (unidirectional, attention_mask and
                                   past_0 inputs, present_0 output), MatMul,
                                   SkipLayerNormalization with bias and its sum
                                   output, FastGelu with bias; symbolic batch_size,
                                   seq_len, past_seq_len, total_seq_len; the tied
                                   Gemm head and loss of gpt2
  onnx_models.py gpt2-ort-bad OUT  the same with the MLP's FastGelu as
                                   com.microsoft BiasGelu (not read)
  onnx_models.py gpt2-ort-view OUT gpt2-ort with input_ids.view(batch, total - past),
                                   the lengths from Shape of attention_mask and
                                   of past_0 (empty when past_seq_len is 0)
  onnx_models.py gpt2-megatron OUT one Megatron-LM GPT-2 layer with a past as
                                   torch.onnx (opset 12) writes it, in the node
                                   layout of onnxruntime's gpt2_megatron.onnx:
                                   LayerNorm, tanh GELU and masking written out,
                                   shape arithmetic, the past split and
                                   concatenated; hidden 64, 4 heads, vocabulary
                                   100, 64 positions

  onnx_models.py external OUT      a two-layer MLP (16 -> 32 -> 8, symbolic batch)
                                   whose real initializers onnx.save_model writes
                                   as external data, all of them (the Reshape's
                                   shape too), to OUT.data beside OUT
  onnx_models.py external-big OUT  the same with onnx's default threshold: only
                                   the two weight matrices (1 KiB or more) external
  onnx_models.py inline OUT        the same MLP with its weights in the file

  onnx_models.py gpt2-hf OUT       one Hugging Face GPT-2 block with its tied head and a
                                   loss as torch.onnx writes GPT2LMHeadModel: Range
                                   positions, Conv1D as Reshape / Gemm / Reshape, the
                                   causal mask sliced from the uint8 buffer `bias` and
                                   applied with Where (masked_bias a one-element
                                   buffer); symbolic batch and sequence_length
  onnx_models.py empty-read OUT    inputs x [batch, 8] and p [batch, "past"], a Relu of
                                   each (p empty when past is bound to 0)
  onnx_models.py unsupported OUT   Relu then an Erf node named "my_erf"
  onnx_models.py symbolic OUT      an input with a symbolic second dim ("seq")

Weights are stored as external data (a file that is never written): approf
reads shapes only, and the models stay a few kilobytes.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


class Builder:
    def __init__(self):
        self.nodes, self.inits = [], []
        self.n = 0

    def init(self, name, dims, dtype=TensorProto.FLOAT):
        t = TensorProto()
        t.name = name
        t.data_type = dtype
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", "weights.bin"
        self.inits.append(t)
        return name

    def const_ints(self, name, vals):
        self.inits.append(helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals))
        return name

    def node(self, op, inputs, name, n_out=1, **attrs):
        outs = [name + (":%d" % i if n_out > 1 else "") for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]


def conv_bn(b, x, pre, cin, cout, k, stride, pad):
    w = b.init(pre + ".conv.weight", [cout, cin, k, k])
    y = b.node("Conv", [x, w], pre + "/Conv", kernel_shape=[k, k], strides=[stride, stride],
               pads=[pad] * 4)
    bn = [b.init(pre + ".bn." + s, [cout]) for s in ("weight", "bias", "running_mean", "running_var")]
    return b.node("BatchNormalization", [y] + bn, pre + "/BatchNormalization")


def resnet(path):
    b = Builder()
    x = "images"
    y = conv_bn(b, x, "conv1", 3, 64, 7, 2, 3)
    y = b.node("Relu", [y], "relu")
    y = b.node("MaxPool", [y], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    inplanes = 64
    for s, blocks in enumerate([3, 4, 6, 3]):
        planes = 64 << s
        for i in range(blocks):
            pre = "layer%d.%d" % (s + 1, i)
            stride = 2 if s > 0 and i == 0 else 1
            z = b.node("Relu", [conv_bn(b, y, pre + ".1", inplanes, planes, 1, 1, 0)], pre + "/relu1")
            z = b.node("Relu", [conv_bn(b, z, pre + ".2", planes, planes, 3, stride, 1)], pre + "/relu2")
            z = conv_bn(b, z, pre + ".3", planes, planes * 4, 1, 1, 0)
            r = y
            if i == 0 and (stride != 1 or inplanes != planes * 4):
                r = conv_bn(b, y, pre + ".downsample", inplanes, planes * 4, 1, stride, 0)
            y = b.node("Relu", [b.node("Add", [z, r], pre + "/Add")], pre + "/relu")
            inplanes = planes * 4
    y = b.node("GlobalAveragePool", [y], "avgpool")
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = b.node("Gemm", [y, b.init("fc.weight", [10, 2048]), b.init("fc.bias", [10])], "fc", transB=1)
    loss = b.node("SoftmaxCrossEntropyLoss", [y, "labels"], "loss")
    g = helper.make_graph(b.nodes, "resnet50_onnx",
                          [helper.make_tensor_value_info("images", TensorProto.FLOAT, [2, 3, 32, 32]),
                           helper.make_tensor_value_info("labels", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info(loss, TensorProto.FLOAT, [])], b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def gpt2(path, seq=None, torch_shapes=False):
    """seq: a symbolic sequence length ("sequence_length", as Hugging Face's
    exporters name it) instead of 16; torch_shapes: the head reshapes take
    their shape from the tensor, as torch.onnx writes x.view(x.size(0),
    x.size(1), heads, x.size(2) // heads): Shape, Gather, Div, Unsqueeze,
    Concat (and Constant nodes for the indices)."""
    C, H, S, V, F, P = 64, 4, 16, 100, 256, 1024
    S = seq or S
    D = C // H
    b = Builder()
    wte = b.init("transformer.wte.weight", [V, C])
    x = b.node("Gather", [wte, "input_ids"], "wte")
    p = b.node("Gather", [b.init("transformer.wpe.weight", [P, C]), "position_ids"], "wpe")
    x = b.node("Add", [x, p], "embeddings/add")
    pre = "h.0"

    def ln(x, name):
        return b.node("LayerNormalization", [x, b.init(name + ".weight", [C]), b.init(name + ".bias", [C])],
                      name, axis=-1)

    def linear(x, name, cin, cout):
        y = b.node("MatMul", [x, b.init(name + ".weight", [cin, cout])], name + "/MatMul")
        return b.node("Add", [y, b.init(name + ".bias", [cout])], name + "/Add")

    y = linear(ln(x, pre + ".ln_1"), pre + ".attn.c_attn", C, 3 * C)
    q, k, v = b.node("Split", [y, b.const_ints("split_sizes", [C, C, C])], pre + "/split", n_out=3, axis=2)
    def const(name, vals, dims):
        return b.node("Constant", [], name, value=helper.make_tensor(name, TensorProto.INT64, dims, vals))

    def heads_of(x, name):
        if not torch_shapes:
            return "heads_shape"
        shape = b.node("Shape", [x], name + "/Shape")
        dim = [b.node("Gather", [shape, const(name + "/c%d" % i, [i], [])], name + "/Gather%d" % i, axis=0)
               for i in range(3)]
        dim[2] = b.node("Div", [dim[2], const(name + "/heads", [H], [])], name + "/Div")
        axes = const(name + "/axes", [0], [1])
        parts = [b.node("Unsqueeze", [dim[i], axes], name + "/Unsqueeze%d" % i) for i in range(3)]
        parts.insert(2, const(name + "/h", [H], [1]))
        return b.node("Concat", parts, name + "/Concat", axis=0)

    if not torch_shapes:
        b.const_ints("heads_shape", [0, 0, H, D])
    q = b.node("Transpose", [b.node("Reshape", [q, heads_of(q, pre + "/q")], pre + "/q/Reshape")], pre + "/q/Transpose", perm=[0, 2, 1, 3])
    k = b.node("Transpose", [b.node("Reshape", [k, heads_of(k, pre + "/k")], pre + "/k/Reshape")], pre + "/k/Transpose", perm=[0, 2, 3, 1])
    v = b.node("Transpose", [b.node("Reshape", [v, heads_of(v, pre + "/v")], pre + "/v/Reshape")], pre + "/v/Transpose", perm=[0, 2, 1, 3])
    s = b.node("MatMul", [q, k], pre + "/scores")
    b.inits.append(helper.make_tensor("scale", TensorProto.FLOAT, [], [float(D) ** 0.5]))
    s = b.node("Softmax", [b.node("Div", [s, "scale"], pre + "/scale")], pre + "/softmax", axis=-1)
    o = b.node("Transpose", [b.node("MatMul", [s, v], pre + "/context")], pre + "/context/Transpose", perm=[0, 2, 1, 3])
    o = b.node("Reshape", [o, b.const_ints("merged_shape", [0, 0, C])], pre + "/merge_heads")
    x = b.node("Add", [x, linear(o, pre + ".attn.c_proj", C, C)], pre + "/residual_1")
    y = b.node("Gelu", [linear(ln(x, pre + ".ln_2"), pre + ".mlp.c_fc", C, F)], pre + "/gelu")
    x = b.node("Add", [x, linear(y, pre + ".mlp.c_proj", F, C)], pre + "/residual_2")
    x = ln(x, "transformer.ln_f")
    x = b.node("Reshape", [x, b.const_ints("tokens_shape", [-1, C])], "lm_head/Reshape")
    logits = b.node("Gemm", [x, wte], "lm_head", transB=1)
    labels = b.node("Reshape", ["labels", b.const_ints("labels_shape", [-1])], "labels/Reshape")
    loss = b.node("SoftmaxCrossEntropyLoss", [logits, labels], "loss")
    g = helper.make_graph(b.nodes, "gpt2_onnx",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", S]),
                           helper.make_tensor_value_info("position_ids", TensorProto.INT64, [S]),
                           helper.make_tensor_value_info("labels", TensorProto.INT64, ["batch", S])],
                          [helper.make_tensor_value_info(loss, TensorProto.FLOAT, [])], b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def gpt2_ort(path, gelu="FastGelu", view=False):
    """gpt2's block with the fusions of onnxruntime's transformer optimizer
    (onnxruntime/python/tools/transformers, fusion_embedlayer.py,
    fusion_gpt_attention.py, fusion_skiplayernorm.py, fusion_fastgelu.py):
    the nodes, inputs and outputs as its GPT-2 export with past lays them
    out (inputs position_ids [batch_size, seq_len], attention_mask
    [batch_size, total_seq_len], past_0 [2, batch_size, heads,
    past_seq_len, head_dim])."""
    C, H, V, F, P = 64, 4, 100, 256, 1024
    D = C // H
    ms = "com.microsoft"
    b = Builder()

    def node(op, inputs, outs, name, domain=ms, **attrs):
        b.nodes.append(helper.make_node(op, inputs, outs, name=name, domain=domain, **attrs))
        return outs[0]

    ids = "input_ids"
    if view:
        # input_ids.view(batch, total - past): the lengths as torch.onnx
        # computes them, Shape of the mask and of the (empty) past
        def dim(x, i, name):
            sh = node("Shape", [x], [name + "/shape"], name + "/Shape", domain="")
            return node("Gather", [sh, b.const_ints(name + "/i", [i])], [name], name + "/Gather", domain="", axis=0)
        n = node("Sub", [dim("attention_mask", 1, "total"), dim("past_0", 3, "past")], ["seq"], "seq/Sub", domain="")
        shape = node("Concat", [dim("input_ids", 0, "batch"), n], ["view_shape"], "view/Concat", domain="", axis=0)
        ids = node("Reshape", [ids, shape], ["ids_view"], "view/Reshape", domain="")
    ids = node("Cast", [ids], ["ids32"], "cast_ids", domain="", to=TensorProto.INT32)
    pos = node("Cast", ["position_ids"], ["pos32"], "cast_pos", domain="", to=TensorProto.INT32)
    wte = b.init("transformer.wte.weight", [V, C])
    x = node("EmbedLayerNormalization",
             [ids, "", wte, b.init("transformer.wpe.weight", [P, C]), "", b.init("h.0.ln_1.weight", [C]),
              b.init("h.0.ln_1.bias", [C]), "", pos],
             ["emb", "emb_mask_index", "emb_sum"], "EmbedLayerNormalization_0", epsilon=1e-5)
    o = node("Attention", [x, b.init("h.0.attn.c_attn.weight", [C, 3 * C]), b.init("h.0.attn.c_attn.bias", [3 * C]),
                           "attention_mask", "past_0"], ["attn", "present_0"], "GptAttention_0",
             num_heads=H, unidirectional=1)
    o = node("MatMul", [o, b.init("h.0.attn.c_proj.weight", [C, C])], ["attn_proj"], "GptAttention_0_matmul",
             domain="")
    y = node("SkipLayerNormalization", [o, "emb_sum", b.init("h.0.ln_2.weight", [C]), b.init("h.0.ln_2.bias", [C]),
                                        b.init("h.0.attn.c_proj.bias", [C])],
             ["ln_2", "", "", "residual_1"], "SkipLayerNorm_AddBias_0", epsilon=1e-5)
    y = node("MatMul", [y, b.init("h.0.mlp.c_fc.weight", [C, F])], ["fc"], "FullyConnect_MatMul_0", domain="")
    y = node(gelu, [y, b.init("h.0.mlp.c_fc.bias", [F])], ["gelu"], gelu + "_AddBias_0")
    y = node("MatMul", [y, b.init("h.0.mlp.c_proj.weight", [F, C])], ["fc_proj"], "FullyConnect_MatMul_1", domain="")
    x = node("SkipLayerNormalization", [y, "residual_1", b.init("transformer.ln_f.weight", [C]),
                                        b.init("transformer.ln_f.bias", [C]), b.init("h.0.mlp.c_proj.bias", [C])],
             ["ln_f"], "SkipLayerNorm_AddBias_1", epsilon=1e-5)
    x = b.node("Reshape", [x, b.const_ints("tokens_shape", [-1, C])], "lm_head/Reshape")
    logits = b.node("Gemm", [x, wte], "lm_head", transB=1)
    labels = b.node("Reshape", ["labels", b.const_ints("labels_shape", [-1])], "labels/Reshape")
    loss = b.node("SoftmaxCrossEntropyLoss", [logits, labels], "loss")
    bs = ["batch_size", "seq_len"]
    g = helper.make_graph(b.nodes, "gpt2_ort",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, bs),
                           helper.make_tensor_value_info("position_ids", TensorProto.INT64, bs),
                           helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                         ["batch_size", "total_seq_len"]),
                           helper.make_tensor_value_info("past_0", TensorProto.FLOAT,
                                                         [2, "batch_size", H, "past_seq_len", D]),
                           helper.make_tensor_value_info("labels", TensorProto.INT64, bs)],
                          [helper.make_tensor_value_info(loss, TensorProto.FLOAT, []),
                           helper.make_tensor_value_info("present_0", TensorProto.FLOAT,
                                                         [2, "batch_size", H, "total_seq_len", D])], b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11), helper.make_opsetid(ms, 1)]), path)


def gpt2_megatron(path):
    """One Megatron-LM GPT-2 layer as torch.onnx (PyTorch 1.9, opset 12)
    exports it with a past, node for node the layout of onnxruntime's test
    model gpt2_megatron.onnx (docs/models.md, real exports): LayerNorm
    written out with x - mean computed twice and a Cast before the scale;
    head reshapes from Shape/Gather/Unsqueeze/Concat; the past split,
    squeezed and concatenated before the new keys and values; q and k each
    divided by d^(1/4); the mask sliced out of attention_mask [batch, 1, P,
    P] at bounds computed from the shapes, applied as scores * m - 10000 *
    (1 - m); Megatron's tanh GELU x * 0.5 * (1 + tanh(0.79788 x (1 +
    0.044715 x x))); an untied head; present_0 stacked from the keys and
    values. Hidden 64, 4 heads, F 256, vocabulary 100, 64 positions;
    symbolic batch_size, seq_len, past_seq_len."""
    C, H, F, V, P = 64, 4, 256, 100, 64
    D = C // H
    b = Builder()
    k = [0]

    def node(op, inputs, n_out=1, **attrs):
        k[0] += 1
        name = "%s_%d" % (op, k[0])
        outs = ["%s_out%d" % (name, i) for i in range(n_out)]
        b.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def const(vals, dims, dtype=TensorProto.INT64):
        return node("Constant", [], value=helper.make_tensor("c%d" % (k[0] + 1), dtype, dims, vals))

    def fconst(v):
        return const([v], [], TensorProto.FLOAT)

    def dim(x, i):
        return node("Gather", [node("Shape", [x]), const([i], [])], axis=0)

    def ln(x, name):
        m = node("ReduceMean", [x], axes=[-1], keepdims=1)
        v = node("ReduceMean", [node("Pow", [node("Sub", [x, m]), fconst(2.0)])], axes=[-1], keepdims=1)
        d2 = node("Sub", [x, m])
        y = node("Cast", [node("Div", [d2, node("Sqrt", [node("Add", [v, fconst(1e-5)])])])], to=TensorProto.FLOAT)
        y = node("Mul", [b.init(name + ".weight", [C]), y])
        return node("Add", [y, b.init(name + ".bias", [C])])

    def linear(x, name, cin, cout, bias_first=False):
        y = node("MatMul", [x, b.init(name + ".weight", [cin, cout])])
        bias = b.init(name + ".bias", [cout])
        return node("Add", [bias, y] if bias_first else [y, bias])

    def heads(x):
        shape = node("Concat", [node("Unsqueeze", [dim(x, 0)], axes=[0]), node("Unsqueeze", [dim(x, 1)], axes=[0]),
                                b.const_ints("heads%d" % k[0], [H]), b.const_ints("dim%d" % k[0], [D])], axis=0)
        return node("Transpose", [node("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    x = node("Add", [node("Gather", [b.init("word_embeddings.weight", [V, C]), "input_ids"]),
                     node("Gather", [b.init("position_embeddings.weight", [P, C]), "position_ids"])])
    x = node("Cast", [x], to=TensorProto.FLOAT)
    pre = "transformer.layers.0."
    h = ln(x, pre + "input_layernorm")
    q, kk, v = node("Split", [linear(h, pre + "attention.query_key_value", C, 3 * C, True)], n_out=3, axis=2,
                    split=[C, C, C])
    q, kk, v = heads(q), heads(kk), heads(v)
    pk, pv = node("Split", ["past_0"], n_out=2, axis=0, split=[1, 1])
    kk = node("Concat", [node("Squeeze", [pk], axes=[0]), kk], axis=-2)
    v = node("Concat", [node("Squeeze", [pv], axes=[0]), v], axis=-2)
    root = float(D) ** 0.25
    q = node("Div", [q, fconst(root)])
    kt = node("Div", [node("Transpose", [kk], perm=[0, 1, 3, 2]), fconst(root)])
    s = node("MatMul", [q, kt])
    start = node("Sub", [dim(s, 3), dim(h, 1)])
    m = node("Slice", ["attention_mask", node("Unsqueeze", [start], axes=[0]),
                       node("Unsqueeze", [dim(s, 3)], axes=[0]), b.const_ints("axis2", [2]), const([1], [1])])
    m = node("Slice", [m, b.const_ints("zero", [0]), node("Unsqueeze", [dim(s, 3)], axes=[0]),
                       b.const_ints("axis3", [3]), const([1], [1])])
    s = node("Mul", [node("Cast", [s], to=TensorProto.FLOAT), m])
    s = node("Sub", [s, node("Mul", [node("Sub", [fconst(1.0), m]), fconst(10000.0)])])
    o = node("MatMul", [node("Cast", [node("Softmax", [s], axis=3)], to=TensorProto.FLOAT), v])
    o = node("Transpose", [o], perm=[0, 2, 1, 3])
    shape = node("Concat", [node("Unsqueeze", [dim(o, 0)], axes=[0]), node("Unsqueeze", [dim(o, 1)], axes=[0]),
                            b.const_ints("hidden", [C])], axis=0)
    o = linear(node("Reshape", [o, shape]), pre + "attention.dense", C, C)
    x = node("Add", [x, o])
    y = node("Cast", [linear(ln(x, pre + "post_attention_layernorm"), pre + "mlp.dense_h_to_4h", C, F, True)],
             to=TensorProto.FLOAT)
    a = node("Mul", [y, fconst(0.5)])
    bb = node("Mul", [y, fconst(0.7978845834732056)])
    cc = node("Mul", [node("Mul", [y, fconst(0.044714998453855515)]), y])
    t = node("Tanh", [node("Mul", [bb, node("Add", [cc, fconst(1.0)])])])
    y = node("Cast", [node("Mul", [a, node("Add", [t, fconst(1.0)])])], to=TensorProto.FLOAT)
    x = node("Cast", [node("Add", [x, linear(y, pre + "mlp.dense_4h_to_h", F, C)])], to=TensorProto.FLOAT)
    logits = node("MatMul", [ln(x, "transformer.final_layernorm"), b.init("lm_head.weight", [C, V])])
    present = node("Concat", [node("Unsqueeze", [kk], axes=[0]), node("Unsqueeze", [v], axes=[0])], axis=0)
    bs = ["batch_size", "seq_len"]
    g = helper.make_graph(b.nodes, "gpt2_megatron",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, bs),
                           helper.make_tensor_value_info("position_ids", TensorProto.INT64, bs),
                           helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch_size", 1, P, P]),
                           helper.make_tensor_value_info("past_0", TensorProto.FLOAT,
                                                         [2, "batch_size", H, "past_seq_len", D])],
                          [helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["batch_size", "seq_len", V]),
                           helper.make_tensor_value_info(present, TensorProto.FLOAT,
                                                         [2, "batch_size", H, "total_seq_len", D])], b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)]), path)


def causal_mask(node, const, dim, u, w, ns):
    """Scores w plus transformers 4.36+'s causal mask as torch.onnx writes
    it (gpt2_hf's mask="built"; the node helpers are the caller's)."""
    f32min = float(np.finfo(np.float32).min)
    S = T = dim("input_ids", 1)
    cache = node("Range", [const([0], []), S, const([1], [])])
    full = node("ConstantOfShape", [node("Concat", [u(S), u(T)], axis=0)],
                value=helper.make_tensor("fill", TensorProto.FLOAT, [1], [f32min]))
    cm = node("Trilu", [full, const([1], [])], upper=1)
    gt = node("Greater", [node("Range", [const([0], []), T, const([1], [])]),
                          node("Reshape", [cache, const([-1, 1], [2])])])
    cm = node("Mul", [cm, node("Cast", [gt], to=TensorProto.FLOAT)])
    cm = node("Unsqueeze", [node("Unsqueeze", [cm, const([0], [1])]), const([1], [1])])
    size = node("Concat", [u(dim("input_ids", 0)), const([1], [1]), const([-1], [1]), const([-1], [1])], axis=0)
    ones = node("ConstantOfShape", [node("Shape", [size])],
                value=helper.make_tensor("one", TensorProto.INT64, [1], [1]))
    size = node("Where", [node("Equal", [size, node("Mul", [ones, const([-1], [])])]), ones, size])
    cm = node("Expand", [cm, size])
    part = node("Slice", [cm, const([0], [1]), u(T), const([3], [1]), const([1], [1])])
    pad = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", const([1], [1])]), const([2], [1])])
    pad = node("Equal", [node("Cast", [pad], to=TensorProto.FLOAT), const([0.0], [], TensorProto.FLOAT)])
    pad = node("And", [node("Equal", [part, const([0.0], [], TensorProto.FLOAT)]), pad])
    cm = node("Where", [pad, const([f32min], [], TensorProto.FLOAT), part])
    return node("Add", [w, node("Slice", [cm, const([0], [1]), u(ns), const([3], [1]), const([1], [1])])])


def gpt2_hf(path, mask="buffer"):
    """One Hugging Face GPT-2 block with its LM head as torch.onnx writes
    GPT2LMHeadModel (transformers 2.x-4.x, the node layout of onnxruntime's
    transform/fusion/gpt2_one_layer.onnx, topologically sorted): positions
    from Range(0, S), ids and positions reshaped to [-1, S]; the Conv1D
    layers as Reshape to 2-D, Gemm, Reshape back (shapes from Shape /
    Gather / Unsqueeze / Concat); the causal mask sliced out of the uint8
    buffer `bias` [1, 1, P, P] at bounds computed from the scores' shape,
    Cast to bool, Where(mask, scores, masked_bias) with masked_bias a
    one-element buffer; GELU as Erf; the head tied to wte with a loss.
    Hidden 64, 4 heads, F 256, vocabulary 100, 1024 positions; symbolic
    batch and sequence.

    mask="built": the causal mask built instead as transformers 4.36 and
    later build it (LlamaModel._update_causal_mask, eager, no past; the
    same in Mistral and Qwen2) and as torch.onnx (opset 17) writes that:
    torch.full((S, T), min) as ConstantOfShape over Concat of the dims,
    triu(diagonal=1) as Trilu, `*= arange(T) > cache_position.reshape(-1,
    1)` as Range, Reshape, Greater, Cast, Mul, `[None, None].expand(B, 1,
    -1, -1)` as Unsqueeze and Expand with torch's -1 handling
    (ConstantOfShape, Mul, Equal, Where over the size vector), the padding
    mask `causal[..., :T].eq(0) * attention_mask[:, None, None, :].eq(0)`
    as Slice, Equal, Unsqueeze, Cast, Equal, And, its masked_fill as Where
    (the slice assignment over the whole width written as the fill's
    result), and `scores + causal[:, :, :, :T]` as Slice and Add; input
    attention_mask [batch, sequence_length]."""
    C, H, F, V, P = 64, 4, 256, 100, 1024
    D = C // H
    b = Builder()
    k = [0]

    def node(op, inputs, n_out=1, **attrs):
        k[0] += 1
        name = "%s_%d" % (op, k[0])
        outs = ["%s_out%d" % (name, i) for i in range(n_out)]
        b.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def const(vals, dims, dtype=TensorProto.INT64):
        return node("Constant", [], value=helper.make_tensor("c%d" % (k[0] + 1), dtype, dims, vals))

    def dim(x, i):
        return node("Gather", [node("Shape", [x]), const([i], [])], axis=0)

    def u(x):
        return node("Unsqueeze", [x, const([0], [1])])

    def ln(x, name):
        return node("LayerNormalization", [x, b.init(name + ".weight", [C]), b.init(name + ".bias", [C])],
                    axis=-1, epsilon=1e-5)

    def conv1d(x, name, cin, cout):
        # size_out = x.size()[:-1] + (nf,); x.view(-1, x.size(-1)); addmm; view(size_out)
        out_shape = node("Concat", [u(dim(x, 0)), u(dim(x, 1)), const([cout], [1])], axis=0)
        y = node("Reshape", [x, node("Concat", [const([-1], [1]), u(dim(x, 2))], axis=0)])
        y = node("Gemm", [y, b.init(name + ".weight", [cin, cout]), b.init(name + ".bias", [cout])])
        return node("Reshape", [y, out_shape])

    def heads(x, perm):
        shape = node("Concat", [u(dim(x, 0)), u(dim(x, 1)), const([H], [1]),
                                u(node("Div", [dim(x, 2), const([H], [])]))], axis=0)
        return node("Transpose", [node("Reshape", [x, shape])], perm=perm)

    S = dim("input_ids", 1)
    pos = node("Range", [const([0], []), S, const([1], [])])
    pos = node("Reshape", [u(pos), node("Concat", [const([-1], [1]), u(S)], axis=0)])
    ids = node("Reshape", ["input_ids", node("Concat", [const([-1], [1]), u(S)], axis=0)])
    wte = b.init("transformer.wte.weight", [V, C])
    x = node("Add", [node("Gather", [wte, ids]), node("Gather", [b.init("transformer.wpe.weight", [P, C]), pos])])
    pre = "transformer.h.0."
    q, kk, v = node("Split", [conv1d(ln(x, pre + "ln_1"), pre + "attn.c_attn", C, 3 * C), const([C, C, C], [3])],
                    n_out=3, axis=2)
    q, kk, v = heads(q, [0, 2, 1, 3]), heads(kk, [0, 2, 3, 1]), heads(v, [0, 2, 1, 3])
    w = node("Div", [node("MatMul", [q, kk]), const([float(D) ** 0.5], [], TensorProto.FLOAT)])
    nd, ns = dim(w, 2), dim(w, 3)
    if mask == "built":
        w = causal_mask(node, const, dim, u, w, ns)
    else:
        bias = TensorProto()
        bias.name, bias.data_type = pre + "attn.bias", TensorProto.UINT8
        bias.dims.extend([1, 1, P, P])
        bias.data_location = TensorProto.EXTERNAL
        e = bias.external_data.add()
        e.key, e.value = "location", "weights.bin"
        b.inits.append(bias)
        m = node("Slice", [bias.name, u(node("Sub", [ns, nd])), u(ns), const([2], [1]), const([1], [1])])
        m = node("Slice", [m, const([0], [1]), u(ns), const([3], [1]), const([1], [1])])
        b.inits.append(helper.make_tensor(pre + "attn.masked_bias", TensorProto.FLOAT, [], [-10000.0]))
        w = node("Where", [node("Cast", [m], to=TensorProto.BOOL), w, pre + "attn.masked_bias"])
    o = node("Transpose", [node("MatMul", [node("Softmax", [w], axis=-1), v])], perm=[0, 2, 1, 3])
    o = node("Reshape", [o, node("Concat", [u(dim(o, 0)), u(dim(o, 1)), const([C], [1])], axis=0)])
    x = node("Add", [x, conv1d(o, pre + "attn.c_proj", C, C)])
    y = conv1d(ln(x, pre + "ln_2"), pre + "mlp.c_fc", C, F)
    a = node("Erf", [node("Div", [y, const([2.0 ** 0.5], [], TensorProto.FLOAT)])])
    y = node("Mul", [node("Mul", [y, node("Add", [a, const([1.0], [], TensorProto.FLOAT)])]),
                     const([0.5], [], TensorProto.FLOAT)])
    x = node("Add", [x, conv1d(y, pre + "mlp.c_proj", F, C)])
    x = node("Reshape", [ln(x, "transformer.ln_f"), const([-1, C], [2])])
    logits = node("Gemm", [x, wte], transB=1)
    loss = node("SoftmaxCrossEntropyLoss", [logits, node("Reshape", ["labels", const([-1], [1])])])
    bs = ["batch", "sequence_length"]
    g = helper.make_graph(b.nodes, "gpt2_hf",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, bs),
                           helper.make_tensor_value_info("labels", TensorProto.INT64, bs)]
                          + ([helper.make_tensor_value_info("attention_mask", TensorProto.INT64, bs)]
                             if mask == "built" else []),
                          [helper.make_tensor_value_info(loss, TensorProto.FLOAT, [])], b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def llama_ort(path, gqa=True, bad=None, norms="ort"):
    """One Llama decoder layer as onnxruntime-genai's model builder writes it
    (src/python/py/models/builders/base.py at a0c04eb13: make_layernorm,
    make_rotary_embedding, make_group_query_attention,
    make_attention_mask_reformatting_for_gqa, make_mlp): embed_tokens
    Gather; SimplifiedLayerNormalization; q, k, v MatMul; com.microsoft
    RotaryEmbedding of q and k (position_ids, cos_cache, sin_cache);
    com.microsoft GroupQueryAttention with past_key_values.0.key / value
    [batch_size, kv, past_sequence_length, D], seqlens_k = ReduceSum(mask) - 1
    and total_sequence_length = Shape(mask)[1] (Cast to int32); o_proj;
    SkipSimplifiedLayerNormalization (the residual as output 3); SiLU as
    Sigmoid * x, up, Mul, down; the final SkipSimplifiedLayerNormalization;
    lm_head. A loss over labels is added (as in gpt2-ort) so that the
    training step matches the zoo's. gqa=False: com.microsoft
    MultiHeadAttention (unidirectional, kv heads = heads) instead. bad:
    "window" (local_window_size 8) or "past" (no past length symbol: a
    past of 3). norms="torch": the three RMSNorms decomposed as torch.onnx
    writes transformers' LlamaRMSNorm (Pow(x, 2), ReduceMean(-1),
    Add(eps), Sqrt, Div(1, .), Mul(x, .), Cast, Mul(weight, .)) and the
    residual Adds written out instead of (Skip)SimplifiedLayerNormalization.
    Hidden 64, 4 heads, 2 kv heads, ffn 128, vocabulary 100."""
    C, H, KV, F, V, P = 64, 4, 2 if gqa else 4, 128, 100, 64
    D = C // H
    ms = "com.microsoft"
    b = Builder()

    def node(op, inputs, outs, name, domain="", **attrs):
        b.nodes.append(helper.make_node(op, inputs, outs, name=name, domain=domain, **attrs))
        return outs[0]

    def mm(x, w, cin, cout, name):
        return node("MatMul", [x, b.init(w, [cin, cout])], [name + "/output_0"], name)

    b.inits.append(helper.make_tensor("/model/constants/INT64/[1]", TensorProto.INT64, [1], [1]))
    b.inits.append(helper.make_tensor("/model/constants/INT64/1", TensorProto.INT64, [], [1]))
    x = node("Gather", [b.init("model.embed_tokens.weight", [V, C]), "input_ids"], ["/model/embed_tokens/output_0"],
             "/model/embed_tokens/Gather")
    m = "/model/attn_mask_reformat/attn_mask_subgraph"
    sk = node("ReduceSum", ["attention_mask", "/model/constants/INT64/[1]"], [m + "/ReduceSum/output_0"],
              m + "/ReduceSum", keepdims=0)
    sk = node("Sub", [sk, "/model/constants/INT64/[1]"], [m + "/Sub/output_0"], m + "/Sub")
    sk = node("Cast", [sk], [m + "/Sub/Cast/output_0"], m + "/Sub/Cast", to=TensorProto.INT32)
    tl = node("Shape", ["attention_mask"], [m + "/Shape/output_0"], m + "/Shape")
    tl = node("Gather", [tl, "/model/constants/INT64/1"], [m + "/Gather/output_0"], m + "/Gather", axis=0)
    tl = node("Cast", [tl], [m + "/Gather/Cast/output_0"], m + "/Gather/Cast", to=TensorProto.INT32)
    pre = "/model/layers.0"
    def rms(x, w, name):
        def fc(v, n):
            return node("Constant", [], [name + n], name + n,
                        value=helper.make_tensor(name + n, TensorProto.FLOAT, [], [v]))
        p = node("Pow", [x, fc(2.0, "/c2")], [name + "/Pow_out"], name + "/Pow")
        p = node("ReduceMean", [p], [name + "/ReduceMean_out"], name + "/ReduceMean", axes=[-1], keepdims=1)
        p = node("Add", [p, fc(1e-5, "/eps")], [name + "/Add_out"], name + "/Add")
        p = node("Sqrt", [p], [name + "/Sqrt_out"], name + "/Sqrt")
        p = node("Div", [fc(1.0, "/one"), p], [name + "/Div_out"], name + "/Div")
        p = node("Mul", [x, p], [name + "/Mul_out"], name + "/Mul")
        p = node("Cast", [p], [name + "/Cast_out"], name + "/Cast", to=TensorProto.FLOAT)
        return node("Mul", [b.init(w, [C]), p], [name + "/Mul_1_out"], name + "/Mul_1")

    if norms == "torch":
        y = rms(x, "model.layers.0.input_layernorm.weight", pre + "/input_layernorm")
    else:
        y = node("SimplifiedLayerNormalization", [x, b.init("model.layers.0.input_layernorm.weight", [C])],
                 [pre + "/input_layernorm/output_0"], pre + "/input_layernorm/LayerNorm", axis=-1, epsilon=1e-5,
                 stash_type=1)
    q = mm(y, "model.layers.0.attn.q_proj.MatMul.weight", C, H * D, pre + "/attn/q_proj/MatMul")
    k = mm(y, "model.layers.0.attn.k_proj.MatMul.weight", C, KV * D, pre + "/attn/k_proj/MatMul")
    v = mm(y, "model.layers.0.attn.v_proj.MatMul.weight", C, KV * D, pre + "/attn/v_proj/MatMul")
    for cache in ("cos_cache", "sin_cache"):
        b.init(cache, [P, D // 2])
    q = node("RotaryEmbedding", [q, "position_ids", "cos_cache", "sin_cache"], [pre + "/attn/q_rotary/output_0"],
             pre + "/attn/q_rotary/RotaryEmbedding", domain=ms, interleaved=0, num_heads=0, rotary_embedding_dim=0)
    k = node("RotaryEmbedding", [k, "position_ids", "cos_cache", "sin_cache"], [pre + "/attn/k_rotary/output_0"],
             pre + "/attn/k_rotary/RotaryEmbedding", domain=ms, interleaved=0, num_heads=0, rotary_embedding_dim=0)
    past = ["past_key_values.0.key", "past_key_values.0.value"]
    present = ["present.0.key", "present.0.value"]
    if gqa:
        o = node("GroupQueryAttention", [q, k, v] + past + [sk, tl], [pre + "/attn/GroupQueryAttention/output_0"]
                 + present, pre + "/attn/GroupQueryAttention", domain=ms, num_heads=H, kv_num_heads=KV,
                 scale=1.0 / D ** 0.5, local_window_size=8 if bad == "window" else -1, do_rotary=0,
                 rotary_interleaved=0, softcap=0.0)
    else:
        o = node("MultiHeadAttention", [q, k, v, "", "", ""] + past, [pre + "/attn/MultiHeadAttention/output_0"]
                 + present, pre + "/attn/MultiHeadAttention", domain=ms, num_heads=H, scale=1.0 / D ** 0.5,
                 unidirectional=1)
    o = mm(o, "model.layers.0.attn.o_proj.MatMul.weight", H * D, C, pre + "/attn/o_proj/MatMul")
    if norms == "torch":
        r = node("Add", [x, o], [pre + "/residual_1"], pre + "/Add")
        y = rms(r, "model.layers.0.post_attention_layernorm.weight", pre + "/post_attention_layernorm")
    else:
        y, r = node("SkipSimplifiedLayerNormalization",
                    [o, x, b.init("model.layers.0.post_attention_layernorm.weight", [C])],
                    [pre + "/post_attention_layernorm/output_0", "", "", pre + "/post_attention_layernorm/output_3"],
                    pre + "/post_attention_layernorm/SkipLayerNorm", domain=ms, epsilon=1e-5), \
            pre + "/post_attention_layernorm/output_3"
    g = mm(y, "model.layers.0.mlp.gate_proj.MatMul.weight", C, F, pre + "/mlp/gate_proj/MatMul")
    s = node("Sigmoid", [g], [pre + "/mlp/act_fn/Sigmoid/output_0"], pre + "/mlp/act_fn/Sigmoid")
    g = node("Mul", [g, s], [pre + "/mlp/act_fn/Mul/output_0"], pre + "/mlp/act_fn/Mul")
    u = mm(y, "model.layers.0.mlp.up_proj.MatMul.weight", C, F, pre + "/mlp/up_proj/MatMul")
    g = node("Mul", [g, u], [pre + "/mlp/Mul/output_0"], pre + "/mlp/Mul")
    d = mm(g, "model.layers.0.mlp.down_proj.MatMul.weight", F, C, pre + "/mlp/down_proj/MatMul")
    if norms == "torch":
        x = rms(node("Add", [r, d], [pre + "/residual_2"], pre + "/Add_1"), "model.norm.weight", "/model/norm")
    else:
        x = node("SkipSimplifiedLayerNormalization", [d, r, b.init("model.norm.weight", [C])],
                 ["/model/norm/output_0"], "/model/norm/SkipLayerNorm", domain=ms, epsilon=1e-5)
    logits = mm(x, "lm_head.MatMul.weight", C, V, "/lm_head/MatMul")
    logits = b.node("Reshape", [logits, b.const_ints("logits_shape", [-1, V])], "loss/logits/Reshape")
    labels = b.node("Reshape", ["labels", b.const_ints("labels_shape", [-1])], "loss/labels/Reshape")
    loss = b.node("SoftmaxCrossEntropyLoss", [logits, labels], "loss")
    bs = ["batch_size", "sequence_length"]
    plen = 3 if bad == "past" else "past_sequence_length"
    g = helper.make_graph(b.nodes, "llama_ort",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, bs),
                           helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                         ["batch_size", "total_sequence_length"]),
                           helper.make_tensor_value_info("position_ids", TensorProto.INT64, bs)]
                          + [helper.make_tensor_value_info(p, TensorProto.FLOAT, ["batch_size", KV, plen, D])
                             for p in past]
                          + [helper.make_tensor_value_info("labels", TensorProto.INT64, bs)],
                          [helper.make_tensor_value_info(loss, TensorProto.FLOAT, [])]
                          + [helper.make_tensor_value_info(p, TensorProto.FLOAT,
                                                           ["batch_size", KV, "total_sequence_length", D])
                             for p in present], b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)]), path)


def llama_torch(path, kv=2):
    """One Llama decoder layer as torch.onnx (opset 17) writes transformers'
    LlamaForCausalLM (4.4x, attn_implementation="eager", no cache) with a
    loss: the embedding Gather; LlamaRMSNorm decomposed (Pow, ReduceMean,
    Add, Sqrt, Div, Mul, Cast, Mul); LlamaRotaryEmbedding written out: the
    buffer inv_freq [D/2] (an initializer) as inv_freq[None, :, None]
    (Unsqueeze, Unsqueeze, Cast) .expand(B, -1, 1) (Expand, the -1 by
    torch's Equal / Where), position_ids[:, None, :] (Unsqueeze, Cast),
    MatMul, Transpose, cat((freqs, freqs), -1), Cos and Sin times
    attention_scaling (Mul by 1.0), Cast; q, k, v MatMul, view (Reshape
    [0, 0, -1, D]), transpose(1, 2); apply_rotary_pos_emb: cos.unsqueeze(1),
    q * cos + rotate_half(q) * sin with rotate_half as two Slices, Neg,
    Concat; repeat_kv of k and v (Unsqueeze at 2, Expand to [B, KV, G, S,
    D] with the shape from Shape, Reshape to [B, H, S, D]); eager_attention_
    forward: MatMul with k transposed, Mul by the scaling, + the causal
    mask (causal_mask: 4.36+'s mask as torch.onnx writes it), Softmax,
    MatMul with v, transpose, Reshape, o_proj; residual Add; SwiGLU MLP
    (Sigmoid, Mul, Mul); final norm; lm_head; loss. Hidden 64, 4 heads, kv
    key/value heads, ffn 128, vocabulary 100; symbolic batch and
    sequence."""
    C, H, F, V = 64, 4, 128, 100
    D, G = C // H, H // kv
    b = Builder()
    k = [0]

    def node(op, inputs, n_out=1, **attrs):
        k[0] += 1
        name = "/model/%s_%d" % (op, k[0])
        outs = ["%s_output_%d" % (name, i) for i in range(n_out)]
        b.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs if n_out > 1 else outs[0]

    def const(vals, dims, dtype=TensorProto.INT64):
        return node("Constant", [], value=helper.make_tensor("c%d" % (k[0] + 1), dtype, dims, vals))

    def fc(v):
        return const([v], [], TensorProto.FLOAT)

    def dim(x, i):
        return node("Gather", [node("Shape", [x]), const([i], [])], axis=0)

    def u(x):
        return node("Unsqueeze", [x, const([0], [1])])

    def rms(x, w):
        p = node("ReduceMean", [node("Pow", [x, fc(2.0)])], axes=[-1], keepdims=1)
        p = node("Div", [fc(1.0), node("Sqrt", [node("Add", [p, fc(1e-5)])])])
        p = node("Cast", [node("Mul", [x, p])], to=TensorProto.FLOAT)
        return node("Mul", [b.init(w, [C]), p])

    def mm(x, w, cin, cout):
        return node("MatMul", [x, b.init(w, [cin, cout])])

    x = node("Gather", [b.init("model.embed_tokens.weight", [V, C]), "input_ids"])
    # rotary tables
    inv = b.init("model.rotary_emb.inv_freq", [D // 2])
    f = node("Cast", [node("Unsqueeze", [node("Unsqueeze", [inv, const([0], [1])]), const([2], [1])])],
             to=TensorProto.FLOAT)
    size = node("Concat", [u(dim("position_ids", 0)), const([-1], [1]), const([1], [1])], axis=0)
    ones = node("ConstantOfShape", [node("Shape", [size])],
                value=helper.make_tensor("one", TensorProto.INT64, [1], [1]))
    size = node("Where", [node("Equal", [size, node("Mul", [ones, const([-1], [])])]), ones, size])
    f = node("Expand", [f, size])
    pos = node("Cast", [node("Unsqueeze", ["position_ids", const([1], [1])])], to=TensorProto.FLOAT)
    f = node("Transpose", [node("MatMul", [f, pos])], perm=[0, 2, 1])
    emb = node("Concat", [f, f], axis=-1)
    cos = node("Cast", [node("Mul", [node("Cos", [emb]), fc(1.0)])], to=TensorProto.FLOAT)
    sin = node("Cast", [node("Mul", [node("Sin", [emb]), fc(1.0)])], to=TensorProto.FLOAT)
    cos, sin = node("Unsqueeze", [cos, const([1], [1])]), node("Unsqueeze", [sin, const([1], [1])])
    pre = "model.layers.0."

    def heads(x, n):
        return node("Transpose", [node("Reshape", [x, const([0, 0, -1, D], [4])])], perm=[0, 2, 1, 3])

    def rope(x):
        x1 = node("Slice", [x, const([0], [1]), const([D // 2], [1]), const([3], [1]), const([1], [1])])
        x2 = node("Slice", [x, const([D // 2], [1]), const([2 ** 63 - 1], [1]), const([3], [1]),
                            const([1], [1])])
        r = node("Concat", [node("Neg", [x2]), x1], axis=-1)
        return node("Add", [node("Mul", [x, cos]), node("Mul", [r, sin])])

    def repeat_kv(x):
        sh = node("Shape", [x])
        size = node("Concat", [node("Slice", [sh, const([0], [1]), const([2], [1])]), const([G], [1]),
                               node("Slice", [sh, const([2], [1]), const([4], [1])])], axis=0)
        x = node("Expand", [node("Unsqueeze", [x, const([2], [1])]), size])
        return node("Reshape", [x, const([0, H, -1, D], [4])])

    y = rms(x, pre + "input_layernorm.weight")
    q = rope(heads(mm(y, pre + "self_attn.q_proj.weight", C, H * D), H))
    kk = rope(heads(mm(y, pre + "self_attn.k_proj.weight", C, kv * D), kv))
    v = heads(mm(y, pre + "self_attn.v_proj.weight", C, kv * D), kv)
    kk, v = repeat_kv(kk), repeat_kv(v)
    w = node("Mul", [node("MatMul", [q, node("Transpose", [kk], perm=[0, 1, 3, 2])]), fc(D ** -0.5)])
    w = causal_mask(node, const, dim, u, w, dim(w, 3))
    o = node("Transpose", [node("MatMul", [node("Softmax", [w], axis=-1), v])], perm=[0, 2, 1, 3])
    o = node("Reshape", [o, const([0, 0, -1], [3])])
    x = node("Add", [x, mm(o, pre + "self_attn.o_proj.weight", H * D, C)])
    y = rms(x, pre + "post_attention_layernorm.weight")
    g = mm(y, pre + "mlp.gate_proj.weight", C, F)
    g = node("Mul", [g, node("Sigmoid", [g])])
    g = node("Mul", [g, mm(y, pre + "mlp.up_proj.weight", C, F)])
    x = node("Add", [x, mm(g, pre + "mlp.down_proj.weight", F, C)])
    x = rms(x, "model.norm.weight")
    logits = node("Reshape", [mm(x, "lm_head.weight", C, V), const([-1, V], [2])])
    loss = node("SoftmaxCrossEntropyLoss", [logits, node("Reshape", ["labels", const([-1], [1])])])
    bs = ["batch_size", "sequence_length"]
    g = helper.make_graph(b.nodes, "llama_torch",
                          [helper.make_tensor_value_info(n, TensorProto.INT64, bs)
                           for n in ("input_ids", "attention_mask", "position_ids", "labels")],
                          [helper.make_tensor_value_info(loss, TensorProto.FLOAT, [])], b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def mask_refused(path, kind):
    """What the mask and attention mappings refuse, one node each, named
    "bad": expand-grad, an Expand of a projection along two axes (it needs a
    gradient: one axis is a repeat, two are not supported); sin-grad, the Sin
    of a projection of float data (SIREN's sin(x W): w stays a parameter);
    reduce-axis, a ReduceSum over axis 0 of
    [batch, 8]; mha-bias, a com.microsoft MultiHeadAttention with its q/k/v
    bias."""
    b = Builder()
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 8])]
    y = b.node("MatMul", ["x", b.init("w", [8, 8])], "proj")
    if kind == "expand-grad":
        y = b.node("Expand", [b.node("Unsqueeze", [y, b.const_ints("axes", [1, 3])], "unsq"),
                              b.const_ints("size", [2, 3, 4, 2, 8])], "bad")
    elif kind == "sin-grad":
        y = b.node("Sin", [y], "bad")
    elif kind == "reduce-axis":
        y = b.node("ReduceSum", [y, b.const_ints("axes", [0])], "bad", keepdims=0)
    else:
        b.nodes.append(helper.make_node("MultiHeadAttention", [y, y, y, b.init("qkv_bias", [24])], ["attn"],
                                        name="bad", domain="com.microsoft", num_heads=2))
        y = "attn"
    g = helper.make_graph(b.nodes, "mask_refused", x, [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)],
                          b.inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.microsoft", 1)]), path)


def empty_read(path):
    """x [batch, 8] and p [batch, "past"]: a Relu of each; with past bound to
    0, p is empty and the Relu reading it is refused."""
    b = Builder()
    y = b.node("Relu", ["x"], "relu_x")
    z = b.node("Relu", ["p"], "relu_p")
    g = helper.make_graph(b.nodes, "empty_read",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8]),
                           helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", "past"])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["batch", 8]),
                           helper.make_tensor_value_info(z, TensorProto.FLOAT, ["batch", "past"])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def tiny(path, op, dims):
    b = Builder()
    y = b.node("Relu", ["x"], "relu")
    y = b.node(op, [y], "my_erf" if op == "Erf" else "relu2")
    g = helper.make_graph(b.nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, dims)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def mlp(path, external, threshold=0):
    """MatMul + Add, Relu, MatMul + Add with real float32 weights (and an
    int64 shape constant for a Reshape), saved with save_as_external_data
    when external: every initializer in one file, OUT.data."""
    import os
    import numpy as np
    from onnx import numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w1", (16, 32)), ("b1", (32,)), ("w2", (32, 8)), ("b2", (8,)))]
    inits.append(numpy_helper.from_array(np.array([-1, 8], dtype=np.int64), "shape"))
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
             helper.make_node("Add", ["h3", "b2"], ["h4"], name="fc2_bias"),
             helper.make_node("Reshape", ["h4", "shape"], ["y"], name="out")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    if external:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data", size_threshold=threshold)
    else:
        onnx.save(model, path)


if __name__ == "__main__":
    {"resnet": resnet, "gpt2": gpt2, "gpt2-dynamic": lambda p: gpt2(p, "sequence_length"),
     "gpt2-torch": lambda p: gpt2(p, "sequence_length", True),
     "gpt2-ort": gpt2_ort, "gpt2-ort-bad": lambda p: gpt2_ort(p, "BiasGelu"),
     "gpt2-ort-view": lambda p: gpt2_ort(p, view=True), "gpt2-megatron": gpt2_megatron,
     "empty-read": empty_read, "gpt2-hf": gpt2_hf,
     "gpt2-mask": lambda p: gpt2_hf(p, "built"), "llama-ort": llama_ort, "llama-ort-mha": lambda p: llama_ort(p, gqa=False),
     "llama-ort-window": lambda p: llama_ort(p, bad="window"),
     "llama-ort-past": lambda p: llama_ort(p, bad="past"),
     "llama-ort-rms": lambda p: llama_ort(p, norms="torch"),
     "llama-torch": llama_torch, "llama-torch-mha": lambda p: llama_torch(p, kv=4),
     "expand-grad": lambda p: mask_refused(p, "expand-grad"),
     "sin-grad": lambda p: mask_refused(p, "sin-grad"),
     "reduce-axis": lambda p: mask_refused(p, "reduce-axis"), "mha-bias": lambda p: mask_refused(p, "mha-bias"),
     "unsupported": lambda p: tiny(p, "Erf", [2, 8]),
     "symbolic": lambda p: tiny(p, "Relu", ["batch", "seq"]),
     "external": lambda p: mlp(p, True), "external-big": lambda p: mlp(p, True, 1024),
     "inline": lambda p: mlp(p, False)}[sys.argv[1]](sys.argv[2])
