#include "runtime/observability/row_block_stats.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/random.h"

namespace lemrt::runtime {
namespace {

// Eight rows side by side, one a lane (GCC/clang vector extensions: AVX-512
// where the build targets it, narrower registers or scalar code elsewhere;
// the same lane arithmetic, so the same bits, everywhere).
constexpr int kLanes = 8;
using U64x8 = uint64_t __attribute__((vector_size(64)));
using F64x8 = double __attribute__((vector_size(64)));
using U32x8 = uint32_t __attribute__((vector_size(32)));
using F32x8 = float __attribute__((vector_size(32)));

// base::Mix64 on each lane.
inline U64x8 Mix64(U64x8 x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Eight rows' columns [d0, d0 + 8) as eight columns of eight lanes (the
// rows full: 8 rows of at least d0 + 8 floats, `stride` floats apart).
void Transpose8x8(const float* values, int64_t stride, F32x8 (&tile)[kLanes]) {
  F32x8 r[kLanes];
  for (int l = 0; l < kLanes; ++l) std::memcpy(&r[l], values + l * stride, sizeof(F32x8));
  F32x8 t[kLanes], s[kLanes];
  for (int p = 0; p < kLanes; p += 2) {  // pairs of rows, interleaved
    t[p] = __builtin_shufflevector(r[p], r[p + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[p + 1] = __builtin_shufflevector(r[p], r[p + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int q = 0; q < kLanes; q += 4) {  // quads of rows
    s[q] = __builtin_shufflevector(t[q], t[q + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    s[q + 1] = __builtin_shufflevector(t[q], t[q + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    s[q + 2] = __builtin_shufflevector(t[q + 1], t[q + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    s[q + 3] = __builtin_shufflevector(t[q + 1], t[q + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int c = 0; c < 4; ++c) {  // s[c]: columns c and c + 4 of rows 0-3; s[c + 4]: rows 4-7
    tile[c] = __builtin_shufflevector(s[c], s[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    tile[c + 4] = __builtin_shufflevector(s[c], s[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// Columns [d0, d0 + cols) of `lanes` rows (the missing ones read as zeros),
// transposed: tile[c] holds column d0 + c of every lane's row.
void LoadTile(const float* values, int64_t lanes, int dim, int d0, int cols,
              F32x8 (&tile)[kLanes]) {
  if (lanes == kLanes && cols == kLanes) {
    Transpose8x8(values + d0, dim, tile);
    return;
  }
  for (int c = 0; c < kLanes; ++c) tile[c] = F32x8{};
  for (int64_t l = 0; l < lanes; ++l) {
    const float* row = values + l * dim + d0;
    for (int c = 0; c < cols; ++c) tile[c][l] = row[c];
  }
}

// A column's floats as the u64 the hash XORs in (their bits, zero-extended)
// and as doubles.
inline U64x8 BitsU64(F32x8 x) {
  U32x8 bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return __builtin_convertvector(bits, U64x8);
}
inline F64x8 Doubles(F32x8 x) { return __builtin_convertvector(x, F64x8); }

// One column of every group: each group's hash chain and sum of squares
// advance by one column. The groups are spelled out (a fold over G...), so
// their chains stay in registers and the multiplies' latency overlaps.
template <size_t... G>
inline void Column(const F32x8 (&tile)[sizeof...(G)][kLanes], int c, U64x8 (&h)[sizeof...(G)],
                   F64x8 (&squares)[sizeof...(G)], std::index_sequence<G...>) {
  ((h[G] = Mix64(h[G] ^ BitsU64(tile[G][c]))), ...);
  // x * x is exact in double (24-bit mantissas), so a fused multiply-add
  // rounds alike: the bits of the scalar chain either way.
  ((squares[G] += Doubles(tile[G][c]) * Doubles(tile[G][c])), ...);
}

// Up to kGroups x 8 rows (`rows` of them): their ModelRowHash (keys in h)
// and sums of squares, each lane over its row's columns in order.
constexpr int kGroups = 8;
void HashAndSquare(const float* values, int64_t rows, int dim, U64x8 (&h)[kGroups],
                   F64x8 (&squares)[kGroups]) {
  for (int d0 = 0; d0 < dim; d0 += kLanes) {
    const int cols = std::min(kLanes, dim - d0);
    F32x8 tile[kGroups][kLanes];
    for (int g = 0; g < kGroups; ++g) {
      const int64_t lanes = std::clamp<int64_t>(rows - g * kLanes, 0, kLanes);
      // Groups past the rows read nothing (and form no pointer past them).
      LoadTile(lanes > 0 ? values + g * kLanes * dim : values, lanes, dim, d0, cols, tile[g]);
    }
    for (int c = 0; c < cols; ++c) {
      Column(tile, c, h, squares, std::make_index_sequence<kGroups>());
    }
  }
}

}  // namespace

void RowBlockStats::AddRowSquares(double row_squares) {
  if (!base::AddExact(row_squares * 0x1p-32, exact)) ++exact[base::kExactLimbs];
  if (++since_normalized == kNormalizeEvery) {
    base::NormalizeExact(exact);
    since_normalized = 0;
  }
  float_sum += row_squares;
}

void RowBlockStats::Add(const RowBlockStats& other) {
  hash_sum += other.hash_sum;
  int64_t limbs[base::kExactLimbs];
  std::copy_n(other.exact, base::kExactLimbs, limbs);
  base::NormalizeExact(limbs);
  for (int i = 0; i < base::kExactLimbs; ++i) exact[i] += limbs[i];
  exact[base::kExactLimbs] += other.exact[base::kExactLimbs];
  if (++since_normalized >= kNormalizeEvery) {
    base::NormalizeExact(exact);
    since_normalized = 0;
  }
  float_sum += other.float_sum;
}

double RowBlockStats::ExactSquares() const {
  int64_t limbs[base::kExactLimbs];
  std::copy_n(exact, base::kExactLimbs, limbs);
  return base::ExactValue(limbs) * 0x1p32;
}

void AddRowBlock(int table, const int64_t* original_rows, const float* values, int64_t rows,
                 int dim, RowBlockStats* stats) {
  constexpr int64_t kRowsAtOnce = kGroups * kLanes;
  for (int64_t r0 = 0; r0 < rows; r0 += kRowsAtOnce) {
    const int64_t n = std::min(kRowsAtOnce, rows - r0);
    // The tile loads visit a row 32 bytes at a time, a stride the hardware
    // prefetcher follows late: the next rows are fetched while these hash.
    if (r0 + kRowsAtOnce < rows) {
      const char* next = reinterpret_cast<const char*>(values + (r0 + kRowsAtOnce) * dim);
      const int64_t bytes = std::min(kRowsAtOnce, rows - r0 - kRowsAtOnce) * dim * 4;
      for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(next + b);
    }
    U64x8 h[kGroups] = {};
    for (int64_t i = 0; i < n; ++i) {
      h[i / kLanes][i % kLanes] = base::HashKeys(
          {static_cast<uint64_t>(table), static_cast<uint64_t>(original_rows[r0 + i])});
    }
    F64x8 squares[kGroups] = {};
    HashAndSquare(values + r0 * dim, n, dim, h, squares);
    for (int64_t i = 0; i < n; ++i) {
      stats->hash_sum += h[i / kLanes][i % kLanes];
      stats->AddRowSquares(squares[i / kLanes][i % kLanes]);
    }
  }
}

}  // namespace lemrt::runtime
