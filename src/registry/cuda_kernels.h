// The GPU back end as registry variants: the generated table of compiled
// instantiations (common/gpu_entry.h) named <family>[.bwd].<dtype>.hd<d>.<tile>,
// and, never registered, the copies of some of them with a planted fault.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "registry/kernel.h"

namespace fa {

// A registered GPU variant that has planted copies ("fa3.bwd.bf16.hd128.64x128.w12.s2"),
// and their faults ("no_d_term", ...), in the planted table's order.
struct PlantedGpuVariants {
  std::string base;
  std::vector<std::string> faults;
};
// Every one this build compiled (fa3's bf16 head_dim 128 backward and its e4m3
// head_dim 128 forward when fa3 and head_dim 128 are built); empty otherwise.
std::vector<PlantedGpuVariants> planted_gpu_variants();

// Where they are, for a message where this build has none.
inline constexpr const char* kPlantedGpuWhere =
    "fa3's bf16 head_dim 128 backward and e4m3 head_dim 128 forward, in builds with the fa3 family at head_dim "
    "128 (FA_BENCH_FAMILIES, "
    "FA_BENCH_HEAD_DIMS; e.g. cmake --preset fa3-hd128)";

// "<base>+<fault>": `base` with `fault` planted, as a variant of its own (never
// registered; its forward partner is base's). nullopt when this build has no such kernel.
std::optional<KernelVariant> make_planted_gpu_variant(std::string_view base, std::string_view fault);

}  // namespace fa
