#include "device/sparsecore/table_major_runs.h"

#include <algorithm>

namespace lemrt::device {
namespace {

// Stable counting sort of `in` by key(run) in [0, keys) into `out`.
template <typename Key>
void CountingSort(const std::vector<SegmentRun>& in, int64_t keys, Key&& key,
                  std::vector<SegmentRun>* out, std::vector<int64_t>* count) {
  count->assign(keys + 1, 0);
  for (const SegmentRun& r : in) ++(*count)[key(r) + 1];
  for (int64_t k = 0; k < keys; ++k) (*count)[k + 1] += (*count)[k];
  out->resize(in.size());
  for (const SegmentRun& r : in) (*out)[(*count)[key(r)]++] = r;
}

}  // namespace

void TableMajorRuns(std::span<const std::span<const layout::CooEntry>> segments,
                    std::span<const int> dims, bool feature_major, std::vector<SegmentRun>* runs,
                    std::vector<SegmentRun>* scratch, std::vector<int64_t>* count) {
  // Runs in (segment, position) order; a run's partials follow the groups
  // of the runs before it in its segment.
  std::vector<SegmentRun>& found = *scratch;
  found.clear();
  int32_t features = 0;
  for (size_t k = 0; k < segments.size(); ++k) {
    const std::span<const layout::CooEntry> seg = segments[k];
    int64_t floats = 0;
    for (size_t i = 0; i < seg.size();) {
      const int32_t feature = seg[i].feature;
      const int32_t table = seg[i].table;
      const int dim = dims[table];
      size_t j = i;
      int64_t groups = 0;
      for (; j < seg.size() && seg[j].feature == feature; ++j) {
        groups += j == i || seg[j].row != seg[j - 1].row;
      }
      found.push_back({static_cast<int32_t>(k), feature, table, static_cast<int64_t>(i),
                       static_cast<int64_t>(j), floats});
      floats += groups * dim;
      features = std::max(features, feature + 1);
      i = j;
    }
  }
  // LSD: by feature first (feature-major), then by table, both stable.
  if (feature_major) {
    CountingSort(
        found, features, [](const SegmentRun& r) { return r.feature; }, runs, count);
    found.swap(*runs);
  }
  CountingSort(
      found, static_cast<int64_t>(dims.size()), [](const SegmentRun& r) { return r.table; }, runs,
      count);
}

}  // namespace lemrt::device
