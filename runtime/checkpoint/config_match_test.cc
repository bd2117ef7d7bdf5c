#include "runtime/checkpoint/config_match.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"

namespace lemrt::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kBase[] = R"pb(
  tables { name: "a" vocab_size: 100 dim: 8 combiner: SUM }
  tables { name: "b" vocab_size: 50 dim: 8 combiner: MEAN optimizer { adagrad {} } }
  features { name: "fa" table: "a" }
  features { name: "fb" table: "b" }
  model { num_dense_features: 4 bottom_mlp: [ 8 ] top_mlp: [ 8, 1 ] }
  training { global_batch: 16 steps: 10 seed: 7 }
)pb";

config::RunConfig Config(const std::string& extra = "") {
  auto c = config::ParseConfig(kBase, "base", extra, 1);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

// The manifest fields a save of `c` records for these checks.
Manifest SavedBy(const config::RunConfig& c) {
  Manifest m;
  m.set_format_version(2);
  m.set_seed(c.training().seed());
  m.set_global_batch(c.training().global_batch());
  m.mutable_data()->set_source(DataSourceName(c));
  google::protobuf::TextFormat::PrintToString(c, m.mutable_config_text());
  const char* optimizers[] = {"sgd", "adagrad"};
  const int slots[] = {0, 1};
  for (int t = 0; t < c.tables_size(); ++t) {
    TableEntry* e = m.add_tables();
    e->set_name(c.tables(t).name());
    e->set_vocab_size(c.tables(t).vocab_size());
    e->set_dim(c.tables(t).dim());
    e->set_optimizer(optimizers[t]);
    e->set_slots_per_param(slots[t]);
  }
  m.mutable_dense()->set_optimizer("sgd");
  m.mutable_dense()->set_num_params(1000);
  return m;
}

TEST(ConfigMatchTest, SameConfigMatches) {
  const config::RunConfig c = Config();
  const Manifest m = SavedBy(c);
  EXPECT_TRUE(CheckManifestMatchesConfig(m, "d", c, 1000).ok());
  EXPECT_THAT(ConfigChangesSince(m, c), IsEmpty());
  EXPECT_TRUE(CheckResumeConfig(m, "d", c).ok());
  // Learning rates, steps and evaluation may change on resume.
  const config::RunConfig lr = Config("training { steps: 20 dense_learning_rate: 0.5 }");
  EXPECT_THAT(ConfigChangesSince(m, lr), IsEmpty());
}

TEST(ConfigMatchTest, ShapesAreAlwaysRefused) {
  const Manifest m = SavedBy(Config());
  absl::Status st = CheckManifestMatchesConfig(m, "d", Config("tables { name: \"c\" vocab_size: 5 dim: 8 }"), 1000);
  EXPECT_THAT(st.message(), HasSubstr("it has 2 tables, the config 3"));
  config::RunConfig dim = Config();
  dim.mutable_tables(0)->set_dim(16);
  st = CheckManifestMatchesConfig(m, "d", dim, 1000);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("table 'a' has dim 8 in the checkpoint, 16 in the config"));
  st = CheckManifestMatchesConfig(m, "d", Config(), 999);
  EXPECT_THAT(st.message(), HasSubstr("1000 dense parameters, the model 999"));
  st = CheckManifestMatchesConfig(m, "d", Config("training { global_batch: 32 }"), 1000);
  EXPECT_THAT(st.message(), HasSubstr("training.global_batch is 16"));
}

TEST(ConfigMatchTest, SeedCombinerAndDataSourceNeedAllowConfigChange) {
  const Manifest m = SavedBy(Config());
  config::RunConfig changed = Config("training { seed: 8 }");
  changed.mutable_tables(1)->set_combiner(config::TableConfig::SQRTN);
  changed.mutable_data()->mutable_synthetic()->set_zipf_exponent(1.5);
  EXPECT_THAT(ConfigChangesSince(m, changed),
              ElementsAre("training.seed 7 -> 8", "table 'b' combiner MEAN -> SQRTN",
                          "data.synthetic.zipf_exponent unset -> 1.5"));
  absl::Status st = CheckResumeConfig(m, "d", changed);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("training.seed 7 -> 8"));
  EXPECT_THAT(st.message(), HasSubstr("--allow_config_change"));
  changed.mutable_checkpoint()->set_allow_config_change(true);
  EXPECT_TRUE(CheckResumeConfig(m, "d", changed).ok());
}

TEST(ConfigMatchTest, DataSourceKindAndTrainingFilesAreCompared) {
  const Manifest m = SavedBy(Config("data { criteo { train_path: \"x.tsv\" eval_path: \"e.tsv\" } }"));
  // Another eval file is fine; another training file or source kind is not.
  EXPECT_THAT(ConfigChangesSince(
                  m, Config("data { criteo { train_path: \"x.tsv\" eval_path: \"other.tsv\" } }")),
              IsEmpty());
  EXPECT_THAT(ConfigChangesSince(m, Config("data { criteo { train_path: \"y.tsv\" } }")),
              ElementsAre("data.criteo.train_path \"x.tsv\" -> \"y.tsv\""));
  EXPECT_THAT(ConfigChangesSince(m, Config()), ElementsAre("data source criteo -> synthetic"));
}

// A format-1 manifest has no config text: seed and source kind only.
TEST(ConfigMatchTest, FormatOneManifestsCompareSeedAndSourceKind) {
  Manifest m = SavedBy(Config());
  m.clear_config_text();
  m.set_format_version(1);
  config::RunConfig changed = Config("training { seed: 9 }");
  changed.mutable_tables(0)->set_combiner(config::TableConfig::MEAN);
  EXPECT_THAT(ConfigChangesSince(m, changed), ElementsAre("training.seed 7 -> 9"));
}

}  // namespace
}  // namespace lemrt::checkpoint
