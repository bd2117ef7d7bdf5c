// Replacing one table's rows in a saved checkpoint (lemrt_ckpt import): the
// way pretrained embeddings enter a run. The rows come from a [vocab x dim]
// float32 .npy file (what lemrt_ckpt export writes); everything else of the
// checkpoint (other tables, the table's optimizer slots, dense parameters,
// step, config) is kept byte for byte. The new checkpoint is written as a
// save is: into DIR/incomplete-step-N, manifest last, then published as
// DIR/step-N in one atomic step (step_dirs.h), under the directory's lock,
// so a crash leaves the old step-N or the new one, never a mix.
// Single process; thread-compatible.
#ifndef LEMRT_RUNTIME_CHECKPOINT_TABLE_IMPORT_H_
#define LEMRT_RUNTIME_CHECKPOINT_TABLE_IMPORT_H_

#include <string>

#include "absl/status/statusor.h"

namespace lemrt::checkpoint {

struct ImportResult {
  std::string step_dir;        // the checkpoint written (DIR/step-N)
  std::string model_checksum;  // its new model checksum
};

// Replaces the weights of table `table_name` of the checkpoint `dir` (a
// step directory, or a directory of them: the newest complete one) with the
// rows of `npy_path`, stored as the table stores values (bf16 tables round
// to nearest-even, as a restore into bf16 does). The checkpoint is verified
// first (VerifyCheckpoint). Errors, each a sentence naming the file:
// NotFound for an unknown table (listing the names); InvalidArgument for a
// file that is not float32 (ReadNpy), a shape other than [vocab_size, dim]
// ("has shape (R, C), table 'c' needs (3000, 32)") or a non-finite value
// (naming its row and column); FailedPrecondition when another job holds
// the directory's lock. On error the checkpoint is unchanged.
absl::StatusOr<ImportResult> ImportTable(const std::string& dir, const std::string& table_name,
                                         const std::string& npy_path);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_TABLE_IMPORT_H_
