#include "host/criteo_shard.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "glog/logging.h"
#include "host/criteo_reader.h"

namespace lemrt::host {

ShardRange RankShare(int64_t n, int rank, int world_size) {
  CHECK(world_size > 0 && rank >= 0 && rank < world_size) << rank << " of " << world_size;
  CHECK_GE(n, 0);
  auto start = [&](int64_t r) { return n / world_size * r + n % world_size * r / world_size; };
  return {start(rank), start(rank + 1)};
}

absl::StatusOr<std::vector<CriteoFeature>> ResolveCriteoFeatures(const config::RunConfig& config,
                                                                 std::string_view unit) {
  std::vector<CriteoFeature> features;
  for (int f = 0; f < config.features_size(); ++f) {
    const config::FeatureConfig& fc = config.features(f);
    CriteoFeature feature;
    feature.column = fc.has_input_column() ? fc.input_column() : f;
    if (feature.column < 0 || feature.column >= CriteoLine::kNumCategories) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' reads Criteo category column %d; %s have columns 0..%d (set "
          "input_column).",
          fc.name(), feature.column, unit, CriteoLine::kNumCategories - 1));
    }
    feature.table = -1;
    for (int t = 0; t < config.tables_size(); ++t) {
      if (config.tables(t).name() == fc.table()) feature.table = t;
    }
    if (feature.table < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature '%s' names table '%s', which is not in the config.", fc.name(), fc.table()));
    }
    feature.vocab = config.tables(feature.table).vocab_size();
    features.push_back(feature);
  }
  return features;
}

void AppendCriteoSample(const CriteoLine& line, std::span<const CriteoFeature> features,
                        int num_dense, int64_t row, Batch* batch) {
  batch->labels[row] = line.label;
  float* dense = batch->dense.data() + row * num_dense;
  for (int k = 0; k < num_dense; ++k) {
    dense[k] = k < CriteoLine::kNumIntegers ? line.dense[k] : 0.0f;
  }
  for (size_t f = 0; f < features.size(); ++f) {
    const CriteoFeature& feature = features[f];
    if (line.has_category(feature.column)) {
      batch->ids[f].push_back(
          CriteoCategoryId(line.category[feature.column], feature.table, feature.vocab));
    }
    batch->offsets[f][row + 1] = static_cast<int64_t>(batch->ids[f].size());
  }
}

}  // namespace lemrt::host
