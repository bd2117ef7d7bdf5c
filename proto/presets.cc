#include "proto/config_loader.h"

namespace lemrt::config {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

struct PresetValues {
  int sparse_cores_per_chip;
  int tiles_per_sparse_core;
  int simd_width;
  int simd_width_bf16;
  int64_t hbm_bytes;
  int64_t spmem_bytes_per_tile;
};

// Values from the reference's section 1 table. The reference gives no SPMEM
// size; 128 KiB per tile is lemrt's documented assumption (docs/configuration.md).
PresetValues ValuesOf(TopologyConfig::Preset preset) {
  switch (preset) {
    case TopologyConfig::TPU_V4:
      return {4, 16, 8, 8, 32 * kGiB, 128 * 1024};
    case TopologyConfig::TRILLIUM:
      return {2, 16, 8, 16, 32 * kGiB, 128 * 1024};
    case TopologyConfig::TPU_V5P:
    default:
      return {4, 16, 8, 8, 96 * kGiB, 128 * 1024};
  }
}

}  // namespace

void ApplyTopologyPreset(int world_size, TopologyConfig* t) {
  if (!t->has_preset() || t->preset() == TopologyConfig::PRESET_UNSPECIFIED) {
    t->set_preset(TopologyConfig::TPU_V5P);
  }
  const PresetValues v = ValuesOf(t->preset());
  if (!t->has_num_chips()) t->set_num_chips(world_size);
  if (!t->has_sparse_cores_per_chip()) t->set_sparse_cores_per_chip(v.sparse_cores_per_chip);
  if (!t->has_tiles_per_sparse_core()) t->set_tiles_per_sparse_core(v.tiles_per_sparse_core);
  if (!t->has_simd_width()) t->set_simd_width(v.simd_width);
  if (!t->has_simd_width_bf16()) t->set_simd_width_bf16(v.simd_width_bf16);
  if (!t->has_hbm_bytes()) t->set_hbm_bytes(v.hbm_bytes);
  if (!t->has_spmem_bytes_per_tile()) t->set_spmem_bytes_per_tile(v.spmem_bytes_per_tile);
}

}  // namespace lemrt::config
