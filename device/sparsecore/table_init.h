// Start-up initialisation of one chip's table shards (reference section 4:
// initialize_tables_on_host, enable_fast_table_initialization). Every mode
// writes the same values, InitialRow(seed, table, original row) for the rows
// and the optimizer's InitSlots for the slots, so the model is bit-identical
// whichever mode and thread count is used; only the start-up time differs.
//
//   kHost           host threads (`host_threads` of them) claim runs of
//                   4 MiB of a shard's rows in turn, build them 256 rows at a
//                   time in a staging buffer each, and copy them into the
//                   SparseCores' shards ("initialise on the host, copy in").
//   kDevice         each SparseCore initialises its own shard in place, one
//                   SparseCore after another.
//   kDeviceParallel every (SparseCore, tile) pair initialises its contiguous
//                   share of the shard's rows in place, as tasks on the tile
//                   pool, all SparseCores at once.
// Every mode calls InitialRow (table_shard.h), which computes rows of the
// uniform initializer eight elements at a time. The shards' pages are first
// touched here (table_allocator.h: sizing a shard writes nothing), and on a
// VM that first touch costs more than computing the values, so kHost's
// threads claim whole huge pages of rows and fault them in side by side.
// Thread-compatible.
#ifndef LEMRT_DEVICE_SPARSECORE_TABLE_INIT_H_
#define LEMRT_DEVICE_SPARSECORE_TABLE_INIT_H_

#include <span>

#include "device/optimizers/optimizer.h"
#include "device/sparsecore/sparse_core.h"
#include "device/sparsecore/tile_pool.h"
#include "proto/config.pb.h"

namespace lemrt::device {

enum class TableInitMode { kHost, kDevice, kDeviceParallel };

// enable_fast_table_initialization -> kDeviceParallel (it takes precedence);
// else initialize_tables_on_host -> kHost (the default); else kDevice.
TableInitMode TableInitModeOf(const config::SparseCoreConfig& sparse_core);

// "host", "device" or "device_parallel".
const char* TableInitModeName(TableInitMode mode);

// Initialises every row and slot of every table shard of `scs` (one chip's
// SparseCores, created with initialize_tables = false); `optimizers[t]` is
// table t's. `pool` (may be null: inline) runs kDeviceParallel's tasks;
// kHost runs on `host_threads` threads (the calling one and host_threads - 1
// started for the call; <= 1: the calling thread alone). The values do not
// depend on the mode or on either thread count.
void InitializeTables(const config::RunConfig& config, std::span<SparseCore* const> scs,
                      std::span<const Optimizer* const> optimizers, TableInitMode mode,
                      TilePool* pool, int host_threads = 1);

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_SPARSECORE_TABLE_INIT_H_
