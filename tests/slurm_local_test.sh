#!/bin/sh
# The Slurm recipe (scripts/slurm/) without Slurm: its array job's script
# (sweep-array.sbatch 4 OUT ...) as 4 local processes on the CPU back end at
# once, each with the task id Slurm would set, then its merge job's script
# (merge.sbatch 4 OUT), both calling sweep-shards.sh as on a cluster. The merged
# result must hold exactly the rows of the same sweep run unsharded, in the same
# order, and pass `fa-bench compare --deterministic` against it both ways (a
# row missing on either side fails the gate). A task run again continues its
# shard's file.
#
#   slurm_local_test.sh FA_BENCH SOURCE_DIR WORK_DIR PYTHON3
set -eu
FA_BENCH=$1
src=$2
out=$3
python=$4
export FA_BENCH
rm -rf "$out"
mkdir -p "$out"

# 6 points, each with forward rows of three families and a backward row.
sweep="--backend cpu --kernels cpu --pass fwd,bwd --seqlen 32,64,96 --causal both --head-dim 16 --heads 2
       --dtype fp32 --warmup 0 --min-samples 1 --max-samples 2 --max-seconds 0.01 --threads 1 --seed 7"

pids=""
for k in 1 2 3 4; do
  # shellcheck disable=SC2086 # the flags are words
  SLURM_ARRAY_TASK_ID=$k SLURM_SUBMIT_DIR=$src sh "$src/scripts/slurm/sweep-array.sbatch" 4 "$out" $sweep \
    >"$out/task-$k.log" 2>&1 &
  pids="$pids $!"
done
failed=0
for p in $pids; do wait "$p" || failed=1; done
if [ $failed -ne 0 ]; then
  cat "$out"/task-*.log
  echo "a shard task failed" >&2
  exit 1
fi

# A task stopped part-way (its file keeps the finished rows) and run again, as a
# requeue does, continues its file.
"$python" - "$out/shard-4-of-4.json" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    doc = json.load(f)
assert len(doc["results"]) > 2, len(doc["results"])
doc["results"] = doc["results"][:2]
doc["metadata"]["rows"], doc["metadata"]["run_status"] = 2, "interrupted"
with open(sys.argv[1], "w") as f:
    json.dump(doc, f)
PY
# shellcheck disable=SC2086
SLURM_ARRAY_TASK_ID=4 SLURM_SUBMIT_DIR=$src sh "$src/scripts/slurm/sweep-array.sbatch" 4 "$out" $sweep \
  >"$out/task-4-again.log" 2>&1
grep -q "2 rows resumed from $out/shard-4-of-4.json" "$out/task-4-again.log" || {
  cat "$out/task-4-again.log"
  echo "the rerun task did not continue its file" >&2
  exit 1
}

SLURM_SUBMIT_DIR=$src sh "$src/scripts/slurm/merge.sbatch" 4 "$out"
# shellcheck disable=SC2086
"$FA_BENCH" sweep $sweep --json "$out/unsharded.json" >/dev/null
"$FA_BENCH" compare --deterministic "$out/unsharded.json" "$out/merged.json" >/dev/null
"$FA_BENCH" compare --deterministic "$out/merged.json" "$out/unsharded.json" >/dev/null

"$python" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    with open(f"{out}/{name}") as f:
        return json.load(f)
whole, merged = load("unsharded.json"), load("merged.json")
keys = lambda doc: [r["key"] for r in doc["results"]]
assert keys(merged) == keys(whole), "merged rows differ from the unsharded run's (or their order does)"
m, w = merged["metadata"], whole["metadata"]
assert m["plan_hash"] == w["plan_hash"] and m["plan_rows"] == w["plan_rows"] == len(whole["results"]), (m, w)
assert m["run_status"] == "complete" and m["shard"] is None, m
shards = sorted(p["shard"] for p in m["merged_from"])
assert shards == ["1/4", "2/4", "3/4", "4/4"], shards
counts = [len(load(f"shard-{k}-of-4.json")["results"]) for k in range(1, 5)]
assert all(c > 0 for c in counts) and sum(counts) == len(whole["results"]), counts
print(f"merged {len(merged['results'])} rows from shards of {counts} rows = the unsharded run's rows")
PY
