// TrainOnlySource: a DataSource with training batches only (no evaluation
// data, no teacher), the base of the fake sources that stage tests feed
// through HostStage; a subclass implements TrainBatch.
#ifndef LEMRT_HOST_INPUT_TRAIN_ONLY_SOURCE_H_
#define LEMRT_HOST_INPUT_TRAIN_ONLY_SOURCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "host/input/data_source.h"

namespace lemrt::host {

class TrainOnlySource : public DataSource {
 public:
  absl::Status EvalBatch(int64_t, Batch*) override {
    return absl::UnimplementedError("no eval data");
  }
  int64_t num_eval_chunks() const override { return 0; }
  int64_t num_eval_samples() const override { return 0; }
  bool has_teacher() const override { return false; }
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_TRAIN_ONLY_SOURCE_H_
