// Row-major Eigen matrix types and maps over caller-owned float buffers, as
// the TensorCore layers (mlp.h, dlrm_dense.h) lay out activations and
// weights. Types only; no state.
#ifndef LEMRT_DEVICE_TENSORCORE_EIGEN_MAPS_H_
#define LEMRT_DEVICE_TENSORCORE_EIGEN_MAPS_H_

#include "Eigen/Core"

namespace lemrt::device {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

}  // namespace lemrt::device

#endif  // LEMRT_DEVICE_TENSORCORE_EIGEN_MAPS_H_
