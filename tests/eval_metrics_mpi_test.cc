// The eval metrics across real ranks (run at 1 and 3): every rank scores its
// slices of the eval chunks as the trainer does (with masked padding rows,
// soft labels and rows with no group), and EvalScores::Finish gives AUC, log
// loss, NE, calibration and GAUC equal, bit for bit, to a plain reference
// computed in the test over all rows in row order — so the same at every
// world size. One-class and empty eval sets leave NE and GAUC undefined. A
// two-task set (the second task's label missing on most rows) gives each
// task the metrics of the plain reference over its labelled rows.
#include <mpi.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/auc.h"
#include "base/random.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/eval/eval_scores.h"

namespace lemrt::runtime {
namespace {

constexpr int kGlobalBatch = 24;
constexpr int kChunks = 5;
constexpr int64_t kRows = kGlobalBatch * kChunks - 7;  // the last chunk is partial

struct Row {
  float prob, label;
  int64_t group;  // -1: no value for the group feature
};

Row RowAt(int64_t r, bool one_class) {
  base::CounterRng rng(1000 + r);
  Row row;
  row.group = rng.NextBelow(9) == 0 ? -1 : static_cast<int64_t>(rng.NextBelow(12));
  row.prob = static_cast<float>(rng.NextBelow(16) + 1) / 18;
  const double p = row.group % 4 == 0 ? 0.0 : 0.15 + 0.6 * row.prob;
  row.label = one_class ? 0.0f : (r % 11 == 5 ? 0.5f : (rng.NextDouble() < p ? 1.0f : 0.0f));
  return row;
}

// This rank's slice of chunk c as a batch (feature 1 holds the group),
// with the probabilities the "model" gave it.
void Slice(int c, int rank, int world, bool one_class, host::Batch* b, std::vector<float>* probs) {
  const int local = kGlobalBatch / world;
  b->Resize(local, 1, 2);
  b->mask.assign(local, 0);
  probs->assign(local, 0);
  for (int i = 0; i < local; ++i) {
    const int64_t r = int64_t{c} * kGlobalBatch + rank * local + i;
    b->offsets[0][i + 1] = b->offsets[0][i];
    b->offsets[1][i + 1] = b->offsets[1][i];
    if (r >= kRows) continue;
    const Row row = RowAt(r, one_class);
    b->mask[i] = 1;
    b->labels[i] = row.label;
    (*probs)[i] = row.prob;
    if (row.group >= 0) {
      b->ids[1].push_back(row.group);
      ++b->offsets[1][i + 1];
    }
  }
}

EvalResult Score(bool one_class, int rows_cap) {
  auto comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  CHECK(comm.ok());
  const int world = (*comm)->size();
  EvalScores scores;
  scores.set_group_feature(1);
  host::Batch b;
  std::vector<float> probs;
  for (int c = 0; c * kGlobalBatch < rows_cap; ++c) {
    Slice(c, (*comm)->rank(), world, one_class, &b, &probs);
    scores.Add(b, probs, int64_t{c} * kGlobalBatch + (*comm)->rank() * (kGlobalBatch / world));
  }
  auto r = scores.Finish(**comm, /*has_teacher=*/false, nullptr);
  CHECK(r.ok()) << r.status();
  return *r;
}

TEST(EvalMetricsTest, EqualThePlainReferenceBitForBit) {
  std::vector<float> p, y;
  std::vector<int64_t> g;
  for (int64_t r = 0; r < kRows; ++r) {
    const Row row = RowAt(r, false);
    p.push_back(row.prob);
    y.push_back(row.label);
    g.push_back(row.group);
  }
  double predicted = 0, actual = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    predicted += p[i];
    actual += y[i];
  }
  const double logloss = base::LogLoss(p, y);
  const double mean = actual / static_cast<double>(y.size());
  const double entropy = -(mean * std::log(mean) + (1 - mean) * std::log(1 - mean));
  // GAUC: groups with both classes, their pair-count AUC weighted by rows.
  std::map<int64_t, std::pair<std::vector<float>, std::vector<float>>> groups;
  for (size_t i = 0; i < p.size(); ++i) {
    if (g[i] >= 0) {
      groups[g[i]].first.push_back(p[i]);
      groups[g[i]].second.push_back(y[i]);
    }
  }
  double weighted = 0, weight = 0;
  int used = 0;
  for (const auto& [key, rows] : groups) {
    double good = 0, pairs = 0;
    for (size_t i = 0; i < rows.first.size(); ++i) {
      for (size_t j = 0; j < rows.first.size(); ++j) {
        if (rows.second[i] > 0.5f && rows.second[j] <= 0.5f) {
          ++pairs;
          good += rows.first[i] > rows.first[j] ? 1 : rows.first[i] == rows.first[j] ? 0.5 : 0;
        }
      }
    }
    if (pairs == 0) continue;
    weighted += rows.first.size() * good / pairs;
    weight += rows.first.size();
    ++used;
  }
  const EvalResult e = Score(false, kRows);
  EXPECT_EQ(e.samples, kRows);
  EXPECT_EQ(e.auc, base::Auc(p, y));
  EXPECT_EQ(e.logloss, logloss);
  EXPECT_NEAR(e.ne, logloss / entropy, 1e-12);
  EXPECT_EQ(e.ne, logloss / base::BaseRateEntropy(y));  // the same sums in the same order
  EXPECT_EQ(e.calibration, predicted / actual);
  EXPECT_NEAR(e.gauc, weighted / weight, 1e-12);
  EXPECT_EQ(e.gauc, base::GroupAuc(p, y, g).gauc);
  EXPECT_EQ(e.gauc_groups, used);
  EXPECT_GT(used, 3);
  EXPECT_LT(used, 12);  // groups 0, 4 and 8 have no positive
}

TEST(EvalMetricsTest, OneClassAndEmptySetsLeaveThemUndefined) {
  const EvalResult one = Score(true, kRows);
  EXPECT_TRUE(std::isnan(one.auc));
  EXPECT_TRUE(std::isnan(one.ne));           // the base rate's entropy is 0
  EXPECT_TRUE(std::isnan(one.calibration));  // no positive label
  EXPECT_TRUE(std::isnan(one.gauc));
  EXPECT_EQ(one.gauc_groups, 0);
  EXPECT_EQ(FormatEvalMetrics(one).find("  ne "), std::string::npos);
  const EvalResult none = Score(false, 0);
  EXPECT_EQ(none.samples, 0);
  EXPECT_TRUE(std::isnan(none.ne));
  EXPECT_TRUE(std::isnan(none.calibration));
  EXPECT_TRUE(std::isnan(none.gauc));
}

// Task 1 of row r: labelled on every third row, its own probability.
Row SecondTask(int64_t r) {
  Row row = RowAt(r + 5000, false);
  if (r % 3 != 0) row.label = std::numeric_limits<float>::quiet_NaN();
  return row;
}

TEST(EvalMetricsTest, EachTaskEqualsThePlainReferenceOverItsLabelledRows) {
  auto comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  CHECK(comm.ok());
  const int world = (*comm)->size();
  const int local = kGlobalBatch / world;
  EvalScores scores;
  scores.set_tasks({"click", "buy"});
  scores.set_group_feature(1);
  host::Batch b;
  std::vector<float> probs, two(2 * local);
  for (int c = 0; c < kChunks; ++c) {
    Slice(c, (*comm)->rank(), world, false, &b, &probs);
    host::Batch wide = b;
    wide.Resize(local, 1, 2, 2);
    wide.offsets = b.offsets;
    wide.ids = b.ids;
    wide.mask = b.mask;
    for (int i = 0; i < local; ++i) {
      const int64_t r = int64_t{c} * kGlobalBatch + (*comm)->rank() * local + i;
      const Row second = SecondTask(r);
      wide.labels[2 * i] = b.labels[i];
      wide.labels[2 * i + 1] = second.label;
      two[2 * i] = probs[i];
      two[2 * i + 1] = second.prob;
    }
    scores.Add(wide, two, int64_t{c} * kGlobalBatch + (*comm)->rank() * local);
  }
  Predictions predictions;
  auto e = scores.Finish(**comm, /*has_teacher=*/false, &predictions);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->tasks.size(), 2u);
  for (int t = 0; t < 2; ++t) {
    std::vector<float> p, y;
    std::vector<int64_t> g;
    for (int64_t r = 0; r < kRows; ++r) {
      const Row row = t == 0 ? RowAt(r, false) : SecondTask(r);
      if (std::isnan(row.label)) continue;
      p.push_back(row.prob);
      y.push_back(row.label);
      g.push_back(RowAt(r, false).group);
    }
    const EvalResult& task = e->tasks[t];
    EXPECT_EQ(task.task, t == 0 ? "click" : "buy");
    EXPECT_EQ(task.samples, kRows);
    EXPECT_EQ(task.labelled, static_cast<int64_t>(y.size()));
    EXPECT_EQ(task.auc, base::Auc(p, y)) << t;
    EXPECT_EQ(task.logloss, base::LogLoss(p, y)) << t;
    EXPECT_EQ(task.ne, task.logloss / base::BaseRateEntropy(y)) << t;
    EXPECT_EQ(task.gauc, base::GroupAuc(p, y, g).gauc) << t;
  }
  EXPECT_EQ(e->tasks[1].labelled, (kRows + 2) / 3);
  EXPECT_EQ(e->auc, e->tasks[0].auc);
  EXPECT_NE(FormatEvalMetrics(*e).find("task buy: auc "), std::string::npos)
      << FormatEvalMetrics(*e);
  if ((*comm)->rank() == 0) {
    ASSERT_EQ(predictions.tasks, 2);
    ASSERT_EQ(predictions.rows.size(), static_cast<size_t>(kRows));
    for (int64_t r = 0; r < kRows; ++r) {
      EXPECT_EQ(predictions.rows[r], r);
      EXPECT_EQ(predictions.probabilities[2 * r + 1], SecondTask(r).prob);
    }
  }
}

}  // namespace
}  // namespace lemrt::runtime
