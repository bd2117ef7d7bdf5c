#include "base/table_log.h"

#include <cmath>

namespace lemrt::base {

TableLog::TableLog() {
  for (int i = 0; i < kCells; ++i) {
    const double c = 1 + (i + 0.5) / kCells;
    log_c_[i] = std::log(c);
    inv_c_[i] = 1 / c;
  }
}

}  // namespace lemrt::base
