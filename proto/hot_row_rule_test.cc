#include "proto/hot_row_rule.h"

#include "gtest/gtest.h"

namespace lemrt::config {
namespace {

TableConfig Table(int32_t hot_rows, std::initializer_list<int64_t> ids) {
  TableConfig t;
  t.set_name("t");
  t.set_vocab_size(100);
  t.set_hot_rows(hot_rows);
  for (int64_t id : ids) t.add_hot_row_ids(id);
  return t;
}

TEST(HotRowRuleTest, NoneWithoutCountOrIds) {
  EXPECT_EQ(HotRowSourceOf(Table(0, {})), HotRowSource::kNone);
  EXPECT_EQ(HotRowCount(Table(0, {})), 0);
  EXPECT_EQ(HotRowSourceOf(TableConfig()), HotRowSource::kNone);
}

TEST(HotRowRuleTest, CountAloneIsCounted) {
  EXPECT_EQ(HotRowSourceOf(Table(5, {})), HotRowSource::kCounted);
  EXPECT_EQ(HotRowCount(Table(5, {})), 5);
}

TEST(HotRowRuleTest, ListedIdsWinOverTheCount) {
  EXPECT_EQ(HotRowSourceOf(Table(0, {7, 3})), HotRowSource::kListed);
  EXPECT_EQ(HotRowCount(Table(0, {7, 3})), 2);
  // A count that disagrees (rejected by the config checks) does not change
  // what the rule says: the list wins.
  EXPECT_EQ(HotRowSourceOf(Table(9, {7, 3, 1})), HotRowSource::kListed);
  EXPECT_EQ(HotRowCount(Table(9, {7, 3, 1})), 3);
}

TEST(HotRowRuleTest, NegativeCountIsNoneButStaysVisibleToTheChecks) {
  EXPECT_EQ(HotRowSourceOf(Table(-2, {})), HotRowSource::kNone);
  EXPECT_EQ(HotRowCount(Table(-2, {})), -2);
}

}  // namespace
}  // namespace lemrt::config
