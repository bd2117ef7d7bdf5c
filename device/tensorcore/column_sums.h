// Column sums of a row-major batch on a ThreadTeam, the bias gradients of the
// dense layers: out[j] = sum over rows r, in increasing r, of x[r][j]. The
// columns are cut into fixed blocks, one task each, so every column is summed
// in the same order whatever the team: the bits do not depend on its size.
// Thread-compatible (as the team).
#ifndef LEMRT_DEVICE_TENSORCORE_COLUMN_SUMS_H_
#define LEMRT_DEVICE_TENSORCORE_COLUMN_SUMS_H_

#include <cstdint>

#include "device/tensorcore/thread_team.h"

namespace lemrt::device {

// out [width] = the column sums of x [rows x width] (row stride width);
// rows == 0 gives zeros. team: null runs on the calling thread.
void ColumnSums(ThreadTeam* team, const float* x, int64_t rows, int64_t width, float* out);

// ColumnSums cut into its column blocks, to run with other independent work
// in one fork-join (ParallelForGroups): the same blocks, the same bits. Holds
// the pointers (they must outlive it). Immutable.
class ColumnSumTasks {
 public:
  ColumnSumTasks(const float* x, int64_t rows, int64_t width, float* out);
  int tasks() const;
  void operator()(int block) const;
  TaskGroup group() const {
    return Tasks(tasks(), *this, static_cast<double>(rows_) * width_);
  }

 private:
  const float* x_;
  int64_t rows_, width_;
  float* out_;
};

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_COLUMN_SUMS_H_
