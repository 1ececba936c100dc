#!/usr/bin/env python3
"""scripts/plot.py: the figures' content, checked through matplotlib's objects (series
count and names, axis labels and scales, panel titles, the title's fixed values) on small
hand-made CSVs, the mixes it must refuse, the message without matplotlib, and every
figure rendered from the committed smoke and block sweeps (tests/data/plot/) as a valid
PNG, and a standalone peer timer's rows giving way to the sweep's at the points it timed.

Exit 0 when every check passes, 1 otherwise, 77 (ctest: skipped) when matplotlib is
missing, so a machine without it never reports a pass.
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PLOT = os.path.join(ROOT, "scripts", "plot.py")
SIGNATURE = b"\x89PNG\r\n\x1a\n"
FAILED = []


def check(cond, what):
    print(f"{'ok' if cond else 'FAIL'}: {what}")
    if not cond:
        FAILED.append(what)


def png_problem(path):
    """'' when `path` is a complete, valid PNG, else what is wrong with it."""
    if not os.path.isfile(path):
        return "not written"
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(SIGNATURE):
        return "no PNG signature"
    pos, chunks = len(SIGNATURE), []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            return f"chunk {kind!r} truncated"
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            return f"chunk {kind!r} has a bad CRC"
        chunks.append((kind, body))
        pos += 12 + length
        if kind == b"IEND":
            break
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        return "first chunk is not a 13-byte IHDR"
    width, height = struct.unpack(">II", chunks[0][1][:8])
    if width == 0 or height == 0:
        return f"empty image {width}x{height}"
    if chunks[-1][0] != b"IEND":
        return "no IEND chunk: the file is cut short"
    return ""


# --- hand-made CSVs --------------------------------------------------------------

COLUMNS = ("kernel,family,backend,pass,batch,heads,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,block_m,block_n,"
           "warps,stages,status,median_ms,tflops,traffic_model_read_bytes,traffic_model_write_bytes,"
           "traffic_measured_read_bytes,traffic_measured_write_bytes,traffic_measured_source,peak_extra_bytes,"
           "o_max_abs,tolerance").split(",")


def row(kernel="cpu.fa2.64x64", family="fa2", seqlen=128, head_dim=64, dtype="bf16", causal="false", pass_="fwd",
        batch=1, heads=2, tflops=1.0, ms=1.0, model=1e6, measured=None, source="", peak=0, err=1e-3, tol=1e-2,
        bm=64, bn=64, backend="cpu"):
    return {"kernel": kernel, "family": family, "backend": backend, "pass": pass_, "batch": batch, "heads": heads,
            "heads_kv": heads, "seqlen_q": seqlen, "seqlen_k": seqlen, "head_dim": head_dim, "causal": causal,
            "dtype": dtype, "block_m": bm, "block_n": bn, "warps": "", "stages": "", "status": "ok", "median_ms": ms,
            "tflops": tflops, "traffic_model_read_bytes": model, "traffic_model_write_bytes": 0 if model else "",
            "traffic_measured_read_bytes": "" if measured is None else measured,
            "traffic_measured_write_bytes": "" if measured is None else 0, "traffic_measured_source": source,
            "peak_extra_bytes": peak, "o_max_abs": err, "tolerance": tol}


def write_csv(folder, name, rows):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for r in rows:
            f.write(",".join(str(r[c]) for c in COLUMNS) + "\n")
    return path


def legend_labels(fig):
    return [t.get_text() for lg in fig.legends for t in lg.get_texts()]


def panel_axes(fig):
    return [ax for ax in fig.axes if ax.get_title() and ax.get_label() != "<colorbar>"]


def main():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"SKIP: matplotlib is not importable by {sys.executable} "
              "(Debian: apt-get install python3-matplotlib); no figure was checked")
        return 77
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import plot

    tmp = tempfile.TemporaryDirectory(prefix="fa_plot_test_")
    d = tmp.name
    two_kernels = ["cpu.fa2.64x64", "cpu.standard"]

    # 1. fp32 and bf16 rows of one kernel: one panel per dtype by default, one line per kernel in each.
    rows_dt = [row(kernel=k, seqlen=n, dtype=dt, tflops=t)
               for k in two_kernels for dt in ("bf16", "fp32") for n, t in ((128, 1), (256, 2), (512, 3))]
    rows, metas = plot.load([write_csv(d, "dtypes.csv", rows_dt)])
    fig, why = plot.make_figure(rows, "tflops")
    axes = panel_axes(fig)
    check(fig is not None and len(axes) == 2, f"two dtypes: two panels (got {len(axes)}, {why})")
    check(sorted(ax.get_title() for ax in axes) == ["bf16", "fp32"], "panel titles name the dtype")
    check(all(len(ax.lines) == 2 for ax in axes), "each panel has one line per kernel")
    check(sorted(legend_labels(fig)) == two_kernels, f"legend names the kernels: {legend_labels(fig)}")
    check(all(ax.get_xscale() == "log" for ax in axes), "a doubling seqlen sweep is drawn log2")
    check(all("seqlen (tokens" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel() for ax in axes),
          "axes labelled with units")
    sup = fig._suptitle.get_text()
    check("forward" in sup and "batch 1" in sup and "head_dim 64" in sup, f"title holds what was fixed: {sup!r}")
    check("device and commit not in a CSV" in sup, "a CSV without metadata says device and commit are unknown")

    # 2. The same rows without dtype among the panels: refused, naming dtype.
    try:
        plot.make_figure(rows, "tflops", panels=["head_dim", "causal"])
        check(False, "a dtype mix outside x, series and panels is refused")
    except plot.PlotError as e:
        check("dtype" in str(e) and "bf16, fp32" in str(e), f"the refusal names the axis and values: {e}")

    # 3. dtype as the series: one line per dtype, named so.
    fig, _ = plot.make_figure([r for r in rows if r["kernel"] == "cpu.standard"], "latency", series="dtype",
                              panels=["head_dim", "causal"])
    check(sorted(legend_labels(fig)) == ["bf16", "fp32"], f"--series dtype: lines bf16, fp32 ({legend_labels(fig)})")
    check("median latency (ms)" in panel_axes(fig)[0].get_ylabel(), "latency's unit")

    # 4. --x head_dim over 64, 128, 256 with causal both: a column... no: head_dim is x, causal the panels.
    rows_hd = [row(kernel="cpu.fa2.64x64", head_dim=h, causal=c, tflops=h / 64)
               for h in (64, 128, 256) for c in ("false", "true")]
    rows, _ = plot.load([write_csv(d, "hd.csv", rows_hd)])
    fig, _ = plot.make_figure(rows, "tflops", x="head_dim")
    axes = panel_axes(fig)
    check(sorted(ax.get_title() for ax in axes) == ["causal", "non-causal"], "causal both: two panels")
    check(all(ax.get_xscale() == "log" and "head_dim" in ax.get_xlabel() for ax in axes), "head_dim x: log2, labelled")
    check(list(axes[0].lines[0].get_xdata()) == [64, 128, 256], "the line runs over the three head_dims in order")
    try:
        plot.make_figure(rows, "tflops", x="head_dim", panels=[])
        check(False, "causal mixed with no panel for it is refused")
    except plot.PlotError as e:
        check("causal" in str(e), f"refusal names causal: {e}")

    # 5. Memory: a true zero is drawn at zero (symlog), never a floor.
    rows_mem = [row(kernel=k, seqlen=n, peak=(0 if k == "cpu.fa2.64x64" else n * n * 4)) for k in two_kernels
                for n in (128, 256, 512)]
    rows, _ = plot.load([write_csv(d, "mem.csv", rows_mem)])
    fig, _ = plot.make_figure(rows, "memory")
    ax = panel_axes(fig)[0]
    fa2 = [ln for ln in ax.lines if ln.get_label() == "cpu.fa2.64x64"][0]
    check(ax.get_yscale() == "symlog" and list(fa2.get_ydata()) == [0, 0, 0] and ax.get_ylim()[0] == 0,
          f"memory: symlog axis from 0, zeros plotted as 0 ({ax.get_yscale()}, {list(fa2.get_ydata())})")
    check("MiB" in ax.get_ylabel() and "0 is 0" in ax.get_ylabel(), f"memory's label: {ax.get_ylabel()!r}")
    check("host memory" in fig._suptitle.get_text(), "cpu rows: host memory")

    # 6. Traffic: honest names for model, DRAM counters and CPU counts.
    rows_tr = ([row(kernel="cpu.fa2.64x64", seqlen=n, model=n * 1e4, measured=n * 1e4, source="cpu-count")
                for n in (128, 256, 512)] +
               [row(kernel="fa2.bf16.hd64.128x64.w4.s2", backend="cuda", seqlen=n, model=n * 2e4, measured=n * 1e4,
                    source="cupti", bm=128) for n in (128, 256, 512)])
    rows, _ = plot.load([write_csv(d, "traffic.csv", rows_tr)])
    fig, _ = plot.make_figure(rows, "traffic")
    labels = legend_labels(fig)
    check(any("HBM (model)" in t for t in labels) and any("CPU byte count" in t for t in labels)
          and any("DRAM (measured)" in t for t in labels), f"traffic legend: {labels}")
    check(not any("HBM bytes" in t for t in labels + [panel_axes(fig)[0].get_ylabel()]),
          "CPU counts are never called HBM bytes")
    check("fa2.bf16.w4.s2 — DRAM (measured)" not in labels and "fa2.bf16.128x64.w4.s2 — DRAM (measured)" in labels,
          "a cuda kernel's label drops only its head_dim")

    # 7. One x value: bars, one per kernel, the kernels on the x axis.
    rows_one = [row(kernel=k, tflops=t) for k, t in zip(two_kernels, (2, 1))]
    rows, _ = plot.load([write_csv(d, "one.csv", rows_one)])
    fig, _ = plot.make_figure(rows, "tflops")
    ax = panel_axes(fig)[0]
    check(len(ax.patches) == 2 and [t.get_text() for t in ax.get_xticklabels()] == sorted(two_kernels),
          "one seqlen: a bar per kernel, named on the x axis")

    # 8. Roofline: without a bandwidth in the metadata, the matmul roof only, and it says so.
    rows, _ = plot.load([write_csv(d, "roof.csv", rows_tr)])
    meta_no_bw = {"device": {"name": "Test GPU"}, "git_commit": "abcdef1234567890", "matmul_ceiling_tflops": 500.0}
    fig, _ = plot.make_figure(rows, "roofline", metas=[meta_no_bw])
    texts = fig._suptitle.get_text()
    ax = panel_axes(fig)[0]
    check("copy bandwidth not measured" in texts, "roofline without copy_bandwidth_gbps says the roof is missing")
    check(any(ln.get_label().startswith("roof: 500 TFLOP/s matmul") for ln in ax.lines), "the matmul roof is drawn")
    check(ax.get_xscale() == "log" and ax.get_yscale() == "log" and "arithmetic intensity" in ax.get_xlabel(),
          "roofline axes: log-log, intensity labelled")
    sup = fig._suptitle.get_text()
    check("Test GPU" in sup and "abcdef123456" in sup, f"title names device and commit: {sup!r}")
    meta_bw = dict(meta_no_bw, copy_bandwidth_gbps=4000.0)
    fig, _ = plot.make_figure(rows, "roofline", metas=[meta_bw])
    ax = panel_axes(fig)[0]
    roof = [ln for ln in ax.lines if ln.get_label().startswith("roof:")]
    check(len(roof) == 1 and "4000 GB/s copy" in roof[0].get_label() and max(roof[0].get_ydata()) == 500.0,
          "with a measured bandwidth the roof bends at the ridge")
    check("not measured" not in fig._suptitle.get_text(), "no missing-roof note when both were measured")
    n_points = sum(len(c.get_offsets()) for c in ax.collections)
    check(n_points == 12, f"every row twice on the roofline: model and measured bytes ({n_points})")

    # 9. Error plot: a dashed tolerance line per series, in the same panel as its errors.
    rows, _ = plot.load([write_csv(d, "dtypes2.csv", rows_dt)])
    fig, _ = plot.make_figure(rows, "error")
    axes = panel_axes(fig)
    check(all(sum(ln.get_linestyle() == "--" for ln in ax.lines) == 2 for ax in axes),
          "error: one tolerance line per kernel per dtype panel")
    check(len(fig._suptitle.get_text().splitlines()) == 3, "the error title is whole (three lines, not cut)")

    # 10. Batch·seqlen held fixed is named as such.
    rows_bs = [row(kernel="cpu.fa2.64x64", seqlen=n, batch=1024 // n) for n in (128, 256, 512)]
    rows, _ = plot.load([write_csv(d, "bs.csv", rows_bs)])
    fig, _ = plot.make_figure(rows, "tflops")
    check("batch·seqlen 1024" in fig._suptitle.get_text(), "batch·seqlen in the title")

    # 11. A JSON results file reads as its CSV does, with its metadata.
    import json
    doc = {"schema_version": 2, "metadata": meta_bw, "results": [
        {"kernel": "cpu.fa2.64x64", "family": "fa2", "backend": "cpu", "pass": "fwd",
         "problem": {"batch": 1, "heads": 2, "heads_kv": 2, "seqlen_q": n, "seqlen_k": n, "head_dim": 64,
                     "causal": False, "dtype": "bf16"},
         "tile": {"block_m": 64, "block_n": 64, "warps": None, "stages": None}, "status": "ok",
         "timing": {"median_ms": 1.0}, "tflops": 1.0, "traffic_model": {"read_bytes": 10, "write_bytes": 5},
         "traffic_measured": None, "peak_extra_bytes": 0, "errors": None} for n in (128, 256)]}
    jpath = os.path.join(d, "run.json")
    with open(jpath, "w") as f:
        json.dump(doc, f)
    rows, metas = plot.load([jpath])
    check(len(rows) == 2 and rows[0]["seqlen_q"] == "128" and rows[0]["causal"] == "false"
          and rows[0]["traffic_model_read_bytes"] == "10" and metas == [meta_bw], "JSON rows flatten to CSV columns")

    # 11b. cudnn_fp8_check's CSV beside an e4m3 sweep with cudnn.e4m3: at a point the sweep
    # timed, its row is drawn and the standalone one left out; elsewhere the standalone one.
    rows_e4 = [row(kernel=k, family=f, seqlen=n, head_dim=128, dtype="e4m3", batch=16384 // n, heads=16,
                   backend="cuda", tflops=t)
               for k, f, n, t in (("fa3.e4m3.hd128.128x128.w12.s2", "fa3", 4096, 760),
                                  ("fa3.e4m3.hd128.128x128.w12.s2", "fa3", 8192, 810),
                                  ("cudnn.e4m3", "cudnn", 4096, 950))]
    timer = os.path.join(d, "cudnn-fp8.csv")
    with open(timer, "w") as f:
        f.write("impl,dtype,o_type,causal,hdim,seqlen,batch,heads,ms,tflops,check\n"
                "cudnn_fp8,e4m3,e4m3,0,128,4096,4,16,0.57,963.3,PASS\n"
                "cudnn_fp8,e4m3,e4m3,0,128,8192,2,16,1.09,1000.0,PASS\n")
    rows, _ = plot.load([write_csv(d, "e4m3.csv", rows_e4), timer])
    cudnn = sorted((int(r["seqlen_q"]), r["kernel"]) for r in rows if r["family"] == "cudnn")
    check(cudnn == [(4096, "cudnn.e4m3"), (8192, "cudnn_fp8.e4m3")],
          f"the sweep's cudnn.e4m3 row wins over cudnn_fp8_check's at its point: {cudnn}")

    # 12. Without matplotlib: one line naming the package, exit 2.
    fake = os.path.join(d, "fake")
    os.makedirs(os.path.join(fake, "matplotlib"))
    with open(os.path.join(fake, "matplotlib", "__init__.py"), "w") as f:
        f.write("raise ImportError('No module named matplotlib')\n")
    run = subprocess.run([sys.executable, PLOT, jpath], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=fake))
    check(run.returncode == 2 and run.stderr.count("\n") == 1 and "python3-matplotlib" in run.stderr,
          f"no matplotlib: exit 2 and one line ({run.returncode}, {run.stderr!r})")

    # 13. The command line: a refused mix is exit 2 with the axis named, nothing written.
    out = os.path.join(d, "refused")
    run = subprocess.run([sys.executable, PLOT, os.path.join(d, "dtypes.csv"), "--panels", "causal", "--out", out],
                         capture_output=True, text=True)
    check(run.returncode == 2 and "dtype" in run.stderr and not os.path.exists(out),
          f"plot.py refuses the mix on the command line: {run.returncode} {run.stderr.strip()}")

    # 14. Every figure of the committed smoke and block sweeps renders (two runs: they share points).
    for name, figs in (("smoke.csv", ["tflops", "latency", "traffic", "memory", "error", "roofline"]),
                       ("blocks.csv", ["tflops", "blocks"])):
        out = os.path.join(d, name)
        run = subprocess.run([sys.executable, PLOT, os.path.join(HERE, "data", "plot", name), "--out", out],
                             capture_output=True, text=True)
        print(run.stderr, end="")
        check(run.returncode == 0, f"plot.py on {name} exits 0")
        for fg in figs:
            why = png_problem(os.path.join(out, fg + ".png"))
            check(not why, f"{name}: {fg}.png {why or 'is a valid PNG'}")
    run = subprocess.run([sys.executable, PLOT, os.path.join(HERE, "data", "plot", "blocks.csv"), "--x", "block",
                          "--y", "tflops", "--panels", "causal,seqlen", "--out", os.path.join(d, "bx")],
                         capture_output=True, text=True)
    check(run.returncode == 0 and not png_problem(os.path.join(d, "bx", "tflops-by-block.png")),
          f"--x block renders ({run.stderr.strip()})")

    print(f"{len(FAILED)} checks failed" if FAILED else "all checks passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
