#!/usr/bin/env python3
"""validate.py SCHEMA < RESULT: exit 0 when RESULT validates, 1 with the errors when not,
2 when the jsonschema package is missing."""
import json
import sys

try:
    import jsonschema
except ImportError:
    sys.stderr.write("jsonschema is not installed\n")
    sys.exit(2)

with open(sys.argv[1]) as f:
    schema = json.load(f)
instance = json.load(sys.stdin)
validator = jsonschema.Draft7Validator(schema)
errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
for e in errors:
    print("%s: %s" % ("/".join(str(p) for p in e.path) or "(top)", e.message))
sys.exit(1 if errors else 0)
