// What the float64 reference passes share: one head of a BSHD tensor as a dense
// double matrix, the row chunk they give each task, and checked index sets.
#pragma once
#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/types.h"

namespace fa::ref {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// Head `h` of batch `b` of a [batch, seqlen, heads, d] float tensor as a
// [seqlen, d] double matrix, every element times `factor`.
MatD load_head(const std::vector<float>& t, int64_t seqlen, int heads, int d, int b, int h,
               double factor = 1.0);

// Rows idx[0..n) of `src` as a new matrix: the K or V rows of a chunk of columns.
template <typename Mat, typename Src>
Mat gather_rows(const Src& src, const int64_t* idx, int64_t n) {
  Mat m(n, src.cols());
  for (int64_t k = 0; k < n; ++k) m.row(k) = src.row(idx[k]);
  return m;
}

// The first query row that sees key `col` (bottom-right causal; 0 without causal):
// rows before it see none of the keys from `col` on.
inline int64_t first_row_seeing(const AttnProblem& p, int64_t col) {
  return p.causal ? std::max<int64_t>(0, col - (int64_t(p.seqlen_k) - p.seqlen_q)) : 0;
}

// Columns of a task's S^T GEMM: 64 keeps it compute-bound; fewer when that
// would leave threads idle (few rows per (batch, kv head)), but no fewer than 8.
int64_t rows_per_chunk(int64_t n_rows, int64_t group, int threads);

// Sorted, unique, each in 0..n-1 (else UsageError naming `what`); empty = all of 0..n-1.
std::vector<int64_t> checked_indices(std::vector<int64_t> idx, int64_t n, const char* what);

}  // namespace fa::ref
