# SPDX-License-Identifier: Apache-2.0
"""How a measured framework ran its communication, written as a copy of a
hardware spec (docs/validation.md, "Communication as the framework ran
it"). Shared by bench/plans.sh and bench/validation.sh, which import it
from bench/ (their working directory is the repository root).

Columns of the case lists:
  grad_sync  overlapped (gradient buckets reduced under the backward: the
             built-in specs), after-backward (one reduction once the last
             micro-batch's backward is done: grad_overlap = 0), or - (as
             the built-in spec)
  tp_comm    serial (the built-in specs), async (a linear layer's backward
             collectives run under its own backward GEMMs, Megatron-LM
             2022's asynchronous tensor-parallel communication:
             tp_async_grad = 1) or overlapped (tensor-parallel collectives
             pipelined with the GEMMs: tp_comm_overlap = 1, with
             Transformer Engine's userbuffers defaults, TE_UB_DEFAULTS)
  grad_dtype - (gradients reduced in the model's dtype: the built-in
             specs) or f32 (reduced in f32 whatever the model's dtype:
             grad_reduce_bytes = 4)
  loss       - (the cross-entropy as one kernel in the model's dtype: the
             built-in specs) or f32 (over an f32 copy of 16-bit logits, as
             Megatron-LM computes it: loss_f32 = 1)
  grad_accum - (each micro-batch's gradients added into the accumulation
             buffer by an add kernel: the built-in specs) or fused (inside
             the weight-gradient GEMM, Megatron's
             gradient_accumulation_fusion: grad_accum_fusion = 1)
"""
import hashlib
import os
import subprocess
import sys

COLUMNS = {"grad_sync": ("overlapped", "after-backward", "-"),
           "tp_comm": ("serial", "async", "overlapped"),
           "grad_dtype": ("-", "f32"),
           "loss": ("-", "f32"),
           "grad_accum": ("-", "fused")}


# Transformer Engine's userbuffers as Megatron-Core's --tp-comm-overlap
# runs them without --tp-comm-overlap-cfg (Megatron-LM core_r0.8.0
# megatron/training/initialize.py passes an empty ub_cfgs): initialize_ub's
# defaults (TransformerEngine v1.8, 3ec998e,
# transformer_engine/pytorch/module/base.py, the same in v2.x): num_sm 16
# for the pipelined and bulk overlaps, num_splits 4 for the pipelined
# reduce-scatter (docs/hardware.md, "Transformer Engine's userbuffers").
TE_UB_DEFAULTS = {"tp_comm_overlap_sms": "16", "tp_comm_overlap_splits": "4"}


def check(prog, path, cases, defaults):
    """Exits naming the file, line and field of the first value that is not
    one of COLUMNS; a column a case lacks takes defaults[column], and is an
    error where defaults has no entry for it."""
    for line, c in enumerate(cases, start=2):
        for field, allowed in COLUMNS.items():
            v = c.get(field, defaults.get(field))
            if v not in allowed:
                sys.exit("%s: %s:%d: field '%s': %r is not one of %s" %
                         (prog, path, line, field, v, ", ".join(allowed)))


def spec_fields(c):
    """Case c's own spec fields (column spec_fields, "k=v;k=v" or "-"):
    {field: value}."""
    if c.get("spec_fields", "-") in ("-", ""):
        return {}
    return dict((k.strip(), v.strip()) for k, _, v in
                (kv.partition("=") for kv in c["spec_fields"].split(";")))


def overrides(c):
    """The spec fields that case c's framework sets otherwise than the
    built-in specs: {field: value as the spec file writes it}."""
    out = {}
    if c.get("grad_sync", "-") == "after-backward":
        out["grad_overlap"] = "0"
    if c.get("tp_comm", "serial") == "overlapped":
        out["tp_comm_overlap"] = "1"
        out.update(TE_UB_DEFAULTS)
    if c.get("tp_comm", "serial") == "async":
        out["tp_async_grad"] = "1"
    if c.get("grad_dtype", "-") == "f32":
        out["grad_reduce_bytes"] = "4"
    if c.get("loss", "-") == "f32":
        out["loss_f32"] = "1"
    if c.get("grad_accum", "-") == "fused":
        out["grad_accum_fusion"] = "1"
    return out


def write_spec(prog, approf, name, fields, path):
    """Writes `approf hardware show NAME` to path with the given fields
    replaced; returns the spec's own values {field: text}. Exits when the
    spec cannot be shown or lacks one of the fields."""
    try:
        p = subprocess.run([approf, "hardware", "show", name], capture_output=True, text=True,
                           timeout=60)
    except subprocess.TimeoutExpired:
        sys.exit("%s: approf hardware show %s: timed out" % (prog, name))
    if p.returncode:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        sys.exit("%s: approf hardware show %s: %s" % (prog, name,
                                                        lines[0] if lines else "(no message)"))
    values, seen = {}, set()
    with open(path, "w") as f:
        for l in p.stdout.splitlines():
            if " = " in l and not l.startswith("#"):
                key, val = l.split(" = ", 1)
                values[key] = val
                if key in fields:
                    l = "%s = %s" % (key, fields[key])
                    seen.add(key)
            f.write(l + "\n")
    missing = sorted(set(fields) - seen)
    if missing:
        sys.exit("%s: approf hardware show %s has no field %s" % (prog, name, ", ".join(missing)))
    return values


def spec_name(tmp, name, fields):
    """A file name in tmp for the copy of spec name with fields."""
    tail = "-".join("%s%s" % (k, v) for k, v in sorted(fields.items()))
    if len(name) + len(tail) > 200:  # past a file name's 255 bytes: a digest of the fields
        tail = hashlib.sha1(tail.encode()).hexdigest()
    return os.path.join(tmp, "%s%s.spec" % (name, "-" + tail if tail else ""))
