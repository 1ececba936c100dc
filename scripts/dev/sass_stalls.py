#!/usr/bin/env python3
"""Where a kernel's warps stall, per SASS instruction, from Nsight Compute's source page:

    ncu --section SourceCounters --section WarpStateStats -o rep <program>
    ncu --import rep.ncu-rep --page source --csv --print-source sass > sass.csv
    python3 scripts/dev/sass_stalls.py sass.csv [--top 25] [--range START END]

Prints, as shares of all warp-stall samples: the stall reasons over the whole kernel; the
instructions grouped by how often they executed (a loop body shares one count, so this
splits per-block code from per-tile code without line info); the top instructions with
their reasons. --range keeps only instructions whose address ends in a hex suffix between
START and END (as the top list prints them), for one region's reasons."""
import argparse
import collections
import csv
import sys

ALL = "Warp Stall Sampling (All Samples)"


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # ncu writes a "Kernel Name" line first, then the header.
    start = next((i for i, r in enumerate(rows) if "Address" in r and "Source" in r), None)
    if start is None:
        raise ValueError(f"{path}: no 'Address'/'Source' header (not ncu's --page source --csv output?)")
    header = rows[start]
    return header, [dict(zip(header, r)) for r in rows[start + 1:] if len(r) == len(header)]


def num(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def suffix(address, width=5):
    return address[-width:]


def report(header, rows, top, span=None):
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(num(r.get(ALL)) for r in rows)
    if total <= 0:
        return ["no stall samples in this file"]
    if span:
        lo, hi = (int(s, 16) for s in span)
        rows = [r for r in rows if lo <= int(suffix(r["Address"]), 16) <= hi]
    pct = lambda x: f"{100 * x / total:.1f} %"
    out = [f"{len(rows)} instructions, {int(total)} samples" + (" (shares of the whole kernel)" if span else "")]
    by_reason = {h[len("stall_"):]: sum(num(r.get(h)) for r in rows) for h in reasons}
    out.append("reasons: " + ", ".join(f"{k} {pct(v)}" for k, v in sorted(by_reason.items(), key=lambda kv: -kv[1])
                                       if v / total >= 0.005))
    groups = collections.defaultdict(lambda: [0, 0.0])
    for r in rows:
        g = groups[r.get("Instructions Executed", "")]
        g[0] += 1
        g[1] += num(r.get(ALL))
    out.append("by execution count (instructions executed: instructions, share):")
    for count, (n, samples) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:8]:
        out.append(f"  {count:>10}: {n:5d} instructions, {pct(samples)}")
    out.append(f"top {top} instructions (address suffix, executed, share, reasons):")
    for r in sorted(rows, key=lambda r: -num(r.get(ALL)))[:top]:
        why = ", ".join(f"{h[len('stall_'):]} {int(num(r.get(h)))}" for h in reasons if num(r.get(h)) > 0)
        out.append(f"  {suffix(r['Address'])} {r.get('Instructions Executed', ''):>8} {pct(num(r.get(ALL))):>7}  "
                   f"{r.get('Source', '').strip()[:60]}  [{why}]")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--range", nargs=2, metavar=("START", "END"), help="hex address suffixes, inclusive")
    args = ap.parse_args()
    try:
        header, rows = load(args.csv)
    except (OSError, ValueError) as e:
        print(f"sass_stalls.py: {e}", file=sys.stderr)
        return 2
    print("\n".join(report(header, rows, args.top, args.range)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
