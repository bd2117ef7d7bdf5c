// The SparseCore exchange (MpiCommunicator::AllToAllv, as SparseCoreStage
// calls it for entries, partials and gradients) against a raw MPI_Alltoallv
// of the same sizes, in one binary. Run under MPI:
//
//   mpirun --oversubscribe --bind-to none -np 2 build/bin/bench_exchange
//
// BM_AllToAllv/bytes: every rank sends `bytes` in total, split evenly over the
// ranks (itself included), like one exchange of a step. Iteration counts are
// fixed so all ranks run the same collectives. Reports GBps (bytes sent per
// rank per second) of the lemrt call, raw_GBps of MPI_Alltoallv, timed
// alternately in blocks in the same run, and of_raw = raw time / lemrt time
// (target: >= 0.9).
//
// BM_AllReduceSum/floats: MpiCommunicator::AllReduceSum of `floats` values
// (the dense gradients' all-reduce; rank-ordered sums by all-to-all and
// gather) against MPI_Allreduce (MPI_SUM) of the same floats, alternated the
// same way: GBps of the values per rank, raw_GBps and of_raw. Only rank 0
// prints.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <span>
#include <vector>

#include "benchmark/benchmark.h"
#include "runtime/comm/mpi_communicator.h"

namespace lemrt::runtime {
namespace {

using Clock = std::chrono::steady_clock;

template <typename Fn>
double SecondsPerCall(int reps, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) fn();
    double s = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    best = std::min(best, s);
  }
  return best;
}

void BM_AllToAllv(benchmark::State& state, MpiCommunicator* comm) {
  const int world = comm->size();
  const int64_t per_rank = state.range(0) / world;
  std::vector<char> send(per_rank * world, 1), recv(per_rank * world);
  std::vector<int64_t> bytes(world, per_rank), offs(world);
  std::vector<int> counts(world, static_cast<int>(per_rank)), displs(world);
  for (int r = 0; r < world; ++r) {
    offs[r] = r * per_rank;
    displs[r] = static_cast<int>(r * per_rank);
  }
  auto lemrt = [&] {
    auto st = comm->AllToAllv(send.data(), bytes, offs, recv.data(), bytes, offs);
    benchmark::DoNotOptimize(st);
  };
  auto raw = [&] {
    MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_BYTE, recv.data(),
                  counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD);
  };
  for (auto _ : state) lemrt();
  const int reps = std::max<int>(1, static_cast<int>(state.iterations() / 5));
  double lemrt_s = 1e30, raw_s = 1e30;
  for (int round = 0; round < 3; ++round) {  // Alternate so drift hits both.
    lemrt_s = std::min(lemrt_s, SecondsPerCall(reps, lemrt));
    raw_s = std::min(raw_s, SecondsPerCall(reps, raw));
  }
  const double total = static_cast<double>(per_rank) * world;
  state.counters["GBps"] = total / lemrt_s * 1e-9;
  state.counters["raw_GBps"] = total / raw_s * 1e-9;
  state.counters["of_raw"] = raw_s / lemrt_s;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * total));
}
void BM_AllReduceSum(benchmark::State& state, MpiCommunicator* comm) {
  const int64_t n = state.range(0);
  std::vector<float> values(n, 1.0f);
  auto lemrt = [&] {
    auto st = comm->AllReduceSum(std::span<float>(values));
    benchmark::DoNotOptimize(st);
  };
  auto raw = [&] {
    MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  };
  for (auto _ : state) lemrt();
  const int reps = std::max<int>(1, static_cast<int>(state.iterations() / 5));
  double lemrt_s = 1e30, raw_s = 1e30;
  for (int round = 0; round < 3; ++round) {
    std::fill(values.begin(), values.end(), 1.0f);  // sums of ones stay finite
    lemrt_s = std::min(lemrt_s, SecondsPerCall(reps, lemrt));
    std::fill(values.begin(), values.end(), 1.0f);
    raw_s = std::min(raw_s, SecondsPerCall(reps, raw));
  }
  const double bytes = static_cast<double>(n) * sizeof(float);
  state.counters["GBps"] = bytes / lemrt_s * 1e-9;
  state.counters["raw_GBps"] = bytes / raw_s * 1e-9;
  state.counters["of_raw"] = raw_s / lemrt_s;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// 64 KiB .. 8 MiB per rank: the entries (24 B/id) and partials (4 x dim B per
// group) of batches 128..16384 of the Criteo shape.
void Register(MpiCommunicator* comm) {
  benchmark::RegisterBenchmark("BM_AllToAllv", BM_AllToAllv, comm)
      ->Arg(64 << 10)->Arg(512 << 10)->Arg(2 << 20)->Arg(8 << 20)
      ->Iterations(200)->Unit(benchmark::kMicrosecond);
  // 4 KiB .. 16 MiB of gradients: dense models of 10^3 .. 4 x 10^6 parameters
  // (dlrm_synthetic has 35,809).
  benchmark::RegisterBenchmark("BM_AllReduceSum", BM_AllReduceSum, comm)
      ->Arg(1 << 10)->Arg(1 << 15)->Arg(1 << 18)->Arg(1 << 22)
      ->Iterations(100)->Unit(benchmark::kMicrosecond);
}

// Prints nothing (ranks other than 0).
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace
}  // namespace lemrt::runtime

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  {
    auto comm = lemrt::runtime::MpiCommunicator::Create(MPI_COMM_WORLD);
    if (!comm.ok()) {
      fprintf(stderr, "%s\n", comm.status().ToString().c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    lemrt::runtime::Register(comm->get());
    benchmark::Initialize(&argc, argv);
    if (rank == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      lemrt::runtime::NullReporter null;
      benchmark::RunSpecifiedBenchmarks(&null);
    }
    benchmark::Shutdown();
  }
  MPI_Finalize();
  return rc;
}
