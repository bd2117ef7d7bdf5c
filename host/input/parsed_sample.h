// One input row as a reader parsed it, before feature mapping: the labels,
// the dense inputs (transformed) and, per sparse input column of the schema
// (host/input/schema.h), its value keys and weights. Readers refill one object per
// row, so the steady state does not allocate. Thread-compatible plain data.
#ifndef LEMRT_HOST_INPUT_PARSED_SAMPLE_H_
#define LEMRT_HOST_INPUT_PARSED_SAMPLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "host/input/schema.h"

namespace lemrt::host {

struct ParsedSample {
  // [schema.num_tasks()]: one label per task; NaN where an optional label
  // is missing.
  std::vector<float> labels;
  std::vector<float> dense;  // [schema.dense.size()]
  // [schema.dense.size()]: 1 where the dense field was missing (dense holds
  // its default_value, transformed); binary files cannot tell and leave 0.
  std::vector<uint8_t> dense_missing;
  std::vector<std::vector<uint64_t>> values;  // [schema.sparse.size()] value keys
  // [schema.sparse.size()]: one weight per value for weighted columns,
  // empty otherwise.
  std::vector<std::vector<float>> weights;
  // [schema.sparse.size()]: with RecordParser::set_keep_text, the text of
  // each STRING value (what its key fingerprints) and HEX value (its digits
  // as read, leading zeros kept), for lemrt_vocab.
  std::vector<std::vector<std::string>> texts;

  // Sizes the arrays for `schema` and clears the lists (keeps capacity).
  void Reset(const Schema& schema) {
    labels.assign(schema.labels.size(), 0.0f);
    dense.resize(schema.dense.size());
    dense_missing.assign(schema.dense.size(), 0);
    values.resize(schema.sparse.size());
    weights.resize(schema.sparse.size());
    texts.resize(schema.sparse.size());
    for (auto& v : values) v.clear();
    for (auto& w : weights) w.clear();
    for (auto& t : texts) t.clear();
  }
};

}  // namespace lemrt::host

#endif  // LEMRT_HOST_INPUT_PARSED_SAMPLE_H_
