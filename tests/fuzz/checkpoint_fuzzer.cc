// libFuzzer target for the checkpoint reader (runtime/checkpoint/
// checkpoint_format.h): ResolveCheckpointDir, ReadManifest, VerifyCheckpoint
// and ReadWholeTable on a checkpoint directory built from the input.
//
//   input = control byte | manifest text | '\0' | data bytes
//
// The manifest text becomes manifest.pbtxt as is. When it parses, every file
// it names with a plain name gets `bytes` bytes (at most 64 KiB) cut from the
// data bytes (repeated; zeros when there are none), one byte short when
// control bit 0 is set; with control bit 1 the manifest is rewritten with the
// true checksums of those files (and its own manifest_checksum, when it has
// one), so the row-id checks and copies past the checksums are reached too. Errors are fine; crashes, hangs, sanitizer
// reports and huge allocations are not.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "google/protobuf/text_format.h"
#include "proto/checkpoint.pb.h"
#include "runtime/checkpoint/checkpoint_format.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/step_dirs.h"
#include "tests/fuzz/fuzz_common.h"

namespace lemrt::checkpoint {
namespace {

constexpr int64_t kMaxFileBytes = 64 << 10;

bool PlainName(const std::string& name) {
  return !name.empty() && name.size() < 64 && name.find('/') == std::string::npos &&
         name != "." && name != ".." && name != kManifestName;
}

// The contents of a file of `bytes` bytes (capped) from the data bytes.
std::string Contents(int64_t bytes, std::string_view data, size_t* cursor, bool short_by_one) {
  std::string out(static_cast<size_t>(std::clamp<int64_t>(bytes, 0, kMaxFileBytes)), '\0');
  if (short_by_one && !out.empty()) out.pop_back();
  for (char& c : out) {
    if (data.empty()) break;
    c = data[*cursor % data.size()];
    ++*cursor;
  }
  return out;
}

// Sum of the record hashes of `bytes` in records of `record_bytes` (the
// table file checksum); the last partial record is hashed as it is.
uint64_t TableChecksum(std::string_view bytes, int64_t record_bytes) {
  uint64_t sum = 0;
  if (record_bytes <= 0) return 0;
  for (size_t i = 0; i < bytes.size(); i += record_bytes) {
    const size_t n = std::min<size_t>(record_bytes, bytes.size() - i);
    sum += RecordHash(std::span<const char>(bytes.data() + i, n));
  }
  return sum;
}

void WriteFiles(fuzz::FuzzDir& dir, Manifest* m, std::string_view data, uint8_t control) {
  size_t cursor = 0;
  const bool short_by_one = control & 1;
  for (TableEntry& t : *m->mutable_tables()) {
    const int64_t rb = 8 + 4 * (int64_t{std::clamp(t.dim(), 0, 1 << 20)} *
                                    (1 + int64_t{std::clamp(t.slots_per_param(), 0, 64)}) +
                                int64_t{std::clamp(t.row_slots(), 0, 64)});
    for (FileEntry& f : *t.mutable_files()) {
      if (!PlainName(f.name())) continue;
      const std::string bytes = Contents(f.bytes(), data, &cursor, short_by_one);
      dir.Write(f.name(), bytes);
      f.set_checksum(TableChecksum(bytes, rb));
    }
  }
  if (m->has_dense() && PlainName(m->dense().file().name())) {
    FileEntry* f = m->mutable_dense()->mutable_file();
    const std::string bytes = Contents(f->bytes(), data, &cursor, short_by_one);
    dir.Write(f->name(), bytes);
    f->set_checksum(RecordHash(bytes));
  }
}

}  // namespace
}  // namespace lemrt::checkpoint

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lemrt::checkpoint;
  static lemrt::fuzz::FuzzDir* dir = new lemrt::fuzz::FuzzDir("ckpt_fuzz");
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string_view blob =
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

  dir->Clear();
  std::string manifest_text(text);
  Manifest parsed;
  if (google::protobuf::TextFormat::ParseFromString(manifest_text, &parsed)) {
    WriteFiles(*dir, &parsed, blob, control);
    if (control & 2) {
      if (parsed.has_manifest_checksum()) parsed.set_manifest_checksum(ManifestChecksum(parsed));
      google::protobuf::TextFormat::PrintToString(parsed, &manifest_text);
    }
  }
  dir->Write(kManifestName, manifest_text);

  auto resolved = ResolveCheckpointDir(dir->path());
  if (!resolved.ok()) return 0;
  auto manifest = ReadManifest(*resolved);
  if (!manifest.ok()) return 0;
  (void)VerifyCheckpoint(*resolved, *manifest);
  std::vector<float> weights, slots;
  for (const TableEntry& t : manifest->tables()) {
    (void)ReadWholeTable(*resolved, *manifest, t.name(), &weights, (control & 4) ? &slots : nullptr);
  }
  return 0;
}
