#include "plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "diagnostics.h"
#include "display.h"
#include "eval.h"
#include "format.h"

namespace shoal {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------- data

// The elements of an array read as doubles where they lie: plotting a large
// array makes no second copy of it.
class Samples {
public:
    explicit Samples(const Array& a) : data_(a.bytes.data()), elem_(a.elem), size_(static_cast<size_t>(a.size())) {}
    explicit Samples(std::span<const double> xs) : data_(xs.data()), elem_(Prim::Double), size_(xs.size()) {}
    size_t size() const { return size_; }
    double operator[](size_t i) const {
        switch (elem_) {
            case Prim::Bool: return static_cast<const uint8_t*>(data_)[i];
            case Prim::Int: return static_cast<const int32_t*>(data_)[i];
            case Prim::Long: return static_cast<double>(static_cast<const int64_t*>(data_)[i]);
            case Prim::Float: return static_cast<const float*>(data_)[i];
            case Prim::Double: return static_cast<const double*>(data_)[i];
        }
        return 0;
    }

private:
    const void* data_;
    Prim elem_;
    size_t size_;
};

struct Range {
    double lo = kInf, hi = -kInf;
    bool empty() const { return lo > hi; }
    double span() const { return hi - lo; }
    void add(double v) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    // Where v falls in the range, 0 at lo and 1 at hi.
    double fraction(double v) const { return (v - lo) / (hi - lo); }
};

Range finite_range(const Samples& xs) {
    Range r;
    for (size_t i = 0; i < xs.size(); ++i)
        if (std::isfinite(xs[i])) r.add(xs[i]);
    return r;
}

// A constant gets a range around it, so that it can be drawn.
Range widened(Range r) {
    if (r.lo == r.hi) {
        double d = r.lo == 0 ? 1 : std::abs(r.lo) * 0.1;
        r = {r.lo - d, r.hi + d};
    }
    return r;
}

Range padded(Range r, double fraction) {
    double d = r.span() * fraction;
    return {r.lo - d, r.hi + d};
}

// Values spanning more than the largest double cannot be placed on an axis.
void check_span(const Range& r, const char* command, const Loc& loc) {
    if (!std::isfinite(r.span()))
        user_error(ErrorKind::Runtime, loc,
                   std::string(command) + ": the values span more than the largest double (" +
                       format_scalar(Scalar::of_double(r.lo)) + " to " + format_scalar(Scalar::of_double(r.hi)) + ")");
}

int64_t count_non_finite(const Samples& xs) {
    int64_t n = 0;
    for (size_t i = 0; i < xs.size(); ++i) n += !std::isfinite(xs[i]);
    return n;
}

// ---------------------------------------------------------------- numbers as text

// A tick label, with as many decimals as the distance between ticks needs.
std::string tick_label(double v, double step) {
    if (!(step > 0) || !std::isfinite(step)) step = std::max(std::abs(v), 1.0) * 1e-3;
    if (std::abs(v) < step * 1e-9) v = 0;  // no "-0" or 1e-17 from rounding
    const double magnitude = std::max(std::abs(v), step);
    char buf[64];
    if (magnitude >= 1e6 || step < 1e-4) {
        int digits = std::clamp(static_cast<int>(std::ceil(std::log10(magnitude / step))) + 1, 1, 15);
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    } else {
        int decimals = std::clamp(-static_cast<int>(std::floor(std::log10(step) + 1e-9)), 0, 10);
        std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    }
    return buf;
}

// The label of a range end in a terminal plot: three digits of the range.
std::string end_label(double v, const Range& r) { return tick_label(v, r.span() / 100); }

// An SVG coordinate: one decimal, no trailing ".0".
std::string coord(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    std::string s = buf;
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    return s == "-0" ? "0" : s;
}

// ---------------------------------------------------------------- summaries

struct Point {
    double x, y;
};

// The points of the line through (x[i], y[i]) that a raster `columns` wide
// can show: per column the lowest and the highest, in their original order.
// x is sorted (null: x[i] = i); non-finite points are skipped. At most two
// points per column, however long the input.
std::vector<Point> envelope(const Samples* x, const Samples& y, const Range& xr, int columns) {
    std::vector<Point> out;
    int current = -1;
    size_t low = 0, high = 0;  // indices of the current column's extremes
    auto x_at = [&](size_t i) { return x ? (*x)[i] : static_cast<double>(i); };
    auto flush = [&] {
        if (current < 0) return;
        out.push_back({x_at(std::min(low, high)), y[std::min(low, high)]});
        if (low != high) out.push_back({x_at(std::max(low, high)), y[std::max(low, high)]});
    };
    for (size_t i = 0; i < y.size(); ++i) {
        const double xi = x_at(i);
        if (!std::isfinite(xi) || !std::isfinite(y[i])) continue;
        int column = std::clamp(static_cast<int>(xr.fraction(xi) * columns), 0, columns - 1);
        if (column != current) {
            flush();
            current = column;
            low = high = i;
        } else if (y[i] < y[low]) {
            low = i;
        } else if (y[i] > y[high]) {
            high = i;
        }
    }
    flush();
    return out;
}

// The mean of the finite elements in each cell of a rows x cols matrix
// binned into out_rows x out_cols cells (NaN where a cell has none).
std::vector<double> binned_means(const Samples& m, int64_t rows, int64_t cols, int out_rows, int out_cols) {
    std::vector<double> sums(static_cast<size_t>(out_rows) * out_cols, 0);
    std::vector<int64_t> counts(sums.size(), 0);
    std::vector<int> column_bin(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j) column_bin[j] = static_cast<int>(j * out_cols / cols);
    for (int64_t i = 0; i < rows; ++i) {
        const size_t row_base = static_cast<size_t>(i * out_rows / rows) * out_cols;
        for (int64_t j = 0; j < cols; ++j) {
            double v = m[static_cast<size_t>(i * cols + j)];
            if (!std::isfinite(v)) continue;
            sums[row_base + column_bin[j]] += v;
            ++counts[row_base + column_bin[j]];
        }
    }
    for (size_t k = 0; k < sums.size(); ++k) sums[k] = counts[k] ? sums[k] / counts[k] : kNaN;
    return sums;
}

// ---------------------------------------------------------------- terminal text

// A grid of braille characters, each 2 dots wide and 4 high.
class BrailleCanvas {
public:
    BrailleCanvas(int width, int height) : width_(width), height_(height), cells_(size_t(width) * height, 0) {}
    int dots_wide() const { return 2 * width_; }
    int dots_high() const { return 4 * height_; }

    // Dot (x, y), y counted from the top; outside the canvas is ignored.
    void dot(int x, int y) {
        if (x < 0 || y < 0 || x >= dots_wide() || y >= dots_high()) return;
        static const uint8_t bits[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};
        cells_[size_t(y / 4) * width_ + x / 2] |= bits[y % 4][x % 2];
    }
    void line(int x0, int y0, int x1, int y1) {  // Bresenham
        int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
        int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
        for (;;) {
            dot(x0, y0);
            if (x0 == x1 && y0 == y1) return;
            int e2 = 2 * err;
            if (e2 >= dy) err += dy, x0 += sx;
            if (e2 <= dx) err += dx, y0 += sy;
        }
    }
    std::vector<std::string> rows() const {
        std::vector<std::string> out;
        for (int r = 0; r < height_; ++r) {
            std::string row;
            for (int c = 0; c < width_; ++c) {
                uint8_t bits = cells_[size_t(r) * width_ + c];
                if (!bits) {
                    row += ' ';
                    continue;
                }
                const unsigned code = 0x2800u + bits;  // U+2800..U+28FF, three bytes of UTF-8
                row += static_cast<char>(0xE0 | (code >> 12));
                row += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                row += static_cast<char>(0x80 | (code & 0x3F));
            }
            out.push_back(row);
        }
        return out;
    }

private:
    int width_, height_;
    std::vector<uint8_t> cells_;
};

// The labels around a terminal plot.
struct TextAxes {
    std::string y_top, y_bottom, x_left, x_right;
    std::string note;  // a line under the plot (a legend, what was skipped)
};

size_t label_width(const TextAxes& a) { return std::max(a.y_top.size(), a.y_bottom.size()); }

// The plot area's width in characters once the y labels take their share.
int text_plot_width(const TextAxes& a, int columns) {
    return std::max(8, columns - static_cast<int>(label_width(a)) - 2);
}

// The text height of a plot for a terminal `columns` wide.
int text_plot_height(int columns) { return std::clamp(columns / 4, 6, 24); }

// `rows` (each `width` characters, trailing blanks dropped) framed by a labelled y axis on the left and
// an x axis with its end labels below:
//   1.0 ┤⠀⡠⠊⠉⠢⡀
//       │
//  -1.0 ┤
//       └──────
//        0    99
std::string frame_text(const std::vector<std::string>& rows, int width, const TextAxes& a) {
    const size_t label = label_width(a);
    auto pad_left = [](const std::string& s, size_t n) { return std::string(n - std::min(n, s.size()), ' ') + s; };
    std::string out;
    for (size_t r = 0; r < rows.size(); ++r) {
        if (r == 0)
            out += pad_left(a.y_top, label) + " \u2524";
        else if (r + 1 == rows.size())
            out += pad_left(a.y_bottom, label) + " \u2524";
        else
            out += std::string(label, ' ') + " \u2502";
        out += rows[r];
        while (out.back() == ' ') out.pop_back();  // no trailing blanks to wrap or copy
        out += "\n";
    }
    out += std::string(label, ' ') + " \u2514";
    for (int k = 0; k < width; ++k) out += "\u2500";
    const size_t gap = std::max<size_t>(1, size_t(width) - std::min<size_t>(width, a.x_left.size() + a.x_right.size()));
    out += "\n" + std::string(label + 2, ' ') + a.x_left + std::string(gap, ' ') + a.x_right;
    if (!a.note.empty()) out += "\n" + a.note;
    return out;
}

std::string skipped_note(int64_t skipped) {
    return skipped ? std::to_string(skipped) + " NaN or infinite value" + (skipped == 1 ? "" : "s") + " skipped" : "";
}

// ---------------------------------------------------------------- SVG

constexpr int kSvgWidth = 640, kSvgHeight = 400;
constexpr const char* kLineColour = "#1f77b4";

// The plot area inside the SVG and the data ranges it maps.
struct Frame {
    double left = 72, right = 620, top = 34, bottom = 350;
    Range x, y;
    bool y_down = false;  // heat maps: row 0 at the top
    double px(double v) const { return left + x.fraction(v) * (right - left); }
    double py(double v) const {
        return y_down ? top + y.fraction(v) * (bottom - top) : bottom - y.fraction(v) * (bottom - top);
    }
};

// Tick positions of an index axis [0, extent): whole numbers only.
std::vector<double> index_ticks(int64_t extent) {
    std::vector<double> ticks;
    for (double t : nice_ticks(0, std::max<double>(1, extent - 1), 6))
        if (t == std::floor(t) && t < extent) ticks.push_back(t);
    if (ticks.empty()) ticks.push_back(0);
    return ticks;
}

class SvgWriter {
public:
    explicit SvgWriter(const std::string& title) {
        const std::string width = std::to_string(kSvgWidth), height = std::to_string(kSvgHeight);
        out_ = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + width + " " + height + "\" width=\"" +
               width + "\" height=\"" + height +
               "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
        out_ += "<title>" + html_escape(title) + "</title>\n";
        out_ += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
        out_ += "<text x=\"72\" y=\"20\" font-size=\"13\" fill=\"#222\">" + html_escape(title) + "</text>\n";
    }
    void raw(const std::string& s) { out_ += s; }
    // Grid lines, frame, and ticks labelled with the given data values, drawn
    // x_shift/y_shift further on (index axes: at the centres of their cells).
    void axes(const Frame& f, const std::vector<double>& xticks, const std::vector<double>& yticks, double x_step,
              double y_step, const std::string& x_title, const std::string& y_title, double x_shift = 0,
              double y_shift = 0) {
        std::string grid, marks, labels;
        for (double t : xticks) {
            const std::string x = coord(f.px(t + x_shift));
            grid += "M" + x + " " + coord(f.top) + "V" + coord(f.bottom);
            marks += "M" + x + " " + coord(f.bottom) + "v5";
            labels += "<text x=\"" + x + "\" y=\"" + coord(f.bottom + 18) + "\" text-anchor=\"middle\">" +
                      html_escape(tick_label(t, x_step)) + "</text>\n";
        }
        for (double t : yticks) {
            const std::string y = coord(f.py(t + y_shift));
            grid += "M" + coord(f.left) + " " + y + "H" + coord(f.right);
            marks += "M" + coord(f.left) + " " + y + "h-5";
            labels += "<text x=\"" + coord(f.left - 8) + "\" y=\"" + y + "\" dy=\"0.32em\" text-anchor=\"end\">" +
                      html_escape(tick_label(t, y_step)) + "</text>\n";
        }
        if (grid_lines_) out_ += "<path stroke=\"#e6e6e6\" fill=\"none\" d=\"" + grid + "\"/>\n";
        out_ += "<rect x=\"" + coord(f.left) + "\" y=\"" + coord(f.top) + "\" width=\"" + coord(f.right - f.left) +
                "\" height=\"" + coord(f.bottom - f.top) + "\" fill=\"none\" stroke=\"#444\"/>\n";
        out_ += "<path stroke=\"#444\" d=\"" + marks + "\"/>\n<g fill=\"#333\">\n" + labels + "</g>\n";
        const std::string mid_x = coord((f.left + f.right) / 2), mid_y = coord((f.top + f.bottom) / 2);
        out_ += "<text x=\"" + mid_x + "\" y=\"" + coord(f.bottom + 40) + "\" text-anchor=\"middle\" fill=\"#555\">" +
                html_escape(x_title) + "</text>\n";
        out_ += "<text transform=\"translate(16 " + mid_y + ") rotate(-90)\" text-anchor=\"middle\" fill=\"#555\">" +
                html_escape(y_title) + "</text>\n";
    }
    std::string finish() { return out_ + "</svg>\n"; }
    void no_grid_lines() { grid_lines_ = false; }  // a heat map fills the area

private:
    std::string out_;
    bool grid_lines_ = true;
};

// Ticks over a range with the distance between them (for their labels).
struct Ticks {
    std::vector<double> at;
    double step = 1;
};
Ticks ticks_over(const Range& r, int target) {
    Ticks t{nice_ticks(r.lo, r.hi, target), r.span()};
    if (t.at.size() >= 2) t.step = t.at[1] - t.at[0];
    return t;
}

// A path of dots (round caps on zero-length segments): small however many.
std::string dots_path(const std::vector<Point>& points, const Frame& f, const char* colour, double size) {
    std::string d;
    for (const Point& p : points) d += "M" + coord(f.px(p.x)) + " " + coord(f.py(p.y)) + "h0";
    return "<path stroke=\"" + std::string(colour) + "\" stroke-width=\"" + coord(size) +
           "\" stroke-linecap=\"round\" fill=\"none\" d=\"" + d + "\"/>\n";
}

// Scatters with more points than this draw the cells they occupy.
constexpr size_t kMaxScatterDots = 2000;

// A dense scatter as the 3-pixel cells holding a point, each row's runs of
// occupied cells one stroke: a cloud of a million points stays small.
std::string occupancy_path(const Samples& x, const Samples& y, const Frame& f) {
    constexpr int kCell = 3;
    const int cw = static_cast<int>(f.right - f.left) / kCell, ch = static_cast<int>(f.bottom - f.top) / kCell;
    std::vector<bool> occupied(size_t(cw) * ch, false);
    for (size_t i = 0; i < y.size(); ++i) {
        if (!std::isfinite(x[i]) || !std::isfinite(y[i])) continue;
        int cx = std::clamp(static_cast<int>(f.x.fraction(x[i]) * cw), 0, cw - 1);
        int cy = std::clamp(static_cast<int>((1 - f.y.fraction(y[i])) * ch), 0, ch - 1);
        occupied[size_t(cy) * cw + cx] = true;
    }
    std::string d;
    for (int r = 0; r < ch; ++r) {
        for (int c = 0; c < cw;) {
            if (!occupied[size_t(r) * cw + c]) {
                ++c;
                continue;
            }
            int end = c;
            while (end + 1 < cw && occupied[size_t(r) * cw + end + 1]) ++end;
            d += "M" + coord(f.left + (c + 0.5) * kCell) + " " + coord(f.top + (r + 0.5) * kCell) + "h" +
                 std::to_string((end - c) * kCell);
            c = end + 1;
        }
    }
    return "<path stroke=\"" + std::string(kLineColour) +
           "\" stroke-width=\"4\" stroke-linecap=\"round\" fill=\"none\" d=\"" + d + "\"/>\n";
}

// Viridis, from dark purple (low) to yellow (high).
std::string colour_at(double t) {
    static const unsigned char stops[][3] = {{68, 1, 84},    {72, 40, 120},  {62, 73, 137},  {49, 104, 142},
                                             {38, 130, 142}, {31, 158, 137}, {53, 183, 121}, {109, 205, 89},
                                             {180, 222, 44}, {253, 231, 37}};
    constexpr int last = sizeof stops / sizeof stops[0] - 1;
    t = std::clamp(t, 0.0, 1.0) * last;
    int k = std::min(static_cast<int>(t), last - 1);
    double f = t - k;
    char buf[8];
    int rgb[3];
    for (int c = 0; c < 3; ++c)
        rgb[c] = static_cast<int>(std::lround(stops[k][c] + f * (stops[k + 1][c] - stops[k][c])));
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    return buf;
}

// ---------------------------------------------------------------- the plots

// A line of y over x (x sorted; null: the index), or a scatter of unsorted x.
DisplayData line_plot(const Samples* x, const Samples& y, bool scatter, const std::string& title, int columns,
                      const Loc& loc) {
    if (y.size() == 0) user_error(ErrorKind::Runtime, loc, "plot: the array is empty: nothing to plot");
    // The ranges of the points drawn: those with x and y both finite.
    Range xr, yr;
    int64_t skipped = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        const double xi = x ? (*x)[i] : static_cast<double>(i), yi = y[i];
        if (!std::isfinite(xi) || !std::isfinite(yi)) {
            ++skipped;
            continue;
        }
        xr.add(xi);
        yr.add(yi);
    }
    if (yr.empty()) user_error(ErrorKind::Runtime, loc, "plot: nothing to plot: every element is NaN or infinite");
    check_span(xr, "plot", loc);
    check_span(yr, "plot", loc);
    xr = widened(xr);
    yr = widened(yr);

    DisplayData d;
    // The terminal: braille dots joined by lines, or single dots for a scatter.
    TextAxes axes{end_label(yr.hi, yr), end_label(yr.lo, yr), x ? end_label(xr.lo, xr) : "0",
                  x ? end_label(xr.hi, xr) : std::to_string(y.size() - 1), skipped_note(skipped)};
    const int width = text_plot_width(axes, columns);
    BrailleCanvas canvas(width, text_plot_height(columns));
    auto dot_x = [&](double v) { return static_cast<int>(std::lround(xr.fraction(v) * (canvas.dots_wide() - 1))); };
    auto dot_y = [&](double v) {
        return static_cast<int>(std::lround((1 - yr.fraction(v)) * (canvas.dots_high() - 1)));
    };
    if (scatter) {
        for (size_t i = 0; i < y.size(); ++i)
            if (std::isfinite((*x)[i]) && std::isfinite(y[i])) canvas.dot(dot_x((*x)[i]), dot_y(y[i]));
    } else {
        std::vector<Point> points = envelope(x, y, xr, canvas.dots_wide());
        for (size_t k = 0; k < points.size(); ++k) {
            const Point& from = points[k == 0 ? 0 : k - 1];
            canvas.line(dot_x(from.x), dot_y(from.y), dot_x(points[k].x), dot_y(points[k].y));
        }
    }
    d.plain = frame_text(canvas.rows(), width, axes);

    // The SVG: at most two points per pixel column, or one dot per occupied cell.
    Frame f;
    f.x = padded(xr, 0.02);
    f.y = padded(yr, 0.05);
    SvgWriter svg(title);
    Ticks xt = ticks_over(f.x, 7), yt = ticks_over(f.y, 6);
    if (!x) {  // an index axis: whole numbers
        xt.at = index_ticks(static_cast<int64_t>(y.size()));
        xt.step = xt.at.size() > 1 ? xt.at[1] - xt.at[0] : 1;
    }
    svg.axes(f, xt.at, yt.at, xt.step, yt.step, x ? "x" : "index", x ? "y" : "value");
    const int pixel_columns = static_cast<int>(f.right - f.left);
    if (scatter && y.size() <= kMaxScatterDots) {
        std::vector<Point> points;
        for (size_t i = 0; i < y.size(); ++i)
            if (std::isfinite((*x)[i]) && std::isfinite(y[i])) points.push_back({(*x)[i], y[i]});
        svg.raw(dots_path(points, f, kLineColour, 4));
    } else if (scatter) {
        svg.raw(occupancy_path(*x, y, f));
    } else {
        std::vector<Point> points = envelope(x, y, f.x, pixel_columns);
        std::string polyline;
        for (const Point& p : points) polyline += coord(f.px(p.x)) + "," + coord(f.py(p.y)) + " ";
        if (!polyline.empty()) polyline.pop_back();
        svg.raw("<polyline fill=\"none\" stroke=\"" + std::string(kLineColour) +
                "\" stroke-width=\"1.5\" stroke-linejoin=\"round\" points=\"" + polyline + "\"/>\n");
        if (points.size() <= 60) svg.raw(dots_path(points, f, kLineColour, 5));  // few points: mark each
    }
    d.rich["image/svg+xml"] = svg.finish();
    return d;
}

// A matrix as a heat map: cells binned to at most kMaxHeatCells a side.
DisplayData heat_map(const Samples& m, int64_t rows, int64_t cols, const std::string& title, int columns,
                     const Loc& loc) {
    constexpr int kMaxHeatCells = 100;
    if (rows == 0 || cols == 0) user_error(ErrorKind::Runtime, loc, "plot: the array is empty: nothing to plot");
    const Range vr = finite_range(m);
    if (vr.empty()) user_error(ErrorKind::Runtime, loc, "plot: nothing to plot: every element is NaN or infinite");
    check_span(vr, "plot", loc);
    auto level = [&](double v) { return vr.span() > 0 ? vr.fraction(v) : 0.5; };

    DisplayData d;
    // The terminal: one shade character per binned cell, cells stretched to fill the width.
    static const char* const shades[] = {" ", "\u2591", "\u2592", "\u2593", "\u2588"};
    TextAxes axes{"0", std::to_string(rows - 1), "0", std::to_string(cols - 1), ""};
    const int width = text_plot_width(axes, columns);
    const int text_rows = static_cast<int>(std::min<int64_t>(rows, text_plot_height(columns)));
    const int text_cols = static_cast<int>(std::min<int64_t>(cols, width));
    const int repeat_x = width / text_cols, repeat_y = std::max(1, std::min(3, text_plot_height(columns) / text_rows));
    std::vector<double> cells = binned_means(m, rows, cols, text_rows, text_cols);
    std::vector<std::string> lines;
    for (int r = 0; r < text_rows; ++r) {
        std::string line;
        for (int c = 0; c < text_cols; ++c) {
            double v = cells[size_t(r) * text_cols + c];
            const char* shade = std::isnan(v) ? "?" : shades[std::clamp(static_cast<int>(level(v) * 5), 0, 4)];
            for (int k = 0; k < repeat_x; ++k) line += shade;
        }
        for (int k = 0; k < repeat_y; ++k) lines.push_back(line);
    }
    axes.note = "  " + end_label(vr.lo, widened(vr)) + " [ \u2591\u2592\u2593\u2588] " + end_label(vr.hi, widened(vr));
    if (int64_t skipped = count_non_finite(m)) axes.note += "   " + skipped_note(skipped);
    d.plain = frame_text(lines, repeat_x * text_cols, axes);

    // The SVG: cells of whole pixels; each row's runs of one colour are one
    // stroke as thick as a cell, and each colour is one path.
    const int out_rows = static_cast<int>(std::min<int64_t>(rows, kMaxHeatCells));
    const int out_cols = static_cast<int>(std::min<int64_t>(cols, kMaxHeatCells));
    Frame f;
    f.y_down = true;
    f.x = {0, static_cast<double>(cols)};
    f.y = {0, static_cast<double>(rows)};
    const int cell_w = std::max(1, static_cast<int>(540 - f.left) / out_cols);
    const int cell_h = std::max(1, static_cast<int>(f.bottom - f.top) / out_rows);
    f.right = f.left + cell_w * out_cols;
    f.bottom = f.top + cell_h * out_rows;
    cells = binned_means(m, rows, cols, out_rows, out_cols);
    constexpr int kLevels = 64;
    auto colour_level = [&](double v) {
        return std::isnan(v) ? kLevels : std::clamp(static_cast<int>(level(v) * kLevels), 0, kLevels - 1);
    };
    std::vector<std::string> paths(kLevels + 1);  // the last: cells with no finite value
    std::vector<std::pair<int, int>> path_end(kLevels + 1, {-1, 0});  // (row, column) where each path stopped
    for (int r = 0; r < out_rows; ++r) {
        const std::string y = coord(f.top + (r + 0.5) * cell_h);
        for (int c = 0; c < out_cols;) {
            const int lv = colour_level(cells[size_t(r) * out_cols + c]);
            int end = c + 1;
            while (end < out_cols && colour_level(cells[size_t(r) * out_cols + end]) == lv) ++end;
            // Along a row a relative move is shorter than an absolute one.
            auto& [row, column] = path_end[lv];
            paths[lv] += row == r ? "m" + std::to_string((c - column) * cell_w) + " 0"
                                  : "M" + coord(f.left + c * cell_w) + " " + y;
            paths[lv] += "h" + std::to_string((end - c) * cell_w);
            path_end[lv] = {r, end};
            c = end;
        }
    }
    SvgWriter svg(title);
    for (int lv = 0; lv <= kLevels; ++lv) {
        if (paths[lv].empty()) continue;
        const std::string colour = lv == kLevels ? "#cccccc" : colour_at((lv + 0.5) / kLevels);
        svg.raw("<path stroke=\"" + colour + "\" stroke-width=\"" + std::to_string(cell_h) +
                "\" shape-rendering=\"crispEdges\" d=\"" + paths[lv] + "\"/>\n");
    }
    svg.no_grid_lines();
    svg.axes(f, index_ticks(cols), index_ticks(rows), 1, 1, "column", "row", 0.5, 0.5);

    // The colour scale: a gradient bar right of the map, with the values' ticks.
    Frame legend = f;
    legend.left = f.right + 20;
    legend.right = legend.left + 16;
    legend.y_down = false;
    legend.y = widened(vr);
    // Every heat map's gradient is the same, so that SVGs sharing one HTML page
    // may share its id; a constant map's bar is a plain fill.
    std::string fill = colour_at(0.5);
    if (vr.span() > 0) {
        std::string stops;
        for (int k = 0; k <= 10; ++k)
            stops += "<stop offset=\"" + std::to_string(k * 10) + "%\" stop-color=\"" + colour_at(k / 10.0) + "\"/>";
        svg.raw("<defs><linearGradient id=\"shoal-viridis\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">" + stops +
                "</linearGradient></defs>\n");
        fill = "url(#shoal-viridis)";
    }
    svg.raw("<rect x=\"" + coord(legend.left) + "\" y=\"" + coord(legend.top) + "\" width=\"16\" height=\"" +
            coord(legend.bottom - legend.top) + "\" fill=\"" + fill + "\" stroke=\"#444\"/>\n");
    Ticks st = ticks_over(legend.y, 6);
    std::string marks, labels;
    for (double t : st.at) {
        const std::string y = coord(legend.py(t));
        marks += "M" + coord(legend.right) + " " + y + "h4";
        labels += "<text x=\"" + coord(legend.right + 7) + "\" y=\"" + y + "\" dy=\"0.32em\">" +
                  html_escape(tick_label(t, st.step)) + "</text>\n";
    }
    svg.raw("<path stroke=\"#444\" d=\"" + marks + "\"/>\n<g fill=\"#333\" font-size=\"11\">\n" + labels + "</g>\n");
    d.rich["image/svg+xml"] = svg.finish();
    return d;
}

Histogram histogram_of(const Samples& xs) {
    Histogram h;
    Range r;
    int64_t n = 0;
    bool integral = true;
    for (size_t i = 0; i < xs.size(); ++i) {
        const double v = xs[i];
        if (!std::isfinite(v)) continue;
        r.add(v);
        ++n;
        integral = integral && v == std::floor(v);
    }
    h.skipped = static_cast<int64_t>(xs.size()) - n;
    if (n == 0) return h;
    int bins;
    if (integral && r.span() < Histogram::kMaxBins) {
        // One bin per integer, centred on it.
        bins = static_cast<int>(r.span()) + 1;
        h.lo = r.lo - 0.5;
        h.width = 1;
        h.integers = true;
    } else if (r.span() == 0) {
        bins = 1;
        h.lo = r.lo - 0.5;
        h.width = 1;
    } else {
        // The quartiles of at most kQuartileSample evenly spaced elements
        // (all of them up to that size) are plenty for choosing a bin width.
        constexpr size_t kQuartileSample = size_t{1} << 20;
        const size_t stride = std::max<size_t>(1, xs.size() / kQuartileSample);
        std::vector<double> sample;
        for (size_t i = 0; i < xs.size(); i += stride)
            if (std::isfinite(xs[i])) sample.push_back(xs[i]);
        auto quantile = [&](double q) {
            auto at = sample.begin() + static_cast<int64_t>(q * double(sample.size() - 1));
            std::nth_element(sample.begin(), at, sample.end());
            return *at;
        };
        const double iqr = sample.empty() ? 0 : quantile(0.75) - quantile(0.25);
        const double estimate = iqr > 0 ? std::ceil(r.span() / (2 * iqr / std::cbrt(double(n))))
                                        : std::ceil(std::log2(double(n))) + 1;  // Sturges
        bins = static_cast<int>(std::clamp(estimate, double(Histogram::kMinBins), double(Histogram::kMaxBins)));
        h.lo = r.lo;
        h.width = r.span() / bins;
    }
    h.counts.assign(size_t(bins), 0);
    for (size_t i = 0; i < xs.size(); ++i) {
        const double v = xs[i];
        if (!std::isfinite(v)) continue;
        const double at = (v - h.lo) / h.width;  // 0 / 0 when all values are one: the first bin
        ++h.counts[std::isnan(at) ? 0 : size_t(std::clamp(at, 0.0, double(bins - 1)))];
    }
    return h;
}

DisplayData histogram_plot(const Samples& xs, const std::string& title, int columns, const Loc& loc) {
    if (xs.size() == 0) user_error(ErrorKind::Runtime, loc, "hist: the array is empty: nothing to count");
    const Histogram h = histogram_of(xs);
    if (h.counts.empty())
        user_error(ErrorKind::Runtime, loc, "hist: nothing to count: every element is NaN or infinite");
    const int bins = static_cast<int>(h.counts.size());
    const int64_t most = *std::max_element(h.counts.begin(), h.counts.end());
    const Range xr{h.lo, h.lo + bins * h.width};
    check_span(xr, "hist", loc);

    DisplayData d;
    // The terminal: columns of eighth blocks; a column spanning several bins shows the fullest.
    // Integer bins are labelled by their integers, others by their edges.
    const double label_inset = h.integers ? h.width / 2 : 0;
    TextAxes axes{std::to_string(most), "0", tick_label(xr.lo + label_inset, h.width),
                  tick_label(xr.hi - label_inset, h.width), ""};
    axes.note = std::to_string(xs.size() - h.skipped) + " values in " + std::to_string(bins) +
                (h.integers ? " bins, one per integer" : " bins of width " + tick_label(h.width, h.width / 100));
    if (h.skipped) axes.note += "; " + skipped_note(h.skipped);
    const int width = text_plot_width(axes, columns), height = text_plot_height(columns);
    std::vector<int64_t> column_count(width, 0);
    for (int c = 0; c < width; ++c) {
        int b0 = static_cast<int>(int64_t(c) * bins / width);
        int b1 = std::max(b0 + 1, static_cast<int>(int64_t(c + 1) * bins / width));
        for (int b = b0; b < b1 && b < bins; ++b) column_count[c] = std::max(column_count[c], h.counts[b]);
    }
    static const char* const eighths[] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    std::vector<std::string> lines(height);
    for (int c = 0; c < width; ++c) {
        int64_t units = column_count[c] * height * 8 / most;
        if (column_count[c] > 0) units = std::max<int64_t>(units, 1);  // a non-empty bin stays visible
        for (int r = 0; r < height; ++r) {
            int64_t filled = std::clamp<int64_t>(units - int64_t(height - 1 - r) * 8, 0, 8);
            lines[r] += eighths[filled];
        }
    }
    d.plain = frame_text(lines, width, axes);

    // The SVG: a bar per bin.
    Frame f;
    f.x = xr;
    f.y = {0, most * 1.05};
    SvgWriter svg(title);
    Ticks xt = ticks_over(xr, 8), yt = ticks_over(f.y, 6);
    auto whole_numbers = [](Ticks& t) {
        t.at.erase(std::remove_if(t.at.begin(), t.at.end(), [](double v) { return v != std::floor(v); }), t.at.end());
        t.step = std::max(1.0, t.step);
    };
    whole_numbers(yt);  // counts
    if (h.integers) whole_numbers(xt);
    svg.axes(f, xt.at, yt.at, xt.step, yt.step, "value", "count");
    std::string bars;
    for (int b = 0; b < bins; ++b) {
        if (!h.counts[b]) continue;
        const double x0 = f.px(h.lo + b * h.width), x1 = f.px(h.lo + (b + 1) * h.width), y = f.py(double(h.counts[b]));
        bars +=
            "M" + coord(x0) + " " + coord(f.bottom) + "V" + coord(y) + "H" + coord(x1) + "V" + coord(f.bottom) + "z";
    }
    svg.raw("<path fill=\"#4c78a8\" stroke=\"white\" stroke-width=\"0.5\" d=\"" + bars + "\"/>\n");
    d.rich["image/svg+xml"] = svg.finish();
    return d;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
    const double span = hi - lo;
    if (!std::isfinite(span) || span <= 0 || target < 2) return {lo};
    const double raw = span / (target - 1);
    const double magnitude = std::pow(10, std::floor(std::log10(raw)));
    const double f = raw / magnitude;
    const double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * magnitude;
    std::vector<double> ticks;
    for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) ticks.push_back(k * step);
    return ticks;
}

Histogram make_histogram(std::span<const double> xs) { return histogram_of(Samples(xs)); }

void check_plot_argument(PlotKind kind, const Type& type, const Loc& loc) {
    const Type t = prune(type);
    if (kind == PlotKind::Hist) {
        if (!is_array(t)) user_error(ErrorKind::Type, loc, "hist: expected an array, found " + type_to_string(t));
        return;
    }
    const bool matrix = is_array(t) && array_rank(t) <= 2;
    const bool pair = is_tuple(t) && tuple_elems(t).size() == 2 &&
                      std::all_of(tuple_elems(t).begin(), tuple_elems(t).end(),
                                  [](const Type& e) { return is_array(e) && array_rank(e) == 1; });
    if (!matrix && !pair)
        user_error(ErrorKind::Type, loc,
                   "plot: expected a rank-1 or rank-2 array or a pair of rank-1 arrays, found " + type_to_string(t));
}

DisplayData plot_display(PlotKind kind, const Value& value, const std::string& title, int columns, const Loc& loc) {
    const Value v = force(value);
    columns = std::max(columns, 24);
    if (v.is_array()) {
        const Array& a = *v.array();
        if (kind == PlotKind::Hist) return histogram_plot(Samples(a), title, columns, loc);
        if (a.rank() == 1) return line_plot(nullptr, Samples(a), false, title, columns, loc);
        if (a.rank() == 2) return heat_map(Samples(a), a.shape[0], a.shape[1], title, columns, loc);
    }
    if (v.is_tuple() && v.tuple().size() == 2 && v.tuple()[0].is_array() && v.tuple()[1].is_array()) {
        const Samples x(*v.tuple()[0].array()), y(*v.tuple()[1].array());
        if (x.size() != y.size())
            user_error(ErrorKind::Runtime, loc,
                       "plot: x and y have different lengths (" + std::to_string(x.size()) + " and " +
                           std::to_string(y.size()) + ")");
        // Sorted x (its finite values) draws a line; anything else a scatter.
        bool sorted = true;
        double previous = -kInf;
        for (size_t i = 0; i < x.size() && sorted; ++i) {
            if (!std::isfinite(x[i])) continue;
            sorted = x[i] >= previous;
            previous = x[i];
        }
        return line_plot(&x, y, !sorted, title, columns, loc);
    }
    internal_error(__FILE__, __LINE__, "plot of a value check_plot_argument rejects");
}

}  // namespace shoal
