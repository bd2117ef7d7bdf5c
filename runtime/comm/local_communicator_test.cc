// LocalCommunicator: every collective at 1-4 ranks-as-threads against what
// the Communicator contract says each rank receives; AgreeOnStatus and
// the typed calls every Communicator has (Gather, AllToAllvOf) over it.
#include "runtime/comm/local_communicator.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lemrt::runtime {
namespace {

// Runs `body` on `size` ranks and expects every rank to return OK.
void ExpectAllOk(int size, const std::function<absl::Status(Communicator&)>& body) {
  const std::vector<absl::Status> status = RunLocalRanks(size, body);
  ASSERT_EQ(static_cast<int>(status.size()), size);
  for (int r = 0; r < size; ++r) EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
}

class LocalCommunicatorTest : public ::testing::TestWithParam<int> {};

TEST_P(LocalCommunicatorTest, AllToAllSendsBlockRToRankR) {
  const int W = GetParam();
  ExpectAllOk(W, [W](Communicator& comm) {
    const int me = comm.rank();
    std::vector<int64_t> send(2 * W), recv(2 * W, -1);
    for (int q = 0; q < W; ++q) send[2 * q] = 100 * me + q, send[2 * q + 1] = -(100 * me + q);
    absl::Status st = comm.AllToAll(send, recv);
    if (!st.ok()) return st;
    for (int q = 0; q < W; ++q) {
      EXPECT_EQ(recv[2 * q], 100 * q + me);
      EXPECT_EQ(recv[2 * q + 1], -(100 * q + me));
    }
    return absl::OkStatus();
  });
}

TEST_P(LocalCommunicatorTest, AllToAllvHonoursCountsAndOffsets) {
  const int W = GetParam();
  ExpectAllOk(W, [W](Communicator& comm) {
    const int me = comm.rank();
    // Rank p sends p + q + 1 bytes of value 16 p + q to rank q, blocks in
    // reverse rank order so offsets are not prefix sums of the counts.
    std::vector<int64_t> send_bytes(W), send_offsets(W), recv_bytes(W), recv_offsets(W);
    int64_t at = 0;
    for (int q = W - 1; q >= 0; --q)
      send_bytes[q] = me + q + 1, send_offsets[q] = at, at += me + q + 1;
    std::string send(at, '\0');
    for (int q = 0; q < W; ++q) {
      std::fill_n(send.begin() + send_offsets[q], send_bytes[q], static_cast<char>(16 * me + q));
    }
    at = 0;
    for (int p = 0; p < W; ++p) recv_bytes[p] = p + me + 1, recv_offsets[p] = at, at += p + me + 1;
    std::string recv(at, '?');
    absl::Status st = comm.AllToAllv(send.data(), send_bytes, send_offsets, recv.data(), recv_bytes,
                                     recv_offsets);
    if (!st.ok()) return st;
    for (int p = 0; p < W; ++p) {
      EXPECT_EQ(recv.substr(recv_offsets[p], recv_bytes[p]),
                std::string(recv_bytes[p], static_cast<char>(16 * p + me)));
    }
    return absl::OkStatus();
  });
}

TEST_P(LocalCommunicatorTest, ReductionsGatherAndBroadcast) {
  const int W = GetParam();
  ExpectAllOk(W, [W](Communicator& comm) {
    const int me = comm.rank();
    std::vector<float> f = {1.0f * me, 0.5f};
    std::vector<double> d = {2.0 * me};
    std::vector<int64_t> i = {me + 1, -me};
    std::vector<uint64_t> u = {~uint64_t{0}};  // wraps mod 2^64
    std::vector<int64_t> m = {me == W - 1 ? 7 : -3};
    for (absl::Status st :
         {comm.AllReduceSum(std::span<float>(f)), comm.AllReduceSum(std::span<double>(d)),
          comm.AllReduceSum(std::span<int64_t>(i)), comm.AllReduceSum(std::span<uint64_t>(u)),
          comm.AllReduceMax(std::span<int64_t>(m))}) {
      if (!st.ok()) return st;
    }
    EXPECT_EQ(f, (std::vector<float>{W * (W - 1) / 2.0f, 0.5f * W}));
    EXPECT_EQ(d[0], 1.0 * W * (W - 1));
    EXPECT_EQ(i, (std::vector<int64_t>{W * (W + 1) / 2, -W * (W - 1) / 2}));
    EXPECT_EQ(u[0], uint64_t{0} - static_cast<uint64_t>(W));
    EXPECT_EQ(m[0], 7);
    std::vector<float> mine(me, static_cast<float>(me)), all;  // rank r sends r values
    if (absl::Status st = comm.AllGather(mine, &all); !st.ok()) return st;
    std::vector<float> expected;
    for (int r = 0; r < W; ++r) expected.insert(expected.end(), r, static_cast<float>(r));
    EXPECT_EQ(all, expected);
    std::string text = me == W - 1 ? "from the last rank" : "";
    if (absl::Status st = comm.Broadcast(&text, W - 1); !st.ok()) return st;
    EXPECT_EQ(text, "from the last rank");
    return absl::OkStatus();
  });
}

TEST_P(LocalCommunicatorTest, GatherConcatenatesInRankOrderOnRootOnly) {
  const int W = GetParam();
  ExpectAllOk(W, [W](Communicator& comm) {
    const int me = comm.rank();
    const int root = W - 1;
    const std::string mine(me, static_cast<char>('a' + me));  // rank 0 sends nothing
    std::vector<char> all = {'s', 't', 'a', 'l', 'e'};
    absl::Status st = comm.Gather<char>(mine, root, &all);
    if (!st.ok()) return st;
    std::string expected;
    for (int r = 0; r < W; ++r) expected += std::string(r, static_cast<char>('a' + r));
    EXPECT_EQ(std::string(all.begin(), all.end()), me == root ? expected : "");
    return absl::OkStatus();
  });
}

TEST_P(LocalCommunicatorTest, AllToAllvOfTakesElementCountsPerRank) {
  const int W = GetParam();
  ExpectAllOk(W, [W](Communicator& comm) {
    const int me = comm.rank();
    // Rank p sends q + 1 values p + 0.25 q to rank q, blocks in rank order.
    std::vector<int64_t> send_counts(W), recv_counts(W, me + 1);
    std::vector<double> send;
    for (int q = 0; q < W; ++q) {
      send_counts[q] = q + 1;
      send.insert(send.end(), q + 1, me + 0.25 * q);
    }
    std::vector<double> recv(W * (me + 1), -1.0);
    absl::Status st = comm.AllToAllvOf<double>(send, send_counts, recv, recv_counts);
    if (!st.ok()) return st;
    std::vector<double> expected;
    for (int p = 0; p < W; ++p) expected.insert(expected.end(), me + 1, p + 0.25 * me);
    EXPECT_EQ(recv, expected);
    // Counts past the buffer: refused before any rank sends.
    std::vector<int64_t> too_many(W, 1000);
    st = comm.AllToAllvOf<double>(send, too_many, recv, too_many);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    return absl::OkStatus();
  });
}

// As tests/communicator_mpi_test.cc's AgreeOnStatusTest, on threads.
TEST_P(LocalCommunicatorTest, AgreeOnStatusNamesTheLowestFailingRankUnlessAllFailedAlike) {
  const int W = GetParam();
  ExpectAllOk(W, [W](Communicator& comm) {
    const int me = comm.rank();
    EXPECT_TRUE(AgreeOnStatus(comm, absl::OkStatus()).ok());
    absl::Status st =
        AgreeOnStatus(comm, me == W - 1 ? absl::NotFoundError("no file x") : absl::OkStatus());
    EXPECT_EQ(
        st, absl::NotFoundError(W > 1 ? absl::StrCat("rank ", W - 1, ": no file x") : "no file x"));
    st = AgreeOnStatus(comm, absl::InternalError(absl::StrCat("bad on ", me)));
    EXPECT_EQ(st, absl::InternalError(W > 1 ? "rank 0: bad on 0" : "bad on 0"));
    st = AgreeOnStatus(comm, absl::InvalidArgumentError("x.pbtxt:3: bad field"));
    EXPECT_EQ(st, absl::InvalidArgumentError("x.pbtxt:3: bad field"));
    st = AgreeOnStatus(
        comm, me == W - 1 && W > 1 ? absl::InternalError("e") : absl::InvalidArgumentError("e"));
    EXPECT_EQ(st, absl::InvalidArgumentError(W > 1 ? "rank 0: e" : "e"));
    return absl::OkStatus();
  });
}

// Whichever one rank fails, every rank returns its error, naming it.
TEST_P(LocalCommunicatorTest, AgreeOnStatusCarriesAnyOneRanksErrorToAll) {
  const int W = GetParam();
  for (int failing = 0; failing < W; ++failing) {
    ExpectAllOk(W, [W, failing](Communicator& comm) {
      const absl::Status local = comm.rank() == failing
                                     ? absl::DataLossError(absl::StrCat("file ", failing, ":7 cut"))
                                     : absl::OkStatus();
      const absl::Status agreed = AgreeOnStatus(comm, local);
      const std::string sentence = absl::StrCat("file ", failing, ":7 cut");
      EXPECT_EQ(agreed, absl::DataLossError(W > 1 ? absl::StrCat("rank ", failing, ": ", sentence)
                                                  : sentence))
          << "rank " << comm.rank() << ", rank " << failing << " failing";
      return absl::OkStatus();
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, LocalCommunicatorTest, ::testing::Values(1, 2, 3, 4),
                         [](const auto& info) { return absl::StrCat(info.param, "_ranks"); });

TEST(LocalCommunicatorErrorsTest, MismatchedCountsAreAnErrorNotACorruption) {
  const std::vector<absl::Status> status = RunLocalRanks(2, [](Communicator& comm) {
    const std::vector<int64_t> send_bytes = {1, 1}, offsets = {0, 1};
    // Rank 1 expects 2 bytes from rank 0, which sends 1.
    const std::vector<int64_t> recv_bytes =
        comm.rank() == 1 ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{1, 1};
    char send[2] = {'x', 'y'}, recv[3] = {};
    return comm.AllToAllv(send, send_bytes, offsets, recv, recv_bytes, offsets);
  });
  EXPECT_TRUE(status[0].ok()) << status[0];
  EXPECT_EQ(status[1], absl::InvalidArgumentError(
                           "all-to-all-v: rank 0 sends 1 bytes to rank 1, which expects 2"));
}

// Ranks in different collectives, or in one with different lengths or
// roots, hang or corrupt memory under MPI; here every rank gets a sentence
// naming the ranks, and the world stays usable.
TEST(LocalCommunicatorErrorsTest, RanksInDifferentCollectivesGetASentenceNotACorruption) {
  const std::vector<absl::Status> status = RunLocalRanks(3, [](Communicator& comm) {
    std::vector<int64_t> v(comm.rank() == 2 ? 4 : 8, 1), w(3);
    const absl::Status other_op = comm.rank() == 1 ? comm.AllToAll(w, w) : comm.AllReduceMax(v);
    EXPECT_EQ(other_op.code(), absl::StatusCode::kInvalidArgument) << other_op;
    EXPECT_THAT(std::string(other_op.message()),
                ::testing::HasSubstr("every rank must run the same collectives"));
    const absl::Status other_length = comm.AllReduceSum(std::span<int64_t>(v));
    EXPECT_EQ(other_length.code(), absl::StatusCode::kInvalidArgument) << other_length;
    std::string bytes = "x";
    const absl::Status other_root = comm.Broadcast(&bytes, comm.rank() == 0 ? 0 : 1);
    EXPECT_EQ(other_root.code(), absl::StatusCode::kInvalidArgument) << other_root;
    // Agreeing again works.
    std::vector<int64_t> one = {comm.rank()};
    absl::Status st = comm.AllReduceMax(std::span<int64_t>(one));
    EXPECT_EQ(one[0], 2);
    return st;
  });
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  const std::vector<absl::Status> one = RunLocalRanks(2, [](Communicator& comm) {
    std::vector<int64_t> v(comm.rank() == 0 ? 2 : 3, 1);
    return comm.AllReduceSum(std::span<int64_t>(v));
  });
  EXPECT_EQ(one[0], absl::InvalidArgumentError(
                        "all-reduce: rank 0 is in all-reduce (length or root 2) while rank 1 is "
                        "in all-reduce (3): every rank must run the same collectives in the same "
                        "order, with the same lengths"));
}

TEST(LocalCommunicatorErrorsTest, ARankThatNeverArrivesEndsTheWaitWithDeadlineExceeded) {
  LocalWorld world(2, std::chrono::milliseconds(50));
  LocalCommunicator rank0(world, 0);
  std::vector<int64_t> v = {1};
  const absl::Status st = rank0.AllReduceMax(std::span<int64_t>(v));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(st.message()),
              ::testing::HasSubstr("all-reduce (max): not every one of the 2 local ranks"));
}

}  // namespace
}  // namespace lemrt::runtime
