#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a launch file written by apreport against a framework manifest
(reports/manifests/*.json, format in reports/manifests/README.md).

    check_launch.py MANIFEST FILE [--quiet]

Checks that every flag or key of FILE is one the manifest knows and is not
a dead key, that values have the manifest's type, range and choices, that
every required flag or key is present, and the manifest's cross-field
rules (world-size divisibility, expert grid, sequence parallelism with
MoE, interleaving, DDP with TP/PP, ...), evaluated over the file's values
(defaults filled in) and the facts of its 'launch context:' line and
launcher line. A value the file marks '# UNKNOWN <flag>: <why>' is
reported as unknown, not as missing.

Prints one line per finding ('error: ...', 'unknown: ...', 'warn: ...').
Exit status: 0 clean (warnings allowed), 1 errors, 3 no errors but
unknown values, 2 usage or unreadable input. Python 3.11 standard library
only (tomllib).
"""
import json
import math
import re
import shlex
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None


class NS:
    """Attribute access over a nested dict; absent names read as None."""

    def __init__(self, d):
        self._d = d

    def __getattr__(self, name):
        v = self._d.get(name)
        return NS(v) if isinstance(v, dict) else v

    def __bool__(self):
        return bool(self._d)


def comments_of(fmt, text, data):
    """The file's comment lines (without '# ')."""
    if fmt == "json":
        c = data.get("_comment", []) if isinstance(data, dict) else []
        return [x for x in c if isinstance(x, str)]
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            out.append(line[1:].strip())
    return out


def parse_args(text, findings, multi=()):
    """Megatron-LM args file: {flag: value or True}; a flag in multi (nargs
    '+') takes every word up to the next flag, as a list."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError as e:
        findings.append(("error", "the file does not split into shell words: %s" % e))
        return {}
    out, i = {}, 0
    while i < len(words):
        w = words[i]
        if not w.startswith("--"):
            findings.append(("error", "word %r is no flag" % w))
            i += 1
            continue
        if w in out:
            findings.append(("error", "%s given twice" % w))
        if w in multi:
            j = i + 1
            while j < len(words) and not words[j].startswith("--"):
                j += 1
            out[w] = words[i + 1:j] or True
            i = j
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[w] = words[i + 1]
            i += 2
        else:
            out[w] = True
            i += 1
    return out


def flatten(d, prefix=""):
    """{'a': {'b': 1}} -> {'a': {...}, 'a.b': 1}."""
    out = {}
    for k, v in d.items():
        key = prefix + k
        out[key] = v
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
    return out


def type_ok(spec, v):
    t = spec.get("type")
    if v is None:
        return spec.get("nullable", False)
    if t == "any":
        return True
    if t == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "bool" or t == "flag":
        return isinstance(v, bool)
    if t == "str":
        return isinstance(v, str)
    if t == "object":
        return isinstance(v, dict)
    if t == "list":
        # a TOML array of strings (torchtitan's list[str] fields)
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    return False


def check_value(key, spec, v, findings):
    if not type_ok(spec, v):
        findings.append(("error", "%s = %r is not of type %s" % (key, v, spec.get("type"))))
        return
    if v is None:
        return
    if "choices" in spec and isinstance(v, list):
        for x in v:
            if x not in spec["choices"]:
                findings.append(("error", "%s: %r is not one of %s" % (key, x, spec["choices"])))
    elif "choices" in spec and v not in spec["choices"]:
        findings.append(("error", "%s = %r is not one of %s" % (key, v, spec["choices"])))
    if "min" in spec and isinstance(v, (int, float)) and not isinstance(v, bool) and v < spec["min"]:
        findings.append(("error", "%s = %r is below %s" % (key, v, spec["min"])))


def convert_arg(spec, v):
    """An args-file word to the manifest's type (None when it does not convert)."""
    t = spec.get("type")
    if t == "flag":
        return True if v is True else None
    if v is True:
        return None
    if t == "int":
        return int(v) if re.fullmatch(r"-?[0-9]+", v) else None
    if t == "float":
        try:
            return float(v)
        except ValueError:
            return None
    return v


def unknown_markers(comments):
    """Keys the file marks '# UNKNOWN <what>: <why>'. '[sec] a/b' names sec.a and sec.b."""
    out = {}
    for c in comments:
        m = re.match(r"UNKNOWN (.+?): (.*)$", c)
        if not m:
            continue
        what, why = m.group(1), m.group(2)
        s = re.fullmatch(r"\[([a-z_]+)\] (.+)", what)
        if s:
            for k in s.group(2).split("/"):
                out[s.group(1) + "." + k.strip()] = why
        else:
            out[what] = why
    return out


def context_of(comments, findings):
    ctx = {}
    for c in comments:
        if c.startswith("launch context:"):
            for kv in c[len("launch context:"):].split():
                k, _, v = kv.partition("=")
                ctx[k] = int(v) if re.fullmatch(r"-?[0-9]+", v) else v
    if "world_size" not in ctx:
        findings.append(("error", "no 'launch context:' line (world_size, nodes, tp, pp, layers)"))
    launcher = " ".join(c for c in comments if "torchrun" in c or c.startswith("launch:"))
    ctx["launcher"] = launcher
    return ctx


def main(argv):
    if len(argv) < 3 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    quiet = "--quiet" in argv[3:]
    try:
        man = json.load(open(argv[1], encoding="utf-8"))
        text = open(argv[2], encoding="utf-8").read()
    except (OSError, ValueError) as e:
        print("check_launch: %s" % e, file=sys.stderr)
        return 2
    fmt = man["format"]
    keys = man["keys"]
    findings = []
    data = None
    if fmt == "args" and man.get("comment_prefix"):
        # the flags are comment lines '# <prefix>--flag value' of another file
        pre = man["comment_prefix"]
        lines = [l.lstrip("#").strip() for l in text.splitlines() if l.startswith("#")]
        raw = parse_args("\n".join(l[len(pre):] for l in lines if l.startswith(pre)), findings)
    elif fmt == "args":
        raw = parse_args(text, findings,
                         {k for k, s in keys.items() if s.get("nargs") == "+"})
    elif fmt == "json":
        try:
            data = json.loads(text)
        except ValueError as e:
            findings.append(("error", "not JSON: %s" % e))
            data = {}
        raw = flatten(data)
    elif fmt == "toml":
        if tomllib is None:
            print("check_launch: tomllib missing (Python < 3.11)", file=sys.stderr)
            return 77
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            findings.append(("error", "not TOML: %s" % e))
            data = {}
        raw = flatten(data)
    else:
        print("check_launch: unknown format %r" % fmt, file=sys.stderr)
        return 2
    comments = comments_of(fmt, text, data)
    unknown = unknown_markers(comments)
    ctx = context_of(comments, findings)
    approf = set(man.get("approf_keys", []))
    closed = man.get("closed_sections")

    # every key known, typed, alive
    values = {}
    for k, v in raw.items():
        top = k.split(".")[0]
        if top in approf:
            continue
        spec = keys.get(k)
        if spec is None:
            if fmt == "toml" and closed is not None and "." not in k and top not in closed:
                findings.append(("error", "unknown section [%s]" % k))
            elif fmt == "toml" and "." not in k:
                pass  # a section of the file; its keys are checked one by one
            else:
                findings.append(("error", "unknown %s %s" % ("flag" if fmt == "args" else "key", k)))
            continue
        if spec.get("read") is False:
            findings.append(("error", "%s is accepted but never read by %s %s (a dead key)"
                             % (k, man["framework"], man["version"])))
        if fmt == "args" and spec.get("nargs") == "+":
            cv = [convert_arg(spec, x) for x in v] if isinstance(v, list) else None
            if cv is None or None in cv:
                findings.append(("error", "%s %r is not a list of %s" % (k, v, spec["type"])))
                continue
            for x in cv:
                check_value(k, spec, x, findings)
            values[k] = cv
            continue
        if fmt == "args":
            cv = convert_arg(spec, v)
            if cv is None:
                findings.append(("error", "%s %r is not of type %s" % (k, v, spec["type"])))
                continue
            v = cv
        check_value(k, spec, v, findings)
        values[k] = v
    for k in man.get("required", []):
        if k in values:
            continue
        if k in unknown:
            findings.append(("unknown", "%s: %s" % (k, unknown[k])))
        else:
            findings.append(("error", "required %s missing" % k))

    # the namespace of the rules: values over defaults, then the context
    ns = {}
    nested = {}
    for k, spec in keys.items():
        v = values.get(k, False if spec.get("type") == "flag" else spec.get("default"))
        if fmt == "args":
            ns[k.lstrip("-").replace("-", "_").replace(".", "_")] = v
        elif spec.get("type") != "object":
            d = nested
            parts = k.split(".")
            for p in parts[:-1]:
                d = d.setdefault(p, {})
            d[parts[-1]] = v
    for k, v in nested.items():
        ns[k] = NS(v) if isinstance(v, dict) else v
    ns.update(man.get("context_defaults", {}))
    ns.update(ctx)
    env = {"__builtins__": {}, "ceil": math.ceil, "min": min, "max": max, "prod": math.prod,
           "len": len, "set": set, "any": any, "all": all,
           "has": lambda path: path in raw}
    for name, expr in man.get("derived", {}).items():
        try:
            ns[name] = eval(expr, env, ns)
        except Exception as e:  # noqa: BLE001 - a value is missing
            ns[name] = None
            findings.append(("unknown" if unknown else "error",
                             "derived %s cannot be computed (%s)" % (name, e)))
    for rule in man.get("rules", []):
        sev = rule.get("severity", "error")
        try:
            if "when" in rule and not eval(rule["when"], env, ns):
                continue
            ok = eval(rule["check"], env, ns)
        except Exception as e:  # noqa: BLE001 - a missing value makes a rule unevaluable
            findings.append(("unknown" if unknown else "error",
                             "rule %s cannot be evaluated (%s): %s" % (rule["id"], e, rule["text"])))
            continue
        if not ok:
            findings.append((sev if sev == "warn" else "error",
                             "rule %s: %s" % (rule["id"], rule["text"])))
    for sev, msg in findings:
        if not quiet or sev != "warn":
            print("%s: %s" % (sev, msg))
    if any(s == "error" for s, _ in findings):
        return 1
    if any(s == "unknown" for s, _ in findings):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
