// Statistics of the dense inputs (docs/data.md "Dense inputs"): the moments
// lemrt_vocab gathers over the training rows for STANDARDIZE and MIN_MAX,
// the schema lines it writes from them, and the start-up check that warns
// when a raw input's scale would saturate the bottom MLP. Plain values and
// stateless functions; thread-compatible.
#ifndef LEMRT_HOST_INPUT_DENSE_STATS_H_
#define LEMRT_HOST_INPUT_DENSE_STATS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "host/batch.h"
#include "host/input/parsed_sample.h"
#include "host/input/schema.h"
#include "proto/config.pb.h"

namespace lemrt::host {

// Count, mean, sum of squared deviations (m2), minimum and maximum of a
// stream of values; Merge combines two streams (Chan, Golub and LeVeque's
// pairwise update), so shares counted apart give the whole's moments up to
// rounding.
struct DenseMoments {
  int64_t count = 0;
  int64_t missing = 0;  // rows whose field was missing (not in the moments)
  double mean = 0;
  double m2 = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  void Add(double x);
  void Merge(const DenseMoments& other);
  // The population standard deviation sqrt(m2 / count); 0 for no values.
  double stddev() const;
};

// Adds the present dense values of `sample` (after the reader's transform
// and the column's clip, before normalization) to moments[k]; a missing one
// counts in moments[k].missing. `moments` has schema.dense.size() entries.
void AccumulateDense(const Schema& schema, const ParsedSample& sample,
                     std::vector<DenseMoments>* moments);

// The dense lines of `schema` (the config's data.schema) with the statistics
// of their normalization filled in from moments[k] (one per dense input):
// mean and stddev for STANDARDIZE, minimum and maximum for MIN_MAX; an input
// without normalization gets STANDARDIZE. Each line is preceded by a comment
// with the count, missing rows and every statistic. An input with no values
// or a zero spread keeps no normalization (the comment says why).
std::string DenseStatsLines(const config::InputSchema& schema,
                            const std::vector<DenseMoments>& moments);

// A root mean square above this, for an input the model reads unnormalized,
// draws the start-up warning.
inline constexpr double kSaturatingDenseRms = 10;

// One sentence naming each dense input of `schema` with no normalization
// whose values in the unmasked rows of `batch` (a batch BatchFiller filled)
// have a root mean square above kSaturatingDenseRms, with what to change;
// "" when there is none.
std::string DenseScaleWarning(const Schema& schema, const Batch& batch);

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_DENSE_STATS_H_
