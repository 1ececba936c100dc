// One warp per chunk of a tensor: the chunk's std::mt19937_64 state (312
// words) sits in shared memory; the warp seeds it as the standard defines,
// regenerates it 312 words at a time in three parallel phases (each new word
// depends on words of the previous generation and, past word 155, on new ones
// from the first phase), and each lane turns the words of its values into
// numbers as inputs.cpp's Rng does: uniform01 = (word >> 11) * 2^-53, a
// normal value from two consecutive words (Box-Muller), stored rounded to the
// dtype. 312 words hold a whole number of values of either kind, so the
// chunk's values line up with the generations.
#include "check/inputs_gpu.h"

#include <cmath>
#include <vector>

#include "check/input_stream.h"
#include "core/errors.h"
#include "reference/gpu_rows.cuh"

namespace fa {
namespace {

using namespace gpurows;
using namespace input_stream;

constexpr int kN = 312, kM = 156;  // std::mt19937_64's state size and shift
constexpr uint64_t kMatrixA = 0xB5026F5AA96619E9ull, kUpper = 0xFFFFFFFF80000000ull, kLower = 0x7FFFFFFFull;
constexpr int kWarps = 4;  // chunks per block

__device__ inline uint64_t twisted(uint64_t far, uint64_t x, uint64_t next) {
  const uint64_t y = (x & kUpper) | (next & kLower);
  return far ^ (y >> 1) ^ ((y & 1) ? kMatrixA : 0);
}

// The standard's generation step over mt[0..311], by the 32 lanes of a warp.
__device__ void regenerate(uint64_t* mt, int lane) {
  uint64_t nv[5];
  // words 0..155: from the previous generation only
  for (int k = 0; k < 5; ++k) {
    const int i = lane + 32 * k;
    if (i < kN - kM) nv[k] = twisted(mt[i + kM], mt[i], mt[i + 1]);
  }
  __syncwarp();
  for (int k = 0; k < 5; ++k) {
    const int i = lane + 32 * k;
    if (i < kN - kM) mt[i] = nv[k];
  }
  __syncwarp();
  // words 156..310: words i, i+1 of the previous generation, word i-156 new
  for (int k = 0; k < 5; ++k) {
    const int i = kN - kM + lane + 32 * k;
    if (i < kN - 1) nv[k] = twisted(mt[i + kM - kN], mt[i], mt[i + 1]);
  }
  __syncwarp();
  for (int k = 0; k < 5; ++k) {
    const int i = kN - kM + lane + 32 * k;
    if (i < kN - 1) mt[i] = nv[k];
  }
  __syncwarp();
  if (lane == 0) mt[kN - 1] = twisted(mt[kM - 1], mt[kN - 1], mt[0]);
  __syncwarp();
}

__device__ inline double uniform01(uint64_t z) {  // tempered, then Rng::uniform01
  z ^= (z >> 29) & 0x5555555555555555ull;
  z ^= (z << 17) & 0x71D67FFFEDA60000ull;
  z ^= (z << 37) & 0xFFF7EEE000000000ull;
  z ^= z >> 43;
  return double(z >> 11) * 0x1.0p-53;
}

// What each value is (inputs.cpp's generators, one per kind).
enum class Kind : int { normal, uniform, shifted, ramped, scaled };

struct Spec {
  Kind kind = Kind::normal;
  int64_t d = 1;                    // head_dim: value i is of channel i % d
  const double* channel = nullptr;  // shifted, ramped: u; scaled: the gains
  double a = 0;                     // shifted, ramped
  int64_t heads_kv = 1, nk = 1;     // ramped: a key row's place in K
};

__device__ inline void put(__nv_bfloat16* out, int64_t i, double v) { out[i] = __float2bfloat16_rn(float(v)); }
__device__ inline void put(__half* out, int64_t i, double v) { out[i] = __float2half_rn(float(v)); }

template <typename T>
__global__ void generate_chunks(T* out, int64_t n, uint64_t seed, uint64_t tensor, Spec spec) {
  __shared__ uint64_t states[kWarps][kN];
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const int64_t chunk = int64_t(blockIdx.x) * kWarps + w;
  const int64_t first = chunk * int64_t(kInputChunk);
  if (first >= n) return;
  const int64_t count = min(int64_t(kInputChunk), n - first);
  uint64_t* mt = states[w];
  if (lane == 0) {  // the standard's seeding, sequential by definition
    uint64_t x = mix(seed, tensor, uint64_t(chunk));
    mt[0] = x;
    for (int i = 1; i < kN; ++i) mt[i] = x = 6364136223846793005ull * (x ^ (x >> 62)) + uint64_t(i);
  }
  __syncwarp();
  const int words = spec.kind == Kind::uniform ? 1 : 2;
  const int per_generation = kN / words;
  for (int64_t v0 = 0; v0 < count; v0 += per_generation) {
    regenerate(mt, lane);
    for (int j = lane; j < per_generation && v0 + j < count; j += 32) {
      const int64_t i = first + v0 + j;
      double x;
      if (spec.kind == Kind::uniform) {
        x = 2.0 * uniform01(mt[j]) - 1.0;
      } else {
        const double u1 = 1.0 - uniform01(mt[2 * j]), u2 = uniform01(mt[2 * j + 1]);
        const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
        const int64_t c = i % spec.d;
        switch (spec.kind) {
          case Kind::shifted: x = spec.a * spec.channel[c] + z; break;
          case Kind::ramped: {
            const int64_t row = (i / (spec.heads_kv * spec.d)) % spec.nk;
            const double ramp = spec.nk > 1 ? -0.5 + 1.5 * double(row) / double(spec.nk - 1) : 1.0;
            x = spec.a * ramp * spec.channel[c] + z;
            break;
          }
          case Kind::scaled: x = spec.channel[c] * z; break;
          default: x = z;
        }
      }
      put(out, i, x);
    }
    __syncwarp();  // every lane done with this generation before the next overwrites it
  }
}

void launch(void* out, DType dtype, int64_t n, uint64_t seed, uint64_t tensor, const Spec& spec) {
  if (!out || n <= 0) return;
  const int64_t chunks = (n + int64_t(kInputChunk) - 1) / int64_t(kInputChunk);
  const int blocks = int((chunks + kWarps - 1) / kWarps);
  if (dtype == DType::bf16)
    generate_chunks<<<blocks, 32 * kWarps>>>(static_cast<__nv_bfloat16*>(out), n, seed, tensor, spec);
  else
    generate_chunks<<<blocks, 32 * kWarps>>>(static_cast<__half*>(out), n, seed, tensor, spec);
  check_cuda(cudaGetLastError(), "generate_chunks launch");
}

DeviceArray<double> upload(const std::vector<double>& h, const char* what) {
  auto d = device_array<double>(int64_t(h.size()), what);
  check_cuda(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(double), cudaMemcpyHostToDevice), what);
  return d;
}

}  // namespace

void generate_inputs_gpu(const AttnProblem& p, Distribution dist, uint64_t seed, const InputTargets& t) {
  if (auto why = p.invalid_reason(); !why.empty()) throw UsageError("generate_inputs_gpu: " + why);
  if (p.dtype != DType::bf16 && p.dtype != DType::f16)
    throw UsageError("generate_inputs_gpu: " + p.describe() + ": the device holds bf16 or fp16 tensors");
  const int64_t nq = int64_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
  const int64_t nkv = int64_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim;
  const Spec plain{dist == Distribution::uniform ? Kind::uniform : Kind::normal};
  const Spec normal{Kind::normal};
  DeviceArray<double> channel;
  if (dist == Distribution::adversarial) {
    const AdversarialDirection dir = adversarial_direction(p, seed);
    channel = upload(dir.u, "cudaMemcpy (adversarial direction)");
    launch(t.q, p.dtype, nq, seed, kQ, Spec{Kind::shifted, p.head_dim, channel.get(), dir.a});
    launch(t.k, p.dtype, nkv, seed, kK,
           Spec{Kind::ramped, p.head_dim, channel.get(), dir.a, p.heads_kv, p.seqlen_k});
    launch(t.v, p.dtype, nkv, seed, kV, normal);
  } else if (dist == Distribution::outliers) {
    channel = upload(outlier_gains(p, seed), "cudaMemcpy (outlier gains)");
    const Spec scaled{Kind::scaled, p.head_dim, channel.get()};
    launch(t.q, p.dtype, nq, seed, kQ, scaled);
    launch(t.k, p.dtype, nkv, seed, kK, scaled);
    launch(t.v, p.dtype, nkv, seed, kV, normal);
  } else {
    launch(t.q, p.dtype, nq, seed, kQ, plain);
    launch(t.k, p.dtype, nkv, seed, kK, plain);
    launch(t.v, p.dtype, nkv, seed, kV, plain);
  }
  launch(t.dout, p.dtype, nq, seed, kDout, plain);
  check_cuda(cudaDeviceSynchronize(), "generate_chunks");
}

bool inputs_gpu_built() { return true; }

}  // namespace fa
