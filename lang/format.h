// Printing values the way the REPL shows them (GHCi style, one line):
//   45   3.0   0.1   3.4028235e38   true   (1, [2.0])   [[1, 2], [3, 4]]
// Floating values use the shortest text that reads back to the same value of
// their own type, always with a '.' or an exponent. Arrays longer than the
// threshold along an axis show their first and last three elements and the
// shape: [0, 1, 2, ..., 997, 998, 999] (1000)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "value.h"

namespace shoal {

constexpr int kDefaultPrintThreshold = 20;

std::string format_scalar(const Scalar& s);
std::string format_value(const Value& v, int threshold = kDefaultPrintThreshold);

// The indices of one axis that format_value shows: all of them, or beyond
// `threshold` the first and last three with -1 standing for "..." (the HTML
// tables of display.h summarise the same way).
std::vector<int64_t> shown_indices(int64_t extent, int threshold);

}  // namespace shoal
