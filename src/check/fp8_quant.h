// Float tensors quantized to e4m3 codes with descale factors, as an FP8
// attention kernel receives them: a kernel multiplies each code's value by the
// descale of the code's group. One descale per tensor, per (batch, head), or per
// block of sequence rows of one (batch, head) (docs/MEASUREMENT.md, "FP8 inputs").
#pragma once
#include <cstdint>
#include <vector>

#include "core/fp8_settings.h"

namespace fa {

// A BSHD tensor's extents: [batch, seqlen, heads, head_dim], head_dim innermost.
struct BshdShape {
  int64_t batch = 0, seqlen = 0, heads = 0, head_dim = 0;
  int64_t elements() const { return batch * seqlen * heads * head_dim; }
};

struct Fp8Tensor {
  BshdShape shape;
  Fp8Scaling scaling = Fp8Scaling::tensor;
  int64_t block_rows = 0;       // block scaling only: sequence rows per group
  std::vector<uint8_t> codes;   // e4m3, same layout as the float tensor
  // One per group. tensor: [1]; head: [batch, heads]; block: [batch, heads,
  // ceil(seqlen / block_rows)], the last block of a head possibly shorter.
  std::vector<float> descales;
};

// Number of descales, and the group of element (b, s, h): an index into descales.
int64_t fp8_group_count(const BshdShape&, Fp8Scaling, int64_t block_rows);
int64_t fp8_group_of(const BshdShape&, Fp8Scaling, int64_t block_rows, int64_t b, int64_t s, int64_t h);

// Each group's scale is 448 / amax (amax: its largest |x|), so its largest
// value maps to e4m3's largest finite one; its descale is amax / 448. A group
// of zeros has descale 1: any positive value dequantizes its zero codes
// exactly, and 1 keeps a kernel's product finite. Throws UsageError on a size
// that does not match the shape, a non-positive extent, block_rows <= 0 with
// block scaling, or a NaN or infinity in x (named by its BSHD index).
Fp8Tensor quantize_e4m3(const std::vector<float>& x, const BshdShape&, Fp8Scaling, int64_t block_rows = 0);

// decode(code) * descale of its group, in float as a kernel computes it.
std::vector<float> dequantize(const Fp8Tensor&);

}  // namespace fa
