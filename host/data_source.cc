#include "host/data_source.h"

#include <memory>

#include "base/status_macros.h"
#include "host/binary_reader.h"
#include "host/criteo_reader.h"
#include "host/synthetic_source.h"

namespace lemrt::host {

absl::StatusOr<std::unique_ptr<DataSource>> CreateDataSource(
    const config::RunConfig& config, int rank, int world_size) {
  // An unset data section means synthetic data with the default knobs
  // (config.data().synthetic() is then the default instance).
  if (config.data().has_binary()) {
    LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<BinaryReader> binary,
                           BinaryReader::Create(config, rank, world_size));
    return std::unique_ptr<DataSource>(std::move(binary));
  }
  if (config.data().has_criteo()) {
    LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<CriteoReader> criteo,
                           CriteoReader::Create(config, rank, world_size));
    return std::unique_ptr<DataSource>(std::move(criteo));
  }
  LEMRT_ASSIGN_OR_RETURN(std::unique_ptr<SyntheticSource> synthetic,
                         SyntheticSource::Create(config, rank, world_size));
  return std::unique_ptr<DataSource>(std::move(synthetic));
}

}  // namespace lemrt::host
