#include "runtime/step/sparsecore_stage.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "base/bf16.h"
#include "device/sparsecore/tile_pool.h"
#include "glog/logging.h"
#include "proto/config_loader.h"

namespace lemrt::runtime {
namespace {

using layout::CooEntry;
using layout::SameGroup;

// Per-rank element counts of a buffer laid out in `ranks` consecutive blocks
// of `block` segments, from its per-segment offsets (elements, +1).
void RankCounts(std::span<const int64_t> offsets, int ranks, int block,
                std::vector<int64_t>* counts) {
  counts->resize(ranks);
  for (int q = 0; q < ranks; ++q) {
    (*counts)[q] = offsets[int64_t{q + 1} * block] - offsets[int64_t{q} * block];
  }
}

// out[0..dim) += p[0..dim), element by element. The buffers never overlap
// (activations and received partials); the compiler keeps a plain loop
// over a float* pair scalar for fear they do, and a row-wide
// loop of unknown length scalar at -O2: 16 columns at a time vectorise.
inline void AddRow(float* __restrict out, const float* __restrict p, int dim) {
  int d = 0;
  for (; d + 16 <= dim; d += 16) {
    for (int k = 0; k < 16; ++k) out[d + k] += p[d + k];
  }
  for (; d < dim; ++d) out[d] += p[d];
}

// (*floats)[k] = the partial floats of segments [0, k) of `entries` (per
// segment entry offsets `entry_offsets`): each segment's pooled groups x
// their dims (device::PartialFloats).
void PartialOffsets(const layout::CooEntry* entries, std::span<const int64_t> entry_offsets,
                    std::span<const int> table_dims, std::vector<int64_t>* floats) {
  const size_t segs = entry_offsets.size() - 1;
  floats->assign(segs + 1, 0);
  for (size_t k = 0; k < segs; ++k) {
    const std::span<const layout::CooEntry> seg(entries + entry_offsets[k],
                                                entry_offsets[k + 1] - entry_offsets[k]);
    (*floats)[k + 1] = (*floats)[k] + device::PartialFloats(seg, table_dims);
  }
}

// The elements of `buffer` that its per-segment `offsets` cover.
template <typename T>
std::span<T> Covered(T* buffer, std::span<const int64_t> offsets) {
  return std::span<T>(buffer + offsets.front(), offsets.back() - offsets.front());
}

}  // namespace

template <typename Fn>
void SparseCoreStage::ForEachGroupBySource(const layout::PartitionedCoo& coo,
                                           std::span<const int64_t> floats, Fn&& fn) {
  const int sources = coo.local_sparse_cores;
  const int64_t dests =
      sources > 0 ? (static_cast<int64_t>(coo.segment_offsets.size()) - 1) / sources : 0;
  source_rows_.assign(sources, {INT32_MAX, INT32_MIN});
  // Groups never span segments: two segments may hold the same (feature, row)
  // when S == 1, so walk segment by segment.
  auto source = [&](int s) {
    auto& [lo, hi] = source_rows_[s];
    for (int64_t d = 0; d < dests; ++d) {
      const int64_t k = d * sources + s;
      int64_t at = floats[k];
      for (int64_t i = coo.segment_offsets[k]; i < coo.segment_offsets[k + 1];) {
        const CooEntry& e = coo.entries[i];
        const int dim = feature_dims_[e.feature];
        lo = std::min(lo, e.row);
        hi = std::max(hi, e.row);
        fn(e, dim, at);
        at += dim;
        ++i;
        while (i < coo.segment_offsets[k + 1] && SameGroup(e, coo.entries[i])) ++i;
      }
    }
  };
  device::RunOnPool(tile_pool(), sources, source);
  CHECK(RangesAreDisjoint(source_rows_))
      << "SparseCoreStage: two local SparseCores' segments hold one sample; the COO does not "
         "split the samples into one contiguous range per SparseCore (host/preprocess/coo.h)";
}

bool SparseCoreStage::RangesAreDisjoint(std::span<const std::pair<int32_t, int32_t>> ranges) {
  int32_t last = INT32_MIN;
  for (const auto& [lo, hi] : ranges) {
    if (lo > hi) continue;  // no entries
    if (lo <= last) return false;
    last = hi;
  }
  return true;
}

SparseCoreStage::SparseCoreStage(const config::RunConfig& config, Communicator& comm,
                                 std::span<const device::Optimizer* const> optimizers,
                                 bool initialize_tables)
    : comm_(comm),
      bf16_exchange_(config::IsBf16(config.sparse_core().exchange_dtype())),
      S_(config.topology().sparse_cores_per_chip()),
      W_(comm.size()),
      world_size_independent_(config.training().world_size_independent()) {
  CHECK_EQ(config.topology().num_chips(), W_)
      << "SparseCoreStage: the config is for another world size than the communicator's";
  for (const auto& t : config.tables()) table_dims_.push_back(t.dim());
  for (const auto& f : config.features()) {
    const int dim = table_dims_[config::FindTable(config, f.table())];
    feature_offsets_.push_back(activation_width_);
    feature_dims_.push_back(dim);
    activation_width_ += dim;
  }
  for (int l = 0; l < S_; ++l) {
    scs_.push_back(
        std::make_unique<device::SparseCore>(config, comm.rank() * S_ + l, optimizers,
                                             initialize_tables));
  }
}

void SparseCoreStage::SetHotRows(host::HotRowSet set,
                                 std::span<const device::Optimizer* const> optimizers) {
  if (set.empty()) {
    hot_.reset();
    return;
  }
  hot_ = std::make_unique<HotRowReplicas>(std::move(set), table_dims_, optimizers,
                                          world_size_independent_);
}

absl::Status SparseCoreStage::RefreshHotRows() {
  return hot_ == nullptr ? absl::OkStatus() : hot_->Refresh(comm_, scs_);
}

void SparseCoreStage::LookupHot(std::span<const host::HotEntry> hot,
                                std::span<float> activations) const {
  if (hot_ == nullptr) return;
  hot_->Lookup(hot, feature_offsets_, activation_width_, activations,
               scs_.front()->int8_lookups());
}

absl::Status SparseCoreStage::UpdateHot(std::span<const host::HotEntry> hot,
                                        std::span<const float> d_activations) {
  if (hot_ == nullptr) return absl::OkStatus();
  return hot_->Update(hot, feature_offsets_, activation_width_, d_activations,
                      scs_.front()->updates(), comm_, scs_);
}

void SparseCoreStage::SegmentsOf(const SparseStepBuffers& buf, int l,
                                 std::vector<std::span<const CooEntry>>* segs) const {
  segs->clear();
  for (int q = 0; q < W_; ++q) {
    for (int s = 0; s < S_; ++s) {
      const int64_t k = (int64_t{q} * S_ + l) * S_ + s;
      segs->emplace_back(buf.entries + buf.recv_offsets[k],
                         buf.recv_offsets[k + 1] - buf.recv_offsets[k]);
    }
  }
}

absl::Status SparseCoreStage::Forward(const layout::PartitionedCoo& coo, SparseStepBuffers* buf,
                                      std::span<float> activations) {
  std::fill(activations.begin(), activations.end(), 0.0f);
  return ForwardAccumulate(coo, buf, activations);
}

absl::Status SparseCoreStage::Forward(std::span<const layout::PartitionedCoo> minibatches,
                                      std::vector<SparseStepBuffers>* bufs,
                                      std::span<float> activations) {
  if (bufs->size() < minibatches.size()) bufs->resize(minibatches.size());
  std::fill(activations.begin(), activations.end(), 0.0f);
  for (size_t m = 0; m < minibatches.size(); ++m) {
    absl::Status st = ForwardAccumulate(minibatches[m], &(*bufs)[m], activations);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status SparseCoreStage::Backward(std::span<const layout::PartitionedCoo> minibatches,
                                       std::span<const float> d_activations,
                                       std::vector<SparseStepBuffers>* bufs) {
  // Row groups in the order of their first minibatch (the same list, so the
  // same exchanges, on every rank).
  group_done_.assign(minibatches.size(), 0);
  bool continue_step = false;
  for (size_t m = 0; m < minibatches.size(); ++m) {
    if (group_done_[m]) continue;
    group_members_.clear();
    for (size_t n = m; n < minibatches.size(); ++n) {
      if (group_done_[n] || minibatches[n].row_group != minibatches[m].row_group) continue;
      group_members_.push_back(n);
      group_done_[n] = 1;
    }
    absl::Status st =
        group_members_.size() == 1
            ? Backward(minibatches[m], d_activations, &(*bufs)[m], continue_step)
            : BackwardRowGroup(minibatches, d_activations, bufs, continue_step);
    if (!st.ok()) return st;
    continue_step = true;
  }
  return absl::OkStatus();
}

absl::Status SparseCoreStage::BackwardRowGroup(std::span<const layout::PartitionedCoo> minibatches,
                                               std::span<const float> d_activations,
                                               std::vector<SparseStepBuffers>* bufs,
                                               bool continue_step) {
  for (size_t n : group_members_) {
    absl::Status st = ExchangeGradients(minibatches[n], d_activations, &(*bufs)[n]);
    if (!st.ok()) return st;
  }
  // One update per local SparseCore over the group's received segments:
  // each row's gradient is the sum over the group. With world-size-
  // independent sums in (source SparseCore, minibatch) order: as each
  // source's samples are cut into consecutive ranges in minibatch order
  // (host/sample_split.h), that is global sample order, whatever the number
  // of SparseCores.
  SparseStepBuffers& first = (*bufs)[group_members_.front()];
  const size_t members = group_members_.size();
  for (int l = 0; l < S_; ++l) {
    group_segs_.clear();
    group_ins_.clear();
    for (size_t n : group_members_) {
      const SparseStepBuffers& buf = (*bufs)[n];
      SegmentsOf(buf, l, &segs_);
      group_segs_.insert(group_segs_.end(), segs_.begin(), segs_.end());
      ins_.clear();
      AppendGradientViews(buf, l);
      group_ins_.insert(group_ins_.end(), ins_.begin(), ins_.end());
    }
    // Without world-size-independent sums: minibatch order, as before.
    const size_t per_member = group_segs_.size() / members;
    const size_t outer = world_size_independent_ ? per_member : members;
    const size_t inner = world_size_independent_ ? members : per_member;
    segs_.clear();
    ins_.clear();
    for (size_t a = 0; a < outer; ++a) {
      for (size_t b = 0; b < inner; ++b) {
        const size_t i = world_size_independent_ ? b * per_member + a : a * per_member + b;
        segs_.push_back(group_segs_[i]);
        ins_.push_back(group_ins_[i]);
      }
    }
    const auto begin = std::chrono::steady_clock::now();
    scs_[l]->DedupForBackward(segs_, &first.sc_states[l]);
    scs_[l]->Backward(segs_, ins_, &first.sc_states[l], continue_step);
    if (scs_[l]->debug_checks().any()) {
      absl::Status checked = AgreeOnStatus(comm_, first.sc_states[l].debug_status);
      if (!checked.ok()) return checked;
    }
    RecordSpan(first, l, /*backward=*/true, begin, segs_);
  }
  return absl::OkStatus();
}

absl::Status SparseCoreStage::ForwardAccumulate(const layout::PartitionedCoo& coo,
                                                SparseStepBuffers* buf,
                                                std::span<float> activations) {
  const int64_t segs = int64_t{W_} * S_ * S_;
  // 1-2. Segment sizes and entries to their owners.
  absl::Status st = ExchangeEntries(coo, buf);
  if (!st.ok()) return st;

  // 3. Lookup on each local SparseCore; partials in received-segment order.
  PartialOffsets(buf->entries, buf->recv_offsets, table_dims_, &buf->owner_offsets);
  buf->owner_partials.resize(buf->owner_offsets[segs]);
  buf->sc_states.resize(S_);
  buf->sc_spans.clear();
  sc_segs_.resize(S_);
  for (int l = 0; l < S_; ++l) SegmentsOf(*buf, l, &sc_segs_[l]);
  // Each SparseCore numbers its unique ids on one thread, so the local
  // SparseCores number theirs at once, one per thread of the tile pool; then
  // each looks up its rows on all the tiles, one SparseCore after another.
  const auto numbering = std::chrono::steady_clock::now();
  auto number = [&](int l) { scs_[l]->NumberIds(sc_segs_[l], &buf->sc_states[l]); };
  device::RunOnPool(tile_pool(), S_, number);
  for (int l = 0; l < S_; ++l) {
    RecordSpan(*buf, l, /*backward=*/false, numbering, sc_segs_[l], /*numbering=*/true);
  }
  for (int l = 0; l < S_; ++l) {
    outs_.clear();
    for (int q = 0; q < W_; ++q) {
      for (int s = 0; s < S_; ++s) {
        outs_.push_back(buf->owner_partials.data() +
                        buf->owner_offsets[(int64_t{q} * S_ + l) * S_ + s]);
      }
    }
    const auto begin = std::chrono::steady_clock::now();
    scs_[l]->Lookup(sc_segs_[l], outs_, &buf->sc_states[l]);
    if (scs_[l]->debug_checks().any()) {  // agreed, so no rank hangs
      absl::Status checked = AgreeOnStatus(comm_, buf->sc_states[l].debug_status);
      if (!checked.ok()) return checked;
    }
    RecordSpan(*buf, l, /*backward=*/false, begin, sc_segs_[l]);
  }

  // 4. Partials back to the sources (on one rank the segments received are
  // the segments sent: the same offsets).
  if (W_ == 1) {
    buf->source_offsets.assign(buf->owner_offsets.begin(), buf->owner_offsets.end());
  } else {
    PartialOffsets(coo.entries.data(), coo.segment_offsets, table_dims_, &buf->source_offsets);
  }
  buf->source_partials.resize(buf->source_offsets[segs]);
  if (Alone()) {
    buf->source_partials.swap(buf->owner_partials);  // the same layout on one rank
  } else {
    st = ExchangeValues(buf->owner_partials.data(), buf->owner_offsets,
                        buf->source_partials.data(), buf->source_offsets, buf);
    if (!st.ok()) return st;
  }

  // 5. Sum partials into activations, destination SparseCores in order.
  const float* p = buf->source_partials.data();
  ForEachGroupBySource(coo, buf->source_offsets, [&](const CooEntry& e, int dim, int64_t at) {
    float* out = activations.data() + int64_t{e.row} * activation_width_ + feature_offsets_[e.feature];
    AddRow(out, p + at, dim);
  });
  return absl::OkStatus();
}

absl::Status SparseCoreStage::ExchangeGradients(const layout::PartitionedCoo& coo,
                                                std::span<const float> d_activations,
                                                SparseStepBuffers* buf) {
  buf->grads_out.resize(buf->source_partials.size());
  float* g = buf->grads_out.data();
  ForEachGroupBySource(coo, buf->source_offsets, [&](const CooEntry& e, int dim, int64_t at) {
    std::memcpy(g + at, d_activations.data() + int64_t{e.row} * activation_width_ + feature_offsets_[e.feature],
                sizeof(float) * dim);
  });
  buf->grads_in.resize(buf->owner_partials.size());
  if (Alone()) {
    buf->grads_in.swap(buf->grads_out);  // the same layout on one rank
    return absl::OkStatus();
  }
  return ExchangeValues(buf->grads_out.data(), buf->source_offsets, buf->grads_in.data(),
                        buf->owner_offsets, buf);
}

absl::Status SparseCoreStage::ExchangeEntries(const layout::PartitionedCoo& coo,
                                              SparseStepBuffers* buf) {
  const int64_t segs = int64_t{W_} * S_ * S_;
  if (W_ == 1) {
    // Every segment is this rank's own: the SparseCores read the COO.
    buf->recv_offsets.assign(coo.segment_offsets.begin(), coo.segment_offsets.begin() + segs + 1);
    buf->entries = coo.entries.data();
    return absl::OkStatus();
  }
  // Segment sizes: our segments to rank q are coo's [q*S, q*S+S) x [0, S).
  buf->send_counts.resize(segs);
  buf->recv_counts.resize(segs);
  for (int64_t k = 0; k < segs; ++k) {
    buf->send_counts[k] = coo.segment_offsets[k + 1] - coo.segment_offsets[k];
  }
  absl::Status st = comm_.AllToAll(buf->send_counts, buf->recv_counts);
  if (!st.ok()) return st;
  buf->recv_offsets.assign(segs + 1, 0);
  for (int64_t k = 0; k < segs; ++k) {
    buf->recv_offsets[k + 1] = buf->recv_offsets[k] + buf->recv_counts[k];
  }
  buf->recv_entries.resize(buf->recv_offsets[segs]);
  const int block = S_ * S_;
  RankCounts(coo.segment_offsets, W_, block, &buf->send_rank_counts);
  RankCounts(buf->recv_offsets, W_, block, &buf->recv_rank_counts);
  buf->entries = buf->recv_entries.data();
  return comm_.AllToAllvOf<CooEntry>(Covered(coo.entries.data(), coo.segment_offsets),
                                     buf->send_rank_counts, buf->recv_entries,
                                     buf->recv_rank_counts);
}

absl::Status SparseCoreStage::ExchangeValues(const float* send,
                                             std::span<const int64_t> send_offsets, float* recv,
                                             std::span<const int64_t> recv_offsets,
                                             SparseStepBuffers* buf) {
  const int block = S_ * S_;
  RankCounts(send_offsets, W_, block, &buf->send_rank_counts);
  RankCounts(recv_offsets, W_, block, &buf->recv_rank_counts);
  const std::span<const float> sent = Covered(send, send_offsets);
  const std::span<float> received = Covered(recv, recv_offsets);
  if (!bf16_exchange_) {
    return comm_.AllToAllvOf<float>(sent, buf->send_rank_counts, received, buf->recv_rank_counts);
  }
  buf->send_bf16.resize(sent.size());
  buf->recv_bf16.resize(received.size());
  base::NarrowBf16Nearest(sent, buf->send_bf16.data());
  absl::Status st = comm_.AllToAllvOf<uint16_t>(buf->send_bf16, buf->send_rank_counts,
                                                buf->recv_bf16, buf->recv_rank_counts);
  if (!st.ok()) return st;
  base::WidenBf16(buf->recv_bf16, received.data());
  return absl::OkStatus();
}

void SparseCoreStage::AppendGradientViews(const SparseStepBuffers& buf, int l) {
  for (int q = 0; q < W_; ++q) {
    for (int s = 0; s < S_; ++s) {
      ins_.push_back(buf.grads_in.data() + buf.owner_offsets[(int64_t{q} * S_ + l) * S_ + s]);
    }
  }
}

absl::Status SparseCoreStage::Backward(const layout::PartitionedCoo& coo,
                                       std::span<const float> d_activations, SparseStepBuffers* buf,
                                       bool continue_step) {
  absl::Status st = ExchangeGradients(coo, d_activations, buf);
  if (!st.ok()) return st;
  for (int l = 0; l < S_; ++l) {
    SegmentsOf(*buf, l, &segs_);
    ins_.clear();
    AppendGradientViews(*buf, l);
    const auto begin = std::chrono::steady_clock::now();
    scs_[l]->Backward(segs_, ins_, &buf->sc_states[l], continue_step);
    if (scs_[l]->debug_checks().any()) {
      absl::Status checked = AgreeOnStatus(comm_, buf->sc_states[l].debug_status);
      if (!checked.ok()) return checked;
    }
    RecordSpan(*buf, l, /*backward=*/true, begin, segs_);
  }
  return absl::OkStatus();
}

void SparseCoreStage::RecordSpan(SparseStepBuffers& buf, int l, bool backward,
                                 std::chrono::steady_clock::time_point begin,
                                 std::span<const std::span<const layout::CooEntry>> segs,
                                 bool numbering) const {
  SparseCoreSpan span{l, backward, begin, std::chrono::steady_clock::now(), 0,
                      static_cast<int64_t>(buf.sc_states[l].unique_keys.size()), numbering};
  for (const auto& seg : segs) span.ids += static_cast<int64_t>(seg.size());
  buf.sc_spans.push_back(span);
}

int64_t SparseCoreStage::last_unique_ids(const SparseStepBuffers& buf) const {
  int64_t n = 0;
  for (const auto& s : buf.sc_states) n += static_cast<int64_t>(s.unique_keys.size());
  return n;
}

int64_t SparseCoreStage::last_unique_ids(std::span<const SparseStepBuffers> bufs,
                                         size_t minibatches) const {
  int64_t n = 0;
  for (size_t m = 0; m < minibatches && m < bufs.size(); ++m) n += last_unique_ids(bufs[m]);
  return n;
}

}  // namespace lemrt::runtime
