// Post-training int8 quantization (reference section 13; lemrt_train
// --eval_quantized): the trained model is evaluated again with every table
// row read as its int8 round trip (device::Int8RoundTripRow: uint8 codes
// with an f32 scale and offset per row), and the AUC / logloss change and the
// table bytes int8 storage saves are reported. The lookups round-trip each
// gathered row in the staging buffer (SparseCore::set_int8_lookups): the
// tables are neither changed nor copied, so the model (checksum,
// checkpoints) is unchanged and the extra memory is one row of scratch plus
// the staging buffers the lookup already has. It sees the SparseCores and an
// evaluation to run, not the Trainer (the binary passes Trainer::sparse() and
// Trainer::Evaluate). Thread-compatible; call after Trainer::Run.
#ifndef LEMRT_RUNTIME_EVAL_QUANTIZED_EVAL_H_
#define LEMRT_RUNTIME_EVAL_QUANTIZED_EVAL_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/config.pb.h"
#include "proto/summary.pb.h"
#include "runtime/comm/communicator.h"
#include "runtime/eval/eval_scores.h"
#include "runtime/step/sparsecore_stage.h"

namespace lemrt::runtime {

// Collective (every rank, after Run, with the pipeline drained). Runs
// `evaluate` (a collective evaluation over `sparse`'s lookups, e.g.
// Trainer::Evaluate) with `sparse`'s int8 lookups on, then fills
// summary->quantized_eval, comparing with summary->eval (the f32 eval of
// Run). Bytes are over all tables and chips, unpadded: f32 = vocab x dim x 4,
// int8 = vocab x (dim + 8). `comm` spans the same ranks as the trainer's.
// Returns evaluate's error, or the all-gather's.
absl::Status EvaluateInt8Tables(const config::RunConfig& config, const SparseCoreStage& sparse,
                                absl::FunctionRef<absl::StatusOr<EvalResult>()> evaluate,
                                Communicator& comm, summary::RunSummary* summary);

}  // namespace lemrt::runtime

#endif  // LEMRT_RUNTIME_EVAL_QUANTIZED_EVAL_H_
