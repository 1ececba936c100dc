#!/usr/bin/env python3
"""The memory and traffic tables of a results folder's summary.md, from fa-bench sweep CSVs.

    python3 scripts/tables.py memory out/memory.csv   # per seqlen: each family's peak MiB, ms
    python3 scripts/tables.py traffic out/gpt2.csv    # per kernel: ms, TFLOP/s, model vs DRAM bytes
    python3 scripts/tables.py gpt2 out/gpt2.csv       # per kernel and pass: HBM GB, ms, beside the paper

memory: one line per seqlen, two columns per family in the order the CSV first names them:
`peak_extra_bytes` in MiB (device memory beyond inputs and outputs) and the median in ms;
a row that is not ok shows its status (e.g. `oom`). traffic: one line per kernel row.
A `*` marks a throttled row (scripts/sm_clock.py's rule, against the highest clock the file
read). gpt2: the FlashAttention paper's GPT-2 medium figure (configs/paper-gpt2-medium.json):
per kernel and pass (fwd, bwd, fwd+bwd, in that order) the runtime, HBM bytes read + written
as modelled and as the DRAM counters measured them (empty where not measured; `-` where a
kernel's traffic is not modelled), and on fwd+bwd rows the paper's A100 numbers, then for
fwd+bwd the standard kernel over each flash kernel, as the paper's 40.3 / 4.4 GB and
41.7 / 7.3 ms. Markdown on stdout."""
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


# The FlashAttention paper (Dao et al., 2022), GPT-2 medium attention, forward + backward on
# an A100: HBM GB read + written, runtime ms.
PAPER_A100 = {"standard": (40.3, 41.7), "flash": (4.4, 7.3)}
PASS_ORDER = ("fwd", "bwd", "fwd+bwd")


def _total_gb(row, prefix):
    """Read + written bytes in GB; None where absent (empty or negative: not measured or not modelled)."""
    r, w = row.get(f"{prefix}_read_bytes"), row.get(f"{prefix}_write_bytes")
    if r in ("", None) or w in ("", None) or float(r) < 0 or float(w) < 0:
        return None
    total = float(r) + float(w)
    return total / 1e9 if total > 0 else None


def gpt2_table(rows):
    max_mhz = max_clock_of(rows)
    head = ["kernel", "pass", "ms", "TFLOP/s", "HBM GB model", "HBM GB measured", "paper A100 GB", "paper A100 ms"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = sorted(range(len(rows)), key=lambda i: (PASS_ORDER.index(rows[i].get("pass") or "fwd"), i))
    fwd_bwd = {}  # family -> (GB, ms) of its fwd+bwd row
    for i in order:
        r = rows[i]
        pass_ = r.get("pass") or "fwd"
        if r["status"] != "ok":
            out.append(f"| {r['kernel']} | {pass_} | {r['status']} |" + " |" * (len(head) - 3))
            continue
        model, measured = _total_gb(r, "traffic_model"), _total_gb(r, "traffic_measured")
        paper = ("", "")
        if pass_ == "fwd+bwd":
            gb, ms = PAPER_A100["standard" if r["family"] == "standard" else "flash"]
            paper = (f"{gb}", f"{ms}")
            fwd_bwd[r["family"]] = (measured if measured is not None else model, float(r["median_ms"]))
        out.append("| " + " | ".join([
            r["kernel"], pass_, f"{float(r['median_ms']):.3f}{_star(r, max_mhz)}", f"{float(r['tflops']):.1f}",
            f"{model:.3f}" if model is not None else "-", f"{measured:.3f}" if measured is not None else "",
            *paper]) + " |")
    if "standard" in fwd_bwd:
        std_gb, std_ms = fwd_bwd["standard"]
        pgb, pms = PAPER_A100["standard"][0] / PAPER_A100["flash"][0], PAPER_A100["standard"][1] / PAPER_A100["flash"][1]
        out.append("")
        for fam, (gb, ms) in fwd_bwd.items():
            if fam == "standard":
                continue
            bytes_ratio = f"{std_gb / gb:.1f}x the HBM bytes" if std_gb and gb else "HBM bytes not compared"
            out.append(f"fwd+bwd, standard over {fam}: {bytes_ratio}, {std_ms / ms:.1f}x the time "
                       f"(the paper, over FlashAttention: {pgb:.1f}x, {pms:.1f}x)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", choices=("memory", "traffic", "gpt2"))
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
    tables = {"memory": memory_table, "traffic": traffic_table, "gpt2": gpt2_table}
    print("\n".join(tables[args.table](rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
