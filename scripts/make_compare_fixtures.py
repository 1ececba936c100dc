#!/usr/bin/env python3
"""Fixtures for the regression gate's tests, derived from one real sweep file.

    python3 scripts/make_compare_fixtures.py SOURCE.json tests/data/compare

SOURCE.json is a real `fa-bench sweep --json` result (tests/data/README.md has the
command). Writes, next to a copy of it as baseline.json:
  slower.json        every timed row's median and percentiles x 1.10: a 10%
                     slowdown; the script checks that the gate's rule
                     (docs/COMPARE.md) can call some pairs slower, else it refuses
  within_noise.json  every timed row x (1 + half its pair's noise band), and the
                     next x (1 - half of it), alternating: each inside its band and
                     no common direction, so neither a pair nor the whole run
                     (the sign test) may be judged slower
  missing_row.json   the first ok row removed
  schema_v1.json     schema_version 1 (an older file this fa-bench refuses to read)
  other_device.json  metadata.device.name changed
Only timing numbers change: status, errors and modelled bytes stay as measured.
"""
import copy
import json
import os
import sys

TIME_KEYS = ("median_ms", "min_ms", "p10_ms", "p90_ms", "mean_ms", "stddev_ms")
MAX_SLOWDOWN = 0.05  # fa-bench compare's default --max-slowdown
MIN_SAMPLES = 10     # src/compare/compare.h: kMinSamplesForVerdict
MAX_SPREAD = 0.25    # src/compare/compare.h: kMaxSpreadForVerdict


def spread(t):
    """Relative half-width of the central 80%: what compare.cpp calls a side's noise."""
    return max(0.0, (t["p90_ms"] - t["p10_ms"]) / 2 / t["median_ms"]) if t["median_ms"] > 0 else 0.0


def scaled(doc, factor_of):
    out = copy.deepcopy(doc)
    timed = 0
    for row in out["results"]:
        t = row.get("timing")
        if not t:
            continue
        f = factor_of(t, timed)
        timed += 1
        for k in TIME_KEYS:
            t[k] = t[k] * f
        if row.get("tflops"):
            row["tflops"] /= f
        if row.get("model_bandwidth_gbps"):
            row["model_bandwidth_gbps"] /= f
    return out


def write(folder, name, doc):
    with open(os.path.join(folder, name), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, folder = sys.argv[1], sys.argv[2]
    with open(src) as f:
        base = json.load(f)
    timed = [r["timing"] for r in base["results"] if r.get("timing") and r["timing"]["median_ms"] > 0]
    if not timed:
        sys.exit(f"{src}: no timed rows")
    # A 10% slowdown of every sample is called slower when the row has enough samples, its
    # spread settled, the slowdown beats the pair's noise (2 x spread: the planted change
    # keeps it) and the slowed p10 clears the baseline's p90.
    beyond = sum(1 for t in timed if t["samples"] >= MIN_SAMPLES and spread(t) <= MAX_SPREAD
                 and 0.10 > 2 * spread(t) and 1.10 * t["p10_ms"] > t["p90_ms"])
    if beyond == 0:
        sys.exit(f"{src}: no row could show a 10% slowdown (too few samples, or spreads too wide): a 10% "
                 "slowdown would be 'ambiguous'; record the source with more --min-samples or a lower --target-noise")
    os.makedirs(folder, exist_ok=True)
    write(folder, "baseline.json", base)
    write(folder, "slower.json", scaled(base, lambda t, i: 1.10))
    write(folder, "within_noise.json", scaled(base, lambda t, i: 1 + (1 if i % 2 == 0 else -1) * 0.5 * 2 * spread(t)))
    missing = copy.deepcopy(base)
    first_ok = next(i for i, r in enumerate(missing["results"]) if r["status"] == "ok")
    del missing["results"][first_ok]
    write(folder, "missing_row.json", missing)
    old = copy.deepcopy(base)
    old["schema_version"] = 1
    write(folder, "schema_v1.json", old)
    other = copy.deepcopy(base)
    other["metadata"]["device"]["name"] = "Some Other Device"
    write(folder, "other_device.json", other)
    print(f"{len(timed)} timed rows; on {beyond} of them a 10% slowdown can be called slower")


if __name__ == "__main__":
    main()
