#include "proto/config_loader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config_check.h"

namespace lemrt::config {
namespace {

using ::testing::HasSubstr;

constexpr char kValid[] = R"pb(
topology { preset: TPU_V5P }
tables { name: "t0" vocab_size: 1000 dim: 16 combiner: SUM }
tables { name: "t1" vocab_size: 500 dim: 8 combiner: MEAN }
features { name: "f0" table: "t0" max_sequence_length: 3 }
features { name: "f1" table: "t1" }
model { num_dense_features: 4 bottom_mlp: [ 8, 16 ] top_mlp: [ 8, 1 ] }
training {
  global_batch: 64
  steps: 10
}
)pb";

std::string ErrorOf(std::string_view override_text, int world_size = 2) {
  auto c = ParseConfig(kValid, "model.pbtxt", override_text, world_size);
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(ConfigLoaderTest, ValidConfigGetsPresetValues) {
  auto c = ParseConfig(kValid, "model.pbtxt", "", 2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->topology().num_chips(), 2);
  EXPECT_EQ(c->topology().sparse_cores_per_chip(), 4);
  EXPECT_EQ(c->topology().tiles_per_sparse_core(), 16);
  EXPECT_EQ(c->topology().simd_width(), 8);
  EXPECT_EQ(c->topology().hbm_bytes(), int64_t{96} << 30);
  EXPECT_EQ(c->sparse_core().max_ids_per_chip_per_sample(), 64);
  EXPECT_FALSE(c->sparse_core().allow_id_dropping());
  EXPECT_TRUE(c->sparse_core().initialize_tables_on_host());
  EXPECT_FALSE(c->sparse_core().disable_full_embedding_pipelining());
}

TEST(ConfigLoaderTest, PresetsAndExplicitOverrides) {
  auto v4 = ParseConfig(kValid, "m", "topology { preset: TPU_V4 }", 1);
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->topology().hbm_bytes(), int64_t{32} << 30);
  auto tr = ParseConfig(kValid, "m",
                        "topology { preset: TRILLIUM tiles_per_sparse_core: 8 }"
                        "training { global_batch: 32 }",
                        1);
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_EQ(tr->topology().sparse_cores_per_chip(), 2);
  EXPECT_EQ(tr->topology().tiles_per_sparse_core(), 8);
}

// bf16: the Trillium preset's 16-wide bf16 SIMD; BF16 tables with hot-row
// replication, BF16 dense products (the CPU is checked when the dense model
// is built) and BF16 exchanges are accepted.
TEST(ConfigLoaderTest, Bf16OptionsAndTheirErrors) {
  auto tr = ParseConfig(kValid, "m", "topology { preset: TRILLIUM }", 1);
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_EQ(tr->topology().simd_width_bf16(), 16);
  auto v5 = ParseConfig(kValid, "m", "", 1);
  ASSERT_TRUE(v5.ok()) << v5.status();
  EXPECT_EQ(v5->topology().simd_width_bf16(), 8);
  std::string bf16_hot = kValid;
  bf16_hot.replace(bf16_hot.find("combiner: SUM }"), 15,
                   "combiner: SUM dtype: BF16 slot_dtype: BF16 hot_rows: 4 }");
  auto hot = ParseConfig(bf16_hot, "m", "", 1);
  EXPECT_TRUE(hot.ok()) << hot.status();  // replicas round as the owner would
  EXPECT_EQ(ErrorOf("model { dense_dtype: BF16 }"), "");
  auto bf16_dense = ParseConfig(kValid, "m", "model { dense_dtype: BF16 }", 1);
  ASSERT_TRUE(bf16_dense.ok()) << bf16_dense.status();
  EXPECT_EQ(bf16_dense->model().dense_dtype(), BF16);
  EXPECT_EQ(v5->model().dense_dtype(), FP32);
  EXPECT_EQ(ErrorOf("sparse_core { exchange_dtype: BF16 }"), "");
}

// slot_dtype BF16 where the optimizer keeps no slots (SGD, the default) is
// accepted with one warning naming the table; with Adagrad it is silent.
TEST(ConfigLoaderTest, Bf16SlotsWithoutSlotsWarn) {
  std::string sgd = kValid;
  sgd.replace(sgd.find("combiner: MEAN }"), 16, "combiner: MEAN slot_dtype: BF16 }");
  auto c = ParseConfig(sgd, "m", "", 1);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<std::string> warnings = TableWarnings(*c);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("tables[1].slot_dtype: table 't1'"));
  EXPECT_THAT(warnings[0], HasSubstr("(SGD) keeps no slots"));
  std::string ada = sgd;
  ada.replace(ada.find("slot_dtype: BF16 }"), 18, "slot_dtype: BF16 optimizer { adagrad {} } }");
  auto a = ParseConfig(ada, "m", "", 1);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(TableWarnings(*a).empty());
  auto plain = ParseConfig(kValid, "m", "", 1);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(TableWarnings(*plain).empty());
}

TEST(ConfigLoaderTest, OverrideMergesScalars) {
  auto c = ParseConfig(kValid, "m", "training { steps: 77 }", 2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->training().steps(), 77);
  EXPECT_EQ(c->training().global_batch(), 64);
}

TEST(ConfigLoaderTest, SyntaxErrorNamesFileLineColumn) {
  auto c = ParseConfig("tables { name: \"a\"\n  dim: x }", "bad.pbtxt", "", 1);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("bad.pbtxt:2:"));
}

TEST(ConfigLoaderTest, UnknownFieldIsAnError) {
  auto c = ParseConfig("tables { name: \"a\" dimm: 3 }", "bad.pbtxt", "", 1);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("bad.pbtxt:1:"));
  EXPECT_THAT(c.status().message(), HasSubstr("dimm"));
}

TEST(ConfigLoaderTest, UnknownTableNamesFeatureAndLine) {
  auto c = ParseConfig(std::string(kValid) + "features { name: \"f2\" table: \"nope\" }\n",
                       "model.pbtxt", "", 2);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("model.pbtxt:12:"));
  EXPECT_THAT(c.status().message(), HasSubstr("unknown table 'nope'"));
  EXPECT_THAT(c.status().message(), HasSubstr("features[2].table"));
}

TEST(ConfigLoaderTest, NonPositiveDim) {
  auto c = ParseConfig(std::string(kValid) +
                           "tables { name: \"t2\" vocab_size: 5 dim: 0 combiner: SUM }\n",
                       "model.pbtxt", "", 2);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("model.pbtxt:12:"));
  EXPECT_THAT(c.status().message(), HasSubstr("tables[2].dim"));
  EXPECT_THAT(c.status().message(), HasSubstr("must be > 0, got 0"));
}

TEST(ConfigLoaderTest, NumChipsMustMatchWorldSize) {
  EXPECT_THAT(ErrorOf("topology { num_chips: 4 }", 3),
              HasSubstr("is 4 but the MPI world size is 3"));
  EXPECT_THAT(ErrorOf("topology { num_chips: 4 }", 3), HasSubstr("--override:1:"));
}

// An error in a field the config file set is reported at the file, also when
// the override touches the same section (`training { steps: N }` must not
// move a file's training error to --override:1:1); a field the override set
// is reported at the override; appended repeated entries count after the
// file's.
TEST(ConfigLoaderTest, ErrorsPointAtTheTextThatSetTheField) {
  std::string file = kValid;
  file.replace(file.find("global_batch: 64"), 16, "global_batch: 60");
  auto c = ParseConfig(file, "model.pbtxt", "training { steps: 5 }", 2);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("model.pbtxt:9:3: training.global_batch"));
  c = ParseConfig(kValid, "model.pbtxt", "training { steps: 5 global_batch: 60 }", 2);
  EXPECT_THAT(c.status().message(), HasSubstr("--override:1:21: training.global_batch"));
  // tables[1] is the file's, tables[2] the override's first entry.
  c = ParseConfig(std::string(kValid) + "tables { name: \"t2\" vocab_size: 5 dim: 0 }",
                  "model.pbtxt", "tables { name: \"t3\" vocab_size: 5 dim: 8 }", 2);
  EXPECT_THAT(c.status().message(), HasSubstr("model.pbtxt:12:35: tables[2].dim"));
  c = ParseConfig(kValid, "model.pbtxt",
                  "tables { name: \"t2\" vocab_size: 5 dim: 8 }\n"
                  "tables { name: \"t3\" vocab_size: 5 dim: 0 }",
                  2);
  EXPECT_THAT(c.status().message(), HasSubstr("--override:2:"));
  EXPECT_THAT(c.status().message(), HasSubstr("tables[3].dim"));
}

// A field a tool's flag set (lemrt_train's --checkpoint_every=5) is reported
// at the flag, not at a line of the text the flag became; errors in the
// user's own --override keep their line and column, and a field the file or
// the override set deeper than the flag's text is theirs.
TEST(ConfigLoaderTest, ErrorsInFieldsAFlagSetNameTheFlag) {
  const std::vector<FlagOverride> every = {
      {"--checkpoint_every=5", "checkpoint { every_steps: 5 }"}};
  auto c = ParseConfig(kValid, "model.pbtxt", "", 2, nullptr, every);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--checkpoint_every=5: checkpoint.every_steps: is set but checkpoint.dir is not "
            "(nowhere to save)");
  // With a user's override before it: still the flag, not --override:2:.
  c = ParseConfig(kValid, "model.pbtxt", "training { steps: 5 }", 2, nullptr, every);
  EXPECT_THAT(c.status().message(), HasSubstr("--checkpoint_every=5: checkpoint.every_steps"));
  // The flag's dir and the override's every_steps: fine together.
  c = ParseConfig(
      kValid, "model.pbtxt", "checkpoint { every_steps: 5 }", 2, nullptr,
      std::vector<FlagOverride>{{"--checkpoint_dir=/ck", "checkpoint { dir: \"/ck\" }"}});
  EXPECT_TRUE(c.ok()) << c.status();
  // The user's override sets the offending field: its line and column.
  c = ParseConfig(kValid, "model.pbtxt", "training { steps: 5 }\ncheckpoint { every_steps: 5 }", 2,
                  nullptr,
                  std::vector<FlagOverride>{
                      {"--trace_json=t.json", "observability { trace_json: \"t.json\" }"}});
  EXPECT_THAT(c.status().message(), HasSubstr("--override:2:14: checkpoint.every_steps"));
  c = ParseConfig(
      kValid, "model.pbtxt", "", 2, nullptr,
      std::vector<FlagOverride>{
          {"--trace_steps=3", "observability { trace_first_step: 3 trace_last_step: 3 }"}});
  EXPECT_THAT(c.status().message(), HasSubstr("--trace_steps=3: observability.trace_first_step"));
  // A flag whose text is empty is left out.
  c = ParseConfig(kValid, "model.pbtxt", "", 2, nullptr, std::vector<FlagOverride>{{"--x", ""}});
  EXPECT_TRUE(c.ok()) << c.status();
}

// An adjustment (lemrt_vocab's: tables sized by the vocabularies it is
// about to write get a placeholder size) applies before the checks, and the
// errors it leaves still point at the file's or the override's own line.
TEST(ConfigLoaderTest, AnAdjustedConfigsErrorsPointAtItsText) {
  const std::string file = std::string(kValid) +
                           "tables { name: \"t2\" dim: 8 combiner: SUM }\n"
                           "tables { name: \"t3\" vocab_size: 5 dim: 0 combiner: SUM }\n";
  const ConfigAdjustment sized = [](RunConfig* c) {
    for (TableConfig& t : *c->mutable_tables()) {
      if (!t.has_vocab_size()) t.set_vocab_size(1);
    }
  };
  auto c = ParseConfig(file, "model.pbtxt", "", 2);
  EXPECT_THAT(c.status().message(), HasSubstr("model.pbtxt:12:"));  // t2 has no vocab_size
  c = ParseConfig(file, "model.pbtxt", "", 2, sized);
  EXPECT_THAT(c.status().message(), HasSubstr("model.pbtxt:13:35: tables[3].dim"));
  c = ParseConfig(kValid, "model.pbtxt", "tables { name: \"t2\" dim: 0 combiner: SUM }", 2, sized);
  EXPECT_THAT(c.status().message(), HasSubstr("--override:1:21: tables[2].dim"));
  c = ParseConfig(std::string(kValid) + "tables { name: \"t2\" dim: 8 combiner: SUM }\n",
                  "model.pbtxt", "", 2, sized);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tables(2).vocab_size(), 1);
}

TEST(ConfigLoaderTest, ConfigFileMustBeARegularFileOfBoundedSize) {
  auto c = LoadConfig("/tmp", "", 1);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("config file '/tmp' is a directory"));
  c = LoadConfig("/nonexistent.pbtxt", "", 1);
  EXPECT_THAT(c.status().message(), HasSubstr("cannot read config file '/nonexistent.pbtxt'"));
}

TEST(ConfigLoaderTest, GlobalBatchDivisibleByTotalSparseCores) {
  std::string e = ErrorOf("training { global_batch: 60 }", 2);
  EXPECT_THAT(e, HasSubstr("training.global_batch"));
  EXPECT_THAT(e, HasSubstr("60 is not divisible by the total number of SparseCores 8"));
}

// world_size_independent: every world size runs whole blocks of one block
// size; one that cannot is a config error naming the block and a fix.
TEST(ConfigLoaderTest, GradientBlockMustDivideTheLocalBatch) {
  const std::string on = "training { global_batch: 192 world_size_independent: true } ";
  for (int ranks : {1, 2, 4}) EXPECT_EQ(ErrorOf(on, ranks), "") << ranks;  // auto: 48
  EXPECT_THAT(ErrorOf(on, 3),
              HasSubstr("training.gradient_block_samples: the local batch of 64 samples "
                        "(global_batch 192 / 3 ranks) is not a whole number of 48-sample blocks "
                        "(auto: a quarter of the batch)"));
  EXPECT_THAT(ErrorOf(on, 3), HasSubstr("set gradient_block_samples to 16"));
  EXPECT_THAT(ErrorOf(on, 8), HasSubstr("set gradient_block_samples to 24"));
  const std::string block16 = on + "training { gradient_block_samples: 16 }";
  for (int ranks : {1, 2, 3, 4}) EXPECT_EQ(ErrorOf(block16, ranks), "") << ranks;
  EXPECT_THAT(ErrorOf(on + "training { gradient_block_samples: 96 }", 3),
              HasSubstr("not a whole number of 96-sample blocks (configured)"));
}

TEST(ConfigLoaderTest, SemanticErrors) {
  EXPECT_THAT(ErrorOf("training { steps: -1 }"), HasSubstr("training.steps"));
  EXPECT_THAT(ErrorOf("training { gradient_block_samples: 16 }"),
              HasSubstr("training.gradient_block_samples: applies only with "
                        "training.world_size_independent: true"));
  EXPECT_THAT(ErrorOf("training { dense_learning_rate: nan }"),
              HasSubstr("dense_learning_rate: must be a finite number > 0"));
  EXPECT_THAT(ErrorOf("training { embedding_learning_rate: -0.1 }"),
              HasSubstr("embedding_learning_rate"));
  EXPECT_THAT(ErrorOf("model { top_mlp: 4 }"), HasSubstr("must end in a layer of width 1"));
  EXPECT_THAT(ErrorOf("topology { sparse_cores_per_chip: 0 }"),
              HasSubstr("topology.sparse_cores_per_chip: must be > 0, got 0"));
  EXPECT_THAT(ErrorOf("sparse_core { max_ids_per_table { key: \"zz\" value: 3 } }"),
              HasSubstr("unknown table 'zz'"));
  EXPECT_THAT(ErrorOf("features { name: \"f0\" table: \"t0\" }"),
              HasSubstr("duplicate feature name 'f0'"));
  EXPECT_THAT(ErrorOf("features { name: \"f9\" table: \"t0\" max_sequence_length: 0 }"),
              HasSubstr("max_sequence_length"));
  EXPECT_THAT(ErrorOf("data { criteo { } }"), HasSubstr("data.criteo.train_path"));
  EXPECT_THAT(ErrorOf("data { synthetic { zipf_fraction: 2 } }"), HasSubstr("zipf_fraction"));
  EXPECT_THAT(ErrorOf("tables { name: \"t0\" vocab_size: 4 dim: 4 combiner: SUM }"),
              HasSubstr("duplicate table name 't0'"));
}

// Values the checks used to let through, each then failing later as
// "training diverged", a crash or nothing at all.
TEST(ConfigLoaderTest, NonFiniteAndUnboundedValuesAreErrors) {
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM "
                      "initializer { uniform { scale: inf } } }"),
              HasSubstr("uniform.scale must be a finite number >= 0, got inf"));
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM "
                      "initializer { normal { stddev: nan } } }"),
              HasSubstr("normal.stddev must be a finite number >= 0"));
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM "
                      "optimizer { ftrl { learning_rate_power: -inf } } }"),
              HasSubstr("ftrl.learning_rate_power: must be a finite number <= 0"));
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM "
                      "quantization { num_buckets: 4 low: -3e38 high: 3e38 } }"),
              HasSubstr("needs finite low < high"));
  EXPECT_EQ(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM "
                    "quantization { num_buckets: 4 low: -1e38 high: 1e38 } }"),
            "");
  for (const char* scale : {"teacher_id_scale", "teacher_dense_scale", "teacher_pair_scale",
                            "teacher_cross_scale"}) {
    EXPECT_THAT(ErrorOf(std::string("data { synthetic { ") + scale + ": nan } }"),
                HasSubstr(std::string("data.synthetic.") + scale + ": must be a finite number"));
  }
  EXPECT_THAT(ErrorOf("sparse_core { tile_threads: 100000 }"),
              HasSubstr("sparse_core.tile_threads: must be in [1, 256], got 100000"));
  EXPECT_EQ(ErrorOf("sparse_core { tile_threads: 256 }"), "");
  EXPECT_THAT(ErrorOf("sparse_core { pipeline_warmup_steps: -5 }"),
              HasSubstr("sparse_core.pipeline_warmup_steps: must be >= 0, got -5"));
}

TEST(ConfigLoaderTest, AdagradAcceptsAZeroInitialAccumulator) {
  EXPECT_EQ(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 optimizer { adagrad { "
                    "initial_accumulator: 0 } } }"),
            "");
  EXPECT_EQ(ErrorOf("training { dense_optimizer { adagrad { initial_accumulator: 0 } } }"), "");
  EXPECT_THAT(ErrorOf("training { dense_optimizer { adagrad { initial_accumulator: -1 } } }"),
              HasSubstr("training.dense_optimizer.adagrad.initial_accumulator: must be a finite "
                        "number >= 0, got -1"));
  EXPECT_THAT(ErrorOf("training { dense_optimizer { adagrad { epsilon: 0 } } }"),
              HasSubstr("training.dense_optimizer.adagrad.epsilon: must be a finite number > 0"));
}

TEST(ConfigLoaderTest, DataSchemaIsChecked) {
  const std::string text =
      "data { text { train_path: 'x.tsv' } schema { label { name: 'y' } dense { name: 'd' } "
      "sparse { feature: 'f0' type: INT64 mapping: ID } sparse { feature: 'f1' } } }";
  EXPECT_THAT(ErrorOf(text), HasSubstr("model.num_dense_features: is 4 but data.schema has 1 dense"));
  EXPECT_EQ(ErrorOf(text + " model { num_dense_features: 1 }"), "");
  auto c = ParseConfig(std::string(kValid).replace(std::string(kValid).find("num_dense_features: 4 "), 22, ""),
                       "model.pbtxt", text, 2);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model().num_dense_features(), 1);  // taken from the schema
  EXPECT_THAT(ErrorOf("data { text { train_path: 'x' } }"), HasSubstr("data.schema: is required"));
  EXPECT_THAT(ErrorOf("model { num_dense_features: 1 } data { text { train_path: 'x' } schema { "
                      "dense { name: 'd' } sparse { feature: 'f0' } } }"),
              HasSubstr("feature 'f1' has no sparse input"));
  EXPECT_THAT(ErrorOf("model { num_dense_features: 1 } data { text { train_path: 'x' } schema { "
                      "dense { name: 'd' } sparse { feature: 'f0' mapping: ID } sparse { feature: "
                      "'f1' } } }"),
              HasSubstr("mapping ID uses the values as rows and needs type: INT64"));
  EXPECT_THAT(ErrorOf("model { num_dense_features: 1 } data { text { train_path: 'x' } schema { "
                      "dense { name: 'd' } sparse { feature: 'f0' separator: '\t' } sparse { "
                      "feature: 'f1' } } }"),
              HasSubstr("equals the text delimiter"));
  EXPECT_THAT(ErrorOf("data { schema { preset: CRITEO } }"),
              HasSubstr("synthetic data makes its own columns"));
  EXPECT_THAT(ErrorOf("training { epochs: 2 }"), HasSubstr("training.epochs: needs file data"));
  EXPECT_THAT(ErrorOf("data { criteo { train_path: 'x' } } training { epochs: 0 }"),
              HasSubstr("training.epochs: must be > 0"));
  EXPECT_EQ(ErrorOf("data { criteo { train_path: 'x' } } training { epochs: 3 }"), "");
  EXPECT_THAT(ErrorOf("data { text { train_path: 'x' delimiter: '::' } schema { preset: CRITEO } }"),
              HasSubstr("data.text.delimiter: must be one character"));
}

TEST(ConfigLoaderTest, TasksAndTheirLabelsAreChecked) {
  const std::string schema =
      "model { num_dense_features: 1 } data { text { train_path: 'x.tsv' } schema { "
      "dense { name: 'd' } sparse { feature: 'f0' } sparse { feature: 'f1' } ";
  const std::string two = "model { tasks { name: 'click' } tasks { name: 'buy' } } ";
  const std::string labels = "labels { name: 'click' } labels { name: 'buy' required: false } } }";
  EXPECT_EQ(ErrorOf(two + schema + labels), "");
  EXPECT_THAT(ErrorOf(two + schema + "labels { name: 'click' } } }"),
              HasSubstr("model.tasks[1].name: task 'buy' has no label: add data.schema.labels"));
  EXPECT_THAT(ErrorOf(two + schema + "label { name: 'y' } " + labels),
              HasSubstr("data.schema.label: a multi-task model reads data.schema.labels"));
  EXPECT_THAT(ErrorOf(schema + labels), HasSubstr("list the tasks in model.tasks"));
  EXPECT_THAT(ErrorOf(two + schema + "labels { name: 'view' } " + labels),
              HasSubstr("label 'view' is no task's"));
  EXPECT_THAT(ErrorOf("model { tasks { name: 'a' } tasks { name: 'a' } } " + schema + labels),
              HasSubstr("model.tasks[1].name: duplicate task 'a'"));
  EXPECT_THAT(ErrorOf("model { tasks { name: 'click' loss_weight: -1 } tasks { name: 'buy' } } " +
                      schema + labels),
              HasSubstr("model.tasks[0].loss_weight: must be a finite number >= 0, got -1"));
  EXPECT_THAT(ErrorOf(two),
              HasSubstr("several labels are read from text, TFRecord or binary files only"));
}

TEST(ConfigLoaderTest, MissingFileIsNotFound) {
  auto c = LoadConfig("/nonexistent/model.pbtxt", "", 1);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/model.pbtxt"));
}

TEST(ConfigLoaderTest, AdamAndFtrlHyperParametersAreChecked) {
  EXPECT_EQ(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 optimizer { ftrl { l1: 0.1 } } }"), "");
  EXPECT_EQ(ErrorOf("training { dense_optimizer { adam { } } }"), "");
  EXPECT_THAT(ErrorOf("training { dense_optimizer { ftrl { } } }"),
              HasSubstr("FTRL is for embedding tables only"));
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 optimizer { adam { beta1: 1 } } }"),
              HasSubstr("tables[2].optimizer.adam.beta1: must be in [0, 1), got 1"));
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 optimizer { ftrl { l2: -1 } } }"),
              HasSubstr("tables[2].optimizer.ftrl.l2: must be >= 0"));
}

TEST(ConfigLoaderTest, SizesThatOverflowCountersAreErrors) {
  // kValid has 3 + 1 = 4 ids per sample: 2^29 samples give 2^31 ids per step,
  // one more than a 32-bit counter holds; 8 fewer samples fit.
  EXPECT_EQ(ErrorOf("training { global_batch: 536870904 }"), "");
  EXPECT_THAT(ErrorOf("training { global_batch: 536870912 }"),
              HasSubstr("training.global_batch: 536870912 samples x 4 ids per sample"));
  EXPECT_THAT(ErrorOf("training { global_batch: 536870912 }"), HasSubstr("32-bit"));
  EXPECT_THAT(
      ErrorOf("tables { name: 'h' vocab_size: 281474976710656 dim: 1000000 combiner: SUM }"),
      HasSubstr("tables[2].vocab_size: table 'h': 281474976710656 rows x dim 1000000 overflows"));
  EXPECT_EQ(ErrorOf("tables { name: 'h' vocab_size: 1000000000000 dim: 4 combiner: SUM }"), "");
}

// A row key is table << 48 | row (base/row_key.h): 2^48 rows fit, one more
// does not (it would alias table + 1's row 0).
TEST(ConfigLoaderTest, TablesBeyondTheRowKeyAreErrors) {
  EXPECT_EQ(ErrorOf("tables { name: 'h' vocab_size: 281474976710656 dim: 1 combiner: SUM }"), "");
  EXPECT_THAT(ErrorOf("tables { name: 'h' vocab_size: 281474976710657 dim: 1 combiner: SUM }"),
              HasSubstr("tables[2].vocab_size: table 'h': 281474976710657 rows are more than "
                        "the 2^48 = 281474976710656 rows a row key holds"));
  std::string tables;  // kValid's 2 tables + 65534 = 2^16 fit; one more does not
  for (int i = 0; i < 65534; ++i) {
    tables += "tables { name: 'x" + std::to_string(i) + "' vocab_size: 8 dim: 1 combiner: SUM }\n";
  }
  EXPECT_EQ(ErrorOf(tables), "");
  EXPECT_THAT(ErrorOf(tables + "tables { name: 'y' vocab_size: 8 dim: 1 combiner: SUM }"),
              HasSubstr("tables: 65537 tables are more than the 65536 a row key holds"));
}

TEST(ConfigLoaderTest, PartitionLimitsMustBePositive) {
  EXPECT_EQ(ErrorOf("sparse_core { max_ids_per_partition: 8 max_unique_ids_per_partition: 4 }"), "");
  EXPECT_THAT(ErrorOf("sparse_core { max_ids_per_partition: 0 }"),
              HasSubstr("sparse_core.max_ids_per_partition: must be > 0, got 0"));
  EXPECT_THAT(ErrorOf("sparse_core { max_unique_ids_per_partition: -3 }"),
              HasSubstr("sparse_core.max_unique_ids_per_partition: must be > 0, got -3"));
  EXPECT_THAT(ErrorOf("sparse_core { limits_file: '' }"),
              HasSubstr("sparse_core.limits_file: is set but empty"));
}

TEST(ConfigLoaderTest, StepBufferReserveMustNotBeNegative) {
  EXPECT_EQ(ErrorOf("sparse_core { step_buffer_reserve_mib: 0 }"), "");
  EXPECT_THAT(ErrorOf("sparse_core { step_buffer_reserve_mib: -1 }"),
              HasSubstr("sparse_core.step_buffer_reserve_mib: must be >= 0 MiB (0 = off), got -1"));
}

TEST(ConfigLoaderTest, RowwiseAdagradAndWeightDecayAreChecked) {
  EXPECT_EQ(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM optimizer { rowwise_adagrad {} weight_decay: 0.01 } }"),
            "");
  EXPECT_THAT(ErrorOf("training { dense_optimizer { rowwise_adagrad {} } }"),
              HasSubstr("training.dense_optimizer.rowwise_adagrad: row-wise Adagrad is for "
                        "embedding tables only"));
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM optimizer { rowwise_adagrad { epsilon: 0 } } }"),
              HasSubstr("rowwise_adagrad.epsilon: must be > 0"));
  EXPECT_THAT(
      ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM optimizer { rowwise_adagrad { initial_accumulator: -1 } } }"),
      HasSubstr("rowwise_adagrad.initial_accumulator: must be a finite number >= 0"));
  EXPECT_THAT(ErrorOf("training { dense_optimizer { weight_decay: -0.1 } }"),
              HasSubstr("training.dense_optimizer.weight_decay: must be a finite number >= 0"));
  EXPECT_THAT(ErrorOf("tables { name: 't2' vocab_size: 9 dim: 2 combiner: SUM optimizer { ftrl {} weight_decay: 0.1 } }"),
              HasSubstr("FTRL regularises with its own l2"));
}

TEST(ConfigLoaderTest, InteractionsAreChecked) {
  EXPECT_EQ(ErrorOf("model { dcn_v2 { } }"), "");
  EXPECT_EQ(ErrorOf("model { concat { } }"), "");
  EXPECT_EQ(ErrorOf("model { dcn_v2 { num_layers: 1 low_rank: 0 } }"), "");
  EXPECT_THAT(ErrorOf("model { dcn_v2 { num_layers: 0 } }"),
              HasSubstr("model.dcn_v2.num_layers: must be >= 1"));
  EXPECT_THAT(ErrorOf("model { dcn_v2 { low_rank: -2 } }"),
              HasSubstr("model.dcn_v2.low_rank: must be >= 0"));
}

TEST(ConfigLoaderTest, BestModelAndEarlyStopNeedEvaluations) {
  EXPECT_EQ(ErrorOf("training { eval_every: 5 early_stop_evals: 2 } "
                    "checkpoint { dir: \"/tmp/x\" keep_best: true }"),
            "");
  EXPECT_THAT(ErrorOf("training { early_stop_evals: 2 }"),
              HasSubstr("training.early_stop_evals: needs training.eval_every > 0"));
  EXPECT_THAT(ErrorOf("training { eval_every: 5 early_stop_evals: -1 }"),
              HasSubstr("training.early_stop_evals: must be >= 0"));
  EXPECT_THAT(ErrorOf("training { eval_every: 5 } checkpoint { keep_best: true }"),
              HasSubstr("checkpoint.keep_best: needs checkpoint.dir and training.eval_every"));
  EXPECT_THAT(ErrorOf("checkpoint { dir: \"/tmp/x\" keep_best: true }"),
              HasSubstr("checkpoint.keep_best: needs checkpoint.dir"));
}

TEST(ConfigLoaderTest, LearningRateSchedulesAreChecked) {
  EXPECT_EQ(ErrorOf("training { learning_rate_schedule { warmup_steps: 3 decay: COSINE } }"), "");
  EXPECT_THAT(ErrorOf("training { learning_rate_schedule { warmup_steps: -1 } }"),
              HasSubstr("--override:1:"));  // the override's location: it set the field
  EXPECT_THAT(ErrorOf("training { dense_learning_rate_schedule { warmup_steps: -1 } }"),
              HasSubstr("training.dense_learning_rate_schedule.warmup_steps: must be >= 0"));
  EXPECT_THAT(ErrorOf("training { learning_rate_schedule { decay_steps: 5 } }"),
              HasSubstr("decay_steps: is set but decay is CONSTANT"));
  EXPECT_THAT(ErrorOf("training { embedding_learning_rate_schedule { warmup_steps: 5 decay: "
                      "LINEAR decay_start_step: 2 } }"),
              HasSubstr("decay_start_step: is 2, inside the warm-up"));
  EXPECT_THAT(ErrorOf("training { learning_rate_schedule { warmup_steps: 10 decay: LINEAR } }"),
              HasSubstr("the decay would start at step 10 but the run has 10 steps"));
  // With epochs the run's steps are not known at load time: the trainer
  // checks the decay length once the epochs resolve them.
  EXPECT_EQ(ErrorOf("data { criteo { train_path: 'x' } } training { epochs: 1 "
                    "learning_rate_schedule { warmup_steps: 10 decay: LINEAR } }"),
            "");
  {
    ConfigErrors errors;
    TrainingConfig t;
    t.mutable_learning_rate_schedule()->set_warmup_steps(10);
    t.mutable_learning_rate_schedule()->set_decay(LearningRateScheduleConfig::LINEAR);
    CheckLearningRateSchedules(t, 10, errors);
    ASSERT_FALSE(errors.empty());
    EXPECT_THAT(errors.first().message, HasSubstr("the run has 10 steps"));
    ConfigErrors fine;
    CheckLearningRateSchedules(t, 11, fine);
    EXPECT_TRUE(fine.empty());
  }
  EXPECT_THAT(ErrorOf("training { learning_rate_schedule { decay: POLYNOMIAL power: 0 } }"),
              HasSubstr("power: must be > 0"));
  EXPECT_THAT(ErrorOf("training { learning_rate_schedule { decay: COSINE end_factor: 2 } }"),
              HasSubstr("end_factor: must be in [0, 1]"));
  EXPECT_THAT(ErrorOf("training { learning_rate_schedule { decay: LINEAR decay_steps: 0 } }"),
              HasSubstr("decay_steps: must be > 0"));
}

}  // namespace
}  // namespace lemrt::config
