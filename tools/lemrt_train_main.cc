// lemrt_train: trains the DLRM described by --config on every MPI rank (one
// rank = one emulated chip) and prints a summary table on rank 0.
//
//   mpirun -np 4 build/bin/lemrt_train --config=examples/configs/dlrm_synthetic.pbtxt
//       [--override='training { steps: 50 }'] [--summary_json=out/summary.json]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "device/plan/memory_plan.h"
#include "device/plan/memory_plan_report.h"
#include "proto/config_loader.h"
#include "runtime/comm/collective_monitor.h"
#include "runtime/comm/mpi_session.h"
#include "runtime/comm/mpi_watchdog.h"
#include "runtime/comm/placement.h"
#include "runtime/comm/watched_communicator.h"
#include "runtime/config_agreement.h"
#include "runtime/threads/core_share.h"
#include "runtime/host_memory.h"
#include "runtime/step/host_prefetcher.h"
#include "runtime/output_paths.h"
#include "runtime/eval/quantized_eval.h"
#include "runtime/observability/run_report.h"
#include "runtime/observability/startup_clock.h"
#include "runtime/observability/summary_writer.h"
#include "runtime/threads/thread_budget.h"
#include "runtime/threads/thread_plan.h"
#include "runtime/observability/trace_buffer.h"
#include "runtime/trainer.h"
#include "tools/tool_help.h"

DEFINE_string(config, "", "Run config in protobuf text format (required).");
DEFINE_string(override, "",
              "Text proto merged into the config (text-format merge: scalars replace, "
              "repeated fields append).");
DEFINE_string(summary_json, "", "Where rank 0 writes the run summary as JSON.");
DEFINE_bool(dry_run, false,
            "Print the static memory plan of each chip (HBM: padded tables, slots, stack, "
            "heap; SPMEM per tile) and exit; exit status 1 when it does not fit.");
DEFINE_string(checkpoint_dir, "",
              "Save checkpoints here (one step-N directory each; sets checkpoint.dir).");
DEFINE_int64(checkpoint_every, 0,
             "Save every N steps besides the final save (sets checkpoint.every_steps).");
DEFINE_string(restore_from, "",
              "Resume from this checkpoint, or from the newest one under this directory, "
              "on any world size (sets checkpoint.restore_from).");
DEFINE_bool(allow_config_change, false,
            "Resume a checkpoint even though training.seed, a table's combiner or the data "
            "source differ from the run that saved it (sets checkpoint.allow_config_change).");
DEFINE_string(trace_json, "",
              "Rank 0 writes a Chrome trace-event JSON of the traced steps, merged from all "
              "chips (open in Perfetto or chrome://tracing).");
DEFINE_string(trace_steps, "",
              "Steps to trace, A:B counted from 1, both inclusive (default 1:100).");
DEFINE_bool(eval_quantized, false,
            "After training, evaluate again with int8 tables (per-row scale and offset) and "
            "report the AUC change and the bytes saved (log and summary quantized_eval).");
DEFINE_string(metrics_csv, "",
              "Rank 0 writes one CSV row per logged or evaluated step here.");

namespace {

using lemrt::runtime::AgreeOnStatus;
using lemrt::runtime::Communicator;

// The first stop signal's number, 0 until one arrives: the one piece of
// global state signal handling cannot avoid, written only by OnStopSignal
// and read by the trainer once per step (Trainer::set_stop_signal).
volatile std::sig_atomic_t g_stop_signal = 0;
// Where this rank is, for OnStopSignal (which alone reads it): kStopStarting
// until training begins (main sets kStopRunning right before the trainer
// runs); once this rank's stop is complete (the trainer returned), kStopDone,
// or kStopSaved when the stop saved a checkpoint.
enum StopPhase : int { kStopRunning = 0, kStopDone = 1, kStopSaved = 2, kStopStarting = 3 };
volatile std::sig_atomic_t g_stop_phase = kStopStarting;

// Writes the sentence of a stop signal that came before training began.
// Async-signal-safe (write only).
void WriteStoppedBeforeTraining(int signal) {
  const char* name = signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "SIGUSR1";
  static const char kRest[] =
      " before training began (while setting up: reading the config, opening and indexing the "
      "data, allocating the tables): no step had run, so there is nothing to save; exiting now\n";
  static const char kHead[] = "lemrt_train: stopped by ";
  (void)!write(STDERR_FILENO, kHead, sizeof(kHead) - 1);
  (void)!write(STDERR_FILENO, name, std::strlen(name));
  (void)!write(STDERR_FILENO, kRest, sizeof(kRest) - 1);
}

// SIGTERM, SIGINT, SIGUSR1: before training begins, the first ends the rank
// at once (nothing to save; indexing a huge file or allocating huge tables
// does not delay it, and mpirun ends the other ranks). Once training runs,
// the first asks every rank to finish its step, save and exit (the trainer
// agrees on it over the ranks; an evaluation is cut short); a second exits
// at once, saying whether the stop had saved its checkpoint (mpirun sends a
// rank SIGTERM when another rank has exited non-zero, which a stopped rank
// does right after its save). Only async-signal-safe calls.
extern "C" void OnStopSignal(int signal) {
  if (g_stop_signal == 0 && g_stop_phase == kStopStarting) {
    WriteStoppedBeforeTraining(signal);
    _exit(128 + signal);
  }
  if (g_stop_signal != 0) {
    static const char kUnsaved[] =
        "lemrt_train: a second stop signal: exiting now, without a checkpoint\n";
    static const char kDone[] =
        "lemrt_train: a second stop signal after the stop was complete: exiting now\n";
    static const char kSaved[] =
        "lemrt_train: a second stop signal after the stop's checkpoint was saved: exiting now\n";
    const int phase = g_stop_phase;
    const char* message = phase == kStopSaved ? kSaved : phase == kStopDone ? kDone : kUnsaved;
    const size_t length = phase == kStopSaved  ? sizeof(kSaved) - 1
                          : phase == kStopDone ? sizeof(kDone) - 1
                                               : sizeof(kUnsaved) - 1;
    (void)!write(STDERR_FILENO, message, length);
    // After a complete stop the exit status is the first signal's, as the
    // stop would have ended.
    _exit(128 + (phase == kStopRunning ? signal : g_stop_signal));
  }
  g_stop_signal = signal;
}

void InstallStopHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGTERM, SIGINT, SIGUSR1}) sigaction(signal, &action, nullptr);
}

// This rank's host. Test hooks: LEMRT_TEST_HOSTNAME and LEMRT_TEST_HOST_KEY
// replace the hostname and the host key (runtime/comm/placement.h), so that
// tests place the ranks of one machine on "hosts" (tests/fault_watchdog.sh)
// or make two "hosts" share a name (tests/fault_start.sh).
lemrt::runtime::HostIdentity ThisHost() {
  lemrt::runtime::HostIdentity id = lemrt::runtime::LocalHostIdentity();
  if (const char* name = std::getenv("LEMRT_TEST_HOSTNAME"); name != nullptr && name[0] != '\0') {
    id.name = name;
  }
  if (const char* key = std::getenv("LEMRT_TEST_HOST_KEY"); key != nullptr && key[0] != '\0') {
    id.key = key;
  }
  return id;
}

// The checkpoint, tracing and metrics flags, each as a text-format override
// merged after --override: an error in a field a flag set names the flag.
absl::StatusOr<std::vector<lemrt::config::FlagOverride>> FlagOverrides() {
  std::vector<lemrt::config::FlagOverride> out;
  auto add = [&out](std::string flag, std::string section, std::string fields) {
    out.push_back({std::move(flag), absl::StrCat(section, " { ", fields, " }")});
  };
  auto quoted = [](const std::string& value) {
    return absl::StrCat("\"", absl::CEscape(value), "\"");
  };
  if (!FLAGS_checkpoint_dir.empty()) {
    add("--checkpoint_dir=" + FLAGS_checkpoint_dir, "checkpoint",
        "dir: " + quoted(FLAGS_checkpoint_dir));
  }
  if (FLAGS_checkpoint_every != 0) {
    add(absl::StrCat("--checkpoint_every=", FLAGS_checkpoint_every), "checkpoint",
        absl::StrCat("every_steps: ", FLAGS_checkpoint_every));
  }
  if (!FLAGS_restore_from.empty()) {
    add("--restore_from=" + FLAGS_restore_from, "checkpoint",
        "restore_from: " + quoted(FLAGS_restore_from));
  }
  if (FLAGS_allow_config_change) {
    add("--allow_config_change", "checkpoint", "allow_config_change: true");
  }
  if (!FLAGS_trace_json.empty()) {
    add("--trace_json=" + FLAGS_trace_json, "observability",
        "trace_json: " + quoted(FLAGS_trace_json));
  }
  if (!FLAGS_trace_steps.empty()) {
    int64_t first = 0, last = 0;
    absl::Status st = lemrt::runtime::ParseStepRange(
        FLAGS_trace_steps, std::numeric_limits<int64_t>::max(), &first, &last);
    if (!st.ok()) return st;
    add("--trace_steps=" + FLAGS_trace_steps, "observability",
        absl::StrCat("trace_first_step: ", first, " trace_last_step: ", last));
  }
  if (!FLAGS_metrics_csv.empty()) {
    add("--metrics_csv=" + FLAGS_metrics_csv, "observability",
        "metrics_csv: " + quoted(FLAGS_metrics_csv));
  }
  return out;
}

// --dry_run: rank 0 prints the memory plan; every rank returns the agreed
// verdict (the plan reads the limits file, which may fail on one rank only).
absl::Status DryRun(const lemrt::config::RunConfig& config, Communicator& comm) {
  auto plan = lemrt::device::BuildMemoryPlan(config);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, plan.status()));
  const absl::Status fit = lemrt::device::CheckMemoryPlan(*plan);
  if (comm.rank() == 0) {
    std::printf("%s%s\n", lemrt::device::FormatMemoryPlan(*plan).c_str(),
                fit.ok() ? "The plan fits." : "The plan does NOT fit.");
    std::fflush(stdout);
  }
  return AgreeOnStatus(comm, fit);
}

// The run's config from the flags on this rank (no collectives).
absl::StatusOr<lemrt::config::RunConfig> LoadRunConfig(int world_size) {
  if (FLAGS_config.empty()) return absl::InvalidArgumentError("--config=FILE is required");
  // (Said in the flag's own words, before checkpoint.every_steps' check.)
  if (FLAGS_checkpoint_every < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--checkpoint_every must be >= 0 steps, got ", FLAGS_checkpoint_every));
  }
  LEMRT_ASSIGN_OR_RETURN(const std::vector<lemrt::config::FlagOverride> flags, FlagOverrides());
  LEMRT_ASSIGN_OR_RETURN(lemrt::config::RunConfig config,
                         lemrt::config::LoadConfig(FLAGS_config, FLAGS_override, world_size,
                                                   /*adjust=*/nullptr, flags));
  if (!config.data().schema().label().required()) {
    return absl::InvalidArgumentError(
        "data.schema.label.required: false is for scoring with lemrt_predict; training needs "
        "the labels");
  }
  return config;
}

// The flags that choose which collectives run must be set alike on every
// rank (an MPMD job may give ranks different arguments): one all-reduce.
absl::Status AgreeOnModeFlags(Communicator& comm) {
  const bool flags[] = {FLAGS_dry_run, FLAGS_eval_quantized};
  const char* names[] = {"--dry_run", "--eval_quantized"};
  int64_t seen[4];  // per flag: max(set), max(unset)
  for (int i = 0; i < 2; ++i) {
    seen[2 * i] = flags[i] ? 1 : 0;
    seen[2 * i + 1] = flags[i] ? 0 : 1;
  }
  LEMRT_RETURN_IF_ERROR(comm.AllReduceMax(std::span<int64_t>(seen, 4)));
  for (int i = 0; i < 2; ++i) {
    if (seen[2 * i] == 1 && seen[2 * i + 1] == 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(names[i], " is set on some ranks only; give every rank the same mode"));
    }
  }
  return absl::OkStatus();
}

// The sentence a stopped run ends with, on rank 0.
std::string StopSentence(const lemrt::summary::RunSummary& summary,
                         const lemrt::config::RunConfig& config) {
  const auto& stop = summary.stopped();
  std::string text = absl::StrFormat("stopped by %s after step %d of %d (every rank finished it); ",
                                     stop.signal(), stop.steps_completed(), summary.steps());
  if (stop.checkpoint().empty()) return text + "no checkpoint saved (no --checkpoint_dir)";
  return absl::StrCat(text, "checkpoint saved: ", stop.checkpoint(), "; resume with --restore_from=",
                      config.checkpoint().dir());
}

// Collective: measures the cores this rank owns (its affinity mask against
// those of the other ranks on its node), fills the config's unset thread
// fields from them (runtime/threads/thread_plan.h) and logs the plan on rank 0.
absl::StatusOr<lemrt::runtime::CoreShare> PlanRunThreads(const lemrt::runtime::MpiSession& mpi,
                                                          lemrt::runtime::Communicator& world,
                                                          lemrt::config::RunConfig* config,
                                                          lemrt::runtime::ThreadPlan* plan_out) {
  auto node_comm = mpi.Node();
  if (!node_comm.ok()) return node_comm.status();
  auto share = lemrt::runtime::MeasureCoreShare(**node_comm);
  if (!share.ok()) return share.status();
  const lemrt::runtime::ThreadPlan plan = lemrt::runtime::PlanThreads(*config, *share);
  lemrt::runtime::ApplyThreadPlan(plan, config);
  *plan_out = plan;
  if (world.rank() == 0) {
    LOG(INFO) << lemrt::runtime::DescribeThreadPlan(plan, *share);
    const std::string advice = lemrt::runtime::LaunchAdvice(*share);
    if (!advice.empty()) LOG(WARNING) << advice;
  }
  return share;
}

// Refuses an executor-thread pipeline without MPI_THREAD_MULTIPLE (agreed
// over the ranks) and, on rank 0, warns once when the node's cores are
// oversubscribed.
absl::Status CheckThreads(const lemrt::runtime::MpiSession& mpi, Communicator& sparse_comm,
                          const lemrt::config::RunConfig& config,
                          const lemrt::runtime::CoreShare& share,
                          const lemrt::runtime::ThreadPlan& plan) {
  absl::Status threads = absl::OkStatus();
  if (!config.sparse_core().disable_full_embedding_pipelining() &&
      !config.sparse_core().pipeline_without_threads() &&
      !mpi.provides(lemrt::runtime::MpiThreads::kMultiple)) {
    threads = absl::FailedPreconditionError(
        "pipelining on an executor thread needs MPI_THREAD_MULTIPLE, which this MPI does not "
        "provide; set sparse_core { pipeline_without_threads: true } (the same model on one "
        "thread) or sparse_core { disable_full_embedding_pipelining: true }");
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(sparse_comm, threads));
  if (sparse_comm.rank() == 0) {
    lemrt::runtime::ThreadBudget budget =
        lemrt::runtime::ComputeThreadBudget(config, share.local_ranks, share.node_cpus_used);
    // The plan's own host worker and tile threads share cores on purpose
    // (thread_plan.h); the warning is about the threads the config asked for.
    if (plan.chose_host_workers) budget.host_workers = 0;
    if (plan.chose_tile_threads) budget.tile_workers = 0;
    const std::string warning = lemrt::runtime::OversubscriptionWarning(budget);
    if (!warning.empty()) LOG(WARNING) << warning;
  }
  return absl::OkStatus();
}

// Starts the collective watchdog over `monitor` when the config asks for one
// and MPI allows it (null otherwise; rank 0 warns when it cannot). Collective:
// a failed start is agreed.
absl::StatusOr<std::unique_ptr<lemrt::runtime::MpiWatchdog>> StartWatchdog(
    const lemrt::runtime::MpiSession& mpi, Communicator& sparse_comm,
    const lemrt::config::RunConfig& config, const lemrt::runtime::CollectiveMonitor& monitor,
    const lemrt::runtime::Placement& placement) {
  const double timeout_s = config.watchdog().collective_timeout_s();
  if (timeout_s <= 0) return nullptr;
  if (!mpi.provides(lemrt::runtime::MpiThreads::kMultiple)) {
    if (sparse_comm.rank() == 0) {
      LOG(WARNING) << "the collective watchdog is off: it needs MPI_THREAD_MULTIPLE";
    }
    return nullptr;
  }
  lemrt::runtime::WatchdogOptions options;
  options.timeout_s = timeout_s;
  // A healthy peer answers within a poll interval; short timeouts (tests)
  // need not wait the full 5 s for one that is stopped.
  options.answer_wait_s = std::clamp(timeout_s / 4, 1.0, 5.0);
  options.placement = placement;
  options.on_stall = [](const std::string& sentence) {
    std::fprintf(stderr, "lemrt_train: error: %s\n", sentence.c_str());
    std::fflush(stderr);
  };
  auto started = mpi.StartWatchdog(monitor, options);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(sparse_comm, started.status()));
  return std::move(*started);
}

// --eval_quantized: evaluates the trained model with int8 tables into
// `summary` and logs the comparison with fp32.
absl::Status RunQuantizedEval(const lemrt::config::RunConfig& config,
                              lemrt::runtime::Trainer& t, Communicator& sparse_comm,
                              lemrt::summary::RunSummary* summary) {
  LEMRT_RETURN_IF_ERROR(lemrt::runtime::EvaluateInt8Tables(
      config, t.sparse(), [&t] { return t.Evaluate(); }, sparse_comm, summary));
  const auto& e = summary->quantized_eval();
  const auto metric = [](bool has, double value, bool has_change, double change) {
    if (!has) return std::string("absent");
    return has_change ? absl::StrFormat("%.6f (%+.2e vs f32)", value, change)
                      : absl::StrFormat("%.6f", value);
  };
  LOG(INFO) << absl::StrFormat(
      "int8 tables (%s): auc %s, logloss %s; table bytes %.0f -> %.0f, %.0f saved (%.1f%%); "
      "max abs error %.3g",
      e.scheme(), metric(e.has_auc(), e.auc(), e.has_auc_change(), e.auc_change()),
      metric(e.has_logloss(), e.logloss(), e.has_logloss_change(), e.logloss_change()),
      e.table_bytes_fp32(), e.table_bytes_int8(), e.bytes_saved(),
      e.table_bytes_fp32() > 0 ? 100.0 * e.bytes_saved() / e.table_bytes_fp32() : 0.0,
      e.max_abs_error());
  return absl::OkStatus();
}

// Rank 0: prints the summary table (and, unless `stopped`, the run report)
// and writes --summary_json.
absl::Status PrintSummary(const lemrt::summary::RunSummary& summary, bool stopped) {
  std::printf("%s", lemrt::runtime::SummaryTable(summary).c_str());
  if (!stopped) std::printf("%s", lemrt::runtime::RunReport(summary).c_str());
  std::fflush(stdout);
  if (FLAGS_summary_json.empty()) return absl::OkStatus();
  return lemrt::runtime::WriteSummaryJson(summary, FLAGS_summary_json);
}

// Every step that can fail on one rank only (a file one rank cannot read, an
// MPMD job's different arguments) is agreed before the next collective, so
// every rank ends with the same sentence.
// `*stop_signal` is set when a stop signal ended the run early.
// `process_start`: when this process started (the start-up breakdown's
// origin).
absl::Status Run(const lemrt::runtime::MpiSession& mpi, Communicator& sparse_comm,
                 Communicator& dense_comm, std::chrono::steady_clock::time_point process_start,
                 int* stop_signal) {
  const int rank = sparse_comm.rank();
  const int world_size = sparse_comm.size();
  // Where the ranks run, first: two hosts sharing a hostname are an error
  // before any other collective (runtime/comm/placement.h; Open MPI's own
  // start-up and MPI_Comm_dup have used the transports already).
  LEMRT_ASSIGN_OR_RETURN(const lemrt::runtime::Placement placement,
                         lemrt::runtime::GatherPlacement(sparse_comm, ThisHost()));
  if (rank == 0) LOG(INFO) << "placement: " << lemrt::runtime::DescribePlacement(placement);
  LEMRT_RETURN_IF_ERROR(AgreeOnModeFlags(sparse_comm));
  absl::StatusOr<lemrt::config::RunConfig> config = LoadRunConfig(world_size);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(sparse_comm, config.status()));
  if (FLAGS_dry_run) return DryRun(*config, sparse_comm);
  // An MPMD job may give ranks different configs: refused, naming the field.
  // Test hook: LEMRT_TEST_ALLOW_DIFFERENT_CONFIGS=1 in every rank's
  // environment skips it, for tests that inject a fault into one rank's
  // config (tests/fault_rank_error.sh).
  if (std::getenv("LEMRT_TEST_ALLOW_DIFFERENT_CONFIGS") == nullptr) {
    LEMRT_RETURN_IF_ERROR(lemrt::runtime::AgreeOnConfig(sparse_comm, *config));
  }
  lemrt::runtime::ThreadPlan plan;
  absl::StatusOr<lemrt::runtime::CoreShare> share = PlanRunThreads(mpi, sparse_comm, &*config, &plan);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(sparse_comm, share.status()));
  LEMRT_RETURN_IF_ERROR(CheckThreads(mpi, sparse_comm, *config, *share, plan));
  // Every collective from here on is watched: one that waits too long
  // aborts the job with a sentence instead of hanging
  // (runtime/comm/mpi_watchdog.h).
  lemrt::runtime::CollectiveMonitor monitor;
  lemrt::runtime::WatchedCommunicator sparse_watched(
      sparse_comm, monitor, lemrt::runtime::CollectiveMonitor::kSparseCore);
  lemrt::runtime::WatchedCommunicator dense_watched(
      dense_comm, monitor, lemrt::runtime::CollectiveMonitor::kTensorCore);
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<lemrt::runtime::MpiWatchdog> watchdog,
                         StartWatchdog(mpi, sparse_comm, *config, monitor, placement));
  // Outputs written at the end are checked now, not after the whole run.
  LEMRT_RETURN_IF_ERROR(
      lemrt::runtime::CheckOutputPaths(*config, FLAGS_summary_json, sparse_watched));
  auto trainer = lemrt::runtime::Trainer::Create(*config, sparse_watched, dense_watched, &monitor,
                                                 &placement, process_start);
  if (!trainer.ok()) return trainer.status();
  (*trainer)->set_stop_signal(&g_stop_signal);
  g_stop_phase = kStopRunning;  // a stop signal from here on saves
  auto summary = (*trainer)->Run();
  if (!summary.ok()) return summary.status();
  summary->mutable_threads()->set_cores_owned(share->cores);
  if (summary->has_stopped()) {
    g_stop_phase = summary->stopped().checkpoint().empty() ? kStopDone : kStopSaved;
    *stop_signal = (*trainer)->stopped_by();
    if (rank == 0) {
      LEMRT_RETURN_IF_ERROR(PrintSummary(*summary, /*stopped=*/true));
      std::fprintf(stderr, "lemrt_train: %s\n", StopSentence(*summary, *config).c_str());
    }
    return absl::OkStatus();
  }
  if (FLAGS_eval_quantized) {
    LEMRT_RETURN_IF_ERROR(RunQuantizedEval(*config, **trainer, sparse_watched, &*summary));
  }
  return rank == 0 ? PrintSummary(*summary, /*stopped=*/false) : absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::chrono::steady_clock::time_point process_start = lemrt::runtime::ProcessStart();
  lemrt::runtime::InstallOutOfMemoryHandler("lemrt_train");
  // The pipelined trainer issues collectives from two threads, each on its
  // own communicator: MPI_THREAD_MULTIPLE, without which it runs unpipelined.
  lemrt::runtime::MpiSession mpi(&argc, &argv, lemrt::runtime::MpiThreads::kMultiple);
  gflags::SetUsageMessage("mpirun -np N lemrt_train --config=FILE [--override=TEXT]");
  lemrt::tools::HandleHelpFlag(argc, argv, __FILE__);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (mpi.rank() != 0) FLAGS_minloglevel = google::GLOG_WARNING;
  InstallStopHandlers();
  int stop_signal = 0;
  // The communicators first: everything after them that can fail is agreed
  // over them.
  auto sparse_comm = mpi.World();
  auto dense_comm = mpi.World();
  absl::Status st = sparse_comm.ok() ? dense_comm.status() : sparse_comm.status();
  if (st.ok()) st = mpi.Require(lemrt::runtime::MpiThreads::kFunneled, "lemrt_train");
  if (st.ok()) st = Run(mpi, **sparse_comm, **dense_comm, process_start, &stop_signal);
  // A stop signal during the int8 evaluation after training (--eval_quantized;
  // the final checkpoint is saved) ends it, on every rank.
  if (absl::IsCancelled(st) && g_stop_signal != 0) {
    const char* abbrev = sigabbrev_np(g_stop_signal);
    std::fprintf(stderr, "lemrt_train: stopped by SIG%s after training: %s\n",
                 abbrev != nullptr ? abbrev : "?", std::string(st.message()).c_str());
    return 128 + g_stop_signal;
  }
  if (!st.ok()) {
    std::fprintf(stderr, "lemrt_train: error: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  // Test hook (tests/fault_preempt.sh): a stopped rank lingers this many
  // seconds before it ends, so that a second signal surely comes after the
  // stop.
  if (const char* linger = std::getenv("LEMRT_TEST_STOPPED_LINGER_S");
      linger != nullptr && stop_signal != 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(linger)));
  }
  // Stopped early (checkpoint saved, summary written): the shell's
  // "ended by this signal" status, so schedulers see an unfinished run.
  return stop_signal != 0 ? 128 + stop_signal : 0;
}
