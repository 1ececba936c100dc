#!/usr/bin/env python3
"""The ring forward's per-step timeline (docs/RING.md, "The timeline") from the CSV of
`ring_check time --csv FILE`: for the median sample, two bars per GPU against time, the
compute stream's steps (fa3 and the merge) and the comm stream's transfers, one colour
shade per step. A transfer hidden under compute lies inside the compute bar of its step;
a gap between one step's compute and the next is time the GPU waited for its K/V.

    python3 scripts/plot_ring_timeline.py timeline.noncausal.32768.csv [more.csv ...] --out DIR

One PNG per CSV (its name with .png). Exit 0; 2 for an unreadable or malformed file.
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import csv
import os
import sys

COLUMNS = {"case", "sample", "median", "total_ms", "gpu", "step",
           "compute_begin_ms", "compute_end_ms", "comm_begin_ms", "comm_end_ms"}


def median_rows(path):
    with open(path, newline="") as f:
        rd = csv.DictReader(f)
        missing = COLUMNS - set(rd.fieldnames or [])
        if missing:
            raise ValueError(f"not a ring_check timeline (missing {', '.join(sorted(missing))})")
        rows = [r for r in rd if r["median"] == "1"]
    if not rows:
        raise ValueError("no row of the median sample (median = 1)")
    return rows


def plot(path, out_dir, plt):
    rows = median_rows(path)
    gpus = sorted({int(r["gpu"]) for r in rows})
    steps = sorted({int(r["step"]) for r in rows})
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(11, 1.0 + 0.9 * len(gpus)))
    labels, ticks = [], []
    for gi, g in enumerate(gpus):
        y_compute, y_comm = 2 * gi + 1, 2 * gi
        for r in (r for r in rows if int(r["gpu"]) == g):
            s = int(r["step"])
            c0, c1 = float(r["compute_begin_ms"]), float(r["compute_end_ms"])
            ax.broken_barh([(c0, c1 - c0)], (y_compute - 0.4, 0.8), color=cmap(s % 10),
                           label=f"step {s}" if gi == 0 else None)
            if float(r["comm_begin_ms"]) >= 0:
                m0, m1 = float(r["comm_begin_ms"]), float(r["comm_end_ms"])
                ax.broken_barh([(m0, m1 - m0)], (y_comm - 0.4, 0.8), color=cmap(s % 10), alpha=0.45, hatch="//")
        labels += [f"GPU {g} comm", f"GPU {g} compute"]
        ticks += [2 * gi, 2 * gi + 1]
    ax.set_yticks(ticks, labels)
    ax.set_xlabel("ms from the GPU's start event (median sample)")
    total = float(rows[0]["total_ms"])
    ax.set_title(f"{rows[0]['case']}: {len(steps)} steps, {total:.2f} ms (comm bars hatched)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8, ncol=min(len(steps), 8))
    fig.tight_layout()
    target = os.path.join(out_dir, os.path.splitext(os.path.basename(path))[0] + ".png")
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="ring_check time --csv files")
    ap.add_argument("--out", required=True, help="folder for the PNGs (created)")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_ring_timeline.py: needs matplotlib (python3-matplotlib)", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    for p in a.files:
        try:
            print(f"plot_ring_timeline.py: wrote {plot(p, a.out, plt)}")
        except (OSError, ValueError, KeyError) as e:
            print(f"plot_ring_timeline.py: {p}: {e}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
