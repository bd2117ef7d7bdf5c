// The model statistics' per-row work (model_stats.h) over a block of rows of
// one table: the sum of the rows' ModelRowHash (mod 2^64) and each row's sum
// of squares, summed exactly (base/exact_sum.h) and as doubles in row order.
// Rows are hashed and squared side by side in vector lanes (eight a vector,
// eight vectors at once), each lane one row in column order, so every row's
// hash and sum of squares has the bits of the one-row-at-a-time loop (ModelRowHash; a double chain
// over the columns), and blocks combine in any order to the same hash and exact sum. Pure
// functions; thread-compatible (RowBlockStats is a plain value).
#ifndef LEMRT_RUNTIME_OBSERVABILITY_ROW_BLOCK_STATS_H_
#define LEMRT_RUNTIME_OBSERVABILITY_ROW_BLOCK_STATS_H_

#include <cstdint>

#include "base/exact_sum.h"

namespace lemrt::runtime {

struct RowBlockStats {
  // A row's sum of squares adds below 2^32 to each limb (it is scaled by
  // 2^-32 into [2^-96, 2^32)): this many rows and blocks are summed between
  // normalisations without overflowing a limb.
  static constexpr int64_t kNormalizeEvery = int64_t{1} << 28;

  uint64_t hash_sum = 0;  // Sum of the rows' ModelRowHash, mod 2^64.
  // Exact sum of the rows' sums of squares x 2^-32: base::kExactLimbs limbs,
  // then the count of rows whose sum of squares was special (>= 2^64 or not
  // finite; they add nothing to the limbs).
  int64_t exact[base::kExactLimbs + 1] = {};
  int64_t since_normalized = 0;  // Terms added to `exact` since it was normalised.
  double float_sum = 0;          // The rows' sums of squares added in row order.

  // Adds one row's sum of squares (to `exact` and `float_sum`).
  void AddRowSquares(double row_squares);
  // Adds another block's statistics: hash_sum and exact are plain integer
  // sums (order-free); float_sum follows the order of the calls.
  void Add(const RowBlockStats& other);
  // The exact sum's value (x 2^32 back to squares); meaningless when special().
  double ExactSquares() const;
  bool special() const { return exact[base::kExactLimbs] != 0; }
};

// Adds `rows` rows of table `table` (row i: `dim` floats at values + i x dim,
// original row original_rows[i]) to `stats`, the rows in order. dim >= 1.
void AddRowBlock(int table, const int64_t* original_rows, const float* values, int64_t rows,
                 int dim, RowBlockStats* stats);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_OBSERVABILITY_ROW_BLOCK_STATS_H_
