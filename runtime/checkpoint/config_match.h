// Whether a checkpoint may be resumed by a run of a given config. Two kinds
// of difference: those that make the saved model unloadable (table shapes,
// optimizers, the dense model, the global batch the data position counts
// in), always refused; and those that would make the resumed run quietly
// differ from the one that saved it (training.seed, a table's combiner, the
// data source), refused unless checkpoint.allow_config_change is set.
// Immutable inputs; thread-safe.
#ifndef LEMRT_RUNTIME_CHECKPOINT_CONFIG_MATCH_H_
#define LEMRT_RUNTIME_CHECKPOINT_CONFIG_MATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/checkpoint.pb.h"
#include "proto/config.pb.h"

namespace lemrt::checkpoint {

// The source's format name (host/input/source_registry.h: "synthetic", "criteo",
// "binary", "text", "tfrecord"): the manifest's data.source.
std::string DataSourceName(const config::RunConfig& config);

// OK when checkpoint `manifest` (read from `dir`) can be loaded into a run of
// `config` with `num_dense_params` dense parameters: same tables (name,
// vocab_size, dim, optimizer), same dense model and optimizer, same global
// batch. Else FailedPrecondition naming `dir` and the first difference.
absl::Status CheckManifestMatchesConfig(const Manifest& manifest, const std::string& dir,
                                        const config::RunConfig& config,
                                        int64_t num_dense_params);

// The differences of the second kind between the run that saved `manifest`
// and `config`, one phrase each ("training.seed 7 -> 8"). Combiners and the
// data source's details come from the manifest's config_text (format 2);
// format-1 manifests are compared on seed and source kind only.
std::vector<std::string> ConfigChangesSince(const Manifest& manifest,
                                            const config::RunConfig& config);

// OK when ConfigChangesSince is empty or config.checkpoint.allow_config_change
// is set; else FailedPrecondition naming `dir`, the changes and the flag.
absl::Status CheckResumeConfig(const Manifest& manifest, const std::string& dir,
                               const config::RunConfig& config);

// For scoring with a checkpoint (lemrt_predict), which reads other files
// than training did: OK when the config's data.schema (label.required aside)
// and features equal those of the run that saved `manifest` (or the manifest
// has no config text); else FailedPrecondition naming `dir` and the fields
// that differ. Not waived by allow_config_change.
absl::Status CheckScoringSchema(const Manifest& manifest, const std::string& dir,
                                const config::RunConfig& config);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_CONFIG_MATCH_H_
