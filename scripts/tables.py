#!/usr/bin/env python3
"""The memory and traffic tables of results/*/README.md, from fa-bench sweep CSVs.

    python3 scripts/tables.py memory out/memory.csv   # per seqlen: each family's peak MiB, ms
    python3 scripts/tables.py traffic out/gpt2.csv    # per kernel: ms, TFLOP/s, model vs DRAM bytes

memory: one line per seqlen, two columns per family in the order the CSV first names them:
`peak_extra_bytes` in MiB (device memory beyond inputs and outputs) and the median in ms;
a row that is not ok shows its status (e.g. `oom`). traffic: one line per kernel row.
A `*` marks a throttled row (scripts/sm_clock.py's rule, against the highest clock the file
read). Markdown on stdout."""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sm_clock import max_clock_of, row_throttled  # noqa: E402

MIB = 1024 * 1024


def _star(row, max_mhz):
    return "*" if row_throttled(row, max_mhz) else ""


def memory_table(rows):
    max_mhz = max_clock_of(rows)
    families = list(dict.fromkeys(r["family"] for r in rows))
    cells = {}
    for r in rows:
        key = (int(r["seqlen_q"]), r["family"])
        if r["status"] != "ok":
            cells[key] = (r["status"], "")
        else:
            peak = r.get("peak_extra_bytes", "")  # empty: the back end could not say
            cells[key] = (f"{float(peak) / MIB:.1f}" if peak not in ("", None) else "",
                          f"{float(r['median_ms']):.3f}{_star(r, max_mhz)}")
    head = ["seqlen"] + [f"{f} {unit}" for f in families for unit in ("MiB", "ms")]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for seqlen in sorted({s for s, _ in cells}):
        line = [str(seqlen)]
        for f in families:
            line += list(cells.get((seqlen, f), ("", "")))
        out.append("| " + " | ".join(line) + " |")
    return out


def _gb(value):
    return f"{float(value) / 1e9:.3f}" if value not in ("", None) and float(value) >= 0 else ""


def _percent(value):  # a percentage; empty (files before schema 2: -1) where the counters were not read
    return f"{float(value):.1f}" if value not in ("", None) and float(value) >= 0 else ""


def traffic_table(rows):
    max_mhz = max_clock_of(rows)
    head = ["kernel", "ms", "TFLOP/s", "model read GB", "model written GB", "DRAM read GB", "DRAM written GB",
            "L2 hit %", "extra bytes"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r["status"] != "ok":
            out.append(f"| {r['kernel']} | {r['status']} |" + " |" * (len(head) - 2))
            continue
        hit = _percent(r.get("l2_hit_rate_pct", r.get("l2_hit_rate")))  # the older name in files before schema 2
        out.append("| " + " | ".join([
            r["kernel"], f"{float(r['median_ms']):.3f}{_star(r, max_mhz)}", f"{float(r['tflops']):.1f}",
            _gb(r["traffic_model_read_bytes"]), _gb(r["traffic_model_write_bytes"]),
            _gb(r.get("traffic_measured_read_bytes")), _gb(r.get("traffic_measured_write_bytes")), hit,
            r.get("peak_extra_bytes") or ""]) + " |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", choices=("memory", "traffic"))
    ap.add_argument("csv")
    args = ap.parse_args()
    try:
        with open(args.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"tables.py: {e}", file=sys.stderr)
        return 2
    if not rows:
        print(f"tables.py: {args.csv} has no rows", file=sys.stderr)
        return 2
    print("\n".join(memory_table(rows) if args.table == "memory" else traffic_table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
