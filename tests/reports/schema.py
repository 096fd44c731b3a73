#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Validates report.json against schemas/report.schema.json: the golden files
# and a freshly written report. Exit 77 (skipped) without python3-jsonschema.
# Usage: schema.py SCHEMA GOLDEN_DIR TEST_REPORTS_EXE
import json
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python3 jsonschema is not installed: test skipped")
    sys.exit(77)

schema_path, golden, exe = sys.argv[1:4]
schema = json.load(open(schema_path))
jsonschema.Draft202012Validator.check_schema(schema)
docs = [f"{golden}/mlp/report.json", f"{golden}/resnet50/report.json"]
with tempfile.TemporaryDirectory() as d:
    subprocess.run([exe, "--write", f"{d}/out"], check=True, stdout=subprocess.DEVNULL)
    docs.append(f"{d}/out/report.json")
    for path in docs:
        jsonschema.validate(json.load(open(path)), schema)
        print("valid:", path.replace(d, "<tmp>"))
    # A document the schema must refuse: a wrong conversion kind.
    bad = json.load(open(docs[0]))
    bad["conversions"][0]["kind"] = "split->merge"
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        print("refused: a bad conversion kind")
    else:
        print("FAIL: the schema accepts a bad conversion kind")
        sys.exit(1)
