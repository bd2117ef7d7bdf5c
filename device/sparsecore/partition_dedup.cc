#include "device/sparsecore/partition_dedup.h"

#include "base/row_key.h"
#include "device/sparsecore/key_sort.h"
#include "device/sparsecore/row_kernels.h"
#include "glog/logging.h"

namespace lemrt::device {
namespace {

// Entries the dedup prefetches ahead of the one it numbers (3 KiB).
constexpr int64_t kEntriesAhead = 128;

uint64_t Key(const layout::CooEntry& e) { return base::RowKey(e.table, e.col); }
int KeyTable(uint64_t key) { return base::RowKeyTable(key); }
int64_t KeyCol(uint64_t key) { return base::RowKeyRow(key); }

// The dedup's numbering of sorted (key, entry index) pairs, fed one at a
// time (equal keys together, their indices ascending): fills unique_keys,
// unique_offsets, unique_rows, unique_single, entry_unique and entry_role of
// the state in one pass. AddRange returns false as soon as a key is smaller
// than the one before (the state is then partly written, to be numbered
// again).
class SortedKeyNumbering {
 public:
  // Sized for n unique ids, cut to the count by Finish (resize keeps
  // the capacity, so steady steps allocate nothing).
  SortedKeyNumbering(int64_t n, std::span<const int> dims,
                     std::span<const std::unique_ptr<TableShard>> shards,
                     SparseCoreStepState* state)
      : dims_(dims), shards_(shards), state_(state) {
    state->unique_keys.resize(n);
    state->unique_offsets.resize(n + 1);
    state->unique_rows.resize(n);
    state->unique_single.resize(n);
    state->entry_unique.resize(n);
    state->entry_role.resize(n);
    state->table_runs.clear();
    keys_ = state->unique_keys.data();
    offsets_ = state->unique_offsets.data();
    rows_ = state->unique_rows.data();
    single_ = state->unique_single.data();
    entry_unique_ = state->entry_unique.data();
    role_ = state->entry_role.data();
  }

  // Adds the n pairs key_at(0), ..., key_at(n - 1) (KeyIndex values).
  // Locals instead of members in the loop: the byte stores may alias the
  // members for all the compiler knows, which it would then reload.
  template <typename KeyAt>
  bool AddRange(int64_t n, KeyAt&& key_at) {
    uint64_t* const keys = keys_;
    int64_t* const offsets = offsets_;
    int64_t* const rows = rows_;
    uint8_t* const single = single_;
    int32_t* const entry_unique = entry_unique_;
    uint8_t* const role = role_;
    int32_t u = u_;
    int64_t offset = offset_;
    uint64_t prev = prev_;
    int32_t first_index = first_index_;
    int table = table_;
    int dim = dim_;
    const TableShard* shard = shard_;
    bool sorted = true;
    for (int64_t i = 0; i < n; ++i) {
      const KeyIndex ki = key_at(i);
      if (u < 0 || ki.first != prev) {
        if (ki.first < prev) {
          sorted = false;
          break;
        }
        ++u;
        if (KeyTable(ki.first) != table) {
          table = KeyTable(ki.first);
          dim = dims_[table];
          shard = shards_[table].get();
          state_->table_runs.push_back(u);
        }
        keys[u] = ki.first;
        offsets[u] = offset;
        rows[u] = shard->LocalRow(KeyCol(ki.first));
        single[u] = 1;
        offset += dim;
        role[ki.second] = kOnlyEntry;
        first_index = ki.second;
        prev = ki.first;
      } else {
        // Equal keys keep ascending entry indices: the first is the earliest.
        single[u] = 0;
        role[first_index] = kFirstEntry;
        role[ki.second] = kAddEntry;
      }
      entry_unique[ki.second] = u;
    }
    u_ = u;
    offset_ = offset;
    prev_ = prev;
    first_index_ = first_index;
    table_ = table;
    dim_ = dim;
    shard_ = shard;
    return sorted;
  }

  void Finish() {
    const int64_t count = int64_t{u_} + 1;
    state_->unique_keys.resize(count);
    state_->unique_offsets.resize(count + 1);
    state_->unique_offsets[count] = offset_;
    state_->unique_rows.resize(count);
    state_->unique_single.resize(count);
    state_->table_runs.push_back(count);
  }

 private:
  std::span<const int> dims_;
  std::span<const std::unique_ptr<TableShard>> shards_;
  SparseCoreStepState* state_;
  uint64_t* keys_;
  int64_t* offsets_;
  int64_t* rows_;
  uint8_t* single_;
  int32_t* entry_unique_;
  uint8_t* role_;
  int32_t u_ = -1;
  int64_t offset_ = 0;
  uint64_t prev_ = 0;
  int32_t first_index_ = 0;  // entry index of the current key's first entry
  int table_ = -1;
  int dim_ = 0;
  const TableShard* shard_ = nullptr;
};

}  // namespace

void DedupPartition(std::span<const std::span<const layout::CooEntry>> segments,
                    std::span<const int> dims, std::span<const std::unique_ptr<TableShard>> shards,
                    SparseCoreStepState* state, bool feature_major) {
  // Entries whose keys already ascend (the SparseCore's own preprocessing
  // sorts them) are numbered in one pass straight from the segments;
  // otherwise (key, entry index) pairs are sorted first. Feature-major:
  // both in ForEachFeatureRun's order, so among equal keys the first pair is
  // the key's first entry in that order.
  state->segment_begin.resize(segments.size() + 1);
  state->segment_begin[0] = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    state->segment_begin[k + 1] = state->segment_begin[k] + static_cast<int64_t>(segments[k].size());
  }
  const int64_t total = state->segment_begin.back();
  auto for_each_run = [&](auto&& fn) {
    if (feature_major) {
      ForEachFeatureRun(segments, &state->run_cursor, fn);
    } else {
      for (size_t k = 0; k < segments.size(); ++k) {
        fn(k, int64_t{0}, static_cast<int64_t>(segments[k].size()));
      }
    }
  };
  bool numbered = true;
  {
    SortedKeyNumbering numbering(total, dims, shards, state);
    for_each_run([&](size_t k, int64_t begin, int64_t end) {
      if (!numbered) return;
      const layout::CooEntry* seg = segments[k].data() + begin;
      const int64_t size = end - begin;
      const int32_t first = static_cast<int32_t>(state->segment_begin[k] + begin);
      numbered = numbering.AddRange(size, [&](int64_t i) {
        if (i + kEntriesAhead < size) __builtin_prefetch(seg + i + kEntriesAhead);
        return KeyIndex{Key(seg[i]), first + static_cast<int32_t>(i)};
      });
    });
    if (numbered) numbering.Finish();
  }
  // The runs also order the pairs for the sort: table by table, and within
  // a table in the order the entries were added above, so sorting each
  // table's pairs by key (stable, a slice that stays in the caches) sorts
  // them all.
  TableMajorRuns(segments, dims, feature_major, &state->runs, &state->runs_scratch,
                 &state->runs_count);
  if (!numbered) {
    auto& pairs = state->sort_scratch;
    pairs.resize(total);
    KeyIndex* p = pairs.data();
    int64_t n = 0, table_begin = 0;
    const std::vector<SegmentRun>& runs = state->runs;
    for (size_t r = 0; r < runs.size(); ++r) {
      const SegmentRun& run = runs[r];
      const layout::CooEntry* seg = segments[run.segment].data();
      const int32_t first = static_cast<int32_t>(state->segment_begin[run.segment]);
      for (int64_t i = run.begin; i < run.end; ++i) {
        p[n++] = {Key(seg[i]), first + static_cast<int32_t>(i)};
      }
      if (r + 1 == runs.size() || runs[r + 1].table != run.table) {
        // Stable radix sort: equal keys keep the order they were added in.
        SortByKey(std::span<KeyIndex>(p + table_begin, n - table_begin), &state->sort_scratch2);
        table_begin = n;
      }
    }
    SortedKeyNumbering numbering(total, dims, shards, state);
    CHECK(numbering.AddRange(total, [p](int64_t i) { return p[i]; }));
    numbering.Finish();
  }
}

}  // namespace lemrt::device
