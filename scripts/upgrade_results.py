#!/usr/bin/env python3
"""Rewrites an fa-bench results file of schema_version 1 as schema_version 2, so the
regression gate can compare runs recorded before the change with runs after it.

    python3 scripts/upgrade_results.py OLD.json NEW.json

What changes (docs/OUTPUTS.md, "Absent values"): 0, -1 and "" that stood for a value
not measured become null (tflops, matmul_fraction and model_bandwidth_gbps of untimed
rows or without a ceiling, peak_extra_bytes -1, clocks -1, tile fields 0, an empty
reason or traffic_measured_source, metadata.matmul_ceiling_tflops 0); l2_hit_rate
becomes l2_hit_rate_pct; softmax_scale 0 becomes the scale it stood for,
1/sqrt(head_dim); a traffic_model of 0 and 0 (no model: cuDNN's backward) becomes
null. Files written before the backward pass existed have no pass, fwd_kernel or
grad_errors: their rows are forward rows (pass "fwd", fwd_kernel and grad_errors
null); files that have them keep them, an empty fwd_kernel (a forward row) becoming
null. Each row's key is recomputed, the pass included. Measured numbers are not
touched.
The file written is a new one (NEW must differ from OLD). Exit 2 on a file that is
not schema 1.
"""
import json
import math
import os
import sys


def absent_if(row, key, is_absent):
    if key in row and row[key] is not None and is_absent(row[key]):
        row[key] = None


def upgrade_row(row):
    p = row["problem"]
    if not p.get("softmax_scale"):
        p["softmax_scale"] = 1.0 / math.sqrt(p["head_dim"])
    for key in ("block_m", "block_n", "warps", "stages"):
        absent_if(row["tile"], key, lambda v: v == 0)
    timed = row.get("timing") is not None
    for key in ("tflops", "model_bandwidth_gbps", "matmul_fraction"):
        absent_if(row, key, lambda v: not timed or v == 0)
    absent_if(row, "peak_extra_bytes", lambda v: v < 0)
    absent_if(row, "clock_before_mhz", lambda v: v < 0)
    absent_if(row, "clock_after_mhz", lambda v: v < 0)
    absent_if(row, "reason", lambda v: v == "")
    absent_if(row, "traffic_measured_source", lambda v: v == "")
    row["l2_hit_rate_pct"] = row.pop("l2_hit_rate", None)
    model = row.get("traffic_model")
    if model is not None and model.get("read_bytes") == 0 and model.get("write_bytes") == 0:
        row["traffic_model"] = None
    row.setdefault("pass", "fwd")
    row["fwd_kernel"] = row.get("fwd_kernel") or None
    row.setdefault("grad_errors", None)
    # Result::key(): kernel, every problem field (the scale in shortest round-trip form), the pass.
    row["key"] = ("{kernel} batch={batch} heads={heads} heads_kv={heads_kv} seqlen_q={seqlen_q} "
                  "seqlen_k={seqlen_k} head_dim={head_dim} causal={causal} dtype={dtype} softmax_scale={scale} "
                  "pass={pass_}").format(
        kernel=row["kernel"], causal=int(p["causal"]), scale=repr(p["softmax_scale"]), pass_=row["pass"],
        **{k: p[k] for k in ("batch", "heads", "heads_kv", "seqlen_q", "seqlen_k", "head_dim", "dtype")})
    return row


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    if os.path.exists(dst) and os.path.samefile(src, dst):
        print(f"upgrade_results.py: {dst} is {src}: write the new file elsewhere", file=sys.stderr)
        return 2
    try:
        with open(src) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"upgrade_results.py: {src}: {e}", file=sys.stderr)
        return 2
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        print(f"upgrade_results.py: {src}: schema_version {doc.get('schema_version') if isinstance(doc, dict) else '?'},"
              " expected 1", file=sys.stderr)
        return 2
    doc["schema_version"] = 2
    meta = doc.get("metadata", {})
    if not meta.get("matmul_ceiling_tflops"):
        meta["matmul_ceiling_tflops"] = None
    doc["results"] = [upgrade_row(r) for r in doc["results"]]
    with open(dst, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"{dst}: {len(doc['results'])} rows, schema_version 2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
