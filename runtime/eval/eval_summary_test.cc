#include "runtime/eval/eval_summary.h"

#include <string>

#include "gtest/gtest.h"
#include "runtime/observability/summary_writer.h"

namespace lemrt::runtime {
namespace {

// The summary JSON's keys of `s.eval` that hold a metric (teacher_* aside).
bool JsonHasKey(const summary::RunSummary& s, const std::string& key) {
  return SummaryJson(s).find("\"" + key + "\":") != std::string::npos;
}

TEST(EvalSummaryTest, NoEvaluationGivesSamplesZeroAndNoMetrics) {
  // What a run stopped by a signal passes: no final evaluation. The old
  // summary held auc 0.5, logloss / ne / calibration / gauc 0.
  summary::RunSummary s;
  FillEvalStats(EvalResult{}, s.mutable_eval());
  const summary::EvalStats& e = s.eval();
  EXPECT_EQ(e.samples(), 0);
  EXPECT_FALSE(e.has_auc());
  EXPECT_FALSE(e.has_logloss());
  EXPECT_FALSE(e.has_ne());
  EXPECT_FALSE(e.has_calibration());
  EXPECT_FALSE(e.has_gauc());
  EXPECT_FALSE(e.has_gauc_groups());
  EXPECT_EQ(e.tasks_size(), 0);
  EXPECT_TRUE(e.teacher_auc().has_null_value());
  EXPECT_TRUE(e.teacher_logloss().has_null_value());
  for (const char* key : {"auc", "logloss", "ne", "calibration", "gauc", "gauc_groups"}) {
    EXPECT_FALSE(JsonHasKey(s, key)) << key << " in " << SummaryJson(s);
  }
  EXPECT_TRUE(JsonHasKey(s, "teacher_auc"));
  // The table says why the AUC is absent.
  EXPECT_NE(SummaryTable(s).find("absent (undefined for this eval set)"), std::string::npos);
  s.mutable_stopped()->set_signal("SIGTERM");
  EXPECT_NE(SummaryTable(s).find("absent (not evaluated: the run was stopped)"), std::string::npos)
      << SummaryTable(s);
}

TEST(EvalSummaryTest, DefinedMetricsArePresent) {
  EvalResult r;
  r.auc = 0.75;
  r.logloss = 0.5;
  r.ne = 0.9;
  r.calibration = 1.1;
  r.gauc = 0.7;
  r.gauc_groups = 12;
  r.samples = 100;
  r.labelled = 100;
  r.teacher_auc = 0.8;
  r.teacher_logloss = 0.45;
  summary::RunSummary s;
  FillEvalStats(r, s.mutable_eval());
  const summary::EvalStats& e = s.eval();
  EXPECT_EQ(e.auc(), 0.75);
  EXPECT_EQ(e.logloss(), 0.5);
  EXPECT_EQ(e.samples(), 100);
  EXPECT_EQ(e.ne(), 0.9);
  EXPECT_EQ(e.calibration(), 1.1);
  EXPECT_EQ(e.gauc(), 0.7);
  EXPECT_EQ(e.gauc_groups(), 12);
  EXPECT_EQ(e.teacher_auc().number_value(), 0.8);
  EXPECT_EQ(e.teacher_logloss().number_value(), 0.45);
  EXPECT_NE(SummaryTable(s).find("0.7500 / 0.8000"), std::string::npos) << SummaryTable(s);
}

TEST(EvalSummaryTest, OneClassLeavesOutTheAucAndTheUndefinedRest) {
  EvalResult r;
  r.logloss = 0.2;
  r.samples = 50;
  r.labelled = 50;
  r.one_class = true;
  summary::RunSummary s;
  FillEvalStats(r, s.mutable_eval());
  EXPECT_FALSE(s.eval().has_auc());
  EXPECT_EQ(s.eval().logloss(), 0.2);
  EXPECT_FALSE(s.eval().has_ne());
  EXPECT_FALSE(s.eval().has_calibration());
  EXPECT_FALSE(s.eval().has_gauc());
  EXPECT_EQ(s.eval().samples(), 50);
}

TEST(EvalSummaryTest, EachTaskFollowsTheSameRule) {
  EvalResult click;
  click.task = "click";
  click.auc = 0.7;
  click.logloss = 0.4;
  click.labelled = 10;
  EvalResult conversion;  // no labelled rows: nothing defined
  conversion.task = "conversion";
  EvalResult r = click;
  r.samples = 10;
  r.tasks = {click, conversion};
  summary::RunSummary s;
  FillEvalStats(r, s.mutable_eval());
  ASSERT_EQ(s.eval().tasks_size(), 2);
  EXPECT_EQ(s.eval().tasks(0).name(), "click");
  EXPECT_EQ(s.eval().tasks(0).auc(), 0.7);
  EXPECT_EQ(s.eval().tasks(0).labelled(), 10);
  const summary::TaskEvalStats& t = s.eval().tasks(1);
  EXPECT_EQ(t.name(), "conversion");
  EXPECT_FALSE(t.has_auc());
  EXPECT_FALSE(t.has_logloss());
  EXPECT_FALSE(t.has_ne());
  EXPECT_FALSE(t.has_calibration());
  EXPECT_FALSE(t.has_gauc());
  EXPECT_EQ(t.labelled(), 0);
}

}  // namespace
}  // namespace lemrt::runtime
