// libFuzzer target for the binary reader (host/formats/binary_file.h,
// host/formats/binary_parser.h): the input is the whole file (header, blocks,
// columns, index), read as one rank's train and eval file with the CRITEO
// preset. Byte 0 picks the world size, rank, shuffle window and batch; the
// rest is the file. Checksums reject most mutations; the corpus also holds
// files whose checksums were recomputed after a mutation.
#include <cstddef>
#include <cstdint>

#include "host/input/data_source.h"
#include "proto/config.pb.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static lemrt::fuzz::FuzzFile* file = new lemrt::fuzz::FuzzFile("binary");
  if (size == 0) return 0;
  const uint8_t control = data[0];
  file->Set(data + 1, size - 1);

  const int world_size = 1 + control % 3;
  const int rank = (control / 3) % world_size;
  const int64_t global_batch = world_size * (1 + ((control >> 4) & 3));
  lemrt::config::RunConfig config;
  auto* a = config.add_tables();
  a->set_name("a");
  a->set_vocab_size(97);
  auto* f0 = config.add_features();
  f0->set_name("f0");
  f0->set_table("a");
  f0->set_input_column(7);
  config.mutable_model()->set_num_dense_features(14);
  config.mutable_training()->set_global_batch(global_batch);
  config.mutable_training()->set_eval_samples(2 * global_batch);
  config.mutable_training()->set_seed(control);
  auto* binary = config.mutable_data()->mutable_binary();
  binary->set_train_path(file->path());
  binary->set_eval_path(file->path());
  config.mutable_data()->set_shuffle_window(control >> 6);

  auto source = lemrt::host::CreateDataSource(config, rank, world_size);
  if (source.ok()) lemrt::fuzz::ReadEveryBatch(**source, 4);
  return 0;
}
