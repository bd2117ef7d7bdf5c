#include "runtime/checkpoint/step_dirs.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/checkpoint/durable_files.h"

namespace lemrt::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string TempDir() {
  char tmpl[] = "/tmp/step_dirs_testXXXXXX";
  return mkdtemp(tmpl);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A step directory holding one file "data" with `contents` and a manifest.
void MakeStep(const std::string& dir, const std::string& contents) {
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/data", contents).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/" + kManifestName, "m").ok());
}

std::vector<std::string> Names(const std::string& root) {
  std::vector<std::string> names;
  for (const char* prefix : {"", kIncompletePrefix, kReplacedPrefix, kDiscardPrefix}) {
    for (int64_t step : {10, 20, 30}) {
      const std::string name = prefix + StepDirName(step);
      if (PathExists(root + "/" + name)) names.push_back(name);
    }
  }
  return names;
}

TEST(StepDirsTest, ParsesOnlyStepNames) {
  EXPECT_EQ(ParseStepDirName("step-00000012"), 12);
  EXPECT_EQ(ParseStepDirName("step-123456789012345678"), 123456789012345678);
  EXPECT_EQ(ParseStepDirName("step-1234567890123456789"), std::nullopt);  // 19 digits
  EXPECT_EQ(ParseStepDirName("step-"), std::nullopt);
  EXPECT_EQ(ParseStepDirName("step-12a"), std::nullopt);
  EXPECT_EQ(ParseStepDirName("incomplete-step-00000012"), std::nullopt);
  EXPECT_EQ(ParseStepDirName("incomplete-step-00000012", kIncompletePrefix), 12);
  EXPECT_EQ(ParseStepDirName("step-00000012", kIncompletePrefix), std::nullopt);
}

TEST(StepDirsTest, PublishesANewStepByOneRename) {
  const std::string root = TempDir();
  auto work = BeginStepDir(root, 20);
  ASSERT_TRUE(work.ok()) << work.status();
  EXPECT_EQ(*work, root + "/incomplete-step-00000020");
  ASSERT_TRUE(WriteFileAtomically(*work + "/data", "new").ok());
  // Unpublished: not a checkpoint yet.
  EXPECT_THAT(*ListPublishedSteps(root), IsEmpty());
  EXPECT_FALSE(ResolveCheckpointDir(root).ok());
  ASSERT_TRUE(PublishStepDir(root, 20).ok());
  EXPECT_THAT(Names(root), ElementsAre("step-00000020"));
  EXPECT_EQ(ReadAll(root + "/step-00000020/data"), "new");
}

// Saving an existing step again: exchanged in one step, or (file systems
// without RENAME_EXCHANGE) two renames; either way the new contents end up
// under the name and nothing else is left.
TEST(StepDirsTest, RepublishReplacesTheOldStepOnlyWhenTheNewOneIsComplete) {
  for (bool exchange : {true, false}) {
    const std::string root = TempDir();
    MakeStep(root + "/step-00000020", "old");
    auto work = BeginStepDir(root, 20);
    ASSERT_TRUE(work.ok());
    ASSERT_TRUE(WriteFileAtomically(*work + "/data", "new").ok());
    // Until published, the old checkpoint is untouched.
    EXPECT_EQ(ReadAll(root + "/step-00000020/data"), "old");
    std::vector<std::string> points;
    ASSERT_TRUE(PublishStepDir(root, 20, exchange,
                               [&](std::string_view p) { points.emplace_back(p); })
                    .ok());
    EXPECT_EQ(ReadAll(root + "/step-00000020/data"), "new") << exchange;
    EXPECT_THAT(Names(root), ElementsAre("step-00000020")) << exchange;
    if (exchange) {
      EXPECT_THAT(points, ElementsAre("exchanged"));
    } else {
      EXPECT_THAT(points, ElementsAre("renamed_old_away", "renamed_new_in"));
    }
  }
}

// What a crash leaves at each point, and what the next start makes of it.
TEST(StepDirsTest, CleanLeftoversRecoversEveryCrashPoint) {
  const std::string root = TempDir();
  // A save that died before publishing.
  MakeStep(root + "/step-00000010", "ten");
  ASSERT_TRUE(MakeDirs(root + "/incomplete-step-00000020").ok());
  // A crash between the two renames of a re-save of step 30: the old step-30
  // is only under replaced-, the complete new one still incomplete-.
  MakeStep(root + "/replaced-step-00000030", "old30");
  MakeStep(root + "/incomplete-step-00000030", "new30");
  // Retention died while deleting step 10's neighbour.
  ASSERT_TRUE(MakeDirs(root + "/discard-step-00000020").ok());
  auto done = CleanLeftovers(root);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->size(), 4u);
  EXPECT_THAT(Names(root), ElementsAre("step-00000010", "step-00000030"));
  EXPECT_EQ(ReadAll(root + "/step-00000030/data"), "old30");
  // A replaced- whose step exists (crash after the second rename) goes.
  MakeStep(root + "/replaced-step-00000030", "older");
  done = CleanLeftovers(root);
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_THAT((*done)[0], HasSubstr("superseded"));
  EXPECT_EQ(ReadAll(root + "/step-00000030/data"), "old30");
  EXPECT_THAT(Names(root), ElementsAre("step-00000010", "step-00000030"));
  // Nothing to do, and a missing root, are fine.
  EXPECT_THAT(*CleanLeftovers(root), IsEmpty());
  EXPECT_THAT(*CleanLeftovers(root + "/none"), IsEmpty());
}

TEST(StepDirsTest, RetireRenamesBeforeDeleting) {
  const std::string root = TempDir();
  MakeStep(root + "/step-00000010", "ten");
  std::vector<std::string> seen;
  ASSERT_TRUE(RetireStepDir(root, 10, [&](std::string_view p) {
                seen.emplace_back(p);
                // At the hook the name is gone and the data is under discard-.
                EXPECT_FALSE(PathExists(root + "/step-00000010"));
                EXPECT_TRUE(PathExists(root + "/discard-step-00000010/data"));
              }).ok());
  EXPECT_THAT(seen, ElementsAre("retiring"));
  EXPECT_THAT(Names(root), IsEmpty());
  EXPECT_FALSE(RetireStepDir(root, 10).ok());  // no such step
}

TEST(StepDirsTest, RetentionKeepsTheNewestAndThePinned) {
  const std::vector<int64_t> steps = {30, 10, 50, 20, 40};
  EXPECT_THAT(StepsToRetire(steps, 2, {}), ElementsAre(30, 20, 10));
  EXPECT_THAT(StepsToRetire(steps, 2, {20}), ElementsAre(30, 10));
  EXPECT_THAT(StepsToRetire(steps, 5, {}), IsEmpty());
  EXPECT_THAT(StepsToRetire(steps, 9, {}), IsEmpty());
  EXPECT_THAT(StepsToRetire(steps, 0, {}), IsEmpty());  // keep all
  EXPECT_THAT(StepsToRetire(steps, 1, {10, 20, 30, 40}), IsEmpty());
  EXPECT_THAT(StepsToRetire({}, 1, {}), IsEmpty());
}

TEST(StepDirsTest, CandidatesAreNewestFirstAndOnlyPublished) {
  const std::string root = TempDir();
  EXPECT_EQ(CheckpointCandidates(root).status().code(), absl::StatusCode::kNotFound);
  MakeStep(root + "/step-00000010", "a");
  MakeStep(root + "/step-00000030", "b");
  ASSERT_TRUE(MakeDirs(root + "/step-00000020").ok());  // no manifest
  MakeStep(root + "/incomplete-step-00000040", "c");
  ASSERT_TRUE(WriteFileAtomically(root + "/step-00000050", "a file, not a step").ok());
  auto c = CheckpointCandidates(root);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(*c, ElementsAre(root + "/step-00000030", root + "/step-00000020",
                              root + "/step-00000010"));
  EXPECT_THAT(*CheckpointCandidates(root + "/step-00000010"),
              ElementsAre(root + "/step-00000010"));
  EXPECT_EQ(*ResolveCheckpointDir(root), root + "/step-00000030");
}

TEST(StepDirsTest, RemoveTreeRemovesLinksNotTheirTargets) {
  const std::string root = TempDir();
  const std::string outside = TempDir();
  ASSERT_TRUE(WriteFileAtomically(outside + "/keep", "x").ok());
  ASSERT_TRUE(MakeDirs(root + "/a/b").ok());
  ASSERT_TRUE(WriteFileAtomically(root + "/a/b/f", "x").ok());
  ASSERT_EQ(symlink(outside.c_str(), (root + "/a/link").c_str()), 0);
  ASSERT_TRUE(RemoveTree(root + "/a").ok());
  EXPECT_FALSE(PathExists(root + "/a"));
  EXPECT_TRUE(PathExists(outside + "/keep"));
  EXPECT_TRUE(RemoveTree(root + "/a").ok());
}

}  // namespace
}  // namespace lemrt::checkpoint
