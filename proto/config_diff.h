// The fields in which two messages of one type differ, as short phrases for
// error messages ("training.steps 5 -> 3", "tables[1].name 'a' -> 'b'",
// "features: 3 -> 2 entries"), found by walking both with reflection. Used
// where a config must equal another one: the ranks of one job, a checkpoint's
// run and its resume. Stateless; thread-safe.
#ifndef LEMRT_PROTO_CONFIG_DIFF_H_
#define LEMRT_PROTO_CONFIG_DIFF_H_

#include <string>
#include <vector>

#include "google/protobuf/message.h"

namespace lemrt::config {

// Up to `max_differences` phrases, one per differing leaf field (a set or
// unset singular field, a scalar or string, a repeated field's length or
// element), in field-number order, paths relative to the messages (`prefix`
// is put in front, e.g. "data"). Field values are shown as text, strings
// quoted and cut to 60 characters. Precondition: `a` and `b` have the same
// descriptor.
std::vector<std::string> FieldDifferences(const google::protobuf::Message& a,
                                          const google::protobuf::Message& b,
                                          const std::string& prefix = "",
                                          size_t max_differences = 4);

}  // namespace lemrt::config

#endif  // LEMRT_PROTO_CONFIG_DIFF_H_
