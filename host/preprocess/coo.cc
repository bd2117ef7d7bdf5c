#include "host/preprocess/coo.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "base/huge_pages.h"
#include "layout/row_placement.h"
#include "proto/config_loader.h"

namespace lemrt::host {
namespace {

using coo_internal::Destination;
using coo_internal::LineBuffer;
using coo_internal::PackedCodec;
using coo_internal::WeightedCodec;
using coo_internal::WideCodec;

// Bitmap budget of one builder's partition counting over all tables.
constexpr int64_t kMaxCountedRowsPerBuilder = int64_t{1} << 29;
// The farthest a record moves by insertion (SortSegment).
constexpr int64_t kInsertionSortMax = 32;

int BitWidth(int64_t x) { return x <= 0 ? 0 : std::bit_width(static_cast<uint64_t>(x)); }

int64_t Wrap(int64_t id, int64_t vocab) {
  id %= vocab;
  return id < 0 ? id + vocab : id;
}

// Sorts a segment's records by (group, col). They arrive in group order and
// within a group in the sample's order, so an insertion pass moves only the
// few records of a group that came after larger ones; a record that would
// move past kInsertionSortMax others has its whole group sorted by std::sort
// instead (long samples over few SparseCores). Weighted records sort stably
// (equal keys keep their input order: their weights' sum has one order).
template <class Codec>
void SortSegment(const Codec& codec, typename Codec::Record* r, int64_t n) {
  for (int64_t i = 1; i < n; ++i) {
    const typename Codec::Record x = r[i];
    if (!Codec::Less(x, r[i - 1])) continue;
    // Shift the larger records up one by one (a call to memmove per record
    // cost more than the moves: they are a few). Moving x before records
    // larger than it keeps equal keys in their order, so a group sorted
    // after a partial insertion sorts as from its input.
    int64_t j = i;
    do {
      r[j] = r[j - 1];
      --j;
    } while (j > 0 && Codec::Less(x, r[j - 1]) && i - j < kInsertionSortMax);
    r[j] = x;
    if (i - j < kInsertionSortMax) continue;
    const uint64_t group = codec.Group(x);
    int64_t begin = i, end = i + 1;
    while (begin > 0 && codec.Group(r[begin - 1]) == group) --begin;
    while (end < n && codec.Group(r[end]) == group) ++end;
    if constexpr (coo_internal::kWeighted<Codec>) {
      std::stable_sort(r + begin, r + end, Codec::Less);
    } else {
      std::sort(r + begin, r + end, Codec::Less);
    }
    i = end - 1;
  }
}

// Whether every id of ids[0, n) is in [0, vocab): blocks of 16 the compiler
// vectorises (a negative id is a large unsigned one), then the tail.
bool IdsInRange(const int64_t* ids, int64_t n, int64_t vocab) {
  const uint64_t limit = static_cast<uint64_t>(vocab);
  uint64_t outside = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 16; ++k) outside |= static_cast<uint64_t>(ids[i + k]) >= limit;
  }
  for (; i < n; ++i) outside |= static_cast<uint64_t>(ids[i]) >= limit;
  return outside == 0;
}

}  // namespace

CooOptions MakeCooOptions(const config::RunConfig& config) {
  const layout::RowPlacement placement = layout::RowPlacement::FromConfig(config);
  CooOptions o;
  o.local_sparse_cores = placement.sparse_cores_per_chip();
  o.total_sparse_cores = placement.total_sparse_cores();
  o.max_ids_per_chip_per_sample = config.sparse_core().max_ids_per_chip_per_sample();
  o.id_bound_check = config.sparse_core().enable_id_bound_check();
  o.num_tables = config.tables_size();
  for (const config::FeatureConfig& f : config.features()) {
    const int t = config::FindTable(config, f.table());
    o.features.push_back(FeatureSpec{.table = t,
                                     .vocab_size = config.tables(t).vocab_size(),
                                     .combiner = config.tables(t).combiner(),
                                     .name = f.name(),
                                     .table_name = config.tables(t).name(),
                                     .sc_shift = placement.sc_shift(t)});
  }
  return o;
}

CooBuilder::CooBuilder(CooOptions options) : options_(std::move(options)) {
  const int N = options_.total_sparse_cores;
  num_tables_ = options_.num_tables;
  int64_t max_vocab = 1;
  for (const FeatureSpec& spec : options_.features) {
    codes_.push_back({spec.table, spec.sc_shift, spec.vocab_size, spec.combiner});
    num_tables_ = std::max(num_tables_, spec.table + 1);
    max_vocab = std::max(max_vocab, spec.vocab_size);
  }
  col_bits_ = BitWidth(max_vocab - 1);
  feature_bits_ = BitWidth(static_cast<int64_t>(codes_.size()) - 1);
  ids_below_2_52_ = max_vocab <= (int64_t{1} << 52);

  // A table's bitmap holds bit col / N of its ids in one segment: distinct
  // ids there share col % N when its features agree on the table's rotation.
  count_partitions_ = options_.count_partitions;
  std::vector<int64_t> rows(num_tables_, 0);  // rows per SparseCore shard
  std::vector<int> shift(num_tables_, -1);
  for (const FeatureSpec& spec : options_.features) {
    rows[spec.table] = std::max(rows[spec.table], (spec.vocab_size + N - 1) / N);
    count_partitions_ &= shift[spec.table] < 0 || shift[spec.table] == spec.sc_shift;
    shift[spec.table] = spec.sc_shift;
  }
  int64_t words = 0;
  bitmap_word_.assign(num_tables_, 0);
  for (int t = 0; t < num_tables_; ++t) {
    count_partitions_ &= rows[t] <= kMaxCountedRowsPerTable;
    bitmap_word_[t] = words;
    words += (rows[t] + 63) / 64;
  }
  count_partitions_ &= words * 64 <= kMaxCountedRowsPerBuilder;
  if (count_partitions_) bitmaps_.assign(words, 0);
}

absl::Status CooBuilder::Build(const Batch& batch, layout::PartitionedCoo* out) {
  const int N = options_.total_sparse_cores;
  if ((N & (N - 1)) == 0) {
    const coo_internal::Pow2Divider div{N, std::countr_zero(static_cast<uint32_t>(N))};
    return BuildWith(div, batch, out);
  }
  if (ids_below_2_52_) return BuildWith(coo_internal::ReciprocalDivider{N, 1.0 / N}, batch, out);
  return BuildWith(coo_internal::PlainDivider{N}, batch, out);
}

template <class Div>
absl::Status CooBuilder::BuildWith(const Div& div, const Batch& batch,
                                   layout::PartitionedCoo* out) {
  out->local_sparse_cores = options_.local_sparse_cores;
  out->total_sparse_cores = options_.total_sparse_cores;
  absl::Status st = CountSegments(div, batch);
  if (st.ok()) st = CheckSampleIds(batch);
  if (!st.ok()) return st;
  const int64_t per_sc = batch.num_samples / options_.local_sparse_cores;
  row_bits_ = BitWidth(per_sc - 1);
  const bool packed = col_bits_ + feature_bits_ + row_bits_ <= 64;
  st = ComputeWeightNorms(batch);
  if (!st.ok()) return st;
  if (weighted_) {
    if (packed) {
      const WeightedCodec<PackedCodec> codec{PackedCodec{col_bits_}};
      Scatter(div, codec, batch);
      Expand(div, codec, batch, out);
    } else {
      const WeightedCodec<WideCodec> codec{WideCodec{}};
      Scatter(div, codec, batch);
      Expand(div, codec, batch, out);
    }
  } else if (packed) {
    const PackedCodec codec{col_bits_};
    Scatter(div, codec, batch);
    Expand(div, codec, batch, out);
  } else {
    const WideCodec codec;
    Scatter(div, codec, batch);
    Expand(div, codec, batch, out);
  }
  return absl::OkStatus();
}

// Whether this batch has weighted features (then the staging records carry
// weights) and, per weighted MEAN or SQRTN feature and sample, the
// combiner's norm over the sample's weights, summed in input order.
absl::Status CooBuilder::ComputeWeightNorms(const Batch& batch) {
  weighted_ = false;
  norms_.clear();
  norm_begin_.assign(codes_.size(), -1);
  feature_weighted_.assign(codes_.size(), 0);
  const int features = std::min(static_cast<int>(codes_.size()),
                                static_cast<int>(batch.weights.size()));
  for (int f = 0; f < features; ++f) {
    const std::vector<float>& weights = batch.weights[f];
    if (weights.empty()) continue;
    if (weights.size() != batch.ids[f].size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "feature %d ('%s') of the local batch has %d weights for %d ids", f,
          options_.features[f].name, weights.size(), batch.ids[f].size()));
    }
    weighted_ = true;
    feature_weighted_[f] = 1;
    const config::TableConfig::Combiner combiner = codes_[f].combiner;
    if (combiner == config::TableConfig::SUM) continue;
    norm_begin_[f] = static_cast<int64_t>(norms_.size());
    const int64_t* const offsets = batch.offsets[f].data();
    for (int64_t row = 0; row < batch.num_samples; ++row) {
      double total = 0, squares = 0;
      for (int64_t i = offsets[row]; i < offsets[row + 1]; ++i) {
        total += weights[i];
        squares += static_cast<double>(weights[i]) * weights[i];
      }
      norms_.push_back(combiner == config::TableConfig::MEAN
                           ? (total != 0 ? 1.0 / total : 0.0)
                           : (squares > 0 ? 1.0 / std::sqrt(squares) : 0.0));
    }
  }
  return absl::OkStatus();
}

// Pass 1: ids per segment, duplicates included (the staging layout), after
// the bound check (same order and message as checking sample by sample).
template <class Div>
absl::Status CooBuilder::CountSegments(const Div& div_ref, const Batch& batch) {
  const Div div = div_ref;  // a local: the histogram stores could alias it
  const int S = options_.local_sparse_cores;
  const int N = options_.total_sparse_cores;
  const int64_t per_sc = batch.num_samples / S;
  raw_counts_.resize(int64_t{N} * S);
  // Four interleaved histograms: repeated destinations (hot ids) would
  // otherwise chain every increment on the one before.
  histogram_.resize(4 * int64_t{N});
  int64_t* const histogram = histogram_.data();
  for (int s = 0; s < S; ++s) {
    std::fill(histogram_.begin(), histogram_.end(), 0);
    for (int f = 0; f < static_cast<int>(codes_.size()); ++f) {
      const FeatureCode code = codes_[f];
      const int64_t* const ids = batch.ids[f].data();
      const int64_t begin = batch.offsets[f][s * per_sc];
      const int64_t end = batch.offsets[f][(s + 1) * per_sc];
      if (options_.id_bound_check) {
        if (!IdsInRange(ids + begin, end - begin, code.vocab_size)) {
          const FeatureSpec& spec = options_.features[f];
          for (int64_t row = s * per_sc; row < (s + 1) * per_sc; ++row) {
            const std::span<const int64_t> sample = batch.SampleIds(f, row);
            if (sample.empty()) continue;
            const auto [lo, hi] = std::minmax_element(sample.begin(), sample.end());
            if (*lo >= 0 && *hi < spec.vocab_size) continue;
            return absl::InvalidArgumentError(absl::StrFormat(
                "id %d of feature %d (table %d) in sample %d of the local batch is outside the "
                "table's vocabulary [0, %d) (feature '%s', table '%s'; the id bound check "
                "sparse_core.enable_id_bound_check is on)",
                *lo < 0 ? *lo : *hi, f, spec.table, row, spec.vocab_size, spec.name,
                spec.table_name));
          }
        }
        int64_t i = begin;
        for (; i + 4 <= end; i += 4) {
          ++histogram[Destination(div, ids[i], code.sc_shift)];
          ++histogram[N + Destination(div, ids[i + 1], code.sc_shift)];
          ++histogram[2 * N + Destination(div, ids[i + 2], code.sc_shift)];
          ++histogram[3 * N + Destination(div, ids[i + 3], code.sc_shift)];
        }
        for (; i < end; ++i) ++histogram[Destination(div, ids[i], code.sc_shift)];
      } else {
        for (int64_t i = begin; i < end; ++i) {
          ++histogram[Destination(div, Wrap(ids[i], code.vocab_size), code.sc_shift)];
        }
      }
    }
    for (int d = 0; d < N; ++d) {
      raw_counts_[int64_t{d} * S + s] =
          histogram[d] + histogram[N + d] + histogram[2 * N + d] + histogram[3 * N + d];
    }
  }
  return absl::OkStatus();
}

// max_ids_per_chip_per_sample: a sample's ids before dedup bound its ids
// after; only samples over the limit before dedup are deduplicated here.
absl::Status CooBuilder::CheckSampleIds(const Batch& batch) {
  const int64_t limit = options_.max_ids_per_chip_per_sample;
  sample_ids_.assign(batch.num_samples, 0);
  for (int f = 0; f < static_cast<int>(codes_.size()); ++f) {
    const int64_t* const offsets = batch.offsets[f].data();
    for (int64_t row = 0; row < batch.num_samples; ++row) {
      sample_ids_[row] += offsets[row + 1] - offsets[row];
    }
  }
  for (int64_t row = 0; row < batch.num_samples; ++row) {
    if (sample_ids_[row] <= limit) continue;
    int64_t distinct = 0;
    for (int f = 0; f < static_cast<int>(codes_.size()); ++f) {
      const std::span<const int64_t> ids = batch.SampleIds(f, row);
      sorted_.assign(ids.begin(), ids.end());
      if (!options_.id_bound_check) {
        for (int64_t& id : sorted_) id = Wrap(id, codes_[f].vocab_size);
      }
      std::sort(sorted_.begin(), sorted_.end());
      distinct += std::unique(sorted_.begin(), sorted_.end()) - sorted_.begin();
    }
    if (distinct > limit) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sample %d of the local batch has %d ids over all features after dedup, above "
          "max_ids_per_chip_per_sample = %d; raise the limit in sparse_core",
          row, distinct, limit));
    }
  }
  return absl::OkStatus();
}

// Pass 2: every id's record into its segment of the staging buffer, in
// (feature, row) order; segments start on a line, so each destination's
// line buffer leaves whole aligned lines. Not inlined: inside BuildWith its
// loop ran out of registers and kept the per-id state on the stack.
template <class Div, class Codec>
[[gnu::noinline]] void CooBuilder::Scatter(const Div& div_ref, const Codec& codec_ref,
                                           const Batch& batch) {
  using Record = typename Codec::Record;
  const Div div = div_ref;  // locals: the record stores could alias members
  const Codec codec = codec_ref;
  constexpr int kPerLine = Codec::kPerLine;
  const int S = options_.local_sparse_cores;
  const int N = options_.total_sparse_cores;
  const int64_t per_sc = batch.num_samples / S;
  const int64_t segments = int64_t{N} * S;
  region_.resize(segments + 1);
  region_[0] = 0;
  for (int64_t k = 0; k < segments; ++k) {
    region_[k + 1] = region_[k] + (raw_counts_[k] + kPerLine - 1) / kPerLine * kPerLine;
  }
  Record* const staging =
      reinterpret_cast<Record*>(staging_.Get(region_[segments] * sizeof(Record) / 8));
  LineBuffer<Codec>* const lines =
      reinterpret_cast<LineBuffer<Codec>*>(lines_.Get(int64_t{N} * 8));
  cursor_.resize(N);
  int64_t* const cursor = cursor_.data();
  const int row_bits = row_bits_;
  // cursor[d] counts the records of destination d so far, buffered ones
  // included: regions start on a line, so cursor[d] % kPerLine is the fill
  // of d's line buffer.
  auto scatter = [&](auto wrap_tag) {
    constexpr bool kWrap = decltype(wrap_tag)::value;
    for (int s = 0; s < S; ++s) {
      for (int d = 0; d < N; ++d) cursor[d] = region_[int64_t{d} * S + s];
      for (int f = 0; f < static_cast<int>(codes_.size()); ++f) {
        const FeatureCode code = codes_[f];
        const int64_t* const offsets = batch.offsets[f].data();
        const int64_t* const ids = batch.ids[f].data();
        [[maybe_unused]] const float* const weights =
            f < static_cast<int>(batch.weights.size()) && !batch.weights[f].empty()
                ? batch.weights[f].data()
                : nullptr;
        const uint64_t feature_group = static_cast<uint64_t>(f) << row_bits;
        for (int64_t row = s * per_sc; row < (s + 1) * per_sc; ++row) {
          const uint64_t group = feature_group | static_cast<uint64_t>(row - s * per_sc);
          const int64_t end = offsets[row + 1];
          for (int64_t i = offsets[row]; i < end; ++i) {
            const int64_t col = kWrap ? Wrap(ids[i], code.vocab_size) : ids[i];
            const int d = Destination(div, col, code.sc_shift);
            const int64_t c = cursor[d];
            if constexpr (coo_internal::kWeighted<Codec>) {
              lines[d].records[c & (kPerLine - 1)] =
                  codec.Make(group, col, weights != nullptr ? weights[i] : 1.0f);
            } else {
              lines[d].records[c & (kPerLine - 1)] = codec.Make(group, col);
            }
            cursor[d] = c + 1;
            if (((c + 1) & (kPerLine - 1)) == 0) {
              coo_internal::StreamLine(staging + (c + 1 - kPerLine), &lines[d]);
            }
          }
        }
      }
      for (int d = 0; d < N; ++d) {  // partial lines: plain stores
        const int64_t n = cursor[d] & (kPerLine - 1);
        std::copy(lines[d].records, lines[d].records + n, staging + (cursor[d] - n));
      }
    }
  };
  if (options_.id_bound_check) {
    scatter(std::false_type());
  } else {
    scatter(std::true_type());
  }
  coo_internal::StreamFence();
}

// The entries of one feature's run [begin, end) of a sorted segment: runs of
// equal records (one id's duplicates in a sample) become one entry, written
// from `out`, gain = count x the combiner's weight; with kWeights (a weighted
// feature) gain = the duplicates' weights summed in input order x norms[row]
// (SUM: x 1, norms unused). With kCount, each entry's bit in the table's
// bitmap (col / N) is set and the ones not set before are counted into
// *unique. Returns the entries written.
template <bool kSum, bool kCount, bool kWeights, class Div, class Codec>
int64_t ExpandRun(const Div& div, const Codec& codec, const typename Codec::Record* r,
                  int64_t begin, int64_t end, int f, int32_t table,
                  config::TableConfig::Combiner combiner, int row_bits, int64_t row_base,
                  const int64_t* sample_offsets, const double* norms, uint64_t* bitmap,
                  int32_t* unique, layout::CooEntry* out) {
  const uint64_t row_mask = (uint64_t{1} << row_bits) - 1;
  layout::CooEntry* o = out;
  int32_t fresh = 0;
  for (int64_t i = begin; i < end;) {
    const typename Codec::Record rec = r[i];
    int64_t j = i + 1;
    while (j < end && Codec::Equal(r[j], rec)) ++j;
    const int32_t row = static_cast<int32_t>(row_base + static_cast<int64_t>(codec.Group(rec) & row_mask));
    const int64_t col = codec.Col(rec);
    const double count = static_cast<double>(j - i);
    float gain;
    if constexpr (kWeights) {
      double sum = 0;
      for (int64_t k = i; k < j; ++k) sum += Codec::Weight(r[k]);
      gain = static_cast<float>(kSum ? sum : sum * norms[row]);
    } else if constexpr (kSum) {
      gain = static_cast<float>(count);
    } else {
      const double n = static_cast<double>(sample_offsets[row + 1] - sample_offsets[row]);
      gain = static_cast<float>(
          count * (combiner == config::TableConfig::MEAN ? 1.0 / n : 1.0 / std::sqrt(n)));
    }
    *o++ = {col, row, f, table, gain};
    if constexpr (kCount) {
      const int64_t q = div.Quotient(col);
      const uint64_t bit = uint64_t{1} << (q & 63);
      uint64_t& word = bitmap[q >> 6];
      fresh += (word & bit) == 0;
      word |= bit;
    }
    i = j;
  }
  if constexpr (kCount) *unique += fresh;
  return o - out;
}

layout::PartitionCount* CooBuilder::PrepareExpandOutput(layout::PartitionedCoo* out) {
  const int S = options_.local_sparse_cores;
  const int N = options_.total_sparse_cores;
  int64_t total = 0;
  for (const int64_t c : raw_counts_) total += c;
  out->ids_total = total;
  // An upper bound, shrunk below; on huge pages when it grows (the entries
  // are hundreds of MB, written every step: base/huge_pages.h).
  base::ReserveOnHugePages(&out->entries, static_cast<size_t>(total));
  out->entries.resize(total);
  out->segment_offsets.resize(int64_t{N} * S + 1);
  if (!count_partitions_) {
    out->table_partition_counts.clear();
    return nullptr;
  }
  out->table_partition_counts.assign(int64_t{num_tables_} * S * N, layout::PartitionCount{});
  return out->table_partition_counts.data();
}

template <class Codec>
void CooBuilder::FindFeatureRuns(const Codec& codec, const typename Codec::Record* r, int64_t n) {
  // The records are in (feature, row, col) order.
  using Record = typename Codec::Record;
  const int row_bits = row_bits_;
  runs_.clear();
  for (int64_t i = 0; i < n;) {
    const int f = static_cast<int>(codec.Group(r[i]) >> row_bits);
    const auto same_feature = [&](const Record& x) {
      return static_cast<int>(codec.Group(x) >> row_bits) == f;
    };
    const int64_t end = std::partition_point(r + i, r + n, same_feature) - r;
    runs_.push_back({f, i, end});
    i = end;
  }
}

template <class Div, class Codec>
void CooBuilder::ClearSegmentBitmaps(const Div& div, const Codec& codec,
                                     const typename Codec::Record* r) {
  // Every bit set in these words came from this segment.
  for (const FeatureRun& run : runs_) {
    uint64_t* const bitmap = bitmaps_.data() + bitmap_word_[codes_[run.feature].table];
    for (int64_t i = run.begin; i < run.end; ++i) {
      bitmap[div.Quotient(codec.Col(r[i])) >> 6] = 0;
    }
  }
}

// Pass 3: per segment in output order: records sorted by (group, col), then
// each feature's run expanded (ExpandRun); partitions counted while the
// segment is in cache, and the bitmaps cleared after it.
template <class Div, class Codec>
void CooBuilder::Expand(const Div& div_ref, const Codec& codec_ref, const Batch& batch,
                        layout::PartitionedCoo* out) {
  using Record = typename Codec::Record;
  const Div div = div_ref;  // locals: the entry stores could alias members
  const Codec codec = codec_ref;
  const int S = options_.local_sparse_cores;
  const int N = options_.total_sparse_cores;
  const int64_t per_sc = batch.num_samples / S;
  const int64_t segments = int64_t{N} * S;
  const int row_bits = row_bits_;
  layout::PartitionCount* const counts = PrepareExpandOutput(out);
  Record* const staging = reinterpret_cast<Record*>(staging_.Get(0));
  layout::CooEntry* const entries = out->entries.data();
  int64_t w = 0;
  for (int64_t k = 0; k < segments; ++k) {
    const int d = static_cast<int>(k / S), s = static_cast<int>(k % S);
    Record* const r = staging + region_[k];
    const int64_t n = raw_counts_[k];
    out->segment_offsets[k] = w;
    SortSegment(codec, r, n);
    FindFeatureRuns(codec, r, n);
    for (const FeatureRun& run : runs_) {
      const FeatureCode code = codes_[run.feature];
      uint64_t* const bitmap = counts != nullptr ? bitmaps_.data() + bitmap_word_[code.table] : nullptr;
      int32_t unique = 0;
      const bool sum = code.combiner == config::TableConfig::SUM;
      const int64_t* const offsets = batch.offsets[run.feature].data();
      const double* const norms =
          norm_begin_[run.feature] >= 0 ? norms_.data() + norm_begin_[run.feature] : nullptr;
      auto expand = [&](auto sum_tag, auto count_tag, auto weights_tag) {
        return ExpandRun<decltype(sum_tag)::value, decltype(count_tag)::value,
                         decltype(weights_tag)::value>(
            div, codec, r, run.begin, run.end, run.feature, code.table, code.combiner, row_bits,
            s * per_sc, offsets, norms, bitmap, &unique, entries + w);
      };
      auto dispatch = [&](auto weights_tag) {
        return counts != nullptr
                   ? (sum ? expand(std::true_type(), std::true_type(), weights_tag)
                          : expand(std::false_type(), std::true_type(), weights_tag))
                   : (sum ? expand(std::true_type(), std::false_type(), weights_tag)
                          : expand(std::false_type(), std::false_type(), weights_tag));
      };
      int64_t written;
      if constexpr (coo_internal::kWeighted<Codec>) {
        written = feature_weighted_[run.feature] ? dispatch(std::true_type())
                                                 : dispatch(std::false_type());
      } else {
        written = dispatch(std::false_type());
      }
      w += written;
      if (counts != nullptr) {
        layout::PartitionCount& c = counts[(int64_t{code.table} * S + s) * N + d];
        c.ids += static_cast<int32_t>(written);
        c.unique_ids += unique;
      }
    }
    if (counts != nullptr) ClearSegmentBitmaps(div, codec, r);
  }
  out->segment_offsets[segments] = w;
  out->entries.resize(w);
  out->ids_after_dedup = w;
}

}  // namespace lemrt::host
