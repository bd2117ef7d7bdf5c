#include "runtime/quantized_eval.h"

#include <algorithm>
#include <vector>

#include "base/status_macros.h"
#include "device/sparsecore/quantization.h"

namespace lemrt::runtime {

absl::Status EvaluateInt8Tables(const config::RunConfig& config, Trainer& trainer,
                                Communicator& comm, summary::RunSummary* summary) {
  // Replace every local row by its int8 round trip, keeping the f32 rows.
  std::vector<std::vector<float>> saved;
  float max_error = 0;
  for (const auto& sc : trainer.sparse().sparse_cores()) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      device::TableShard& shard = sc->mutable_shard(t);
      saved.emplace_back(shard.weights().begin(), shard.weights().end());
      for (int64_t r = 0; r < shard.local_rows(); ++r) {
        max_error = std::max(max_error, device::Int8RoundTripRow(shard.mutable_row(r)));
      }
    }
  }
  auto eval = trainer.Evaluate();
  // Restore before returning, whatever Evaluate said.
  size_t k = 0;
  for (const auto& sc : trainer.sparse().sparse_cores()) {
    for (int t = 0; t < sc->num_tables(); ++t) {
      std::span<float> w = sc->mutable_shard(t).mutable_weights();
      std::copy(saved[k].begin(), saved[k].end(), w.begin());
      ++k;
    }
  }
  if (!eval.ok()) return eval.status();
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
  q->set_auc(eval->auc);
  q->set_logloss(eval->logloss);
  q->set_auc_change(eval->auc - summary->eval().auc());
  q->set_logloss_change(eval->logloss - summary->eval().logloss());
  q->set_table_bytes_fp32(fp32_bytes);
  q->set_table_bytes_int8(int8_bytes);
  q->set_bytes_saved(fp32_bytes - int8_bytes);
  q->set_max_abs_error(max_error);
  return absl::OkStatus();
}

}  // namespace lemrt::runtime
