// MpiCommunicator and AgreeOnStatus across real ranks (1-4): the
// personalised exchange, gather, broadcast and reductions move exactly the
// bytes asked for when split into many small messages (max_message_bytes
// forced down to a few bytes, standing in for MPI's 2^31 - 1 count limit),
// including blocks that only one rank sends over the cap; a trainer on such
// a communicator trains the same model; AgreeOnStatus names the lowest
// failing rank unless every rank failed alike.
//
// With LEMRT_TEST_EXCHANGE_GIB=G (not set in CI: it needs about 2 x G GiB of
// memory per rank) rank 0 also sends G GiB, over 2^31 bytes for G >= 2, to
// rank 1 with the default message size.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "proto/config_loader.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/comm/placement.h"
#include "runtime/observability/startup_clock.h"
#include "runtime/trainer.h"

namespace lemrt::runtime {
namespace {

std::unique_ptr<MpiCommunicator> Comm(int64_t max_message_bytes = int64_t{1} << 30) {
  auto comm = MpiCommunicator::Create(MPI_COMM_WORLD, {max_message_bytes});
  CHECK(comm.ok()) << comm.status();
  return std::move(*comm);
}

// The byte that rank `from` sends rank `to` at position i of its block.
char Byte(int from, int to, int64_t i) {
  return static_cast<char>(base::Mix64((uint64_t{static_cast<uint32_t>(from)} << 40) ^
                                       (uint64_t{static_cast<uint32_t>(to)} << 20) ^
                                       static_cast<uint64_t>(i)));
}

// Block sizes rank `from` sends rank `to`: varied, some empty, and with
// `big` one block (rank 0 to the last rank) far over the others.
int64_t BlockBytes(int from, int to, int round, int64_t big) {
  if (big > 0 && from == 0 && to != 0 && to == from + 1) return big;
  return static_cast<int64_t>(base::Mix64(static_cast<uint64_t>(from * 131 + to * 7 + round)) %
                              97);
}

// One exchange with the sizes above; every received byte checked.
void CheckExchange(MpiCommunicator& comm, int round, int64_t big) {
  const int W = comm.size(), me = comm.rank();
  std::vector<int64_t> send_bytes(W), send_offsets(W), recv_bytes(W), recv_offsets(W);
  int64_t sent = 0, received = 0;
  for (int q = 0; q < W; ++q) {
    // Blocks in reverse order in the send buffer, with a gap of 3 bytes, so
    // offsets are not the prefix sums of sizes.
    send_bytes[q] = BlockBytes(me, q, round, big);
    recv_bytes[q] = BlockBytes(q, me, round, big);
  }
  for (int q = W - 1; q >= 0; --q) {
    send_offsets[q] = sent;
    sent += send_bytes[q] + 3;
  }
  for (int q = 0; q < W; ++q) {
    recv_offsets[q] = received;
    received += recv_bytes[q];
  }
  std::vector<char> send(sent), recv(received, 0);
  for (int q = 0; q < W; ++q) {
    for (int64_t i = 0; i < send_bytes[q]; ++i) send[send_offsets[q] + i] = Byte(me, q, i);
  }
  ASSERT_TRUE(comm.AllToAllv(send.data(), send_bytes, send_offsets, recv.data(), recv_bytes,
                             recv_offsets)
                  .ok());
  int64_t wrong = 0;
  for (int q = 0; q < W; ++q) {
    for (int64_t i = 0; i < recv_bytes[q]; ++i) {
      wrong += recv[recv_offsets[q] + i] != Byte(q, me, i) ? 1 : 0;
    }
  }
  EXPECT_EQ(wrong, 0) << "round " << round << " on rank " << me;
}

TEST(MpiCommunicatorTest, ExchangeSplitIntoSmallMessages) {
  for (int64_t cap : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{1} << 30}) {
    auto comm = Comm(cap);
    for (int round = 0; round < 4; ++round) CheckExchange(*comm, round, 0);
    // One block over the cap many times over, on one rank only: before,
    // a count over the limit failed on that rank alone and the others hung.
    CheckExchange(*comm, 9, 1000 * cap < 5000 ? 1000 * cap : 5000);
  }
}

TEST(MpiCommunicatorTest, GatherBroadcastAndReductionsInPieces) {
  const int W = Comm()->size();
  for (int64_t cap : {int64_t{8}, int64_t{1} << 30}) {
    auto comm = Comm(cap);
    const int me = comm->rank();
    std::vector<float> mine(3 * me + 1);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<float>(100 * me + i);
    std::vector<float> all;
    ASSERT_TRUE(comm->AllGather(mine, &all).ok());
    std::vector<float> want;
    for (int r = 0; r < W; ++r) {
      for (int i = 0; i < 3 * r + 1; ++i) want.push_back(static_cast<float>(100 * r + i));
    }
    EXPECT_EQ(all, want);

    std::string text = me == W - 1 ? std::string("a message of more than eight bytes") : "";
    ASSERT_TRUE(comm->Broadcast(&text, W - 1).ok());
    EXPECT_EQ(text, "a message of more than eight bytes");

    std::vector<int64_t> sums(11), maxima(11);
    std::vector<double> dsums(5);
    for (int i = 0; i < 11; ++i) {
      sums[i] = me * 1000 + i;
      maxima[i] = (me + i) % W;
    }
    for (int i = 0; i < 5; ++i) dsums[i] = 0.5 * me + i;
    ASSERT_TRUE(comm->AllReduceSum(std::span<int64_t>(sums)).ok());
    ASSERT_TRUE(comm->AllReduceMax(std::span<int64_t>(maxima)).ok());
    ASSERT_TRUE(comm->AllReduceSum(std::span<double>(dsums)).ok());
    for (int i = 0; i < 11; ++i) {
      EXPECT_EQ(sums[i], 1000 * (W * (W - 1) / 2) + int64_t{W} * i);
      EXPECT_EQ(maxima[i], W - 1);  // (me + i) % W takes every value over the ranks
    }
    for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(dsums[i], 0.25 * W * (W - 1) + W * i);
  }
}

// A value of rank `r` at element i whose sums depend on their order: the
// magnitudes span 2^-20..2^20, so most partial sums round.
template <typename T>
T OrderedValue(int r, int64_t i) {
  const uint64_t h = base::Mix64((uint64_t{static_cast<uint32_t>(r)} << 32) ^
                                 static_cast<uint64_t>(i));
  const T unit = static_cast<T>(h >> 11) / static_cast<T>(uint64_t{1} << 53);
  return std::ldexp(unit - static_cast<T>(0.5), static_cast<int>(h % 41) - 20);
}

// Float and double sums are the ranks' values added in rank order, bit for
// bit, whatever the element count (0, fewer than the ranks, uneven slices)
// and message size. MPI_Allreduce's own orders (recursive doubling, ring)
// differ from it at 3 and 4 ranks on most of these elements.
template <typename T>
void CheckSumsInRankOrder() {
  const int W = Comm()->size();
  for (int64_t cap : {int64_t{8}, int64_t{1} << 30}) {
    auto comm = Comm(cap);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{W - 1}, int64_t{1001}}) {
      std::vector<T> values(n);
      for (int64_t i = 0; i < n; ++i) values[i] = OrderedValue<T>(comm->rank(), i);
      ASSERT_TRUE(comm->AllReduceSum(std::span<T>(values)).ok());
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        T want = OrderedValue<T>(0, i);
        for (int r = 1; r < W; ++r) want += OrderedValue<T>(r, i);
        if (std::memcmp(&want, &values[i], sizeof(T)) != 0) ++wrong;
      }
      EXPECT_EQ(wrong, 0) << "of " << n << " elements, cap " << cap;
    }
  }
}

TEST(MpiCommunicatorTest, FloatSumsAddTheRanksInRankOrder) {
  CheckSumsInRankOrder<float>();
  CheckSumsInRankOrder<double>();
}

TEST(MpiCommunicatorTest, CreateRejectsAMessageSizeMpiCannotCount) {
  EXPECT_EQ(MpiCommunicator::Create(MPI_COMM_WORLD, {0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MpiCommunicator::Create(MPI_COMM_WORLD, {int64_t{1} << 31}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AgreeOnStatusTest, LowestFailingRankUnlessAllFailedAlike) {
  auto comm = Comm();
  const int W = comm->size(), me = comm->rank();
  EXPECT_TRUE(AgreeOnStatus(*comm, absl::OkStatus()).ok());
  // The last rank fails alone (with one rank, every rank failed alike).
  absl::Status st = AgreeOnStatus(
      *comm, me == W - 1 ? absl::NotFoundError("no file x") : absl::OkStatus());
  EXPECT_EQ(st, absl::NotFoundError(W > 1 ? absl::StrCat("rank ", W - 1, ": no file x")
                                          : "no file x"));
  // Every rank fails with its own message: the lowest rank's, named.
  st = AgreeOnStatus(*comm, absl::InternalError(absl::StrCat("bad on ", me)));
  EXPECT_EQ(st, absl::InternalError(W > 1 ? "rank 0: bad on 0" : "bad on 0"));
  // Every rank fails alike (a config error): no rank named.
  st = AgreeOnStatus(*comm, absl::InvalidArgumentError("x.pbtxt:3: bad field"));
  EXPECT_EQ(st, absl::InvalidArgumentError("x.pbtxt:3: bad field"));
  // Same message but another code on one rank: not alike.
  st = AgreeOnStatus(*comm, me == W - 1 && W > 1 ? absl::InternalError("e")
                                                 : absl::InvalidArgumentError("e"));
  EXPECT_EQ(st, absl::InvalidArgumentError(W > 1 ? "rank 0: e" : "e"));
}

// The summary's start-up breakdown (runtime/observability/startup_clock.h):
// every phase >= 0 and the phases add up to the total, of a rank of the
// world; a launch phase only when the trainer was given the process's start.
void ExpectConsistentStartup(const summary::StartupStats& st, int world, bool launched) {
  const double phases[] = {st.launch_ms(),     st.plan_ms(),         st.data_source_ms(),
                           st.allocation_ms(), st.table_fill_ms(),   st.step_buffers_ms(),
                           st.run_start_ms()};
  double sum = 0;
  for (double ms : phases) {
    EXPECT_GE(ms, 0);
    sum += ms;
  }
  EXPECT_GT(st.total_ms(), 0);
  EXPECT_LE(sum, st.total_ms() * (1 + 1e-12));
  EXPECT_GE(sum, st.total_ms() * (1 - 1e-12));
  EXPECT_EQ(st.launch_ms() > 0, launched) << st.launch_ms();
  EXPECT_GE(st.slowest_rank(), 0);
  EXPECT_LT(st.slowest_rank(), world);
  EXPECT_GE(st.threads(), 1);
  EXPECT_EQ(st.table_init_mode(), "host");
  EXPECT_GE(st.table_init_ms(), 0);
}

// The trainer over communicators whose messages carry at most 40 bytes
// trains the same model as with the default size (every exchange of the
// SparseCore stage and the dense all-reduce split into many messages). Its
// summary's start-up breakdown is consistent.
TEST(MpiCommunicatorTest, TrainerWithSmallMessagesTrainsTheSameModel) {
  const int W = Comm()->size();
  auto config = config::ParseConfig(R"pb(
    tables { name: "a" vocab_size: 300 dim: 16 combiner: SUM optimizer { adagrad {} } }
    tables { name: "b" vocab_size: 80 dim: 8 combiner: MEAN }
    features { name: "a1" table: "a" max_sequence_length: 3 }
    features { name: "b1" table: "b" max_sequence_length: 2 }
    model { num_dense_features: 4 bottom_mlp: [ 8 ] top_mlp: [ 8, 1 ] }
    training { global_batch: 48 steps: 4 seed: 3 eval_samples: 48 log_every: 0 }
  )pb", "small_messages_test", "", W);
  ASSERT_TRUE(config.ok()) << config.status();
  std::string checksum[2];
  summary::PlacementStats placement[2];
  // The second run places the ranks on two "hosts" (even and odd ranks).
  std::vector<std::string> names;
  for (int r = 0; r < W; ++r) names.push_back(absl::StrCat("host-", r % 2));
  const Placement two_hosts = PlacementFromNames(names);
  for (int small = 0; small < 2; ++small) {
    auto sparse_comm = Comm(small ? 40 : int64_t{1} << 30);
    auto dense_comm = Comm(small ? 40 : int64_t{1} << 30);
    // The second run also times the launch from the process's start.
    auto trainer = Trainer::Create(*config, *sparse_comm, *dense_comm, nullptr,
                                   small ? &two_hosts : nullptr,
                                   small ? std::optional(ProcessStart()) : std::nullopt);
    ASSERT_TRUE(trainer.ok()) << trainer.status();
    auto summary = (*trainer)->Run();
    ASSERT_TRUE(summary.ok()) << summary.status();
    ExpectConsistentStartup(summary->startup(), W, /*launched=*/small == 1);
    checksum[small] = summary->model_checksum();
    placement[small] = summary->placement();
  }
  EXPECT_EQ(checksum[0], checksum[1]);
  // One machine: every byte stays on its host; the same bytes, split by the
  // two hosts of the second run.
  ASSERT_EQ(placement[0].ranks_size(), W);
  EXPECT_EQ(placement[0].hosts(), 1);
  EXPECT_EQ(placement[0].exchange_bytes_between_hosts_per_step(), 0);
  EXPECT_EQ(placement[0].exchange_bytes_within_host_per_step() > 0, W > 1);
  EXPECT_EQ(placement[1].hosts(), std::min(W, 2));
  EXPECT_EQ(placement[1].exchange_bytes_within_host_per_step() +
                placement[1].exchange_bytes_between_hosts_per_step(),
            placement[0].exchange_bytes_within_host_per_step());
  EXPECT_EQ(placement[1].exchange_bytes_between_hosts_per_step() > 0, W > 1);
  EXPECT_EQ(placement[1].exchange_bytes_within_host_per_step() > 0, W > 2);
  for (int r = 0; r < placement[1].ranks_size(); ++r) {
    EXPECT_EQ(placement[1].ranks(r).host(), names[r]);
    EXPECT_EQ(placement[1].ranks(r).local_rank(), r / 2);
  }
}

// Every rank's identity reaches every rank; the ranks group by hostname.
TEST(PlacementMpiTest, GatherPlacementGroupsTheRanksByName) {
  auto comm = Comm();
  const int W = comm->size(), me = comm->rank();
  // Keys of different lengths per rank; one key per name (no error).
  const HostIdentity mine{absl::StrCat("host-", me % 2), std::string(1 + me % 2, 'k')};
  auto all = GatherHostIdentities(*comm, mine);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(static_cast<int>(all->size()), W);
  for (int r = 0; r < W; ++r) {
    EXPECT_EQ((*all)[r].name, absl::StrCat("host-", r % 2));
    EXPECT_EQ((*all)[r].key, std::string(1 + r % 2, 'k'));
  }
  auto placement = GatherPlacement(*comm, mine);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(static_cast<int>(placement->hosts.size()), std::min(W, 2));
  for (int r = 0; r < W; ++r) {
    EXPECT_EQ(placement->host_of_rank[r], r % 2);
    EXPECT_EQ(placement->local_rank[r], r / 2);
  }
}

// Two "hosts" (keys) sharing one name fail on every rank with the same
// sentence.
TEST(PlacementMpiTest, ASharedHostnameFailsOnEveryRank) {
  auto comm = Comm();
  const int W = comm->size(), me = comm->rank();
  auto placement = GatherPlacement(*comm, {"node", absl::StrCat("key-", me % 2)});
  if (W == 1) {
    EXPECT_TRUE(placement.ok());
    return;
  }
  ASSERT_FALSE(placement.ok());
  EXPECT_EQ(placement.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(placement.status().message(),
            absl::StrCat("hostname \"node\" is shared by 2 different hosts (",
                         W > 2 ? "ranks 0, 2" : "rank 0", " on one, ",
                         W > 3 ? "ranks 1, 3" : "rank 1",
                         " on another): Open MPI takes ranks with one hostname for one host, "
                         "and its shared-memory transport fails between hosts; give every host "
                         "its own hostname (ranks are on one host when they share the kernel "
                         "boot id and the network, IPC, mount and PID namespaces)"));
}

TEST(MpiCommunicatorTest, ExchangeOverTwoGiB) {
  const char* gib = std::getenv("LEMRT_TEST_EXCHANGE_GIB");
  auto comm = Comm();
  if (gib == nullptr || comm->size() < 2) GTEST_SKIP() << "set LEMRT_TEST_EXCHANGE_GIB";
  const int64_t bytes = static_cast<int64_t>(std::atof(gib) * (int64_t{1} << 30));
  const int W = comm->size(), me = comm->rank();
  std::vector<int64_t> send_bytes(W, 0), recv_bytes(W, 0), offsets(W, 0);
  if (me == 0) send_bytes[1] = bytes;
  if (me == 1) recv_bytes[0] = bytes;
  std::vector<char> send(me == 0 ? bytes : 0), recv(me == 1 ? bytes : 0);
  for (int64_t i = 0; i < static_cast<int64_t>(send.size()); i += 4096) {
    send[i] = static_cast<char>(i >> 12);
  }
  if (!send.empty()) send.back() = 'z';
  absl::Status st =
      comm->AllToAllv(send.data(), send_bytes, offsets, recv.data(), recv_bytes, offsets);
  EXPECT_TRUE(st.ok()) << st;
  if (me == 1) {
    int64_t wrong = 0;
    for (int64_t i = 0; i < bytes; i += 4096) wrong += recv[i] != static_cast<char>(i >> 12);
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(recv.back(), 'z');
  }
}

}  // namespace
}  // namespace lemrt::runtime
