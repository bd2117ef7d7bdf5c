// Status propagation helpers in the style of absl's internal macros.
#ifndef LEMRT_BASE_STATUS_MACROS_H_
#define LEMRT_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns from the enclosing function when `expr` is not OK.
#define LEMRT_RETURN_IF_ERROR(expr)            \
  do {                                         \
    const ::absl::Status _lemrt_st = (expr);   \
    if (!_lemrt_st.ok()) return _lemrt_st;     \
  } while (0)

#define LEMRT_CONCAT_INNER(a, b) a##b
#define LEMRT_CONCAT(a, b) LEMRT_CONCAT_INNER(a, b)

// `lhs = value of expr` or returns its error. `lhs` may declare a variable.
#define LEMRT_ASSIGN_OR_RETURN(lhs, expr) \
  LEMRT_ASSIGN_OR_RETURN_IMPL(LEMRT_CONCAT(_lemrt_sor_, __LINE__), lhs, expr)
#define LEMRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#endif  // LEMRT_BASE_STATUS_MACROS_H_
