#include "runtime/observability/metrics_csv.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(MetricsCsvTest, HeaderAndRows) {
  const std::string path = ::testing::TempDir() + "/metrics_csv_test.csv";
  auto csv = MetricsCsv::Open(path);
  ASSERT_TRUE(csv.ok()) << csv.status();
  MetricsRow a;
  a.step = 10;
  a.loss = 0.5;
  a.samples_per_sec = 1000;
  a.host_ms = 1;
  a.sc_forward_ms = 2;
  a.tc_ms = 3;
  a.sc_backward_ms = 4;
  a.exchange_ms = 0.5;
  a.step_ms = 10;
  a.dense_lr = 0.05;
  a.embedding_lr = 0.125;
  MetricsRow b = a;
  b.step = 20;
  b.eval_auc = 0.75;
  b.eval_logloss = 0.45;
  b.eval_ne = 0.875;
  b.eval_gauc = 0.625;  // calibration left undefined
  ASSERT_TRUE((*csv)->Append(a).ok());
  ASSERT_TRUE((*csv)->Append(b).ok());
  const std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], kMetricsCsvHeader);
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  EXPECT_EQ(header.size(), 16u);
  const std::vector<std::string> ra = absl::StrSplit(lines[1], ',');
  const std::vector<std::string> rb = absl::StrSplit(lines[2], ',');
  ASSERT_EQ(ra.size(), header.size());
  ASSERT_EQ(rb.size(), header.size());
  EXPECT_EQ(ra[0], "10");
  EXPECT_EQ(ra[3], "");  // not evaluated
  EXPECT_EQ(ra[4], "");
  EXPECT_DOUBLE_EQ(std::stod(rb[3]), 0.75);
  EXPECT_DOUBLE_EQ(std::stod(rb[4]), 0.45);
  EXPECT_EQ(header[13], "eval_ne");
  EXPECT_EQ(ra[13], "");
  EXPECT_DOUBLE_EQ(std::stod(rb[13]), 0.875);
  EXPECT_EQ(rb[14], "");  // eval_calibration undefined
  EXPECT_DOUBLE_EQ(std::stod(rb[15]), 0.625);
  EXPECT_DOUBLE_EQ(std::stod(ra[7]), 3);  // tc_ms
  EXPECT_DOUBLE_EQ(std::stod(ra[10]), 10);
  EXPECT_EQ(header[11], "dense_lr");
  EXPECT_DOUBLE_EQ(std::stod(ra[11]), 0.05);
  EXPECT_DOUBLE_EQ(std::stod(ra[12]), 0.125);
  std::remove(path.c_str());
}

TEST(MetricsCsvTest, MultiTaskColumnsFollowPerTaskEmptyWhenNotEvaluated) {
  const std::string path = ::testing::TempDir() + "/metrics_csv_tasks_test.csv";
  auto csv = MetricsCsv::Open(path, {"click", "buy"});
  ASSERT_TRUE(csv.ok()) << csv.status();
  MetricsRow a;
  a.step = 5;
  MetricsRow b = a;
  b.eval_tasks = {0.75, 0.5, 0.9, 1.0, std::nullopt, 0.625, 0.25, std::nullopt, 2.0, 0.5};
  ASSERT_TRUE((*csv)->Append(a).ok());
  ASSERT_TRUE((*csv)->Append(b).ok());
  const std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 3u);
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  ASSERT_EQ(header.size(), 26u);
  EXPECT_EQ(header[16], "eval_auc_click");
  EXPECT_EQ(header[20], "eval_gauc_click");
  EXPECT_EQ(header[21], "eval_auc_buy");
  EXPECT_EQ(header[25], "eval_gauc_buy");
  const std::vector<std::string> ra = absl::StrSplit(lines[1], ',');
  const std::vector<std::string> rb = absl::StrSplit(lines[2], ',');
  ASSERT_EQ(ra.size(), 26u);
  ASSERT_EQ(rb.size(), 26u);
  for (int k = 16; k < 26; ++k) EXPECT_EQ(ra[k], "") << k;
  EXPECT_DOUBLE_EQ(std::stod(rb[16]), 0.75);
  EXPECT_EQ(rb[20], "");  // click's GAUC undefined
  EXPECT_DOUBLE_EQ(std::stod(rb[21]), 0.625);
  EXPECT_EQ(rb[23], "");
  EXPECT_DOUBLE_EQ(std::stod(rb[25]), 0.5);
  std::remove(path.c_str());
}

TEST(MetricsCsvTest, UnwritablePathIsAnError) {
  auto csv = MetricsCsv::Open("/nonexistent-dir/metrics.csv");
  ASSERT_FALSE(csv.ok());
  EXPECT_EQ(csv.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(csv.status().message().find("/nonexistent-dir/metrics.csv"), std::string::npos);
}

TEST(ProgressLineTest, StepRateAndEta) {
  EXPECT_EQ(ProgressLine(50, 500, 0.61234, 123456.4, 0.1),
            "step 50/500  loss 0.61234  samples/s 123456  ETA 45s");
  EXPECT_EQ(ProgressLine(10, 100, 0.5, 10, 2.0), "step 10/100  loss 0.50000  samples/s 10  ETA 3m00s");
  EXPECT_EQ(ProgressLine(0, 10000, 0.5, 10, 1.0), "step 0/10000  loss 0.50000  samples/s 10  ETA 2h46m");
  EXPECT_EQ(ProgressLine(100, 100, 0.5, 10, 1.0), "step 100/100  loss 0.50000  samples/s 10  ETA 0s");
}

}  // namespace
}  // namespace lemrt::runtime
