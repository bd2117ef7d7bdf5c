// Loads and validates the run config: parse text proto -> merge --override ->
// apply topology preset -> Validate -> a complete RunConfig that later code
// trusts. Stateless functions; thread-safe.
#ifndef LEMRT_PROTO_CONFIG_LOADER_H_
#define LEMRT_PROTO_CONFIG_LOADER_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "proto/config.pb.h"

namespace lemrt::config {

// Config files (and limits files) larger than this are refused unread.
inline constexpr int64_t kMaxConfigBytes = int64_t{16} << 20;

// Changes a tool makes to the merged config before it is checked (LoadConfig).
using ConfigAdjustment = std::function<void(RunConfig*)>;

// A text-format override a tool derives from one of its own flags
// (lemrt_train's --checkpoint_every=5: "checkpoint { every_steps: 5 }"): an
// error in a field it set names the flag, never a line of text the user did
// not write.
struct FlagOverride {
  std::string flag;  // as the user gave it: "--checkpoint_every=5"
  std::string text;  // text-format RunConfig fields
};

// Reads `path` (text format), merges `override_text` and then each of
// `flag_overrides`, in order, into it with text-format merge semantics
// (scalars replace, repeated fields append, messages merge), applies `adjust`
// when set, fills the topology from its preset and the world
// size, and validates. `adjust` lets a tool that loads a config for other
// work than training relax it (lemrt_vocab: mappings to the vocabularies it
// is about to write) while errors still point at the text that set a field.
// Errors (InvalidArgument / NotFound) are sentences:
//   parse errors:    "<path>:<line>:<col>: <parser message>"
//   semantic errors: "<path>:<line>:<col>: <field path>: <what is wrong>"
//                    (location of the offending field, or of "--override" when
//                    the override set it; just the file when unset);
//                    "<flag>: <field path>: <what is wrong>" when one of
//                    `flag_overrides` set it ("--checkpoint_every=5: ...").
//   the file:        NotFound when it cannot be read, InvalidArgument when it
//                    is not a regular file (a directory, a FIFO) or larger
//                    than kMaxConfigBytes.
absl::StatusOr<RunConfig> LoadConfig(const std::string& path, std::string_view override_text,
                                     int world_size, const ConfigAdjustment& adjust = nullptr,
                                     std::span<const FlagOverride> flag_overrides = {});

// As LoadConfig, from text already in memory; `source_name` is used in
// messages in place of the path.
absl::StatusOr<RunConfig> ParseConfig(std::string_view text, std::string_view source_name,
                                      std::string_view override_text, int world_size,
                                      const ConfigAdjustment& adjust = nullptr,
                                      std::span<const FlagOverride> flag_overrides = {});

// Fills unset topology fields from the preset (TPU_V5P when none is named) and
// num_chips from `world_size`. Explicitly set fields are kept.
void ApplyTopologyPreset(int world_size, TopologyConfig* topology);

// Samples per exactly summed block of training.world_size_independent: its
// gradient_block_samples, or (0, auto) global_batch / gcd(global_batch, 4),
// the local batch of 4 ranks, so that 1, 2 and 4 ranks run whole blocks; 0
// when world_size_independent is off. A function of the config alone (never
// of the world size): every world size compared must run whole blocks of it
// (checked with the config).
int64_t GradientBlockSamples(const TrainingConfig& training);

// Index of the table named `name` in config.tables(), or -1.
int FindTable(const RunConfig& config, std::string_view name);

// Why tables `a` and `b` (indices into config.tables()) cannot share a table
// stack (layout/stacking.h): "" when they can, i.e. same padded dim (dim rounded
// up to 8 floats), same dtype (FP32 / BF16 rows), same combiner and equivalent effective optimizer configs
// (unset kind = SGD, unset learning rate = training.embedding_learning_rate);
// otherwise a phrase naming the first difference.
std::string TableStackingMismatch(const RunConfig& config, int a, int b);

// The model's dense inputs a column schema gives: one per dense input plus
// one per missing_indicator (model.num_dense_features defaults to it).
int ModelDenseInputs(const InputSchema& schema);

// Whether `dtype` is BF16 (DTYPE_UNSPECIFIED and FP32 are fp32).
inline bool IsBf16(DType dtype) { return dtype == BF16; }

// Total SparseCores over all chips.
inline int64_t TotalSparseCores(const RunConfig& config) {
  return static_cast<int64_t>(config.topology().num_chips()) *
         config.topology().sparse_cores_per_chip();
}

}  // namespace lemrt::config

#endif  // LEMRT_PROTO_CONFIG_LOADER_H_
