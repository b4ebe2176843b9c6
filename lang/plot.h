// Plots for :plot and :hist: a Unicode plot for the terminal (braille dots for
// lines and points, shade blocks for heat maps, eighth blocks for histograms)
// and an SVG for notebooks, both from the same binned summary of the data,
// so a million-element array draws as fast and as small as a thousand.
//
//   :plot a        rank 1: a line of a[i] over i; rank 2: a heat map
//   :plot (x, y)   y over x (a pair of rank-1 arrays, or an array of pairs):
//                  a line when x is sorted, else a scatter
//   :hist a        a histogram of the elements of an array of any rank
//
// NaN and infinite elements are skipped (and counted in the plain text).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "session.h"
#include "source.h"
#include "types.h"
#include "value.h"

namespace shoal {

enum class PlotKind { Plot, Hist };

// A type error at `loc` unless a value of `type` can be drawn by the command:
// "plot: expected a rank-1 or rank-2 array or a pair of rank-1 arrays, found int".
// Checked before the argument is evaluated.
void check_plot_argument(PlotKind kind, const Type& type, const Loc& loc);

// The plot of a value whose type passed check_plot_argument (Delayed arrays
// are forced). `columns` is the width of the plain-text plot; `title` (the
// argument's source text) heads the SVG. Runtime errors at `loc` for data
// that cannot be drawn: nothing finite to plot, x and y of different lengths.
DisplayData plot_display(PlotKind kind, const Value& value, const std::string& title, int columns, const Loc& loc);

// Histogram binning. Integers spanning at most kMaxBins values get one bin
// per integer; other data Freedman-Diaconis bins (Sturges' rule when the
// interquartile range is 0), between kMinBins and kMaxBins of them.
struct Histogram {
    static constexpr int kMinBins = 10;
    static constexpr int kMaxBins = 60;
    double lo = 0;  // bin k holds [lo + k*width, lo + (k+1)*width); the last bin includes its upper end
    double width = 1;
    std::vector<int64_t> counts;
    int64_t skipped = 0;  // NaN and infinite values, in no bin
    bool integers = false;  // one bin per integer, centred on it
};
Histogram make_histogram(std::span<const double> xs);

// About `target` round tick positions (1, 2 or 5 times a power of ten apart)
// inside [lo, hi]; lo < hi.
std::vector<double> nice_ticks(double lo, double hi, int target);

}  // namespace shoal
