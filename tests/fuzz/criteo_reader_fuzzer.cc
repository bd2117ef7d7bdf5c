// libFuzzer target for the delimited-text reader with the CRITEO schema
// preset: the input is read as one rank's train and eval file through the
// source registry (line index, parsing, skipping or strict errors, epochs,
// shuffle windows). Byte 0 picks the world size, rank, strictness and
// batch; byte 1 the shuffle window.
#include <cstddef>
#include <cstdint>
#include <string>

#include "host/input/data_source.h"
#include "proto/config.pb.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

lemrt::config::RunConfig MakeConfig(const std::string& path, bool strict, int64_t global_batch,
                                    int64_t window) {
  lemrt::config::RunConfig config;
  auto* a = config.add_tables();
  a->set_name("a");
  a->set_vocab_size(97);
  auto* b = config.add_tables();
  b->set_name("b");
  b->set_vocab_size(5);
  auto* f0 = config.add_features();
  f0->set_name("f0");
  f0->set_table("a");
  auto* f1 = config.add_features();
  f1->set_name("f1");
  f1->set_table("b");
  f1->set_input_column(25);
  config.mutable_model()->set_num_dense_features(15);
  config.mutable_training()->set_global_batch(global_batch);
  config.mutable_training()->set_eval_samples(2 * global_batch);
  config.mutable_data()->set_shuffle_window(window);
  auto* criteo = config.mutable_data()->mutable_criteo();
  criteo->set_train_path(path);
  criteo->set_eval_path(path);
  criteo->set_strict(strict);
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static lemrt::fuzz::FuzzFile* file = new lemrt::fuzz::FuzzFile("criteo");
  if (size < 2) return 0;
  const uint8_t control = data[0];
  const int world_size = 1 + control % 3;
  const int rank = (control / 3) % world_size;
  const bool strict = (control & 0x10) != 0;
  const int64_t global_batch = world_size * (1 + (control >> 5));
  file->Set(data + 2, size - 2);
  const lemrt::config::RunConfig config =
      MakeConfig(file->path(), strict, global_batch, data[1] % 7);
  auto source = lemrt::host::CreateDataSource(config, rank, world_size);
  if (source.ok()) lemrt::fuzz::ReadEveryBatch(**source, 4);
  return 0;
}
