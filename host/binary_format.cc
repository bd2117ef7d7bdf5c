#include "host/binary_format.h"

namespace lemrt::host {

std::string EncodeBinaryHeader(int64_t num_records) {
  std::string h(kBinaryHeaderBytes, '\0');
  std::memcpy(h.data(), kBinaryMagic, 8);
  const uint32_t version = kBinaryVersion;
  const uint32_t record_bytes = kBinaryRecordBytes;
  std::memcpy(h.data() + 8, &version, 4);
  std::memcpy(h.data() + 12, &record_bytes, 4);
  std::memcpy(h.data() + 16, &num_records, 8);
  return h;
}

void EncodeBinaryRecord(const CriteoLine& line, char* out) {
  std::memcpy(out, &line.label, 4);
  std::memcpy(out + 4, line.dense.data(), 4 * CriteoLine::kNumIntegers);
  std::memcpy(out + 4 + 4 * CriteoLine::kNumIntegers, line.category.data(),
              4 * CriteoLine::kNumCategories);
  std::memcpy(out + kBinaryRecordBytes - 4, &line.category_present, 4);
}

void DecodeBinaryRecord(const char* in, CriteoLine* line) {
  std::memcpy(&line->label, in, 4);
  std::memcpy(line->dense.data(), in + 4, 4 * CriteoLine::kNumIntegers);
  std::memcpy(line->category.data(), in + 4 + 4 * CriteoLine::kNumIntegers,
              4 * CriteoLine::kNumCategories);
  std::memcpy(&line->category_present, in + kBinaryRecordBytes - 4, 4);
}

}  // namespace lemrt::host
