// Reading and writing a checkpoint's manifest (DIR/manifest.pbtxt,
// proto/checkpoint.proto): the last file of a save, listing every data file
// with its size and checksum. The manifest carries a checksum of its own
// that covers every other field (the step included), so a damaged or edited
// manifest is refused instead of resuming at the wrong step.
// Thread-compatible; each function touches only the paths it names.
#ifndef LEMRT_RUNTIME_CHECKPOINT_MANIFEST_H_
#define LEMRT_RUNTIME_CHECKPOINT_MANIFEST_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/checkpoint.pb.h"

namespace lemrt::checkpoint {

inline constexpr char kManifestName[] = "manifest.pbtxt";
// A manifest larger than this is refused unread (one entry per table and
// SparseCore stays far below it).
inline constexpr int64_t kMaxManifestBytes = int64_t{256} << 20;

// The checksum of `m` with its manifest_checksum cleared: RecordHash of the
// deterministic binary serialization, so it covers every field.
uint64_t ManifestChecksum(const Manifest& m);

// Sets m.manifest_checksum and writes `dir`/manifest.pbtxt durably
// (WriteFileDurably: the directory entry is synced when the step directory
// is published). Errors name the file.
absl::Status WriteManifest(const std::string& dir, Manifest m);

// Reads `dir`/manifest.pbtxt and checks it is intact and self-consistent:
// its manifest_checksum (required from format_version 2; format 1 manifests
// have none), the version, the step (equal to the N of a step-N `dir` and to
// data.next_step), file counts, sizes within bounds and file names plain
// names inside `dir`. NotFound when missing; DataLoss naming the file and
// the problem otherwise.
absl::StatusOr<Manifest> ReadManifest(const std::string& dir);

}  // namespace lemrt::checkpoint

#endif  // LEMRT_RUNTIME_CHECKPOINT_MANIFEST_H_
