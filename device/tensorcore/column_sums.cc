#include "device/tensorcore/column_sums.h"

namespace lemrt::device {
namespace {

// Columns per task.
constexpr int64_t kColumnsPerTask = 64;

}  // namespace

void ColumnSums(ThreadTeam* team, const float* x, int64_t rows, int64_t width, float* out) {
  ParallelRanges(team, width, kColumnsPerTask, [&](int64_t begin, int64_t end) {
    float* __restrict sums = out + begin;
    const int64_t cols = end - begin;
    for (int64_t j = 0; j < cols; ++j) sums[j] = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float* __restrict row = x + r * width + begin;
      for (int64_t j = 0; j < cols; ++j) sums[j] += row[j];
    }
  });
}

}  // namespace lemrt::device
