#include "device/tensorcore/column_sums.h"

#include <algorithm>

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

void ColumnSumTasks::operator()(int block) const {
  const int64_t begin = block * kColumnsPerTask;
  const int64_t cols = std::min(width_, begin + kColumnsPerTask) - begin;
  float* __restrict sums = out_ + begin;
  for (int64_t j = 0; j < cols; ++j) sums[j] = 0.0f;
  for (int64_t r = 0; r < rows_; ++r) {
    const float* __restrict row = x_ + r * width_ + begin;
    for (int64_t j = 0; j < cols; ++j) sums[j] += row[j];
  }
}

void ColumnSums(ThreadTeam* team, const float* x, int64_t rows, int64_t width, float* out) {
  const ColumnSumTasks sums(x, rows, width, out);
  const TaskGroup group = sums.group();
  ParallelForGroups(team, {&group, 1});
}

}  // namespace lemrt::device
