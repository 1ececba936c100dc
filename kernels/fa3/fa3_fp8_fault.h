// A deliberate bug that `fa-check --self-test --backend cuda` plants in fa3's
// FP8 forward to prove the FP8 check catches a descale mistake on the GPU. A
// template argument of Fa3Fp8Kernel: `none`, the registered kernels' value,
// launches nothing extra. Plain C++ (no CUDA) so the host side can name it.
#pragma once
#include <array>
#include <string_view>

namespace fa {

enum class Fa3Fp8Fault {
  none,
  v_descale_twice,  // O multiplied by V's descale once more after the forward
};

// Every fault but none.
inline constexpr std::array<Fa3Fp8Fault, 1> kPlantedFa3Fp8Faults = {Fa3Fp8Fault::v_descale_twice};

constexpr std::string_view to_string(Fa3Fp8Fault f) {
  switch (f) {
    case Fa3Fp8Fault::none: return "none";
    case Fa3Fp8Fault::v_descale_twice: return "v_descale_twice";
  }
  return "?";
}

}  // namespace fa
