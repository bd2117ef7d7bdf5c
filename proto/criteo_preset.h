// The CRITEO schema preset and how a schema's own lines compose with it
// (docs/data.md "The CRITEO preset"). The preset stands for the 40 columns of
// a Criteo TSV: `label` (column 0), the dense inputs I1..I13 (columns 1..13,
// LOG1P) and the hex categories C1..C26 (columns 14..39). Lines of
// data.schema given with it override or add:
//   - dense { name: "I3" ... }: an override of the preset's I3 (fields set
//     replace the preset's; `column` may only repeat 3); another name adds a
//     dense input after I13, reading the integer column it names (1..13);
//   - sparse { feature: "f" ... }: how feature f is fed. Without `key` and
//     `column` it reads the preset's category for f (C(input_column + 1), or
//     C(f + 1) by its position in the config) with the line's mapping,
//     vocabulary and other fields; a `key` naming a preset column (I1..I13,
//     C1..C26) reads that column, by default as INT64 (I) or HEX (C); a
//     `column` (1..39) reads that column;
//   - label { required: false } (lemrt_predict's).
// Stateless functions; thread-safe.
#ifndef LEMRT_PROTO_CRITEO_PRESET_H_
#define LEMRT_PROTO_CRITEO_PRESET_H_

#include <string_view>

#include "proto/config.pb.h"

namespace lemrt::config {

inline constexpr int kCriteoIntegerColumns = 13;   // I1..I13 in columns 1..13
inline constexpr int kCriteoCategoryColumns = 26;  // C1..C26 in columns 14..39
inline constexpr int kCriteoFirstCategory = 1 + kCriteoIntegerColumns;
inline constexpr int kCriteoColumns = kCriteoFirstCategory + kCriteoCategoryColumns;

// Whether `c` reads its files by the CRITEO preset: a criteo source,
// data.schema.preset: CRITEO, or binary files and a schema without columns
// (files converted from Criteo TSV).
bool UsesCriteoPreset(const RunConfig& c);

// Whether the preset is composed with dense or sparse lines of data.schema
// (a label line alone changes no column). False when the preset is not used.
bool ComposesCriteoPreset(const RunConfig& c);

// The text column of the preset's column `name` ("I1".."I13" -> 1..13,
// "C1".."C26" -> 14..39), or -1 for any other name.
int CriteoColumnOf(std::string_view name);

// The column schema a composed preset stands for, its preset unset: label
// { name: "label" column: 0 } (with the line's `required`), dense I1..I13 (the
// overrides merged in) then the added dense inputs in schema order, and one
// sparse input per config feature, in config order, each with its key,
// column and type set. Lines that fail the config checks (a feature the
// preset cannot feed, an added input without a column) are left as given,
// or out. Meant for configs that passed LoadConfig.
InputSchema ExpandCriteoPreset(const RunConfig& c);

}  // namespace lemrt::config

#endif  // LEMRT_PROTO_CRITEO_PRESET_H_
