// Building a Trainer: the memory plan, the data source and its steps, the
// stages, the tables' initial values and the step buffers, each verdict that
// can differ by rank agreed before the next collective (Trainer::Create). The
// step loop is in trainer.cc, the summary in trainer_summary.cc.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "device/plan/memory_plan.h"
#include "device/sparsecore/table_init.h"
#include "glog/logging.h"
#include "layout/stacking.h"
#include "proto/config_check.h"
#include "proto/hot_row_rule.h"
#include "runtime/checkpoint/checkpointer.h"
#include "runtime/host_memory.h"
#include "runtime/hot_rows/hot_row_choice.h"
#include "runtime/step/step_buffer_reserve.h"
#include "runtime/threads/thread_budget.h"
#include "runtime/trainer.h"

namespace lemrt::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Logs the table stacking plan once at start-up (layout/stacking.h), and one
// warning line when stack sizes are outside the reference's advice.
void LogStackingPlan(const config::RunConfig& config) {
  const layout::StackingPlan plan = layout::StackingPlan::FromConfig(config);
  std::vector<std::string> names;
  for (const auto& t : config.tables()) names.push_back(t.name());
  LOG(INFO) << plan.Describe(names);
  if (const std::string warning = plan.SizeWarning(); !warning.empty()) LOG(WARNING) << warning;
}

}  // namespace

Trainer::Trainer(const config::RunConfig& config, Communicator& sparse_comm,
                 Communicator& dense_comm)
    : config_(config),
      sparse_comm_(sparse_comm),
      dense_comm_(dense_comm),
      pipelining_(!config.sparse_core().disable_full_embedding_pipelining()),
      stall_hook_(sparse_comm.rank()),
      eval_tracker_(config.training().early_stop_evals()) {
  for (int f = 0; f < config.features_size(); ++f) {
    if (config.training().has_eval_group_feature() &&
        config.features(f).name() == config.training().eval_group_feature()) {
      eval_scores_.set_group_feature(f);
    }
  }
  if (config.model().tasks_size() > 0) {
    std::vector<std::string> tasks;
    for (const config::TaskConfig& task : config.model().tasks()) tasks.push_back(task.name());
    eval_scores_.set_tasks(std::move(tasks));
  }
}

Trainer::~Trainer() = default;

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(
    const config::RunConfig& config, Communicator& sparse_comm, Communicator& dense_comm,
    CollectiveMonitor* monitor, const Placement* placement,
    std::optional<StartupClock::Clock::time_point> process_start) {
  // Without the process's start the phases start here (launch 0).
  StartupClock startup(process_start.value_or(Clock::now()));
  if (process_start.has_value()) startup.Mark(StartupPhase::kLaunch);
  Communicator& comm = sparse_comm;
  if (comm.rank() == 0) {
    LogStackingPlan(config);
    for (const std::string& warning : config::TableWarnings(config)) LOG(WARNING) << warning;
  }
  // "Compilation": the plan is sized before any table is allocated. It reads
  // the limits file, which one rank may fail to read, so its verdict is agreed.
  auto plan = device::BuildMemoryPlan(config);
  LEMRT_RETURN_IF_ERROR(
      AgreeOnStatus(comm, plan.ok() ? device::CheckMemoryPlan(*plan) : plan.status()));
  std::unique_ptr<Trainer> t(new Trainer(config, sparse_comm, dense_comm));
  t->startup_ = startup;
  t->monitor_ = monitor;
  if (placement != nullptr) {
    CHECK_EQ(placement->num_ranks(), comm.size()) << "the placement of another world";
    t->placement_ = *placement;
  } else {
    LEMRT_ASSIGN_OR_RETURN(t->placement_, GatherPlacement(comm, LocalHostIdentity()));
  }
  // The emulated HBM is host memory: this rank's share must fit its limits
  // (ulimit -v), and the shares of every rank on this host the host's
  // available memory, checked before any allocation.
  const int ranks_on_host = t->placement_.ranks_on_host[t->placement_.host_of_rank[comm.rank()]];
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(
      comm, CheckHostMemory(plan->hbm_bytes_per_chip, ranks_on_host, AvailableHostMemory())));
  // The checkpoint directory first: a bad one fails before any table work.
  // (It reads the trainer's copy of the config, whose steps are resolved below.)
  LEMRT_ASSIGN_OR_RETURN(t->checkpointer_, checkpoint::Checkpointer::Open(t->config_, comm));
  t->startup_.Mark(StartupPhase::kPlan);
  auto data = host::CreateDataSource(t->config_, comm.rank(), comm.size());
  absl::Status st = AgreeOnStatus(comm, data.status());
  if (!st.ok()) return st;
  t->data_ = std::move(*data);
  // training.epochs: the steps follow from the training rows (the same on
  // every rank that indexed the same files; agreed all the same).
  auto steps = host::ResolveTrainingSteps(config.training(), t->data_->train_schedule());
  st = steps.status();
  if (st.ok() && config.training().has_epochs()) {
    // The schedules' decay lengths could not be checked before the epochs
    // gave the run its steps.
    config::ConfigErrors errors;
    config::CheckLearningRateSchedules(config.training(), *steps, errors);
    if (!errors.empty()) {
      st = absl::InvalidArgumentError(absl::StrCat(config::PathString(errors.first().path), ": ",
                                                   errors.first().message));
    }
  }
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  t->config_.mutable_training()->set_steps(*steps);
  return CreateStages(std::move(t), std::move(*plan));
}

namespace {

// Collective: the hot rows to replicate, chosen the same on every rank
// (counting reads the first training batches from a source of its own);
// rank 0 logs each table's. None without hot rows in the config.
absl::StatusOr<HotRowChoice> ChooseAndLogHotRows(const config::RunConfig& config,
                                                 Communicator& comm) {
  HotRowChoice hot;
  if (!AnyHotRows(config)) return hot;
  std::unique_ptr<host::DataSource> counting;
  bool counts = false;
  for (const config::TableConfig& tb : config.tables()) {
    counts |= config::HotRowSourceOf(tb) == config::HotRowSource::kCounted;
  }
  if (counts) {
    auto source = host::CreateDataSource(config, comm.rank(), comm.size());
    LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, source.status()));
    counting = std::move(*source);
  }
  LEMRT_ASSIGN_OR_RETURN(hot, ChooseHotRows(config, comm, counting.get()));
  if (comm.rank() == 0) {
    for (int tb = 0; tb < config.tables_size(); ++tb) {
      if (hot.rows[tb].empty()) continue;
      LOG(INFO) << "table '" << config.tables(tb).name() << "': " << hot.rows[tb].size()
                << " hot rows replicated on every chip ("
                << absl::StrFormat("%.1f%%", 100 * hot.share[tb])
                << (config.tables(tb).hot_row_ids_size() > 0
                        ? " listed)"
                        : " of the ids of the counted steps)");
    }
  }
  return hot;
}

}  // namespace

absl::Status Trainer::CreateRecorder() {
  auto recorder = RunRecorder::Create(config_, sparse_comm_.rank(), sparse_comm_.size());
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(sparse_comm_, recorder.status()));
  recorder_ = std::move(*recorder);
  const layout::PartitionLimits& limits_applied = host_->limits();
  for (size_t tb = 0; tb < limits_applied.tables.size(); ++tb) {
    const layout::TableLimit& l = limits_applied.tables[tb];
    if (!l.limited()) continue;  // null in the summary: no limit
    auto or_null = [](int32_t v) -> int64_t {
      return v == layout::TableLimit::kUnlimited ? -1 : v;
    };
    recorder_->ReportPartitionLimits(static_cast<int>(tb), or_null(l.max_ids),
                                     or_null(l.max_unique_ids));
  }
  return absl::OkStatus();
}

void Trainer::SizeStepSlots() {
  const int64_t local_batch = config_.training().global_batch() / sparse_comm_.size();
  for (StepSlot& slot : pipeline_->slots()) {
    slot.activations.resize(local_batch * sparse_->activation_width());
    slot.d_activations.resize(slot.activations.size());
  }
  ReserveStepBuffers();  // no reallocation (and no first touch) in the steps
}

double Trainer::CheckpointIoAllowanceSeconds() const {
  double io_bytes = 0;
  for (const auto& sc : sparse_->sparse_cores()) {
    for (int tb = 0; tb < sc->num_tables(); ++tb) {
      io_bytes += double(sc->shard(tb).local_rows()) * 4 * sc->shard(tb).dim() *
                  (1 + table_optimizers_[tb]->slots_per_param());
    }
  }
  return io_bytes / 10e6;
}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::CreateStages(std::unique_ptr<Trainer> t,
                                                               device::MemoryPlan plan) {
  const config::RunConfig& config = t->config_;
  Communicator& sparse_comm = t->sparse_comm_;
  Communicator& comm = sparse_comm;
  t->memory_plan_ = std::move(plan);
  auto limits = layout::ResolveLimits(config);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, limits.status()));
  LEMRT_ASSIGN_OR_RETURN(HotRowChoice hot, ChooseAndLogHotRows(config, comm));
  t->host_ = std::make_unique<HostStage>(config, sparse_comm, *t->data_, std::move(*limits),
                                         hot.placed);
  t->startup_.Mark(StartupPhase::kDataSource);
  t->host_worker_threads_ =
      HostWorkerThreads(config, LocalRanksFromEnvironment(comm.size()));
  std::vector<const device::Optimizer*> optimizers;
  for (int table = 0; table < config.tables_size(); ++table) {
    t->table_optimizers_.push_back(device::CreateTableOptimizer(config, table));
    optimizers.push_back(t->table_optimizers_.back().get());
  }
  LEMRT_RETURN_IF_ERROR(t->CreateRecorder());
  t->timed_sparse_comm_ =
      std::make_unique<TimedCommunicator>(sparse_comm, *t->recorder_, t->placement_);
  t->sparse_ = std::make_unique<SparseCoreStage>(config, *t->timed_sparse_comm_, optimizers,
                                                 /*initialize_tables=*/false);
  auto dense = TensorCoreStage::Create(config, t->dense_comm_);
  LEMRT_RETURN_IF_ERROR(AgreeOnStatus(comm, dense.status()));
  t->tile_pool_ = std::make_unique<device::TilePool>(config.sparse_core().tile_threads());
  for (const auto& sc : t->sparse_->sparse_cores()) sc->set_tile_pool(t->tile_pool_.get());
  t->sparse_->SetHotRows(std::move(hot.placed), optimizers);
  t->startup_threads_ = std::max(t->host_worker_threads_, (*dense)->gemm_threads());
  t->startup_.Mark(StartupPhase::kAllocation);
  LEMRT_RETURN_IF_ERROR(t->InitializeTables(optimizers));
  LEMRT_RETURN_IF_ERROR(t->sparse_->RefreshHotRows());
  t->startup_.Mark(StartupPhase::kTableFill);
  t->table_serializer_ = std::make_unique<TableSerializer>(t->memory_plan_);
  t->dense_ = std::move(*dense);
  t->pipeline_ = t->NewPipeline();
  t->SizeStepSlots();
  t->checkpoint_io_allowance_s_ = t->CheckpointIoAllowanceSeconds();
  t->startup_.Mark(StartupPhase::kStepBuffers);
  return t;
}

absl::Status Trainer::InitializeTables(std::span<const device::Optimizer* const> optimizers) {
  const device::TableInitMode mode = device::TableInitModeOf(config_.sparse_core());
  std::vector<device::SparseCore*> scs;
  for (const auto& sc : sparse_->sparse_cores()) scs.push_back(sc.get());
  const Clock::time_point t0 = Clock::now();
  device::InitializeTables(config_, scs, optimizers, mode, tile_pool_.get(), startup_threads_);
  const double ms = MsSince(t0);
  const std::vector<float> mine = {static_cast<float>(ms)};
  std::vector<float> all;
  LEMRT_RETURN_IF_ERROR(sparse_comm_.AllGather(mine, &all));
  table_init_ms_ = ms;
  for (float v : all) table_init_ms_ = std::max<double>(table_init_ms_, v);
  table_init_mode_ = device::TableInitModeName(mode);
  if (sparse_comm_.rank() == 0) {
    LOG(INFO) << absl::StrFormat("tables initialised (%s) in %.1f ms (slowest chip)",
                                 table_init_mode_, table_init_ms_);
  }
  return absl::OkStatus();
}

void Trainer::ReserveStepBuffers() {
  const int64_t budget = int64_t{config_.sparse_core().step_buffer_reserve_mib()} << 20;
  if (budget == 0) return;
  const StepBufferBounds bounds = StepBufferBoundsFromPlan(config_, memory_plan_);
  const int64_t bytes = bounds.bytes();
  const bool fits = bytes <= budget;
  const Clock::time_point t0 = Clock::now();
  if (fits) {
    // The slots' buffers are apart: their first touch (page faults, the
    // cost here) runs on several threads at once.
    std::vector<StepSlot*> slots;
    for (StepSlot& slot : pipeline_->slots()) {
      if (slot.minibatch_sparse.empty()) slot.minibatch_sparse.resize(1);
      slots.push_back(&slot);
    }
    const int threads = std::clamp<int>(startup_threads_, 1, static_cast<int>(slots.size()));
    auto reserve = [&](int part) {
      for (size_t k = part; k < slots.size(); k += threads) {
        runtime::ReserveStepBuffers(bounds, /*touch=*/true, &slots[k]->minibatch_sparse[0]);
      }
    };
    std::vector<std::thread> helpers;
    for (int part = 1; part < threads; ++part) helpers.emplace_back(reserve, part);
    reserve(0);
    for (std::thread& h : helpers) h.join();
  }
  if (sparse_comm_.rank() == 0) {
    LOG(INFO) << (fits ? absl::StrFormat(
                             "step buffers reserved and touched: %.1f MiB per step slot x %d "
                             "slots in %.1f ms (sparse_core.step_buffer_reserve_mib %d)",
                             bytes / 1048576.0, static_cast<int>(pipeline_->slots().size()), MsSince(t0),
                             config_.sparse_core().step_buffer_reserve_mib())
                       : absl::StrFormat(
                             "step buffers grow on demand: their bounds, %.1f MiB per step "
                             "slot, exceed sparse_core.step_buffer_reserve_mib %d (partition "
                             "limits, e.g. from lemrt_limits, tighten them)",
                             bytes / 1048576.0, config_.sparse_core().step_buffer_reserve_mib()));
  }
}

}  // namespace lemrt::runtime
