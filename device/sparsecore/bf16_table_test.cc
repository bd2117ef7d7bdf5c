// BF16 tables (TableConfig.dtype / slot_dtype) against plain references: the
// lookup equals an fp32 table holding the widened bf16 rows, and the update
// equals the fp32 update of those rows rounded stochastically with the
// documented key.
#include <algorithm>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "base/bf16_reference_test_util.h"
#include "device/optimizers/adam.h"
#include "device/optimizers/ftrl.h"
#include "device/optimizers/optimizer.h"
#include "device/optimizers/rowwise_adagrad.h"
#include "device/sparsecore/sparse_core.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

using layout::CooEntry;

// "wide" (dim 64, Adagrad) is one-hot and read in place when FP32; "odd"
// (dim 7, SGD) is multi-hot and staged.
std::string TwoTables(const char* dtype, const char* slot_dtype) {
  return std::string(R"pb(
           topology { sparse_cores_per_chip: 1 }
           tables { name: "wide" vocab_size: 50 dim: 64 combiner: SUM
                    optimizer { adagrad {} }
                    dtype:)pb") +
         dtype + " slot_dtype: " + slot_dtype +
         R"pb(}
              tables { name: "odd" vocab_size: 40 dim: 7 combiner: SUM dtype: )pb" +
         dtype + R"pb(}
                      features { name: "f0" table: "wide" max_sequence_length: 8 }
features { name: "f1" table: "odd" max_sequence_length: 8 }
model { num_dense_features: 1 bottom_mlp: 7 top_mlp: 1 }
training { global_batch: 8 embedding_learning_rate: 0.1 seed: 5 }
)pb";
}

// Two segments ordered by (feature, row, col): feature 0 one id per sample
// (distinct over the segment), feature 1 1-4 ids with repeats.
std::vector<std::vector<CooEntry>> MakeSegments(std::mt19937& rng) {
  std::vector<std::vector<CooEntry>> segs(2);
  for (size_t s = 0; s < segs.size(); ++s) {
    for (int row = 0; row < 8; ++row) {
      segs[s].push_back({static_cast<int64_t>(s * 8 + row) * 3 % 50, row, 0, 0,
                         0.5f + static_cast<float>(rng() % 3)});
    }
    for (int row = 0; row < 8; ++row) {
      const int ids = 1 + static_cast<int>(rng() % 4);
      std::vector<int64_t> cols;
      while (static_cast<int>(cols.size()) < ids) {
        const int64_t c = static_cast<int64_t>(rng() % 12);
        if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
      }
      std::sort(cols.begin(), cols.end());
      for (int64_t c : cols)
        segs[s].push_back({c, row, 1, 1, 0.25f + static_cast<float>(rng() % 5)});
    }
  }
  return segs;
}

// Copies every row and slot of `from` into `to` through fp32.
void CopyTables(const SparseCore& from, SparseCore* to) {
  for (int t = 0; t < from.num_tables(); ++t) {
    const TableShard& a = from.shard(t);
    TableShard& b = to->mutable_shard(t);
    std::vector<float> rows(a.local_rows() * a.dim()), slots(a.local_rows() * a.slot_stride());
    a.ReadRows(0, a.local_rows(), rows.data());
    a.ReadSlots(0, a.local_rows(), slots.data());
    b.WriteRows(0, b.local_rows(), rows.data());
    b.WriteSlots(0, b.local_rows(), slots.data());
  }
}

std::vector<uint16_t> StoredBf16(const TableShard& shard) {
  std::vector<uint16_t> out(shard.local_rows() * shard.dim());
  std::memcpy(out.data(), shard.weight_bytes().data(), out.size() * 2);
  return out;
}

struct Step {
  std::vector<std::vector<float>> partials, grads;
};

// Forward then Backward of `segs` on `sc` with gradients from `rng` (the
// same stream for every SparseCore that takes this step).
Step RunStep(SparseCore& sc, const std::vector<std::span<const CooEntry>>& segs,
             const std::vector<int>& dims, uint32_t grad_seed) {
  Step s;
  std::mt19937 rng(grad_seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float*> outs;
  std::vector<const float*> ins;
  for (const auto& seg : segs) {
    const int64_t floats = PartialFloats(seg, dims);
    s.partials.emplace_back(floats, -1.0f);
    s.grads.emplace_back(floats);
    for (float& g : s.grads.back()) g = u(rng);
  }
  for (size_t k = 0; k < segs.size(); ++k) {
    outs.push_back(s.partials[k].data());
    ins.push_back(s.grads[k].data());
  }
  SparseCoreStepState state;
  sc.Forward(segs, outs, &state);
  EXPECT_TRUE(state.debug_status.ok()) << state.debug_status;
  sc.Backward(segs, ins, &state);
  return s;
}

class Bf16TableTest : public ::testing::TestWithParam<bool> {};  // bf16 slots

TEST_P(Bf16TableTest, LookupAndUpdateMatchFp32ThenRound) {
  const bool bf16_slots = GetParam();
  auto bf_config = config::ParseConfig(TwoTables("BF16", bf16_slots ? "BF16" : "FP32"), "t", "", 1);
  ASSERT_TRUE(bf_config.ok()) << bf_config.status();
  auto fp_config = config::ParseConfig(TwoTables("FP32", "FP32"), "t", "", 1);
  ASSERT_TRUE(fp_config.ok()) << fp_config.status();
  AdagradOptimizer ada(0.1f, 0.1f, 1e-7f);
  SgdOptimizer sgd(0.1f);
  const Optimizer* opts[] = {&ada, &sgd};
  SparseCore bf(*bf_config, 0, opts), fp(*fp_config, 0, opts);
  ASSERT_TRUE(bf.shard(0).bf16());
  ASSERT_EQ(bf.shard(0).bf16_slots(), bf16_slots);
  ASSERT_EQ(bf.shard(0).row_bytes(), 128);
  ASSERT_FALSE(fp.shard(0).bf16());
  std::mt19937 rng(3);
  const std::vector<std::vector<CooEntry>> entries = MakeSegments(rng);
  const std::vector<std::span<const CooEntry>> segs(entries.begin(), entries.end());
  const std::vector<int> dims = {64, 7};
  int64_t changed = 0, not_nearest = 0;
  for (int step = 1; step <= 3; ++step) {
    CopyTables(bf, &fp);  // the reference starts from the bf16 model's values
    const Step a = RunStep(bf, segs, dims, 100 + step);
    const Step b = RunStep(fp, segs, dims, 100 + step);
    // The lookup: the fp32 lookup of the widened rows, bit for bit (the fp32
    // "wide" table is pooled in place, the bf16 one staged).
    for (size_t k = 0; k < segs.size(); ++k) {
      ASSERT_EQ(0, std::memcmp(a.partials[k].data(), b.partials[k].data(),
                               sizeof(float) * a.partials[k].size()))
          << "step " << step << " segment " << k;
    }
    // The update: the fp32 update rounded with the key of (seed 5, table,
    // original row, step).
    for (int t = 0; t < 2; ++t) {
      const TableShard& got = bf.shard(t);
      const TableShard& want = fp.shard(t);
      const std::vector<uint16_t> bits = StoredBf16(got);
      for (int64_t r = 0; r < got.local_rows(); ++r) {
        const uint64_t key = base::Bf16RoundingKey(5, t, got.OriginalRow(r), step);
        const float* w = want.row(r);
        for (int d = 0; d < got.dim(); ++d) {
          const uint16_t b16 = bits[r * got.dim() + d];
          // Untouched rows hold bf16 values already, which every rounding keeps.
          ASSERT_EQ(b16, base::FloatToBf16Stochastic(w[d], base::Bf16RoundingBits(key, d)))
              << "step " << step << " table " << t << " row " << r << " element " << d;
          not_nearest += b16 != base::FloatToBf16Nearest(w[d]);
          changed += base::Bf16ToFloat(b16) != w[d];
        }
      }
      if (got.slot_stride() == 0) continue;
      std::vector<float> slots(got.slot_stride()), ref(got.slot_stride());
      for (int64_t r = 0; r < got.local_rows(); ++r) {
        got.ReadSlots(r, 1, slots.data());
        want.ReadSlots(r, 1, ref.data());
        const uint64_t key =
            base::Bf16RoundingKey(5, t, got.OriginalRow(r), step + (int64_t{1} << 62));
        for (int64_t i = 0; i < got.slot_stride(); ++i) {
          const float expect = bf16_slots ? base::Bf16ToFloat(base::FloatToBf16Stochastic(
                                                ref[i], base::Bf16RoundingBits(key, i)))
                                          : ref[i];
          ASSERT_EQ(slots[i], expect) << "slot " << i << " of row " << r << " step " << step;
        }
      }
    }
  }
  // The updates moved rows off the bf16 grid (so rounding was exercised),
  // and stochastic rounding differs from nearest in a good share of them.
  EXPECT_GT(changed, 1000);
  EXPECT_GT(not_nearest, changed / 10);
}

INSTANTIATE_TEST_SUITE_P(Slots, Bf16TableTest, ::testing::Bool());

// The rounding is keyed by the original row, not the placement: a row
// updated on SparseCore 1 of 2 ends with the bits it gets on a single
// SparseCore.
TEST(Bf16TableWorldTest, UpdatesDoNotDependOnTheNumberOfSparseCores) {
  auto config_for = [](int scs) {
    return config::ParseConfig("topology { sparse_cores_per_chip: " + std::to_string(scs) + R"pb(}
                                                                                                 tables { name: "t" vocab_size: 30 dim: 16 combiner: SUM dtype: BF16 slot_dtype: BF16
         optimizer { adagrad {} } }
features { name: "f" table: "t" max_sequence_length: 4 }
model { num_dense_features: 1 bottom_mlp: 16 top_mlp: 1 }
training { global_batch: 4 seed: 9 }
)pb",
                               "t", "", 1);
  };
  auto one = config_for(1), two = config_for(2);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  AdagradOptimizer ada(0.3f, 0.1f, 1e-7f);
  const Optimizer* opts[] = {&ada};
  SparseCore single(*one, 0, opts), odd(*two, 1, opts);
  // Odd rows only: SparseCore 1 of 2 owns them.
  std::vector<CooEntry> seg = {{1, 0, 0, 0, 1.0f},
                               {7, 0, 0, 0, 2.0f},
                               {3, 1, 0, 0, 1.0f},
                               {29, 2, 0, 0, 0.5f},
                               {7, 3, 0, 0, 1.5f}};
  const std::vector<std::span<const CooEntry>> segs = {seg};
  const std::vector<int> dims = {16};
  for (int step = 0; step < 3; ++step) {
    const Step a = RunStep(single, segs, dims, 7 + step);
    const Step b = RunStep(odd, segs, dims, 7 + step);
    ASSERT_EQ(a.partials[0], b.partials[0]) << "step " << step;
  }
  std::vector<float> x(16), y(16), sx(16), sy(16);
  for (int64_t col : {1, 3, 7, 29}) {
    single.shard(0).ReadRows(col, 1, x.data());
    odd.shard(0).ReadRows(col / 2, 1, y.data());
    EXPECT_EQ(x, y) << "row " << col;
    single.shard(0).ReadSlots(col, 1, sx.data());
    odd.shard(0).ReadSlots(col / 2, 1, sy.data());
    EXPECT_EQ(sx, sy) << "slots of row " << col;
  }
}

// Initialisation: a BF16 shard holds the nearest bf16 of the fp32 initial
// rows, and slots start at the optimizer's initial value.
TEST(Bf16TableWorldTest, InitialRowsAreTheRoundedFp32Rows) {
  auto bf = config::ParseConfig(TwoTables("BF16", "BF16"), "t", "", 1);
  auto fp = config::ParseConfig(TwoTables("FP32", "FP32"), "t", "", 1);
  ASSERT_TRUE(bf.ok() && fp.ok());
  AdagradOptimizer ada(0.1f, 0.25f, 1e-7f);
  SgdOptimizer sgd(0.1f);
  const Optimizer* opts[] = {&ada, &sgd};
  SparseCore a(*bf, 0, opts), b(*fp, 0, opts);
  for (int t = 0; t < 2; ++t) {
    const std::vector<uint16_t> bits = StoredBf16(a.shard(t));
    const auto w = b.shard(t).weights();
    ASSERT_EQ(bits.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(bits[i], base::FloatToBf16Nearest(w[i])) << i;
  }
  std::vector<float> slots(a.shard(0).slot_stride());
  a.shard(0).ReadSlots(3, 1, slots.data());
  EXPECT_EQ(slots, std::vector<float>(64, 0.25f));
}

// ---- BF16 slots of the optimizers with more than one slot column per
// element (Adam: m and v; FTRL: n and z) or one per row (row-wise Adagrad),
// with FP32 and BF16 rows. One TableShard (SparseCore 1 of 2, so original
// rows differ from local ones) against a plain reference: the fp32 rows and
// slots of the previous step, the optimizer's fp32 Apply (optimizer_test
// checks it against plain loops), then every BF16 element rounded by the
// value rule of base/bf16_reference_test_util.h with the documented keys:
// (seed, table, original row, step) for the rows, step + 2^62 for the slots,
// column = the element's index in the row's slots (slot-major: Adam's v of
// element d is column dim + d).

enum class SlotKind { kAdam, kFtrl, kRowwiseAdagrad };

struct SlotCase {
  SlotKind kind;
  bool bf16_rows;
};

std::string SlotCaseString(const SlotCase& c) {
  const char* kind = c.kind == SlotKind::kAdam   ? "Adam"
                     : c.kind == SlotKind::kFtrl ? "Ftrl"
                                                 : "RowwiseAdagrad";
  return std::string(kind) + (c.bf16_rows ? "Bf16Rows" : "Fp32Rows");
}
std::string SlotCaseName(const ::testing::TestParamInfo<SlotCase>& info) {
  return SlotCaseString(info.param);
}
void PrintTo(const SlotCase& c, std::ostream* os) { *os << SlotCaseString(c); }

class Bf16SlotsTest : public ::testing::TestWithParam<SlotCase> {};

TEST_P(Bf16SlotsTest, UpdateIsFp32ThenStochasticRounding) {
  const SlotCase c = GetParam();
  std::unique_ptr<Optimizer> opt;
  switch (c.kind) {
    case SlotKind::kAdam:
      opt = std::make_unique<AdamOptimizer>(0.05f, 0.8f, 0.95f, 1e-3f);
      break;
    case SlotKind::kFtrl:
      opt = std::make_unique<FtrlOptimizer>(0.3f, -0.6f, 0.1f, 0.01f, 0.05f, 0.2f);
      break;
    case SlotKind::kRowwiseAdagrad:
      opt = std::make_unique<RowwiseAdagradOptimizer>(0.2f, 0.05f, 1e-6f);
      break;
  }
  config::TableConfig table;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      std::string("name: 't' vocab_size: 23 dim: 20 slot_dtype: BF16 dtype: ") +
          (c.bf16_rows ? "BF16" : "FP32"),
      &table));
  constexpr int kTable = 3, kResidue = 1, kTotalSc = 2;
  constexpr uint64_t kSeed = 41;
  TableShard shard(table, kTable, kResidue, kTotalSc, kSeed, *opt);
  ASSERT_TRUE(shard.bf16_slots());
  ASSERT_EQ(shard.bf16(), c.bf16_rows);
  const int dim = shard.dim();
  const int64_t stride = shard.slot_stride();
  ASSERT_EQ(stride, c.kind == SlotKind::kRowwiseAdagrad ? 1 : 2 * dim);
  const int64_t rows = shard.local_rows();
  ASSERT_EQ(rows, 11);
  // The reference state: what the shard holds, widened.
  std::vector<float> ref_rows(rows * dim), ref_slots(rows * stride);
  shard.ReadRows(0, rows, ref_rows.data());
  shard.ReadSlots(0, rows, ref_slots.data());

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int64_t rounded = 0, off_grid = 0, not_nearest = 0;
  for (int step = 1; step <= 4; ++step) {
    const float lr = 0.5f + 0.25f * step;  // another rate each step
    for (int64_t r = 0; r < rows; ++r) {
      if ((r + step) % 3 == 0) continue;  // untouched this step
      std::vector<float> g(dim);
      for (float& v : g) v = u(rng);
      shard.Update(r, g, step, lr);
      std::span<float> w(ref_rows.data() + r * dim, dim);
      std::span<float> sl(ref_slots.data() + r * stride, stride);
      opt->Apply(w, sl, g, step, lr);
      const int64_t original = shard.OriginalRow(r);
      ASSERT_EQ(original, 2 * r + 1);
      if (c.bf16_rows) {
        const uint64_t key = base::test_util::RoundingKeyReference(kSeed, kTable, original, step);
        for (int d = 0; d < dim; ++d) {
          w[d] = base::Bf16ToFloat(base::test_util::NarrowReference(w[d], key, d));
        }
      }
      const uint64_t key =
          base::test_util::RoundingKeyReference(kSeed, kTable, original, step + (int64_t{1} << 62));
      for (int64_t i = 0; i < stride; ++i) {
        const uint16_t bits = base::test_util::NarrowReference(sl[i], key, i);
        ++rounded;
        off_grid += base::Bf16ToFloat(bits) != sl[i];
        not_nearest += bits != base::FloatToBf16Nearest(sl[i]);
        sl[i] = base::Bf16ToFloat(bits);
      }
    }
    // Every row and slot, touched or not, equals the reference bit for bit.
    std::vector<float> got_rows(rows * dim), got_slots(rows * stride);
    shard.ReadRows(0, rows, got_rows.data());
    shard.ReadSlots(0, rows, got_slots.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int d = 0; d < dim; ++d) {
        ASSERT_EQ(got_rows[r * dim + d], ref_rows[r * dim + d])
            << "step " << step << " row " << r << " element " << d;
      }
      for (int64_t i = 0; i < stride; ++i) {
        ASSERT_EQ(got_slots[r * stride + i], ref_slots[r * stride + i])
            << "step " << step << " row " << r << " slot column " << i;
      }
    }
  }
  // The slots moved off the bf16 grid (so their rounding was exercised) and
  // the stochastic rounding differs from nearest in a good share of them.
  EXPECT_GT(off_grid, rounded / 2);
  EXPECT_GT(not_nearest, off_grid / 10);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, Bf16SlotsTest,
                         ::testing::Values(SlotCase{SlotKind::kAdam, false},
                                           SlotCase{SlotKind::kAdam, true},
                                           SlotCase{SlotKind::kFtrl, false},
                                           SlotCase{SlotKind::kFtrl, true},
                                           SlotCase{SlotKind::kRowwiseAdagrad, false},
                                           SlotCase{SlotKind::kRowwiseAdagrad, true}),
                         SlotCaseName);

}  // namespace
}  // namespace lemrt::device
