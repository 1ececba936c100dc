#!/bin/sh
# One sweep run as N shards: the commands each piece runs. The Slurm job array
# (sweep-array.sbatch) and its merge job (merge.sbatch) call this script, and so
# does their test without Slurm (tests/slurm_local_test.sh), so the test runs
# exactly the commands a cluster runs.
#
#   sweep-shards.sh run K N OUTDIR [fa-bench sweep flags...]
#       shard K of N into OUTDIR/shard-K-of-N.json; when that file exists (a
#       requeued or rerun task), it is continued with --resume instead.
#   sweep-shards.sh merge N OUTDIR [fa-bench merge flags...]
#       OUTDIR/shard-*-of-N.json, all of them complete (--complete), into
#       OUTDIR/merged.json, merged.csv and merged.md.
#
# The sweep flags are the same for every shard, give --seed (every shard must
# draw the same inputs) and no output path. FA_BENCH names the program
# (default: build/fa-bench).
set -eu

FA_BENCH=${FA_BENCH:-build/fa-bench}

usage() {
  echo "usage: $0 run K N OUTDIR [sweep flags...] | $0 merge N OUTDIR [merge flags...]" >&2
  exit 2
}

run_shard() {
  k=$1 n=$2 out=$3
  shift 3
  file="$out/shard-$k-of-$n.json"
  echo "sweep-shards.sh: shard $k/$n on $(hostname), CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}" >&2
  # One process per task, on the GPUs the scheduler gave it: CUDA numbers the
  # devices in CUDA_VISIBLE_DEVICES from 0. Several of them (--gres=gpu:2 and
  # up) are --devices all, one worker each; one (or none named) is device 0,
  # rows without a device, as fa-bench runs by default. A --devices among the
  # flags wins.
  devices=""
  case "${CUDA_VISIBLE_DEVICES-}" in
    *,*) devices="--devices all" ;;
  esac
  case " $* " in
    *" --devices"*) devices="" ;;
  esac
  # shellcheck disable=SC2086 # $devices is zero or two words
  if [ -f "$file" ]; then
    "$FA_BENCH" sweep --resume "$file" --shard "$k/$n" $devices "$@"
  else
    "$FA_BENCH" sweep --shard "$k/$n" --json "$file" $devices "$@"
  fi
}

merge_shards() {
  n=$1 out=$2
  shift 2
  "$FA_BENCH" merge "$out"/shard-*-of-"$n".json --complete \
    --json "$out/merged.json" --csv "$out/merged.csv" --md "$out/merged.md" "$@"
}

case "${1-}" in
  run) shift; [ $# -ge 3 ] || usage; run_shard "$@" ;;
  merge) shift; [ $# -ge 2 ] || usage; merge_shards "$@" ;;
  *) usage ;;
esac
