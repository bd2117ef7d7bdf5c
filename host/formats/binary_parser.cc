#include "host/formats/binary_parser.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace lemrt::host {
namespace {

config::SparseInput::ValueType ProtoType(ValueType type) {
  switch (type) {
    case ValueType::kInt64:
      return config::SparseInput::INT64;
    case ValueType::kHex:
      return config::SparseInput::HEX;
    case ValueType::kString:
    default:
      return config::SparseInput::STRING;
  }
}

}  // namespace

absl::Status BinaryParser::MatchLabels(const config::InputSchema& stored,
                                       const std::string& path) {
  std::vector<std::string> names;
  if (stored.labels_size() == 0) names.push_back(stored.label().name());
  for (const config::LabelInput& in : stored.labels()) names.push_back(in.name());
  stored_labels_ = static_cast<int>(names.size());
  if (schema_->num_tasks() == 1 && stored_labels_ == 1) {
    label_from_ = {0};
    return absl::OkStatus();
  }
  for (const LabelColumn& label : schema_->labels) {
    const auto it = std::find(names.begin(), names.end(), label.key);
    if (it == names.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", path, "' stores no label '", label.key, "' (it stores ", absl::StrJoin(names, ", "),
          "); convert the source again with this config's data.schema."));
    }
    label_from_.push_back(static_cast<int>(it - names.begin()));
  }
  return absl::OkStatus();
}

config::InputSchema StoredColumns(const Schema& schema) {
  config::InputSchema out;
  if (schema.num_tasks() == 1) {
    out.mutable_label()->set_name(schema.labels[0].key);
  } else {
    for (const LabelColumn& label : schema.labels) {
      config::LabelInput* in = out.add_labels();
      in->set_name(label.key);
      in->set_required(!label.optional);
    }
  }
  for (const DenseColumn& d : schema.dense) {
    if (d.absent) continue;
    config::DenseInput* in = out.add_dense();
    in->set_name(d.name);
    in->set_transform(d.log1p ? config::DenseInput::LOG1P : config::DenseInput::IDENTITY);
  }
  for (const SparseColumn& c : schema.sparse) {
    config::SparseInput* in = out.add_sparse();
    in->set_key(c.key);
    in->set_type(ProtoType(c.type));
    if (c.weighted()) in->set_weights_key(c.weights_key.empty() ? "weights" : c.weights_key);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<BinaryParser>> BinaryParser::Create(
    std::shared_ptr<const Schema> schema, const config::InputSchema& stored,
    const std::string& path) {
  auto p = std::unique_ptr<BinaryParser>(new BinaryParser(schema));
  auto mismatch = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' ", what, "; convert the source again with this config's data.schema."));
  };
  LEMRT_RETURN_IF_ERROR(p->MatchLabels(stored, path));
  p->stored_dense_ = stored.dense_size();
  for (const DenseColumn& d : schema->dense) {
    int from = -1;
    if (!d.absent) {
      for (int k = 0; k < stored.dense_size(); ++k) {
        if (stored.dense(k).name() == d.name) from = k;
      }
      if (from < 0) return mismatch(absl::StrCat("stores no dense input '", d.name, "'"));
      const bool log1p = stored.dense(from).transform() == config::DenseInput::LOG1P;
      if (log1p != d.log1p) {
        return mismatch(absl::StrFormat("stores dense input '%s' with transform %s, the config "
                                        "asks for %s",
                                        d.name, log1p ? "LOG1P" : "IDENTITY",
                                        d.log1p ? "LOG1P" : "IDENTITY"));
      }
    }
    p->dense_from_.push_back(from);
  }
  for (const config::SparseInput& in : stored.sparse()) {
    p->stored_sparse_.push_back({-1, !in.weights_key().empty(), in.key()});
  }
  for (int c = 0; c < static_cast<int>(schema->sparse.size()); ++c) {
    const SparseColumn& col = schema->sparse[c];
    int found = -1;
    for (int k = 0; k < stored.sparse_size(); ++k) {
      if (stored.sparse(k).key() == col.key) found = k;
    }
    if (found < 0) return mismatch(absl::StrCat("stores no sparse input '", col.key, "'"));
    if (stored.sparse(found).type() != ProtoType(col.type)) {
      return mismatch(absl::StrFormat(
          "stores sparse input '%s' as %s, the config reads %s", col.key,
          config::SparseInput::ValueType_Name(stored.sparse(found).type()),
          config::SparseInput::ValueType_Name(ProtoType(col.type))));
    }
    if (col.weighted() && !p->stored_sparse_[found].weighted) {
      return mismatch(absl::StrCat("stores no weights for sparse input '", col.key, "'"));
    }
    if (p->stored_sparse_[found].schema_index >= 0) {
      return mismatch(absl::StrCat("is read twice as sparse input '", col.key, "'"));
    }
    p->stored_sparse_[found].schema_index = c;
  }
  return p;
}

absl::Status BinaryParser::Parse(std::string_view record, ParsedSample* out) {
  const Schema& schema = *schema_;
  out->Reset(schema);
  const char* p = record.data();
  const char* end = p + record.size();
  const int64_t fixed = 4 * (int64_t{stored_labels_} + stored_dense_);
  if (end - p < fixed) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the record has %d bytes, fewer than its %d label(s) and %d dense inputs", record.size(),
        stored_labels_, stored_dense_));
  }
  for (size_t t = 0; t < label_from_.size(); ++t) {
    std::memcpy(&out->labels[t], p + 4 * label_from_[t], 4);
  }
  const char* dense = p + 4 * stored_labels_;
  for (size_t k = 0; k < schema.dense.size(); ++k) {
    const int from = dense_from_[k];
    out->dense[k] = schema.dense[k].default_value;
    if (from >= 0) std::memcpy(&out->dense[k], dense + 4 * from, 4);
  }
  p += fixed;
  for (const StoredSparse& s : stored_sparse_) {
    uint32_t n = 0;
    if (end - p < 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("the record ends before sparse input '", s.key, "'"));
    }
    std::memcpy(&n, p, 4);
    p += 4;
    const int64_t per_value = s.weighted ? 12 : 8;
    if (int64_t{n} > (end - p) / per_value) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sparse input '%s' claims %d values but the record has %d bytes left", s.key, n,
          end - p));
    }
    if (s.schema_index >= 0) {
      const SparseColumn& col = schema.sparse[s.schema_index];
      std::vector<uint64_t>& values = out->values[s.schema_index];
      values.resize(n);
      if (n > 0) std::memcpy(values.data(), p, 8 * size_t{n});  // data() may be null at 0
      if (col.type == ValueType::kHex && col.max_hex_digits < 16) {
        const uint64_t limit = uint64_t{1} << (4 * col.max_hex_digits);
        for (uint64_t v : values) {
          if (v >= limit) {
            return absl::InvalidArgumentError(absl::StrFormat(
                "sparse input '%s' holds %x, more than %d hex digits", s.key, v,
                col.max_hex_digits));
          }
        }
      }
      if (col.weighted()) {
        std::vector<float>& weights = out->weights[s.schema_index];
        weights.resize(n);
        if (n > 0) std::memcpy(weights.data(), p + 8 * size_t{n}, 4 * size_t{n});
      }
    }
    p += per_value * n;
  }
  if (p != end) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the record has %d bytes past its last sparse input", end - p));
  }
  return absl::OkStatus();
}

}  // namespace lemrt::host
