#!/usr/bin/env python3
"""Fixtures for the regression gate's tests, derived from one real sweep file.

    python3 scripts/make_compare_fixtures.py SOURCE.json tests/data/compare

SOURCE.json is a real `fa-bench sweep --json` result (tests/data/README.md has the
command). Writes, next to a copy of it as baseline.json:
  slower.json        every timed row's median and percentiles x 1.10: a 10%
                     slowdown; the script checks that some pairs are beyond the
                     pair's noise (the gate's rule, docs/COMPARE.md), else it refuses
  within_noise.json  every timed row x (1 + half its pair's noise band): inside
                     the band, so no pair may be judged slower
  missing_row.json   the first ok row removed
  schema_v2.json     schema_version 2 (a file this fa-bench cannot read)
  other_device.json  metadata.device.name changed
Only timing numbers change: status, errors and modelled bytes stay as measured.
"""
import copy
import json
import os
import sys

TIME_KEYS = ("median_ms", "min_ms", "p10_ms", "p90_ms", "mean_ms", "stddev_ms")
MAX_SLOWDOWN = 0.05  # fa-bench compare's default --max-slowdown


def spread(t):
    """Relative half-width of the central 80%: what compare.cpp calls a side's noise."""
    return max(0.0, (t["p90_ms"] - t["p10_ms"]) / 2 / t["median_ms"]) if t["median_ms"] > 0 else 0.0


def scaled(doc, factor_of):
    out = copy.deepcopy(doc)
    for row in out["results"]:
        t = row.get("timing")
        if not t:
            continue
        f = factor_of(t)
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
    # Pair noise when both sides share a spread (the planted change keeps it): 2 x spread.
    beyond = sum(1 for t in timed if 0.10 > 2 * spread(t))
    if beyond == 0:
        sys.exit(f"{src}: every row's noise band is over 10%: a 10% slowdown would be 'ambiguous'; "
                 "record the source with a lower --target-noise")
    os.makedirs(folder, exist_ok=True)
    write(folder, "baseline.json", base)
    write(folder, "slower.json", scaled(base, lambda t: 1.10))
    write(folder, "within_noise.json", scaled(base, lambda t: 1 + 0.5 * 2 * spread(t)))
    missing = copy.deepcopy(base)
    first_ok = next(i for i, r in enumerate(missing["results"]) if r["status"] == "ok")
    del missing["results"][first_ok]
    write(folder, "missing_row.json", missing)
    v2 = copy.deepcopy(base)
    v2["schema_version"] = 2
    write(folder, "schema_v2.json", v2)
    other = copy.deepcopy(base)
    other["metadata"]["device"]["name"] = "Some Other Device"
    write(folder, "other_device.json", other)
    print(f"{len(timed)} timed rows; {beyond} have a pair noise band under 10% (the slowdown shows there)")


if __name__ == "__main__":
    main()
