#include "device/tensorcore/dense_model.h"

#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "device/tensorcore/cross_dense.h"
#include "device/tensorcore/dlrm_dense.h"
#include "device/tensorcore/interaction.h"
#include "device/tensorcore/mlp.h"
#include "device/tensorcore/task_heads.h"
#include "proto/config_loader.h"

namespace lemrt::device {
namespace {

absl::Status ValidateWidths(const std::vector<int>& widths, const char* field) {
  if (widths.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DlrmShape.%s is empty; it must list at least one layer width.", field));
  }
  for (size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("DlrmShape.%s[%d] is %d; widths must be positive (%s = [%s]).", field, i,
                          widths[i], field, absl::StrJoin(widths, ", ")));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateDenseModelSpec(const DenseModelSpec& spec) {
  const DlrmShape& shape = spec.shape;
  if (shape.num_dense <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("DlrmShape.num_dense is %d; it must be positive.", shape.num_dense));
  }
  if (absl::Status s = ValidateWidths(shape.bottom, "bottom"); !s.ok()) return s;
  if (absl::Status s = ValidateWidths(shape.top, "top"); !s.ok()) return s;
  if (shape.top.back() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DlrmShape.top must end in 1 (the logit) but ends in %d.", shape.top.back()));
  }
  if (shape.feature_dims.empty()) {
    return absl::InvalidArgumentError(
        "DlrmShape.feature_dims is empty; the model needs at least one sparse feature.");
  }
  for (size_t f = 0; f < shape.feature_dims.size(); ++f) {
    if (shape.feature_dims[f] <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "DlrmShape.feature_dims[%d] is %d; embedding widths must be positive.", f,
          shape.feature_dims[f]));
    }
  }
  if (shape.task_weights.empty()) {
    return absl::InvalidArgumentError("DlrmShape.task_weights is empty; a model has >= 1 task.");
  }
  for (size_t t = 0; t < shape.task_weights.size(); ++t) {
    const float w = shape.task_weights[t];
    if (!(std::isfinite(w) && w >= 0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "DlrmShape.task_weights[%d] is %g; a loss weight must be finite and >= 0.", t, w));
    }
  }
  for (float p : {spec.dropout.bottom, spec.dropout.top}) {
    if (!(p >= 0.0f && p < 1.0f)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("a dropout probability is %g; it must be in [0, 1).", p));
    }
  }
  if (spec.interaction == Interaction::kDcnV2 &&
      (spec.cross_layers <= 0 || spec.cross_low_rank < 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the cross network has %d layers of rank %d; it needs >= 1 layer and "
                        "a rank >= 0 (0 = full rank).",
                        spec.cross_layers, spec.cross_low_rank));
  }
  return absl::OkStatus();
}

DenseModelSpec DenseModelSpecFromConfig(const config::RunConfig& config) {
  const config::DlrmConfig& m = config.model();
  DenseModelSpec spec;
  spec.shape.num_dense = m.num_dense_features();
  spec.shape.bottom.assign(m.bottom_mlp().begin(), m.bottom_mlp().end());
  spec.shape.top.assign(m.top_mlp().begin(), m.top_mlp().end());
  for (const auto& f : config.features()) {
    spec.shape.feature_dims.push_back(config.tables(config::FindTable(config, f.table())).dim());
  }
  if (m.has_dcn_v2()) {
    spec.interaction = Interaction::kDcnV2;
    spec.cross_layers = m.dcn_v2().num_layers();
    spec.cross_low_rank = m.dcn_v2().low_rank();
  } else if (m.has_concat()) {
    spec.interaction = Interaction::kConcat;
  }
  spec.dropout = {.bottom = m.bottom_mlp_dropout(), .top = m.top_mlp_dropout()};
  spec.precision = config::IsBf16(m.dense_dtype()) ? GemmPrecision::kBf16 : GemmPrecision::kFp32;
  if (m.tasks_size() > 0) {
    spec.shape.task_weights.clear();
    for (const auto& task : m.tasks()) spec.shape.task_weights.push_back(task.loss_weight());
  }
  return spec;
}

std::string DescribeInteraction(const DenseModelSpec& spec) {
  switch (spec.interaction) {
    case Interaction::kDot:
      return "dot";
    case Interaction::kConcat:
      return "concat";
    case Interaction::kDcnV2:
      return spec.cross_low_rank > 0
                 ? absl::StrFormat("dcn_v2 (%d layers, rank %d)", spec.cross_layers,
                                   spec.cross_low_rank)
                 : absl::StrFormat("dcn_v2 (%d layers, full rank)", spec.cross_layers);
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<DenseModel>> CreateDenseModel(const DenseModelSpec& spec,
                                                             int64_t max_batch, uint64_t seed,
                                                             ThreadTeam* team) {
  if (spec.precision == GemmPrecision::kBf16) {
    if (absl::Status s = CheckBf16Products(); !s.ok()) return s;
  }
  if (spec.interaction == Interaction::kDot) {
    auto model = DlrmDense::Create(spec.shape, max_batch, seed, spec.dropout, team, spec.precision);
    if (!model.ok()) return model.status();
    return std::unique_ptr<DenseModel>(std::move(*model));
  }
  auto model = CrossDense::Create(spec, max_batch, seed, team);
  if (!model.ok()) return model.status();
  return std::unique_ptr<DenseModel>(std::move(*model));
}

absl::StatusOr<int64_t> CountDenseParams(const DenseModelSpec& spec) {
  if (absl::Status s = ValidateDenseModelSpec(spec); !s.ok()) return s;
  if (spec.interaction != Interaction::kDot) return CrossDense::NumParams(spec);
  // DlrmDense's layout (dlrm_dense.h): bottom MLP, a projection for each
  // feature whose dim is not d, top MLP on the dot interaction's output.
  const DlrmShape& shape = spec.shape;
  const int d = shape.bottom.back();
  std::vector<int> bottom = {shape.num_dense};
  bottom.insert(bottom.end(), shape.bottom.begin(), shape.bottom.end());
  int64_t n = Mlp::NumParams(bottom);
  for (int dim : shape.feature_dims) {
    if (dim != d) n += int64_t{dim} * d;
  }
  const DotInteraction dot(static_cast<int>(shape.feature_dims.size()) + 1, d);
  std::vector<int> top = {dot.output_width()};
  top.insert(top.end(), shape.top.begin(), shape.top.end());
  return n + TaskHeads::NumParams(top, static_cast<int>(shape.task_weights.size()));
}

}  // namespace lemrt::device
