#!/usr/bin/env python3
"""Figures from fa-bench CSV files (docs/OUTPUTS.md lists the columns).

    python3 scripts/plot.py results/h200/2026-11-30-0d70af4/paper-fwd.csv [more.csv ...] --out out/plots

Writes PNGs (each only when the CSVs hold the data it needs, and says which it
skipped and why):
  tflops.png      TFLOP/s vs seqlen per kernel, one panel per head_dim x causal
                  (the FlashAttention papers' layout)
  latency.png     median latency vs seqlen, same panels (log y)
  traffic.png     modelled vs measured HBM bytes per kernel (where measured)
  memory.png      peak extra device memory vs seqlen (log-log)
  error.png       O max abs error (and the tolerance) vs seqlen
  blocks.png      block_m x block_n heat map of TFLOP/s per kernel family
                  (from a block sweep: more than one tile per family)
Needs matplotlib (Debian: python3-matplotlib). Rows from several CSVs are
pooled, so PyTorch peers (scripts/torch_peers.py) plot beside our kernels.
"""
import argparse
import csv
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def num(row, key):
    v = row.get(key, "")
    if v in ("", None):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def load(paths):
    rows = []
    for p in paths:
        try:
            with open(p, newline="") as f:
                rd = csv.DictReader(f)
                missing = {"kernel", "seqlen_q", "head_dim", "causal", "status"} - set(rd.fieldnames or [])
                if missing:
                    sys.exit(f"plot.py: {p}: not an fa-bench CSV (missing columns: {', '.join(sorted(missing))})")
                rows.extend(rd)
        except OSError as e:
            sys.exit(f"plot.py: cannot read {p}: {e.strerror}")
    return rows


def series_label(row):
    """Kernels are plotted by name without the head_dim part, so one line spans panels;
    a backward pass is its own line (a bwd and a fwd+bwd row share their kernel)."""
    label = row["kernel"].replace(f".hd{row['head_dim']}", "")
    pass_ = row.get("pass") or "fwd"
    return label if pass_ == "fwd" else f"{label} ({pass_})"


def panels(rows):
    keys = sorted({(int(r["head_dim"]), r["causal"] == "true") for r in rows})
    return keys


def panel_grid(keys, title):
    hds = sorted({k[0] for k in keys})
    causals = sorted({k[1] for k in keys})
    fig, axes = plt.subplots(len(causals), len(hds), figsize=(4.6 * len(hds), 3.6 * len(causals)),
                             squeeze=False, sharex=True)
    fig.suptitle(title)
    where = {}
    for i, c in enumerate(causals):
        for j, h in enumerate(hds):
            ax = axes[i][j]
            ax.set_title(f"head_dim {h}, {'causal' if c else 'non-causal'}")
            ax.set_xscale("log", base=2)
            ax.grid(True, alpha=0.3)
            where[(h, c)] = ax
    return fig, where


def label_panels(where, ylabel, logy):
    for ax in where.values():
        ax.set_xlabel("seqlen")
        ax.set_ylabel(ylabel)
        if logy:
            ax.set_yscale("log")
        if ax.lines:
            ax.legend(fontsize=6)


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def line_plot(rows, ycol, ylabel, title, path, logy=False):
    ok = [r for r in rows if r["status"] == "ok" and num(r, ycol) is not None]
    if not ok:
        return f"no ok rows with {ycol}"
    fig, where = panel_grid(panels(ok), title)
    groups = defaultdict(list)
    for r in ok:
        groups[(int(r["head_dim"]), r["causal"] == "true", series_label(r))].append(
            (int(r["seqlen_q"]), num(r, ycol)))
    for (h, c, label), pts in sorted(groups.items()):
        pts.sort()
        ax = where[(h, c)]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
    label_panels(where, ylabel, logy)
    save(fig, path)
    return None


def traffic_plot(rows, path):
    have = [r for r in rows if num(r, "traffic_measured_read_bytes") is not None
            and num(r, "traffic_model_read_bytes") is not None and r["status"] == "ok"]
    if not have:
        return "no rows with measured traffic (run the sweep with --counters on a GPU)"
    labels = [f"{series_label(r)}\n{r['seqlen_q']} d{r['head_dim']}{' c' if r['causal'] == 'true' else ''}"
              for r in have]
    model = [(num(r, "traffic_model_read_bytes") + num(r, "traffic_model_write_bytes")) / 1e9 for r in have]
    meas = [(num(r, "traffic_measured_read_bytes") + (num(r, "traffic_measured_write_bytes") or 0)) / 1e9
            for r in have]
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(have)), 4))
    x = range(len(have))
    ax.bar([i - 0.2 for i in x], model, width=0.4, label="model (no cache)")
    ax.bar([i + 0.2 for i in x], meas, width=0.4, label="measured")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_ylabel("HBM bytes (GB)")
    ax.set_yscale("log")
    ax.set_title("Modelled vs measured HBM traffic (the gap is L2 reuse)")
    ax.legend()
    save(fig, path)
    return None


def memory_plot(rows, path):
    have = [r for r in rows if num(r, "peak_extra_bytes") is not None and num(r, "peak_extra_bytes") >= 0
            and r["status"] in ("ok", "fail")]
    oom = [r for r in rows if r["status"] == "oom"]
    if not have:
        return "no rows with peak_extra_bytes"
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = defaultdict(list)
    for r in have:
        groups[series_label(r)].append((int(r["seqlen_q"]), max(num(r, "peak_extra_bytes"), 1) / 2**20))
    for label, pts in sorted(groups.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
    for r in oom:
        ax.axvline(int(r["seqlen_q"]), color="red", alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("seqlen")
    ax.set_ylabel("peak extra memory (MiB)")
    ax.set_title("Peak memory beyond inputs and outputs" + (" (red: oom)" if oom else ""))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)
    save(fig, path)
    return None


def error_plot(rows, path):
    have = [r for r in rows if num(r, "o_max_abs") is not None]
    if not have:
        return "no rows with o_max_abs"
    fig, where = panel_grid(panels(have), "O max abs error vs float64 reference (dashed: tolerance)")
    groups = defaultdict(list)
    for r in have:
        groups[(int(r["head_dim"]), r["causal"] == "true", series_label(r))].append(
            (int(r["seqlen_q"]), max(num(r, "o_max_abs"), 1e-12), num(r, "tolerance")))
    for (h, c, label), pts in sorted(groups.items()):
        pts.sort()
        ax = where[(h, c)]
        (ln,) = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        tol = [(p[0], p[2]) for p in pts if p[2]]
        if tol:
            ax.plot([t[0] for t in tol], [t[1] for t in tol], ls="--", color=ln.get_color(), alpha=0.5)
    label_panels(where, "max |O - ref|", logy=True)
    save(fig, path)
    return None


def blocks_plot(rows, path):
    ok = [r for r in rows if r["status"] == "ok" and num(r, "tflops") and num(r, "block_m")]
    by_family = defaultdict(list)
    for r in ok:
        by_family[(r.get("backend", ""), r.get("family", ""), r["dtype"], int(r["head_dim"]))].append(r)
    swept = {k: v for k, v in by_family.items()
             if len({(int(r["block_m"]), int(r["block_n"])) for r in v}) > 1}
    if not swept:
        return "no family with more than one tile (run configs/blocks.json)"
    keys = sorted(swept)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.8), squeeze=False)
    for ax, key in zip(axes[0], keys):
        rs = swept[key]
        bms = sorted({int(r["block_m"]) for r in rs})
        bns = sorted({int(r["block_n"]) for r in rs})
        # Mean TFLOP/s over the sweep's other axes (seqlen, causal) per tile.
        acc = defaultdict(list)
        for r in rs:
            acc[(int(r["block_m"]), int(r["block_n"]))].append(num(r, "tflops"))
        grid = [[(sum(acc[(m, n)]) / len(acc[(m, n)])) if acc[(m, n)] else float("nan") for n in bns]
                for m in bms]
        im = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(bns)))
        ax.set_xticklabels(bns)
        ax.set_yticks(range(len(bms)))
        ax.set_yticklabels(bms)
        ax.set_xlabel("block_n")
        ax.set_ylabel("block_m")
        ax.set_title(f"{key[0]}.{key[1]} {key[2]} d{key[3]}")
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color="w")
        fig.colorbar(im, ax=ax, label="mean TFLOP/s")
    save(fig, path)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="fa-bench CSV file(s) (sweep --csv, scripts/torch_peers.py)")
    ap.add_argument("--out", default="plots", help="output folder for the PNGs (default: plots)")
    args = ap.parse_args()
    rows = load(args.csv)
    if not rows:
        sys.exit("plot.py: the CSV files hold no rows")
    os.makedirs(args.out, exist_ok=True)
    # The title names the pass the rows hold (a file without a pass column holds forward rows).
    passes = sorted({r.get("pass") or "fwd" for r in rows})
    what = {"fwd": "Forward", "bwd": "Backward", "fwd+bwd": "Forward + backward"}
    title = what.get(passes[0], passes[0]) if len(passes) == 1 else " / ".join(passes)
    figures = {
        "tflops.png": lambda p: line_plot(rows, "tflops", "TFLOP/s", f"{title} TFLOP/s", p),
        "latency.png": lambda p: line_plot(rows, "median_ms", "median latency (ms)", f"{title} latency", p,
                                           logy=True),
        "traffic.png": lambda p: traffic_plot(rows, p),
        "memory.png": lambda p: memory_plot(rows, p),
        "error.png": lambda p: error_plot(rows, p),
        "blocks.png": lambda p: blocks_plot(rows, p),
    }
    for name, fn in figures.items():
        path = os.path.join(args.out, name)
        why = fn(path)
        print(f"plot.py: {'skipped ' + name + ': ' + why if why else 'wrote ' + path}", file=sys.stderr)


if __name__ == "__main__":
    main()
