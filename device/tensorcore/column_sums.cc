#include "device/tensorcore/column_sums.h"

#include <algorithm>

#include "device/tensorcore/lanes.h"

namespace lemrt::device {
namespace {

// Columns per task.
constexpr int64_t kColumnsPerTask = 64;

}  // namespace

ColumnSumTasks::ColumnSumTasks(const float* x, int64_t rows, int64_t width, float* out)
    : x_(x), rows_(rows), width_(width), out_(out) {}

int ColumnSumTasks::tasks() const {
  return static_cast<int>((width_ + kColumnsPerTask - 1) / kColumnsPerTask);
}

// Each column's sum is 0 + row 0 + row 1 + ... in row order, whatever the
// path: C vectors of L columns accumulate in registers, the last columns
// one by one.
template <int L, int C>
void SumColumns(const float* x, int64_t rows, int64_t width, float* sums) {
  lanes::Lanes<L> acc[C] = {};
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * width;
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[c] += lanes::Load<L>(row + c * L);
  }
#pragma GCC unroll 8
  for (int c = 0; c < C; ++c) lanes::Store<L>(sums + c * L, acc[c]);
}

void SumColumn(const float* x, int64_t rows, int64_t width, float* sum) {
  float acc = 0.0f;
  for (int64_t r = 0; r < rows; ++r) acc += x[r * width];
  *sum = acc;
}

void ColumnSumTasks::operator()(int block) const {
  constexpr int L = lanes::kWideLanes;
  static_assert(kColumnsPerTask % L == 0);
  const int64_t begin = block * kColumnsPerTask;
  const int64_t cols = std::min(width_, begin + kColumnsPerTask) - begin;
  float* sums = out_ + begin;
  if (rows_ == 0) {  // x_ may be null then, and an offset on null is undefined
    std::fill_n(sums, cols, 0.0f);
    return;
  }
  const float* x = x_ + begin;
  if (cols == kColumnsPerTask) {
    return SumColumns<L, kColumnsPerTask / L>(x, rows_, width_, sums);
  }
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) SumColumns<8, 1>(x + j, rows_, width_, sums + j);
  for (; j < cols; ++j) SumColumn(x + j, rows_, width_, sums + j);
}

void ColumnSums(ThreadTeam* team, const float* x, int64_t rows, int64_t width, float* out) {
  const ColumnSumTasks sums(x, rows, width, out);
  const TaskGroup group = sums.group();
  ParallelForGroups(team, {&group, 1});
}

}  // namespace lemrt::device
