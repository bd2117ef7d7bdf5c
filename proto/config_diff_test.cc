#include "proto/config_diff.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"

namespace lemrt::config {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

RunConfig Parse(const std::string& text) {
  RunConfig c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  return c;
}

TEST(ConfigDiffTest, EqualConfigsHaveNoDifference) {
  const RunConfig a = Parse(R"pb(training { steps: 5 } tables { name: "a" dim: 8 })pb");
  EXPECT_THAT(FieldDifferences(a, a), IsEmpty());
}

TEST(ConfigDiffTest, NamesScalarStringAndUnsetFields) {
  const RunConfig a = Parse(
      R"pb(training { steps: 5 dense_learning_rate: 0.1 } tables { name: "a" dim: 8 })pb");
  const RunConfig b = Parse(R"pb(training { steps: 3 } tables { name: "b" dim: 8 })pb");
  EXPECT_THAT(FieldDifferences(a, b),
              ElementsAre("tables[0].name \"a\" -> \"b\"", "training.steps 5 -> 3",
                          "training.dense_learning_rate 0.1 -> unset"));
}

TEST(ConfigDiffTest, NamesRepeatedLengthsAndPrefixAndStopsAtTheMaximum) {
  const RunConfig a = Parse(R"pb(tables { name: "a" } tables { name: "b" })pb");
  const RunConfig b = Parse(R"pb(tables { name: "a" })pb");
  EXPECT_THAT(FieldDifferences(a, b, "run"), ElementsAre("run.tables: 2 -> 1 entries"));
  const RunConfig c = Parse(R"pb(tables { name: "x" dim: 1 vocab_size: 2 })pb");
  const RunConfig d = Parse(R"pb(tables { name: "y" dim: 2 vocab_size: 3 })pb");
  EXPECT_EQ(FieldDifferences(c, d, "", 2).size(), 2u);
}

TEST(ConfigDiffTest, AMessageSetOnOneSideNamesItsLeafFields) {
  const RunConfig a = Parse(R"pb(training { steps: 5 })pb");
  const RunConfig b = Parse(R"pb(training { steps: 5 } checkpoint { dir: "ck" })pb");
  EXPECT_THAT(FieldDifferences(a, b), ElementsAre("checkpoint.dir unset -> \"ck\""));
  const RunConfig c = Parse(R"pb(training { steps: 5 } checkpoint {})pb");
  EXPECT_THAT(FieldDifferences(a, c), ElementsAre("checkpoint unset -> set"));
}

}  // namespace
}  // namespace lemrt::config
