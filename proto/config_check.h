// The pieces of config validation (proto/config_loader.h runs them all):
// each subsystem's rules live beside the fields they check, in their own
// file, and report into one ConfigErrors. A check reads a RunConfig whose
// topology preset and derived defaults are already applied. Stateless
// functions; thread-safe.
#ifndef LEMRT_PROTO_CONFIG_CHECK_H_
#define LEMRT_PROTO_CONFIG_CHECK_H_

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "proto/config.pb.h"

namespace lemrt::config {

// One step of a field path: field name and index (-1 for singular fields).
struct PathStep {
  std::string field;
  int index = -1;
};
using FieldPath = std::vector<PathStep>;

// "a.b[2].c" for error messages.
std::string PathString(const FieldPath& path);

// A semantic error: which field (located in the config text by the loader),
// and the sentence.
struct ConfigError {
  FieldPath path;
  std::string message;
};

// The errors found so far, in the order the checks found them (the loader
// reports the first).
class ConfigErrors {
 public:
  void Fail(FieldPath path, std::string message) {
    errors_.push_back({std::move(path), std::move(message)});
  }
  bool empty() const { return errors_.empty(); }
  const ConfigError& first() const { return errors_.front(); }

 private:
  std::vector<ConfigError> errors_;
};

// Finite and > 0; finite and >= 0 (NaN and infinities fail both).
inline bool Positive(double x) { return std::isfinite(x) && x > 0; }
inline bool FiniteNonNegative(double x) { return std::isfinite(x) && x >= 0; }

// An optimizer at `path` (tables[i].optimizer or training.dense_optimizer):
// learning rate, Adagrad, Adam and FTRL parameters (proto/optimizer_checks.cc).
void CheckOptimizer(const FieldPath& path, const OptimizerConfig& o, ConfigErrors& errors);

// training: batch, steps, epochs, learning rates and schedules, eval, early
// stop and log settings (proto/training_checks.cc).
void CheckTraining(const RunConfig& c, ConfigErrors& errors);

// The learning-rate schedules of a run of `steps` steps (< 0: not known yet,
// so a schedule's decay length is not checked against it). CheckTraining runs
// it with training.steps, or -1 with training.epochs; the trainer runs it
// again once the epochs have resolved the steps.
void CheckLearningRateSchedules(const TrainingConfig& t, int64_t steps, ConfigErrors& errors);

// features and data: the sources, the input schema against the features and
// the model, shuffling (proto/data_checks.cc).
void CheckFeatures(const RunConfig& c, ConfigErrors& errors);
// data.schema.sparse vocabulary files: each a readable, non-empty regular
// file (checked before the tables, whose unset vocab_size they would set),
// and at most one vocabulary file per table.
// One data.schema.dense input at `path`: clip bounds, normalization and its
// statistics (each statistic only with its normalization), and no
// missing_indicator for binary sources (which cannot tell a missing value).
void CheckDenseInput(const FieldPath& path, const DenseInput& d, bool binary_source,
                     ConfigErrors& errors);
void CheckVocabularyFiles(const RunConfig& c, ConfigErrors& errors);
void CheckData(const RunConfig& c, ConfigErrors& errors);
// data.schema.dense: each named, once, its column >= 0, a finite
// default_value and CheckDenseInput.
void CheckDenseLines(const RunConfig& c, ConfigErrors& errors);
// data.schema.sparse: each feeds a feature of the config, once, with valid
// mapping, vocabulary, separator and weights fields (`text`: a text source,
// `header`: with a header line); returns the features fed.
std::set<std::string> CheckSparseInputs(const RunConfig& c, bool text, bool header,
                                        ConfigErrors& errors);
// data.schema with the CRITEO preset (proto/criteo_preset.h): the label line
// sets only `required`; dense lines override I1..I13 in place or add inputs
// reading columns 1..13; sparse lines name a preset column by key, a column
// 1..39, or neither for a feature the preset feeds; every feature is fed;
// model.num_dense_features matches the composed dense inputs
// (proto/criteo_checks.cc).
void CheckCriteoSchema(const RunConfig& c, bool text, bool header, ConfigErrors& errors);

// topology against the MPI world size; the emulated chip's knobs
// (serialized tables, tile threads); host worker and GEMM threads and the
// prefetch depth (runtime/step/host_prefetcher.h); the start-up reservation of the
// step buffers (runtime/step/step_buffer_reserve.h) (proto/chip_checks.cc).
void CheckTopology(const RunConfig& c, int world_size, ConfigErrors& errors);
void CheckEmulatedChip(const RunConfig& c, ConfigErrors& errors);
void CheckHostWorkers(const RunConfig& c, ConfigErrors& errors);
void CheckStepBufferReserve(const RunConfig& c, ConfigErrors& errors);

// tables: names, sizes, combiners, optimizers, initializers; simulated
// quantization (reference section 13); sizes whose products overflow the
// 32-bit step counters, the row key (base/row_key.h) or 64-bit byte counts
// (proto/table_checks.cc).
void CheckTables(const RunConfig& c, ConfigErrors& errors);
void CheckQuantization(const RunConfig& c, ConfigErrors& errors);
// Hot-row replication: hot_rows, hot_row_ids, sparse_core.hot_row_count_steps.
void CheckHotRows(const RunConfig& c, ConfigErrors& errors);
void CheckCounterSizes(const RunConfig& c, ConfigErrors& errors);
// Settings that are valid but do nothing, one sentence each naming the table
// (the trainer logs them as warnings at start-up): slot_dtype BF16 on a table
// whose optimizer keeps no slots (SGD, the default).
std::vector<std::string> TableWarnings(const RunConfig& c);

// model: MLP widths, the DCN-v2 cross network, dropout
// (proto/model_checks.cc).
void CheckModel(const RunConfig& c, ConfigErrors& errors);
// model.tasks (names, loss weights) against data.schema.labels and the
// source (proto/task_checks.cc).
void CheckTasks(const RunConfig& c, ConfigErrors& errors);

// sparse_core's preprocessing limits: ids per chip per sample and per table,
// the partition limits (layout/limits.h; a limits file is read and checked when
// the trainer resolves the limits), table stacking (layout/stacking.h)
// (proto/preprocessing_checks.cc).
void CheckIdLimits(const RunConfig& c, ConfigErrors& errors);
void CheckPartitionLimits(const RunConfig& c, ConfigErrors& errors);
void CheckTableStacking(const RunConfig& c, ConfigErrors& errors);

// observability: trace and metrics paths, the traced steps
// (proto/observability_checks.cc).
void CheckObservability(const RunConfig& c, ConfigErrors& errors);

// checkpoint (paths, period, retention, keep_best's evaluations) and the
// collective watchdog's timeout (proto/recovery_checks.cc).
void CheckCheckpoint(const RunConfig& c, ConfigErrors& errors);
void CheckWatchdog(const RunConfig& c, ConfigErrors& errors);

// Defaults that follow from the data section, applied by the loader before
// validation: model.num_dense_features from the schema's dense inputs when
// unset (proto/data_checks.cc).
void ApplyDataDefaults(RunConfig* c);

}  // namespace lemrt::config

#endif  // LEMRT_PROTO_CONFIG_CHECK_H_
