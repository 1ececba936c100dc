#!/usr/bin/env python3
"""Figures from fa-bench results: sweep --csv or --json files, scripts/torch_peers.py CSVs
(docs/OUTPUTS.md lists the columns), and the CSV of a standalone peer timer
(tests/gpu/standalone/cudnn_fp8_check --csv: cuDNN's FP8 forward beside an e4m3 sweep;
at a point where a sweep row of the same family exists, `cudnn.e4m3`, the sweep's row is
drawn and the standalone one left out: scripts/peer_rows.py).

    python3 scripts/plot.py results/h200/2026-12-02-7f1aa09/paper-fwd.json torch-paper-fwd.csv --out out/plots
    python3 scripts/plot.py run.csv --x head_dim --y tflops --series kernel --panels causal,dtype

Axes are chosen as in Triton's perf_report: --x (seqlen, head_dim, batch, block) against
--y (tflops, latency, traffic, memory, error; roofline and blocks are whole figures of
their own), one line per --series value, one panel per combination of the --panels axes
that vary. The defaults (--x seqlen --series kernel --panels head_dim,causal,dtype,pass)
give the FlashAttention papers' layout: a column per head_dim, a row per causal. Rows
that differ in an axis that is neither x, series nor panel (fp32 and bf16 rows of one
kernel, say) would draw one line through both: plot.py refuses them (exit 2) and names
the axis. An x axis whose values are powers of two (a doubling sweep) is drawn log2; an x
with one value draws bars, one per series.

Each figure's title says what its rows held fixed (pass, dtype, batch·seqlen, hidden,
device, commit); device and commit come from a JSON input's metadata (give the run's
--json file, or --meta RUN.json beside CSVs). The roofline draws every row at its
arithmetic intensity (FLOPs / modelled HBM bytes; / DRAM bytes where counters were read)
against TFLOP/s, under the run's measured ceilings (metadata.matmul_ceiling_tflops,
metadata.copy_bandwidth_gbps); a ceiling the run did not measure is said so, not drawn.

Writes one file per figure into --out (PNG, or SVG with --format svg) and says which it
skipped and why. Exit 0; 1 when a figure asked for with --y had no data; 2 for bad
input (an unknown axis, a refused mix, an unreadable file). Needs matplotlib (Debian:
python3-matplotlib).
"""
import argparse
import csv
import json
import math
import os
import re
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
except ImportError:
    sys.stderr.write("plot.py: matplotlib is not installed for this python "
                     f"({sys.executable}); install python3-matplotlib (Debian/Ubuntu: "
                     "apt-get install python3-matplotlib)\n")
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_rows import is_standalone, prefer_sweep_rows, standalone_rows  # noqa: E402

X_CHOICES = ("seqlen", "head_dim", "batch", "block")
Y_CHOICES = ("tflops", "latency", "traffic", "memory", "error")
FIGURES = Y_CHOICES + ("roofline", "blocks")
SERIES_CHOICES = ("kernel", "block", "dtype", "pass")
PANEL_CHOICES = ("head_dim", "causal", "dtype", "pass", "seqlen", "batch", "block", "kernel")
DEFAULT_PANELS = "head_dim,causal,dtype,pass"


class PlotError(Exception):
    """Bad input: exit 2 with this message."""


# --- reading -------------------------------------------------------------------

def _cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def json_rows(path, doc):
    """A sweep JSON's rows as CSV-shaped dicts (the CSV's column names, docs/OUTPUTS.md)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise PlotError(f"{path}: not an fa-bench results file (no 'results' list)")
    rows = []
    for r in doc["results"]:
        flat = {}
        for k, v in r.items():
            if k in ("problem", "tile", "timing", "errors", "grad_errors") and isinstance(v, dict):
                for kk, vv in v.items():
                    flat["timing_method" if (k, kk) == ("timing", "method") else kk] = _cell(vv)
            elif k in ("traffic_model", "traffic_measured"):
                for part in ("read_bytes", "write_bytes"):
                    flat[f"{k}_{part}"] = _cell(v.get(part) if isinstance(v, dict) else None)
            else:
                flat[k] = _cell(v)
        rows.append(flat)
    return rows


def load(paths, meta_path=None):
    """Rows of every file, and the metadata of the JSON files (one dict per file)."""
    rows, metas = [], []
    for p in paths + ([meta_path] if meta_path else []):
        try:
            with open(p, newline="") as f:
                if p.endswith(".json"):
                    try:
                        doc = json.load(f)
                    except ValueError as e:
                        raise PlotError(f"{p}: not valid JSON ({e})")
                    if p != meta_path:
                        rows.extend(json_rows(p, doc))
                    if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
                        metas.append(doc["metadata"])
                    continue
                rd = csv.DictReader(f)
                if is_standalone(rd.fieldnames):
                    rows.extend(standalone_rows(rd))
                    continue
                missing = {"kernel", "seqlen_q", "head_dim", "causal", "status"} - set(rd.fieldnames or [])
                if missing:
                    raise PlotError(f"{p}: not an fa-bench CSV (missing columns: {', '.join(sorted(missing))})")
                rows.extend(rd)
        except OSError as e:
            raise PlotError(f"cannot read {p}: {e.strerror}")
    return prefer_sweep_rows(rows), metas


def num(row, key):
    v = row.get(key, "")
    if v in ("", None):
        return None
    try:
        x = float(v)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


# --- axes ----------------------------------------------------------------------

def tile(row):
    bm, bn = row.get("block_m", ""), row.get("block_n", "")
    if bm in ("", "0") or bn in ("", "0"):
        return "-"
    t = f"{bm}x{bn}"
    if row.get("warps"):
        t += f".w{row['warps']}.s{row.get('stages', '')}"
    return t


def tile_order(t):
    return tuple(int(x) for x in re.findall(r"\d+", t)) if t != "-" else ()


def kernel_label(row, shown):
    """A kernel's name without what another axis shows (head_dim always; the tile, the
    dtype when they are axes of the figure), so one series spans panels and x."""
    name = row["kernel"].replace(f".hd{row.get('head_dim', '')}", "")
    if "block" in shown:
        name = re.sub(r"\.\d+x\d+(\.w\d+\.s\d+)?", "", name)
    if "dtype" in shown:
        name = name.replace(f".{row.get('dtype', '')}", "")
    return name


# Every axis a row has: value for grouping, and how to print it.
AXES = {
    "seqlen": lambda r: int(r["seqlen_q"]),
    "seqlen_k": lambda r: int(r.get("seqlen_k") or r["seqlen_q"]),
    "head_dim": lambda r: int(r["head_dim"]),
    "batch": lambda r: int(r.get("batch") or 0),
    "heads": lambda r: int(r.get("heads") or 0),
    "heads_kv": lambda r: int(r.get("heads_kv") or r.get("heads") or 0),
    "causal": lambda r: r["causal"] == "true",
    "dtype": lambda r: r.get("dtype", ""),
    "pass": lambda r: r.get("pass") or "fwd",
    "block": tile,
    "kernel": lambda r: r["kernel"],
}
PASS_WORDS = {"fwd": "forward", "bwd": "backward", "fwd+bwd": "forward + backward"}
X_LABELS = {"seqlen": "seqlen (tokens; seqlen_q = seqlen_k)", "head_dim": "head_dim (elements per head)",
            "batch": "batch (sequences)", "block": "tile (block_m x block_n[.warps.stages])"}


def show(axis, v):
    if axis == "causal":
        return "causal" if v else "non-causal"
    if axis == "pass":
        return PASS_WORDS.get(v, v)
    if axis in ("dtype", "block", "kernel"):
        return str(v)
    return f"{axis} {v}"


def axis_value(row, axis, shown):
    return kernel_label(row, shown) if axis == "kernel" else AXES[axis](row)


class Layout:
    """The figure's axes: x, series, panels (only those that vary), and the check that no
    other axis varies within one line."""

    def __init__(self, rows, x, series, panels):
        for name, val, allowed in (("--x", x, X_CHOICES), ("--series", series, SERIES_CHOICES)):
            if val not in allowed:
                raise PlotError(f"{name}: unknown '{val}'; expected one of {', '.join(allowed)}")
        for p in panels:
            if p not in PANEL_CHOICES:
                raise PlotError(f"--panels: unknown '{p}'; expected some of {', '.join(PANEL_CHOICES)}")
        if x == series:
            raise PlotError(f"--x and --series are both '{x}'")
        self.x, self.series = x, series
        # An axis that is x or the series is not also a panel (the default list names head_dim,
        # which --x head_dim takes over); a panel axis with one value makes no panels.
        self.panels = [p for p in panels if p not in (x, series) and len({AXES[p](r) for r in rows}) > 1]
        self.shown = {x, series, *self.panels}

    def x_of(self, r):
        return AXES[self.x](r)

    def series_of(self, r):
        return axis_value(r, self.series, self.shown)

    def panel_of(self, r):
        return tuple(AXES[p](r) for p in self.panels)

    def check_mix(self, rows):
        cells = defaultdict(list)
        for r in rows:
            cells[(self.panel_of(r), self.series_of(r), self.x_of(r))].append(r)
        for (panel, series, xv), rs in cells.items():
            if len(rs) < 2:
                continue
            where = f"series '{series}' at {self.x} {xv}" + (
                " (" + ", ".join(show(a, v) for a, v in zip(self.panels, panel)) + ")" if panel else "")
            mixed = [a for a in AXES if (a not in self.shown or a == "kernel") and len({AXES[a](r) for r in rs}) > 1]
            if not mixed:
                raise PlotError(f"{len(rs)} rows are the same point: {where}, kernel {rs[0]['kernel']} "
                                "(a file given twice?)")
            a = mixed[0]
            vals = ", ".join(sorted({str(AXES[a](r)) for r in rs}))
            fix = (f"add {a} to --panels or make it --series" if a in PANEL_CHOICES
                   else f"give rows of one {a} only")
            raise PlotError(f"rows mix {a} ({vals}) in one line: {where}; a line would zigzag between "
                            f"them: {fix}")


def held_fixed(rows, layout, metas):
    """What the rows held fixed, for the title: pass, dtype, shape, device, commit."""
    parts = []

    def one(axis):
        vals = {AXES[axis](r) for r in rows}
        return next(iter(vals)) if len(vals) == 1 else None

    for axis in ("pass", "dtype", "head_dim", "causal", "seqlen"):
        v = one(axis)
        if v is not None and axis != layout.x:
            parts.append(show(axis, v))
    if one("batch") is not None:
        parts.append(f"batch {one('batch')}")
    elif len({AXES["batch"](r) * AXES["seqlen"](r) for r in rows}) == 1:
        parts.append(f"batch·seqlen {AXES['batch'](rows[0]) * AXES['seqlen'](rows[0])}")
    if one("heads") is not None:
        hkv = one("heads_kv")
        parts.append(f"heads {one('heads')}" + (f"/{hkv}" if hkv is not None and hkv != one('heads') else ""))
    elif len({AXES["heads"](r) * AXES["head_dim"](r) for r in rows}) == 1:
        parts.append(f"hidden {AXES['heads'](rows[0]) * AXES['head_dim'](rows[0])}")
    devices = sorted({(m.get("device") or {}).get("name", "?") for m in metas})
    commits = sorted({str(m.get("git_commit", "?"))[:12] for m in metas})
    backends = sorted({r.get("backend", "") for r in rows} - {""})
    if metas:
        where = f"{', '.join(devices)} · commit {', '.join(commits)}"
    else:
        where = f"{'/'.join(backends) or '?'} back end · device and commit not in a CSV (give the run's JSON)"
    return ", ".join(parts), where


def title(fig, what, rows, layout, metas):
    fixed, where = held_fixed(rows, layout, metas)
    fig.suptitle(f"{what}\n{fixed}\n{where}", fontsize=9)


# --- drawing -------------------------------------------------------------------

def colors_for(labels):
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    return {lab: cmap(i % cmap.N) for i, lab in enumerate(sorted(labels))}


TILE_SUFFIX = re.compile(r"\.\d+x\d+(\.w\d+)?(\.s\d+)?$")


def series_colors(series, rows, layout):
    """One colour per kernel family across panels: a kernel's name carries its tile, which
    changes with head_dim (fa3.bf16.192x128... at hd64, fa3.bf16.128x128... at hd128), so
    series that differ only in the tile share a colour, unless two of them meet in one panel
    (a block sweep), where each keeps its own."""
    labels = [str(s) for s in series]
    family = {lab: TILE_SUFFIX.sub("", lab) for lab in labels}
    in_panel = defaultdict(set)
    for r in rows:
        in_panel[layout.panel_of(r)].add(str(layout.series_of(r)))
    clash = any(len({family[lab] for lab in labs}) < len(labs) for labs in in_panel.values())
    if clash:
        return colors_for(labels)
    by_family = colors_for(sorted(set(family.values())))
    return {lab: by_family[family[lab]] for lab in labels}


def is_pow2_sweep(values):
    vs = sorted({v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return len(vs) >= 3 and all(v > 0 and (int(v) & (int(v) - 1)) == 0 for v in vs)


def panel_grid(layout, rows):
    """One axes per panel: columns the first varying panel axis, rows the rest."""
    if not layout.panels:
        keys_c, keys_r = [()], [()]
    else:
        keys_c = sorted({(AXES[layout.panels[0]](r),) for r in rows})
        keys_r = sorted({tuple(AXES[p](r) for p in layout.panels[1:]) for r in rows})
    fig, axes = plt.subplots(len(keys_r), len(keys_c), figsize=(4.4 * len(keys_c) + 1.6, 3.3 * len(keys_r) + 1.2),
                             squeeze=False, constrained_layout=True)
    where = {}
    for i, kr in enumerate(keys_r):
        for j, kc in enumerate(keys_c):
            key = kc + kr
            ax = axes[i][j]
            ax.set_title(", ".join(show(a, v) for a, v in zip(layout.panels, key)) or "all rows", fontsize=9)
            ax.grid(True, alpha=0.3)
            where[key] = ax
    return fig, where


def finish_panels(where, layout, xs, ylabel, yscale, legend_axes=None):
    for key, ax in where.items():
        if not ax.lines and not ax.patches and not ax.collections:
            ax.text(0.5, 0.5, "no rows", transform=ax.transAxes, ha="center", va="center", color="grey")
        ax.set_ylabel(ylabel, fontsize=8)
        if yscale:
            yscale(ax)
    first = next(iter(where.values()))
    fig = first.figure
    handles, labels = {}, []
    for ax in where.values():
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    if labels:
        fig.legend([handles[lab] for lab in labels], labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7,
                   title=layout.series, title_fontsize=8)


def set_x(ax, layout, xs):
    ax.set_xlabel(X_LABELS[layout.x], fontsize=8)
    if layout.x == "block":
        return
    if is_pow2_sweep(xs):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    vs = sorted(set(xs))
    if len(vs) <= 8:
        ax.set_xticks(vs)
        ax.set_xticklabels([f"{v:g}" for v in vs], fontsize=7)


def symlog_zero(linthresh):
    """A y axis where 0 is drawn at 0 (symlog: linear below linthresh, log above)."""
    def apply(ax):
        ax.set_yscale("symlog", linthresh=linthresh)
        ax.set_ylim(bottom=0)
    return apply


def logy(ax):
    ax.set_yscale("log")


# y: (what, column or function giving one or more (kind, value) pairs, unit label)
def traffic_values(r):
    out = []
    m_r, m_w = num(r, "traffic_model_read_bytes"), num(r, "traffic_model_write_bytes")
    if m_r is not None:
        out.append(("HBM (model)", (m_r + (m_w or 0)) / 1e9))
    d_r, d_w = num(r, "traffic_measured_read_bytes"), num(r, "traffic_measured_write_bytes")
    if d_r is not None and r.get("traffic_measured_source"):  # schema-1 files wrote 0 for "not measured"
        src = r.get("traffic_measured_source", "")
        kind = {"cupti": "DRAM (measured)", "cpu-count": "CPU byte count"}.get(src, f"measured ({src or '?'})")
        out.append((kind, (d_r + (d_w or 0)) / 1e9))
    return out


def memory_unit(rows):
    cuda = {r.get("backend") for r in rows} == {"cuda"}
    return "device" if cuda else "host" if {r.get("backend") for r in rows} == {"cpu"} else "device or host"


METRICS = {
    "tflops": ("TFLOP/s", lambda r: [("", num(r, "tflops"))] if r["status"] == "ok" else [],
               "TFLOP/s (FLOPs / median time, 10¹² per s)"),
    "latency": ("Median latency", lambda r: [("", num(r, "median_ms"))] if r["status"] == "ok" else [],
                "median latency (ms)"),
    "traffic": ("Bytes read + written: HBM (model), DRAM (measured), CPU byte count",
                lambda r: traffic_values(r) if r["status"] in ("ok", "fail") else [],
                "bytes read + written (GB, 10⁹ B)"),
    "memory": ("Peak memory beyond inputs and outputs", lambda r: (
        [("", num(r, "peak_extra_bytes") / 2**20)]
        if num(r, "peak_extra_bytes") is not None and r["status"] in ("ok", "fail") else []),
        "peak extra memory (MiB, 2²⁰ B)"),
    "error": ("O max abs error vs the float64 reference (dashed: tolerance)",
              lambda r: [("", num(r, "o_max_abs"))], "max |O − O_ref| (absolute)"),
}
KIND_STYLE = {"": "-", "HBM (model)": "-", "DRAM (measured)": "--", "CPU byte count": ":"}


def metric_figure(rows, y, layout, metas):
    what, values, ylabel = METRICS[y]
    pts = []  # (row, kind, value)
    for r in rows:
        for kind, v in values(r):
            if v is not None:
                pts.append((r, kind, v))
    if not pts:
        return None, {"tflops": "no timed (ok) rows", "latency": "no timed (ok) rows",
                      "traffic": "no row has modelled or measured bytes",
                      "memory": "no row has peak_extra_bytes", "error": "no row has o_max_abs"}[y]
    used = [p[0] for p in pts]
    if y == "memory":
        what += f" ({memory_unit(used)} memory)"
    if y == "traffic":  # name only the kinds of bytes the rows hold
        what = "Bytes read + written: " + ", ".join(sorted({k for _, k, _ in pts}, key=lambda k: list(KIND_STYLE).index(k) if k in KIND_STYLE else 99))
    fig, where = panel_grid(layout, used)
    series = sorted({layout.series_of(r) for r in used}, key=str)
    colors = series_colors(series, used, layout)
    xs = [layout.x_of(r) for r in used]
    one_x = len(set(xs)) == 1
    lines = defaultdict(list)
    for r, kind, v in pts:
        lines[(layout.panel_of(r), layout.series_of(r), kind)].append((layout.x_of(r), v, r))
    kinds = sorted({k for _, k, _ in pts})
    for (panel, s, kind), ps in sorted(lines.items(), key=lambda kv: (str(kv[0][1]), kv[0][2])):
        ax = where[panel]
        label = f"{s} — {kind}" if kind and len(kinds) > 1 else str(s)
        if layout.x == "block":
            ps.sort(key=lambda p: tile_order(p[0]))
        else:
            ps.sort(key=lambda p: p[0])
        if one_x:
            i, k = series.index(s), kinds.index(kind)
            w = 0.8 / len(kinds)
            ax.bar(i - 0.4 + w * (k + 0.5), ps[0][1], width=w, color=colors[str(s)], label=label,
                   hatch=None if k == 0 else "//", edgecolor="black" if k else None, linewidth=0.3)
        else:
            ax.plot([str(p[0]) if layout.x == "block" else p[0] for p in ps], [p[1] for p in ps], marker="o", ms=3,
                    ls=KIND_STYLE.get(kind, "-."), color=colors[str(s)], label=label)
        if y == "error":
            tol = [(p[0], num(p[2], "tolerance")) for p in ps if num(p[2], "tolerance")]
            if tol and not one_x:
                ax.plot([str(t[0]) if layout.x == "block" else t[0] for t in tol], [t[1] for t in tol], ls="--",
                        color=colors[str(s)], alpha=0.5, lw=0.8)
    for ax in where.values():
        if one_x:
            ax.set_xticks(range(len(series)))
            ax.set_xticklabels([str(s) for s in series], rotation=30, ha="right", fontsize=7)
            ax.set_xlabel(f"{layout.series} ({X_LABELS[layout.x].split(' (')[0]} {xs[0]})", fontsize=8)
        else:
            set_x(ax, layout, xs)
    vals = [p[2] for p in pts]
    pos = [v for v in vals if v > 0]
    scale = None
    if y in ("memory", "traffic", "error") and pos:
        if any(v == 0 for v in vals):
            # A true zero stays a zero: linear up to the smallest non-zero value, log above.
            scale = symlog_zero(min(pos))
            ylabel += f"\nsymlog: 0 is 0, linear below {min(pos):.3g}"
        elif y == "error" or max(pos) / min(pos) >= 20:
            scale = logy
    elif y == "latency" and pos and min(vals) > 0 and max(pos) / min(pos) >= 20:
        scale = logy
    finish_panels(where, layout, xs, ylabel, scale)
    axis_word = {"seqlen": "seqlen", "head_dim": "head_dim", "batch": "batch", "block": "tile"}[layout.x]
    title(fig, f"{what} vs {axis_word}", used, layout, metas)
    return fig, None


def ceilings(metas):
    mm = sorted({m.get("matmul_ceiling_tflops") for m in metas if isinstance(m.get("matmul_ceiling_tflops"), (int, float))})
    bw = sorted({m.get("copy_bandwidth_gbps") for m in metas if isinstance(m.get("copy_bandwidth_gbps"), (int, float))})
    return (max(mm) if mm else None), (max(bw) if bw else None)


def roofline_figure(rows, layout, metas):
    pts = []
    for r in rows:
        t, ms = num(r, "tflops"), num(r, "median_ms")
        if r["status"] != "ok" or not t or not ms:
            continue
        flops = t * 1e12 * ms * 1e-3
        for kind, gb in traffic_values(r):
            if gb > 0:
                pts.append((r, kind, flops / (gb * 1e9), t))
    if not pts:
        return None, "no timed row has modelled or measured bytes"
    used = [p[0] for p in pts]
    fig, where = panel_grid(layout, used)
    colors = series_colors(sorted({layout.series_of(r) for r in used}, key=str), used, layout)
    markers = {"HBM (model)": "o", "DRAM (measured)": "x", "CPU byte count": "+"}
    groups = defaultdict(list)
    for r, kind, ai, t in pts:
        groups[(layout.panel_of(r), str(layout.series_of(r)), kind)].append((ai, t))
    for (panel, s, kind), ps in sorted(groups.items()):
        ax = where[panel]
        ax.scatter([p[0] for p in ps], [p[1] for p in ps], s=14, marker=markers.get(kind, "^"),
                   color=colors[s], label=f"{s} — {kind}" if kind != "HBM (model)" else s)
    mm, bw = ceilings(metas)
    ais = [p[2] for p in pts]
    lo, hi = min(ais) / 2, max(ais) * 2
    notes = []
    for ax in where.values():
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOPs / byte; byte kind as in the legend)", fontsize=8)
        if mm:
            if bw:
                ridge = mm * 1e3 / bw
                xs = [min(lo, ridge / 4), ridge, max(hi, ridge * 2)]
                ax.plot(xs, [min(mm, bw * x / 1e3) for x in xs], color="black", lw=1.2,
                        label=f"roof: {mm:.0f} TFLOP/s matmul, {bw:.0f} GB/s copy")
            else:
                ax.axhline(mm, color="black", lw=1.2, label=f"roof: {mm:.0f} TFLOP/s matmul (bf16, measured)")
    if not mm:
        notes.append("no matmul ceiling in the run's metadata (cpu back end, or no JSON given): no compute roof")
    if not bw:
        notes.append("copy bandwidth not measured in this run (metadata.copy_bandwidth_gbps absent): "
                     "no bandwidth roof drawn")
    finish_panels(where, layout, ais, "TFLOP/s (10¹² FLOP/s)", None)
    title(fig, "Roofline: TFLOP/s against arithmetic intensity (o: modelled HBM bytes, x: DRAM counters, "
          "+: CPU byte count)", used, layout, metas)
    if mm and bw and any(kind == "HBM (model)" and t > min(mm, bw * ai / 1e3) for _, kind, ai, t in pts):
        # Not a measurement error: the model counts every re-read of K and V, which L2 serves.
        notes.append("o above the roof: the cache-free model counts K/V re-reads that L2 serves, so "
                     "the intensity it gives is a lower bound (DRAM counters, --counters, give the real one)")
    if notes:  # in the title, where no panel's labels can cover it
        fig._suptitle.set_text(fig._suptitle.get_text() + "\n" + "\n".join(notes))
    return fig, None


def blocks_figure(rows, layout, metas):
    """TFLOP/s over block_m x block_n, one heat map per family x dtype x head_dim x pass x
    causal at the sweep's largest seqlen; drawn only where the tiles fill a grid."""
    ok = [r for r in rows if r["status"] == "ok" and num(r, "tflops") and tile(r) != "-"]
    groups = defaultdict(list)
    for r in ok:
        groups[(r.get("backend", ""), r.get("family", ""), r.get("dtype", ""), AXES["head_dim"](r),
                AXES["pass"](r), AXES["causal"](r))].append(r)
    maps, why = {}, []
    for key, rs in groups.items():
        n = max(AXES["seqlen"](r) for r in rs)
        rs = [r for r in rs if AXES["seqlen"](r) == n]
        cells = defaultdict(list)
        for r in rs:
            cells[(int(r["block_m"]), int(r["block_n"]))].append(num(r, "tflops"))
        bms, bns = sorted({c[0] for c in cells}), sorted({c[1] for c in cells})
        if len(bms) < 2 or len(bns) < 2:
            continue
        if len(cells) < len(bms) * len(bns):
            why.append(f"{key[0]}.{key[1]}: tiles {', '.join(f'{m}x{k}' for m, k in sorted(cells))} do not fill "
                       "a block_m x block_n grid (use --x block)")
            continue
        maps[key] = (n, bms, bns, cells)
    if not maps:
        return None, "; ".join(sorted(set(why))) or "no family with more than one block_m and block_n (run configs/blocks.json)"
    keys = sorted(maps)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 4.2), squeeze=False, constrained_layout=True)
    for ax, key in zip(axes[0], keys):
        n, bms, bns, cells = maps[key]
        grid = [[max(cells[(m, k)]) for k in bns] for m in bms]
        im = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(bns)))
        ax.set_xticklabels(bns)
        ax.set_yticks(range(len(bms)))
        ax.set_yticklabels(bms)
        ax.set_xlabel("block_n (keys per block)", fontsize=8)
        ax.set_ylabel("block_m (query rows per block)", fontsize=8)
        ax.set_title(f"{key[0]}.{key[1]} {key[2]} d{key[3]} {PASS_WORDS.get(key[4], key[4])}, "
                     f"{'causal' if key[5] else 'non-causal'}, seqlen {n}", fontsize=8)
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                many = len(cells[(bms[i], bns[j])])
                ax.text(j, i, f"{v:.3g}" + (f"\nbest of {many}" if many > 1 else ""), ha="center", va="center",
                        fontsize=7, color="w")
        fig.colorbar(im, ax=ax, label="TFLOP/s")
    fixed, where = held_fixed(ok, layout, metas)
    fig.suptitle(f"TFLOP/s by tile at each group's largest seqlen\n{where}", fontsize=9)
    return fig, None


def make_figure(rows, y, x="seqlen", series="kernel", panels=DEFAULT_PANELS.split(","), metas=()):
    """(figure, None), or (None, why it was skipped). Raises PlotError for bad input."""
    if y not in FIGURES:
        raise PlotError(f"--y: unknown '{y}'; expected one of {', '.join(FIGURES)}")
    if not rows:
        raise PlotError("the files hold no rows")
    layout = Layout(rows, x, series, list(panels))
    layout.check_mix(rows)
    if y == "roofline":
        return roofline_figure(rows, layout, list(metas))
    if y == "blocks":
        return blocks_figure(rows, layout, list(metas))
    return metric_figure(rows, y, layout, list(metas))


def save_png(fig, path):
    """A 128-colour palette PNG: a line figure has few colours, and the file is a quarter of
    the RGBA one (results/ keeps them in git)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    buf.seek(0)
    img = Image.open(buf).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT,
                                                    dither=Image.Dither.NONE)
    img.save(path, optimize=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="fa-bench results: sweep --csv or --json files, torch_peers.py CSVs, "
                                             "cudnn_fp8_check --csv files")
    ap.add_argument("--out", default="plots", help="output folder (default: plots; created if missing)")
    ap.add_argument("--x", default="seqlen", help=f"x axis: {', '.join(X_CHOICES)} (default seqlen)")
    ap.add_argument("--y", default=",".join(FIGURES),
                    help=f"figures, a list of: {', '.join(FIGURES)} (default: all, each skipped with a reason "
                         "when the rows lack its data)")
    ap.add_argument("--series", default="kernel", help=f"one line per: {', '.join(SERIES_CHOICES)} (default kernel)")
    ap.add_argument("--panels", default=DEFAULT_PANELS,
                    help=f"one panel per combination of these axes, those that vary (default {DEFAULT_PANELS}; "
                         f"'' for one panel); any of {', '.join(PANEL_CHOICES)}")
    ap.add_argument("--meta", help="a sweep JSON whose metadata (device, commit, ceilings) goes with CSV inputs")
    ap.add_argument("--format", default="png", choices=("png", "svg"), help="file format (default png)")
    ap.add_argument("--prefix", default="", help="prefix of each file name (e.g. fwd- gives fwd-tflops.png)")
    args = ap.parse_args(argv)
    try:
        rows, metas = load(args.files, args.meta)
        ys = [y for y in args.y.split(",") if y]
        explicit = args.y != ap.get_default("y")
        panels = [p for p in args.panels.split(",") if p]
        figs = []
        for y in ys:  # every figure is checked before any file is written
            figs.append((y, *make_figure(rows, y, args.x, args.series, panels, metas)))
    except PlotError as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    missing = 0
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, smaller
    for y, fig, why in figs:
        name = f"{args.prefix}{y}" + ("" if args.x == "seqlen" or y in ("roofline", "blocks") else f"-by-{args.x}")
        path = os.path.join(args.out, f"{name}.{args.format}")
        if fig is None:
            print(f"plot.py: skipped {os.path.basename(path)}: {why}", file=sys.stderr)
            missing += explicit
            continue
        matplotlib.rcParams["svg.hashsalt"] = name  # ids unique per figure when several share one page
        if args.format == "png":
            save_png(fig, path)
        else:
            fig.savefig(path, bbox_inches="tight", metadata={"Date": None})
        plt.close(fig)
        print(f"plot.py: wrote {path}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
