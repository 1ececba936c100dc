// The flags of `fa-bench sweep` (the work is in sweep_command.cpp).
#include <map>
#include <memory>

#include "cli/fa_bench/subcommand.h"
#include "cli/fa_bench/sweep_options.h"

namespace fa::cli {

int run_sweep_command(SweepOptions&);  // sweep_command.cpp

const std::vector<SweepFlag>& sweep_value_flags() {
  static const std::vector<SweepFlag> flags = {
      {"--seqlen", "seqlen",
       "Query sequence lengths: list or range, start:stop:xK (multiply) or start:stop:+K (add). "
       "Example: --seqlen 512:16384:x2", "AXIS"},
      {"--seqlen-k", "seqlen_k", "Key/value sequence lengths (default: equal to seqlen). Example: --seqlen-k 4096", "AXIS"},
      {"--head-dim", "head_dim", "Head dimensions. Example: --head-dim 64,128,256", "AXIS"},
      {"--block", "block",
       "Tiles BLOCK_MxBLOCK_N, or auto (each family's default tile). CPU kernels accept any block; "
       "cuda kernels only the compiled ones (others give an 'unsupported' row). Example: --block 64x64,128x128", "BLOCKS|auto"},
      {"--batch", "batch", "Batch sizes (or use --total-tokens). Example: --batch 1,4", "AXIS"},
      {"--total-tokens", "total_tokens",
       "Fix batch*seqlen: batch = total_tokens / seqlen, as in the FlashAttention papers. Example: --total-tokens 16384", "AXIS"},
      {"--heads", "heads", "Query heads (or use --hidden). Example: --heads 16", "AXIS"},
      {"--hidden", "hidden", "Model width: heads = hidden / head_dim. Example: --hidden 2048", "AXIS"},
      {"--heads-kv", "heads_kv", "K/V heads for GQA/MQA (default: equal to heads). Example: --heads-kv 1", "AXIS"},
      {"--causal", "causal", "Causal mask: false, true, or both. Example: --causal both", "BOOLS|both"},
      {"--dtype", "dtype",
       "Element types: bf16, fp16, fp32, e4m3 (FP8 inputs quantized by the tool, forward only; "
       "docs/MEASUREMENT.md, FP8 inputs). Example: --dtype bf16,e4m3", "DTYPES"},
      {"--fp8-scaling", "fp8_scaling",
       "e4m3 only: one descale per tensor, per (batch, head), or per block of 128 sequence rows of a "
       "(batch, head) (default tensor). Example: --fp8-scaling head", "tensor|head|block"},
      {"--pass", "pass",
       "Passes: fwd (O, LSE), bwd (dQ, dK, dV after an untimed forward; the backward alone is timed), "
       "fwd+bwd (both timed as one); a list. Rows of bwd and fwd+bwd run the selection's backward "
       "variants (<family>.bwd.*). Example: --pass fwd,bwd,fwd+bwd", "PASSES"},
      {"--kernels", "kernels",
       "Kernel names, families, back ends or globs (default: every kernel of the back end in use). "
       "Example: --kernels 'cpu.fa2,cpu.standard'", "SELECTION"},
      {"--distribution", "distribution", "Inputs: normal, uniform, adversarial or outliers (docs/MEASUREMENT.md, Inputs). Example: --distribution adversarial", "NAME"},
      {"--seed", "seed", "Input seed (default: fresh, printed and stored in the results). Example: --seed 1234", "UINT64"},
      {"--backend", "backend",
       "auto (cuda when a device is present, else cpu; says which on stderr), cpu or cuda. Example: --backend cpu", "auto|cpu|cuda"},
      {"--json", "json", "Write full results with metadata to this JSON file. Example: --json out/run.json", "FILE"},
      {"--csv", "csv", "Write a tidy CSV (one row per point x kernel). Example: --csv out/run.csv", "FILE"},
      {"--md", "md", "Write the Markdown table to this file too. Example: --md out/run.md", "FILE"},
      {"--inputs", "inputs",
       "Run on your own tensors: a folder with q.npy, k.npy, v.npy ([batch, seqlen, heads, head_dim], "
       "float32 or float16); they fix the shape axes. Example: --inputs my_layer/", "DIR"},
      {"--save-outputs", "save_outputs",
       "Write each run's O and LSE as <kernel>.<shape>.o.npy / .lse.npy into this folder. "
       "Example: --save-outputs out/tensors", "DIR"},
      {"--max-check-rows", "max_check_rows",
       "Compare every query row up to this seqlen_q (and, for a backward, every key column up to this "
       "seqlen_k); beyond it, exactly this many (a seeded sample with block edges; --exact-check compares "
       "all). Example: --max-check-rows 4096", "N"},
      {"--warmup", "warmup", "Untimed runs before timing. Example: --warmup 5", "N"},
      {"--min-samples", "min_samples", "Fewest timed samples (unless --max-seconds runs out). Example: --min-samples 20", "N"},
      {"--max-samples", "max_samples", "Most timed samples. Example: --max-samples 500", "N"},
      {"--max-seconds", "max_seconds",
       "Timing budget of one row (point x kernel): bounds the timed samples after warm-up, not the "
       "inputs, the reference, validation or warm-up; at least one sample is always taken. Example: "
       "--max-seconds 0.5", "SECONDS"},
      {"--target-noise", "target_noise",
       "Stop timing once (p90-p10)/2/median is below this. Example: --target-noise 0.005", "FRACTION"},
      {"--threads", "threads", "CPU back end: threads for the reference and the CPU kernels (0 = all). Example: --threads 2", "N"},
      {"--cpu-mem-limit", "cpu_mem_limit",
       "Host memory for one point: inputs, the float64 reference, outputs and the CPU back end's buffers "
       "(with a backward row: dO, dQ, dK, dV and the reference gradients too), estimated before anything is "
       "allocated; a point over it gives 'oom' rows (default: half the RAM). "
       "Example: --cpu-mem-limit 4G", "BYTES"},
      {"--shard", "shard",
       "Run the K-th of N slices of the sweep's plan (whole points, balanced by estimated FLOPs; needs "
       "--seed, the same for every shard); fa-bench merge joins the shards' files. Example: --shard 2/4", "K/N"},
      {"--devices", "devices",
       "Run on these devices, one worker each: points are dealt in plan order to whichever device is "
       "free, each point's rows all timed on one device, rows written in plan order, each with its "
       "device. all: every device this process sees. cuda only (the cpu back end is one device, 0). "
       "Default: device 0, rows without a device. Example: --devices 0,1", "LIST|all"},
      {"--cooldown", "cooldown",
       "Seconds to wait before each row that is timed (after refusals, before validation), so a "
       "power-capped GPU starts every row cool; each row records its SM clock before and after. Not "
       "in wall_time_s's split. Example: --cooldown 4", "SECONDS"},
      {"--timeout", "timeout",
       "Wall-clock limit of the whole sweep, in seconds: when it passes, the row in progress is abandoned, "
       "the files keep every finished row with run_status 'timeout', and the exit code is 124. "
       "Example: --timeout 3600", "SECONDS"},
  };
  return flags;
}

Subcommand setup_sweep(CLI::App& parent) {
  auto opts = std::make_shared<SweepOptions>();
  auto texts = std::make_shared<std::map<std::string, std::string>>();  // --config, --resume as typed
  CLI::App* sub = parent.add_subcommand(
      "sweep", "Run every kernel on every point of a sweep: validate against a float64 reference, then time");
  sub->footer(
      "Points are the cartesian product of the axes. Flags override the config file's keys.\n"
      "Example: fa-bench sweep --config configs/smoke.json --seqlen 128,256 --json out/smoke.json");
  sub->add_option("--config", (*texts)["config"],
                  "JSON config whose keys are these flags' names in snake_case. Example: --config configs/paper-fwd.json")
      ->type_name("FILE");
  sub->add_option("--resume", (*texts)["resume"],
                  "Continue the sweep in FILE, writing FILE itself: its rows are kept and not rerun. Without "
                  "--config its own config is reused; a config, kernel selection, seed or fa-bench build that "
                  "differs from FILE's is refused. Example: --resume out/run.json")
      ->type_name("FILE");
  sub->add_flag("--resume-allow-changes", opts->resume_allow_changes,
                "With --resume: continue even though the config, kernels, seed or fa-bench build differ from "
                "the file's (its rows are kept as they are)");
  for (const SweepFlag& f : sweep_value_flags())
    sub->add_option(f.flag, opts->values[f.key], f.help)->type_name(f.type);
  sub->add_flag("--no-l2-flush", opts->no_l2_flush,
                "cuda: do not flush L2 before each sample (config key flush_l2: false)");
  sub->add_flag("--counters", opts->counters,
                "cuda: read DRAM bytes from hardware counters in an extra untimed run (config key counters)");
  sub->add_flag("--fp8-hadamard", opts->fp8_hadamard,
                "e4m3 only: rotate Q and K by the seeded randomized Hadamard transform over head_dim before "
                "quantizing (QK^T unchanged; config key fp8_hadamard)");
  sub->add_flag("--exact-check", opts->exact_check,
                "Compare every query row (and, for a backward, every key column) against the reference, "
                "whatever --max-check-rows says (config key exact_check)");
  return Subcommand{sub, [opts, texts, sub] {
                      if (sub->get_option("--config")->count() > 0) opts->config = (*texts)["config"];
                      if (sub->get_option("--resume")->count() > 0) opts->resume = (*texts)["resume"];
                      // Only flags the user gave override the config.
                      std::map<std::string, std::string> given;
                      for (const SweepFlag& f : sweep_value_flags())
                        if (sub->get_option(f.flag)->count() > 0) {
                          given[f.key] = opts->values[f.key];
                          opts->flag_of[f.key] = f.flag;
                        }
                      opts->values = std::move(given);
                      return run_sweep_command(*opts);
                    }};
}

}  // namespace fa::cli
