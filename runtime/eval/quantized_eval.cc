#include "runtime/eval/quantized_eval.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/status_macros.h"
#include "device/sparsecore/quantization.h"

namespace lemrt::runtime {
namespace {

// Turns every SparseCore's int8 lookups on for its lifetime.
class Int8Lookups {
 public:
  explicit Int8Lookups(const SparseCoreStage& sparse) : sparse_(sparse) { Set(true); }
  ~Int8Lookups() { Set(false); }
  Int8Lookups(const Int8Lookups&) = delete;
  Int8Lookups& operator=(const Int8Lookups&) = delete;

 private:
  void Set(bool on) {
    for (const auto& sc : sparse_.sparse_cores()) sc->set_int8_lookups(on);
  }
  const SparseCoreStage& sparse_;
};

// The largest |round trip - value| over this rank's table elements, one row
// at a time through a row-sized scratch (the tables are not changed).
float LocalMaxInt8Error(const SparseCoreStage& sparse) {
  float max_error = 0;
  std::vector<float> scratch;
  for (const auto& sc : sparse.sparse_cores()) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      const device::TableShard& shard = sc->shard(t);
      for (int64_t r = 0; r < shard.local_rows(); ++r) {
        scratch.resize(shard.dim());
        shard.ReadRows(r, 1, scratch.data());
        max_error = std::max(max_error, device::Int8RoundTripRow(scratch));
      }
    }
  }
  return max_error;
}

}  // namespace

absl::Status EvaluateInt8Tables(const config::RunConfig& config, const SparseCoreStage& sparse,
                                absl::FunctionRef<absl::StatusOr<EvalResult>()> evaluate,
                                Communicator& comm, summary::RunSummary* summary) {
  absl::StatusOr<EvalResult> eval = [&] {
    Int8Lookups int8(sparse);
    return evaluate();
  }();
  if (!eval.ok()) return eval.status();
  float max_error = LocalMaxInt8Error(sparse);
  const std::vector<float> mine = {max_error};
  std::vector<float> all;
  LEMRT_RETURN_IF_ERROR(comm.AllGather(mine, &all));
  for (float e : all) max_error = std::max(max_error, e);

  double fp32_bytes = 0, int8_bytes = 0;
  for (const auto& table : config.tables()) {
    fp32_bytes += static_cast<double>(table.vocab_size()) * table.dim() * 4;
    int8_bytes += static_cast<double>(table.vocab_size()) *
                  (table.dim() + device::kInt8RowOverheadBytes);
  }
  summary::QuantizedEvalStats* q = summary->mutable_quantized_eval();
  q->set_scheme("int8 per row (uint8 codes, f32 scale and offset per row)");
  const summary::EvalStats& fp32 = summary->eval();
  if (std::isfinite(eval->auc)) {
    q->set_auc(eval->auc);
    if (fp32.has_auc()) q->set_auc_change(eval->auc - fp32.auc());
  }
  if (std::isfinite(eval->logloss)) {
    q->set_logloss(eval->logloss);
    if (fp32.has_logloss()) q->set_logloss_change(eval->logloss - fp32.logloss());
  }
  q->set_table_bytes_fp32(fp32_bytes);
  q->set_table_bytes_int8(int8_bytes);
  q->set_bytes_saved(fp32_bytes - int8_bytes);
  q->set_max_abs_error(max_error);
  return absl::OkStatus();
}

}  // namespace lemrt::runtime
