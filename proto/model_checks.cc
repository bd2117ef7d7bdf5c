// The dense model: widths of the MLPs (the top one ending in the logit), the
// DCN-v2 cross network, dropout.
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/config_check.h"
#include "proto/config_loader.h"

namespace lemrt::config {

void CheckModel(const RunConfig& c, ConfigErrors& errors) {
  const DlrmConfig& m = c.model();
  if (m.num_dense_features() <= 0) {
    errors.Fail({{"model"}, {"num_dense_features"}},
                absl::StrCat("must be > 0, got ", m.num_dense_features()));
  }
  if (m.bottom_mlp_size() == 0) {
    errors.Fail({{"model"}, {"bottom_mlp"}}, "needs at least one layer");
  }
  for (int i = 0; i < m.bottom_mlp_size(); ++i) {
    if (m.bottom_mlp(i) <= 0) {
      errors.Fail({{"model"}, {"bottom_mlp", i}},
                  absl::StrCat("must be > 0, got ", m.bottom_mlp(i)));
    }
  }
  if (m.top_mlp_size() == 0 || m.top_mlp(m.top_mlp_size() - 1) != 1) {
    errors.Fail({{"model"}, {"top_mlp"}}, "must end in a layer of width 1 (the logit)");
  }
  for (int i = 0; i < m.top_mlp_size(); ++i) {
    if (m.top_mlp(i) <= 0) {
      errors.Fail({{"model"}, {"top_mlp", i}}, absl::StrCat("must be > 0, got ", m.top_mlp(i)));
    }
  }
  if (m.has_dcn_v2()) {
    if (m.dcn_v2().num_layers() < 1) {
      errors.Fail({{"model"}, {"dcn_v2"}, {"num_layers"}},
                  absl::StrCat("must be >= 1, got ", m.dcn_v2().num_layers()));
    }
    if (m.dcn_v2().low_rank() < 0) {
      errors.Fail({{"model"}, {"dcn_v2"}, {"low_rank"}},
                  absl::StrCat("must be >= 0 (0 = full rank), got ", m.dcn_v2().low_rank()));
    }
  }
  for (const auto& [name, p] :
       {std::pair<const char*, float>{"bottom_mlp_dropout", m.bottom_mlp_dropout()},
        {"top_mlp_dropout", m.top_mlp_dropout()}}) {
    if (!(p >= 0.0f && p < 1.0f)) {
      errors.Fail({{"model"}, {name}}, absl::StrCat("must be in [0, 1), got ", p));
    }
  }
}

}  // namespace lemrt::config
