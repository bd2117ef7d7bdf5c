// sparse_core.exchange_dtype BF16 against a reference that rounds the same
// values: with one id per (sample, feature) each activation is one partial,
// so it must be the fp32 run's activation rounded to the nearest bf16; the
// update must equal the fp32 exchange's update from the bf16-rounded
// activation gradients, bit for bit; and the partials' and gradients'
// exchanges move half the bytes. Runs under mpirun on 1 and 2 ranks.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "base/random.h"
#include "gtest/gtest.h"
#include "host/preprocess/coo.h"
#include "proto/config_loader.h"
#include "runtime/comm/forwarding_communicator.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/step/sparsecore_stage.h"

namespace lemrt::runtime {
namespace {

std::string Config(int max_sequence_length) {
  const std::string len = std::to_string(max_sequence_length);
  return R"pb(
           topology { sparse_cores_per_chip: 2 }
           tables { name: "t0" vocab_size: 30 dim: 8 combiner: SUM }
           tables {
             name: "t1"
             vocab_size: 20
             dim: 16
             combiner: MEAN
             optimizer { adagrad {} }
           }
           features { name: "f0" table: "t0" max_sequence_length:)pb" +
         len + R"pb(}
                    features { name: "f1" table: "t1" max_sequence_length: )pb" +
         len + R"pb(}
                    model { num_dense_features: 1 bottom_mlp: 8 top_mlp: 1 }
training { global_batch: 48 embedding_learning_rate: 0.5 seed: 5 }
)pb";
}

float Round(float v) { return base::Bf16ToFloat(base::FloatToBf16Nearest(v)); }

// Counts the bytes this rank sends in its all-to-all-v calls.
class SentBytes : public ForwardingCommunicator {
 public:
  explicit SentBytes(Communicator& inner) : ForwardingCommunicator(inner) {}
  absl::Status AllToAllv(const void* send, std::span<const int64_t> send_bytes,
                         std::span<const int64_t> send_offsets, void* recv,
                         std::span<const int64_t> recv_bytes,
                         std::span<const int64_t> recv_offsets) override {
    for (int64_t b : send_bytes) sent += b;
    return ForwardingCommunicator::AllToAllv(send, send_bytes, send_offsets, recv, recv_bytes,
                                             recv_offsets);
  }
  int64_t sent = 0;
};

void RunAgainstRoundedReference(int max_sequence_length) {
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto parsed = config::ParseConfig(Config(max_sequence_length), "test", "", world);
  ASSERT_TRUE(parsed.ok()) << parsed.status();  // same on every rank
  const config::RunConfig fp_config = *parsed;
  config::RunConfig bf_config = fp_config;
  bf_config.mutable_sparse_core()->set_exchange_dtype(config::BF16);
  auto comm = MpiCommunicator::Create(MPI_COMM_WORLD);
  ASSERT_TRUE(comm.ok());
  std::vector<std::unique_ptr<device::Optimizer>> opts;
  std::vector<const device::Optimizer*> opt_ptrs;
  for (int t = 0; t < fp_config.tables_size(); ++t) {
    opts.push_back(device::CreateTableOptimizer(fp_config, t));
    opt_ptrs.push_back(opts.back().get());
  }
  SentBytes fp_comm(**comm), bf_comm(**comm);
  SparseCoreStage fp(fp_config, fp_comm, opt_ptrs), bf(bf_config, bf_comm, opt_ptrs);
  const int64_t local_batch = fp_config.training().global_batch() / world;
  const int features = fp_config.features_size();
  const int width = fp.activation_width();
  host::CooBuilder builder(host::MakeCooOptions(fp_config));
  std::vector<SparseStepBuffers> fp_bufs, bf_bufs;
  int64_t rounded = 0;
  float max_diff = 0, max_abs = 0;
  for (int step = 0; step < 3; ++step) {
    host::Batch batch;
    batch.Resize(local_batch, 1, features);
    for (int f = 0; f < features; ++f) {
      const int64_t vocab = f == 0 ? 30 : 20;
      for (int64_t i = 0; i < local_batch; ++i) {
        base::CounterRng rng(base::HashKeys({3, static_cast<uint64_t>(step),
                                             static_cast<uint64_t>(rank * local_batch + i),
                                             static_cast<uint64_t>(f)}));
        const int len = static_cast<int>(rng.NextBelow(max_sequence_length + 1));
        for (int k = 0; k < len; ++k) {
          batch.ids[f].push_back(static_cast<int64_t>(rng.NextBelow(vocab)));
        }
        batch.offsets[f][i + 1] = static_cast<int64_t>(batch.ids[f].size());
      }
    }
    layout::PartitionedCoo coo;
    ASSERT_TRUE(builder.Build(batch, &coo).ok());
    const std::span<const layout::PartitionedCoo> runs(&coo, 1);
    std::vector<float> fp_act(local_batch * width), bf_act(local_batch * width);
    const int64_t entry_bytes = 24 * static_cast<int64_t>(coo.entries.size());
    fp_comm.sent = bf_comm.sent = 0;
    ASSERT_TRUE(fp.Forward(runs, &fp_bufs, fp_act).ok());
    ASSERT_TRUE(bf.Forward(runs, &bf_bufs, bf_act).ok());
    for (size_t i = 0; i < fp_act.size(); ++i) {
      if (max_sequence_length == 1) {
        ASSERT_EQ(bf_act[i], Round(fp_act[i])) << "step " << step << " element " << i;
      }
      rounded += bf_act[i] != fp_act[i];
      max_diff = std::max(max_diff, std::fabs(bf_act[i] - fp_act[i]));
      max_abs = std::max(max_abs, std::fabs(fp_act[i]));
    }
    // The partials' exchange: half the bytes (the entries' exchange alike).
    EXPECT_GT(fp_comm.sent, entry_bytes);
    EXPECT_EQ(2 * (bf_comm.sent - entry_bytes), fp_comm.sent - entry_bytes);
    std::vector<float> dact(local_batch * width), dact_rounded(local_batch * width);
    for (size_t i = 0; i < dact.size(); ++i) {
      base::CounterRng rng(base::HashKeys(
          {8, static_cast<uint64_t>(step), static_cast<uint64_t>(rank), static_cast<uint64_t>(i)}));
      dact[i] = static_cast<float>(rng.NextDouble() - 0.5);
      dact_rounded[i] = Round(dact[i]);
    }
    fp_comm.sent = bf_comm.sent = 0;
    ASSERT_TRUE(bf.Backward(runs, dact, &bf_bufs).ok());
    ASSERT_TRUE(fp.Backward(runs, dact_rounded, &fp_bufs).ok());
    EXPECT_GT(fp_comm.sent, 0);
    EXPECT_EQ(2 * bf_comm.sent, fp_comm.sent);  // the gradients'
    for (size_t l = 0; l < fp.sparse_cores().size(); ++l) {
      for (int t = 0; t < fp_config.tables_size(); ++t) {
        const auto& a = fp.sparse_cores()[l]->shard(t);
        const auto& b = bf.sparse_cores()[l]->shard(t);
        ASSERT_EQ(0, std::memcmp(a.weights().data(), b.weights().data(),
                                 sizeof(float) * a.weights().size()))
            << "step " << step << " SparseCore " << l << " table " << t;
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &rounded, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_GT(rounded, 100);  // the rounding was exercised
  // A few rounded partials per activation (each off by at most 2^-9 of
  // itself) stay within a few bf16 steps of the largest activation.
  EXPECT_LT(max_diff, 0x1p-6f * max_abs);
}

TEST(Bf16ExchangeTest, OneHotActivationsAreTheRoundedFp32Ones) { RunAgainstRoundedReference(1); }
TEST(Bf16ExchangeTest, MultiHotUpdatesFollowTheRoundedGradients) { RunAgainstRoundedReference(4); }

}  // namespace
}  // namespace lemrt::runtime
