#!/usr/bin/env python3
"""A short TFLOP/s table with ratios from fa-bench / torch_peers CSV files.

    python3 scripts/summarize.py out/paper-fwd.csv out/torch.csv \
        --ratio fa2/torch.flash --ratio fa3/cudnn --ratio fa1/fa2

Columns are series: a family of our cuda kernels (`fa1`, `fa2`, `fa3`, `cudnn`,
`standard`: the row of that family at the point, i.e. the tile the sweep ran,
normally the default), or a torch peer by kernel name (`torch.flash`,
`torch.cudnn`). A cudnn_fp8_check --csv file (cuDNN's FP8 forward timed on its own)
counts as the `cudnn` series where no sweep row of the family is at the point: an e4m3
sweep with `--kernels fa3,cudnn` has its own `cudnn` rows, and they win
(scripts/peer_rows.py). One line per (head_dim, causal, seqlen); each --ratio A/B adds a
column A's TFLOP/s over B's. Only rows of one pass are read (--pass, default fwd;
a file without a `pass` column holds forward rows). Rows with another status show it instead of a number.
A `*` marks a number from a throttled row, and every ratio that uses one: its
`reason` starts with `throttled`, or its clock columns fail the same rule
(scripts/sm_clock.py) against the maximum SM clock (--max-clock-mhz; by default
the highest clock any row of these files read). So rows timed before fa-bench
checked the clock against the maximum are judged the same way.
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_rows import is_standalone, prefer_sweep_rows, standalone_rows  # noqa: E402
from sm_clock import THROTTLE_DROP, max_clock_of, row_throttled  # noqa: E402


def series_of(row):
    if row["kernel"].startswith("torch."):
        return row["kernel"]
    if row.get("backend") == "cuda":
        return row["family"]
    return None  # cpu rows are not summarised


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--ratio", action="append", default=[], help="A/B: add a column A over B")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--pass", dest="pass_", default="fwd", choices=("fwd", "bwd", "fwd+bwd"),
                    help="the pass whose rows are summarised (default fwd)")
    ap.add_argument("--max-clock-mhz", type=int, default=0,
                    help="maximum SM clock for the throttle rule (default: the highest reading in the files)")
    args = ap.parse_args()
    rows = []
    for path in args.csv:
        try:
            f = open(path, newline="")
        except OSError as e:
            print(f"summarize.py: skipping {path}: {e.strerror}", file=sys.stderr)
            continue
        with f:
            rd = csv.DictReader(f)
            rows.extend(standalone_rows(rd) if is_standalone(rd.fieldnames) else rd)
    rows = prefer_sweep_rows(rows)
    max_clock = args.max_clock_mhz or max_clock_of(rows)
    cell = {}
    throttled = set()  # (point, series) whose kept row is row_throttled
    status = {}
    keys = set()
    names = []
    for r in rows:
        s = series_of(r)
        if s is None or r["dtype"] != args.dtype or (r.get("pass") or "fwd") != args.pass_:
            continue
        k = (int(r["head_dim"]), r["causal"] == "true", int(r["seqlen_q"]))
        keys.add(k)
        if s not in names:
            names.append(s)
        if r["status"] == "ok" and r["tflops"]:
            # Several tiles of one family at a point: keep the best.
            if float(r["tflops"]) > cell.get((k, s), 0.0):
                cell[(k, s)] = float(r["tflops"])
                throttled.discard((k, s))
                if row_throttled(r, max_clock):
                    throttled.add((k, s))
        else:
            status.setdefault((k, s), r["status"])
    ratios = [tuple(x.split("/")) for x in args.ratio]
    head = ["hd", "causal", "seqlen"] + names + [f"{a}/{b}" for a, b in ratios]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    star = lambda k, *series: "*" if any((k, s) in throttled for s in series) else ""
    for k in sorted(keys):
        row = [str(k[0]), "yes" if k[1] else "no", str(k[2])]
        for s in names:
            row.append(f"{cell[(k, s)]:.1f}{star(k, s)}" if (k, s) in cell else status.get((k, s), "-"))
        for a, b in ratios:
            va, vb = cell.get((k, a)), cell.get((k, b))
            row.append(f"{va / vb:.2f}{star(k, a, b)}" if va and vb else "-")
        print("| " + " | ".join(row) + " |")
    if throttled:
        pct = f"{THROTTLE_DROP * 100:g} %"
        print(f"\n`*`: timed while the SM clock fell by more than {pct}, or more than {pct} below its maximum "
              f"({max_clock} MHz); the row's clock columns say from what to what.")
    if not keys:
        print(f"summarize.py: no cuda or torch rows of dtype {args.dtype} and pass {args.pass_}", file=sys.stderr)


if __name__ == "__main__":
    main()
