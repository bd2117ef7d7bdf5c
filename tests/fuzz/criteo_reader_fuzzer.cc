// libFuzzer target for the Criteo TSV reader: every line of the input goes
// through ParseCriteoLine, then the whole input is read as one rank's train
// and eval file through CriteoReader (sharding, skipping or strict errors,
// epochs). Byte 0 picks the world size, rank, strictness and batch.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "host/criteo_reader.h"
#include "proto/config.pb.h"
#include "tests/fuzz/fuzz_common.h"

namespace lemrt::host {
namespace {

config::RunConfig MakeConfig(const std::string& path, bool strict,
                             int64_t global_batch) {
  config::RunConfig config;
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
  auto* criteo = config.mutable_data()->mutable_criteo();
  criteo->set_train_path(path);
  criteo->set_eval_path(path);
  criteo->set_strict(strict);
  return config;
}

}  // namespace
}  // namespace lemrt::host

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lemrt::host;
  static lemrt::fuzz::FuzzFile* file = new lemrt::fuzz::FuzzFile("criteo");
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  CriteoLine line;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    (void)ParseCriteoLine(text.substr(begin, end - begin), &line);
    begin = end + 1;
  }

  const int world_size = 1 + control % 3;
  const int rank = (control / 3) % world_size;
  const bool strict = (control & 0x10) != 0;
  const int64_t global_batch = world_size * (1 + (control >> 5));
  file->Set(data + 1, size - 1);
  const lemrt::config::RunConfig config =
      MakeConfig(file->path(), strict, global_batch);
  auto reader = CriteoReader::Create(config, rank, world_size);
  if (reader.ok()) lemrt::fuzz::ReadEveryBatch(**reader, 4);
  return 0;
}
