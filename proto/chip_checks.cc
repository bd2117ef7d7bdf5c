// The emulated chip and what runs it on one rank: the topology against the
// MPI world, the SparseCore emulation's knobs, host worker and GEMM threads,
// the start-up reservation of the step buffers.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/config_check.h"

namespace lemrt::config {

void CheckTopology(const RunConfig& c, int world_size, ConfigErrors& errors) {
  const TopologyConfig& t = c.topology();
  if (t.num_chips() != world_size) {
    errors.Fail({{"topology"}, {"num_chips"}},
                absl::StrFormat("is %d but the MPI world size is %d (leave num_chips unset to "
                                "use the world size)",
                                t.num_chips(), world_size));
  }
  auto positive = [&](const char* name, int64_t v) {
    if (v <= 0) errors.Fail({{"topology"}, {name}}, absl::StrCat("must be > 0, got ", v));
  };
  positive("sparse_cores_per_chip", t.sparse_cores_per_chip());
  positive("tiles_per_sparse_core", t.tiles_per_sparse_core());
  positive("simd_width", t.simd_width());
  positive("simd_width_bf16", t.simd_width_bf16());
  positive("hbm_bytes", t.hbm_bytes());
  positive("spmem_bytes_per_tile", t.spmem_bytes_per_tile());
}

void CheckEmulatedChip(const RunConfig& c, ConfigErrors& errors) {
  const SparseCoreConfig& s = c.sparse_core();
  if (s.xla_sc_num_serialized_tables_to_optimize_hbm() < 0) {
    errors.Fail({{"sparse_core"}, {"xla_sc_num_serialized_tables_to_optimize_hbm"}},
                absl::StrCat("must be >= 0, got ",
                             s.xla_sc_num_serialized_tables_to_optimize_hbm()));
  }
  if (s.tile_threads() < 1 || s.tile_threads() > 256) {
    errors.Fail({{"sparse_core"}, {"tile_threads"}},
                absl::StrCat("must be in [1, 256], got ", s.tile_threads()));
  }
  if (s.pipeline_warmup_steps() < 0) {
    errors.Fail({{"sparse_core"}, {"pipeline_warmup_steps"}},
                absl::StrCat("must be >= 0, got ", s.pipeline_warmup_steps()));
  }
}

void CheckHostWorkers(const RunConfig& c, ConfigErrors& errors) {
  const SparseCoreConfig& s = c.sparse_core();
  if (s.maximum_parallel_iterations() < 0 || s.maximum_parallel_iterations() > 64) {
    errors.Fail({{"sparse_core"}, {"maximum_parallel_iterations"}},
                absl::StrCat("must be in [0, 64] steps, got ", s.maximum_parallel_iterations()));
  }
  if (s.host_worker_threads() < 0 || s.host_worker_threads() > 256) {
    errors.Fail({{"sparse_core"}, {"host_worker_threads"}},
                absl::StrCat("must be in [0, 256] (0 = cores per rank), got ",
                             s.host_worker_threads()));
  }
  const int32_t gemm_threads = c.tensor_core().gemm_threads();
  if (gemm_threads < 0 || gemm_threads > 256) {
    errors.Fail({{"tensor_core"}, {"gemm_threads"}},
                absl::StrCat("must be in [0, 256] (0 = from the cores this rank owns), got ",
                             gemm_threads));
  }
}

void CheckStepBufferReserve(const RunConfig& c, ConfigErrors& errors) {
  const int32_t mib = c.sparse_core().step_buffer_reserve_mib();
  if (mib < 0) {
    errors.Fail({{"sparse_core"}, {"step_buffer_reserve_mib"}},
                absl::StrCat("must be >= 0 MiB (0 = off), got ", mib));
  }
}

}  // namespace lemrt::config
