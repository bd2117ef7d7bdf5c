#include "device/tensorcore/column_sums.h"

#include <cstdint>
#include <string>
#include <vector>

#include "device/tensorcore/gradient_check_test_util.h"
#include "gtest/gtest.h"

namespace lemrt::device {
namespace {

using test_util::RandomVector;

// The contract, as a plain loop: each column summed in float, rows in order.
std::vector<float> Plain(const std::vector<float>& x, int64_t rows, int64_t width) {
  std::vector<float> out(static_cast<size_t>(width), 0.0f);
  for (int64_t j = 0; j < width; ++j) {
    for (int64_t r = 0; r < rows; ++r) out[j] += x[r * width + j];
  }
  return out;
}

// Widths around the vector widths (8, 16) and the task blocks (64), so that
// whole blocks, vector chunks and single columns all run; the bits must be
// the plain loop's on any team.
TEST(ColumnSumsTest, BitsOfThePlainLoopInRowOrder) {
  ThreadTeam team(3);
  for (int64_t width : {1, 7, 8, 9, 16, 23, 64, 65, 130, 200}) {
    for (int64_t rows : {0, 1, 5, 300}) {
      const std::vector<float> x = RandomVector(rows * width, static_cast<uint32_t>(width * 1000 + rows));
      const std::vector<float> want = Plain(x, rows, width);
      for (ThreadTeam* t : {static_cast<ThreadTeam*>(nullptr), &team}) {
        std::vector<float> out(static_cast<size_t>(width) + 1, -9.0f);
        ColumnSums(t, x.data(), rows, width, out.data());
        for (int64_t j = 0; j < width; ++j) {
          ASSERT_EQ(out[j], want[j]) << "width " << width << " rows " << rows << " column " << j
                                     << (t ? " on the team" : " on the caller");
        }
        ASSERT_EQ(out[width], -9.0f) << "wrote past the width " << width;
      }
    }
  }
}

}  // namespace
}  // namespace lemrt::device
