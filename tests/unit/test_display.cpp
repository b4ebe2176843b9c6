// Rich display (lang/display.h) and plots (lang/plot.h): HTML tables of
// arrays, highlighted CUDA, :cuda/:ir display data, SVG and terminal plots.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "lang/display.h"
#include "lang/plot.h"
#include "lang/session.h"
#include "codegen/compiled_backend.h"
#include "runtime/executors.h"
#include "session_capture.h"

using namespace shoal;

namespace {

struct DisplayCapture : shoal::testing::SessionCapture {
    void display(const DisplayData& d) override { displays.push_back(d); }
};

ArrayPtr vector_of(Prim elem, std::vector<double> xs) {
    auto a = std::make_shared<Array>(elem, Shape{static_cast<int64_t>(xs.size())});
    for (size_t k = 0; k < xs.size(); ++k)
        a->set(static_cast<int64_t>(k), convert_scalar(Scalar::of_double(xs[k]), elem));
    return a;
}

ArrayPtr iota_array(Prim elem, Shape shape) {
    auto a = std::make_shared<Array>(elem, shape);
    for (int64_t k = 0; k < a->size(); ++k) a->set(k, convert_scalar(Scalar::of_long(k), elem));
    return a;
}

size_t count_of(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}

// Code points of a UTF-8 line (the braille and box characters are one column each).
size_t code_points(const std::string& line) {
    return static_cast<size_t>(std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    size_t pos = 0;
    for (size_t eol; (eol = text.find('\n', pos)) != std::string::npos; pos = eol + 1)
        out.push_back(text.substr(pos, eol - pos));
    out.push_back(text.substr(pos));
    return out;
}

// Every element opened in the SVG is closed (the tags we write: no CDATA, no comments).
bool balanced_tags(const std::string& xml) {
    std::vector<std::string> open;
    for (size_t at = xml.find('<'); at != std::string::npos; at = xml.find('<', at + 1)) {
        size_t end = xml.find('>', at);
        if (end == std::string::npos) return false;
        std::string tag = xml.substr(at + 1, end - at - 1);
        if (tag.back() == '/') continue;
        if (tag[0] == '/') {
            if (open.empty() || open.back() != tag.substr(1)) return false;
            open.pop_back();
        } else {
            open.push_back(tag.substr(0, tag.find(' ')));
        }
    }
    return open.empty();
}

// Braille patterns, U+2800..U+28FF, are E2 A0..A3 xx in UTF-8.
bool has_braille(const std::string& text) {
    for (size_t k = 0; k + 1 < text.size(); ++k)
        if (text[k] == '\xe2' && (static_cast<unsigned char>(text[k + 1]) & 0xFC) == 0xA0) return true;
    return false;
}

const std::string& svg_of(const DisplayData& d) {
    REQUIRE(d.rich.count("image/svg+xml"));
    return d.rich.at("image/svg+xml");
}

}  // namespace

// ---------------------------------------------------------------- HTML tables

TEST_CASE("display: a vector is a table with a shape and type caption") {
    Value v(vector_of(Prim::Float, {1.5, -2, 3}));
    std::string html = value_html(v, t_array(1, t_prim(Prim::Float)), 20);
    CHECK(html.find("<table") == 0);
    CHECK(html.find("shape (3) \u00b7 float</caption>") != std::string::npos);
    CHECK(html.find(">1.5</td>") != std::string::npos);
    CHECK(html.find(">-2.0</td>") != std::string::npos);
    CHECK(count_of(html, "<tr>") == 3);
}

TEST_CASE("display: long axes are summarised like the REPL prints them") {
    Value v(iota_array(Prim::Int, {1000}));
    std::string html = value_html(v, t_array(1, t_prim(Prim::Int)), 20);
    CHECK(count_of(html, "<tr>") == 7);  // three, the ellipsis row, three
    CHECK(html.find(">997</td>") != std::string::npos);
    CHECK(html.find(">500</td>") == std::string::npos);
    CHECK(html.find("\u22ee") != std::string::npos);

    Value m(iota_array(Prim::Long, {30, 40}));
    std::string table = value_html(m, t_array(2, t_prim(Prim::Long)), 20);
    CHECK(table.find("shape (30, 40) \u00b7 long") != std::string::npos);
    CHECK(count_of(table, "<tr>") == 1 + 7);  // the header of column indices, then rows
    CHECK(table.find(">1199</td>") != std::string::npos);  // the last element
    CHECK(table.find(">39</th>") != std::string::npos);  // the last column's index
    CHECK(table.find("\u22f1") != std::string::npos);
    CHECK(value_html(m, t_array(2, t_prim(Prim::Long)), 100).find(">600</td>") != std::string::npos);
}

TEST_CASE("display: an array of tuples has a column per component; rank 3 is text") {
    Value pairs(std::vector<Value>{Value(vector_of(Prim::Int, {1, 2})), Value(vector_of(Prim::Bool, {1, 0}))});
    std::string html = value_html(pairs, t_array(1, t_tuple({t_prim(Prim::Int), t_prim(Prim::Bool)})), 20);
    CHECK(html.find("shape (2) \u00b7 (int, bool)") != std::string::npos);
    CHECK(html.find(">true</td>") != std::string::npos);
    CHECK(count_of(html, "<td") == 4);

    Value cube(iota_array(Prim::Int, {2, 2, 3}));
    std::string pre = value_html(cube, t_array(3, t_prim(Prim::Int)), 20);
    CHECK(pre.find("shape (2, 2, 3) \u00b7 int") != std::string::npos);
    CHECK(pre.find("<pre") != std::string::npos);
    CHECK(pre.find("[9, 10, 11]") != std::string::npos);
}

TEST_CASE("display: scalars, tuples of scalars and functions have no HTML") {
    CHECK(value_html(Value(Scalar::of_int(3)), t_prim(Prim::Int), 20).empty());
    Value pair(std::vector<Value>{Value(Scalar::of_int(1)), Value(Scalar::of_float(2))});
    CHECK(value_html(pair, t_tuple({t_prim(Prim::Int), t_prim(Prim::Float)}), 20).empty());
    CHECK(value_html(Value::string("<b>"), t_string(), 20).empty());
}

TEST_CASE("display: HTML escaping") {
    CHECK(html_escape("a < b && c > \"d\"") == "a &lt; b &amp;&amp; c &gt; &quot;d&quot;");
}

// ---------------------------------------------------------------- CUDA

TEST_CASE("display: CUDA highlighting escapes and keeps the text") {
    const std::string src =
        "// sum: x < y && z\nextern \"C\" __global__ void k(const float* __restrict__ x) {\n"
        "    if (threadIdx.x < 4) x[0] = 1.5e-3f;\n}\n";
    std::string html = highlight_cuda_html(src);
    CHECK(html.find("<pre") == 0);
    CHECK(html.find("x &lt; y &amp;&amp; z") != std::string::npos);
    CHECK(html.find(" < 4") == std::string::npos);
    CHECK(html.find("&lt; <span") != std::string::npos);
    CHECK(html.find(">__global__</span>") != std::string::npos);
    CHECK(html.find(">1.5e-3f</span>") != std::string::npos);
    // Stripping the tags and entities gives the source back.
    std::string text;
    for (size_t i = 0; i < html.size(); ++i) {
        if (html[i] == '<') {
            i = html.find('>', i);
        } else if (html.compare(i, 4, "&lt;") == 0) {
            text += '<', i += 3;
        } else if (html.compare(i, 4, "&gt;") == 0) {
            text += '>', i += 3;
        } else if (html.compare(i, 5, "&amp;") == 0) {
            text += '&', i += 4;
        } else if (html.compare(i, 6, "&quot;") == 0) {
            text += '"', i += 5;
        } else {
            text += html[i];
        }
    }
    CHECK(text == src);
}

TEST_CASE("display: :cuda output splits into the plan and a cuda fence") {
    const std::string text =
        "launch plan sum\n  input float x[n]\n  1. sum_kernel<<<g, 256>>>\n"
        "extern \"C\" __global__ void sum_kernel() {\n}\n\n"
        "launch plan map\n  output float y[n]\n"
        "extern \"C\" __global__ void map_kernel() {}";
    DisplayData d = explain_display(text, true);
    CHECK(d.plain == text);
    const std::string& md = d.rich.at("text/markdown");
    CHECK(count_of(md, "```cuda\n") == 2);
    CHECK(md.find("```\nlaunch plan sum\n  input float x[n]\n  1. sum_kernel<<<g, 256>>>\n```") != std::string::npos);
    CHECK(md.find("```cuda\nextern \"C\" __global__ void sum_kernel() {\n}\n```") != std::string::npos);
    const std::string& html = d.rich.at("text/html");
    CHECK(html.find("&lt;&lt;&lt;g, 256&gt;&gt;&gt;") != std::string::npos);
    CHECK(html.find(">__global__</span>") != std::string::npos);

    DisplayData ir = explain_display(text, false);
    CHECK(ir.rich.at("text/markdown").find("```cuda") == std::string::npos);
    DisplayData none = explain_display("no kernels: this expression is evaluated by the reference evaluator", true);
    CHECK(none.rich.at("text/markdown").find("```cuda") == std::string::npos);
}

// ---------------------------------------------------------------- plots

TEST_CASE("plot: a million points make a small SVG and a terminal plot of the requested width") {
    std::vector<double> xs(1000000);
    for (size_t k = 0; k < xs.size(); ++k) xs[k] = std::sin(k * 1e-4) + (k % 7 == 0 ? 0.5 : 0);
    Value v(vector_of(Prim::Float, xs));
    for (int columns : {40, 80, 123}) {
        DisplayData d = plot_display(PlotKind::Plot, v, "wave", columns, Loc{});
        const std::string& svg = svg_of(d);
        CHECK(svg.size() < 100 * 1024);
        CHECK(svg.find("<svg") == 0);
        CHECK(balanced_tags(svg));
        CHECK(svg.find("<polyline") != std::string::npos);
        auto lines = lines_of(d.plain);
        CHECK(lines.size() >= 8);
        size_t widest = 0;
        for (const auto& l : lines) widest = std::max(widest, code_points(l));
        CHECK(widest == size_t(columns));  // the x axis spans the width
        CHECK(has_braille(d.plain));
    }
}

TEST_CASE("plot: matrices are heat maps, binned; pairs are lines or scatters") {
    Value m(iota_array(Prim::Double, {1000, 1000}));
    DisplayData d = plot_display(PlotKind::Plot, m, "m", 80, Loc{});
    const std::string& svg = svg_of(d);
    CHECK(svg.size() < 200 * 1024);
    CHECK(balanced_tags(svg));
    CHECK(svg.find("linearGradient") != std::string::npos);
    CHECK(d.plain.find("\u2588") != std::string::npos);

    Value small(iota_array(Prim::Int, {3, 4}));
    CHECK(balanced_tags(svg_of(plot_display(PlotKind::Plot, small, "small", 80, Loc{}))));

    std::vector<double> x(5000), y(5000);
    for (size_t k = 0; k < x.size(); ++k) {
        x[k] = std::cos(k * 0.37) * 10;
        y[k] = std::sin(k * 0.91);
    }
    Value scatter(std::vector<Value>{Value(vector_of(Prim::Double, x)), Value(vector_of(Prim::Double, y))});
    DisplayData s = plot_display(PlotKind::Plot, scatter, "(x, y)", 80, Loc{});
    CHECK(svg_of(s).find("stroke-linecap=\"round\"") != std::string::npos);
    CHECK(svg_of(s).size() < 100 * 1024);
    CHECK(balanced_tags(svg_of(s)));
}

TEST_CASE("plot: NaN and infinities are skipped; a constant array still plots") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    DisplayData d = plot_display(PlotKind::Plot, Value(vector_of(Prim::Double, {1, nan, 3, inf, 2})), "v", 80, Loc{});
    CHECK(d.plain.find("2 NaN or infinite values skipped") != std::string::npos);
    CHECK(svg_of(d).find("nan") == std::string::npos);
    DisplayData c = plot_display(PlotKind::Plot, Value(vector_of(Prim::Int, {7, 7, 7})), "c", 80, Loc{});
    CHECK(svg_of(c).find("nan") == std::string::npos);
    CHECK(balanced_tags(svg_of(c)));
    CHECK(!plot_display(PlotKind::Plot, Value(vector_of(Prim::Bool, {1, 0, 1})), "b", 80, Loc{}).plain.empty());
}

TEST_CASE("plot: data that cannot be drawn is a runtime error") {
    auto fails_with = [](const Value& v, PlotKind kind, const std::string& message) {
        try {
            plot_display(kind, v, "e", 80, Loc{});
            FAIL("no error for " << message);
        } catch (const Error& e) {
            CHECK(e.kind == ErrorKind::Runtime);
            CHECK(e.message.find(message) != std::string::npos);
        }
    };
    fails_with(Value(vector_of(Prim::Float, {})), PlotKind::Plot, "empty");
    fails_with(Value(vector_of(Prim::Float, {NAN, NAN})), PlotKind::Plot, "every element is NaN or infinite");
    fails_with(Value(vector_of(Prim::Float, {})), PlotKind::Hist, "empty");
    Value uneven(std::vector<Value>{Value(vector_of(Prim::Int, {1, 2, 3})), Value(vector_of(Prim::Int, {1, 2}))});
    fails_with(uneven, PlotKind::Plot, "x and y have different lengths (3 and 2)");
    fails_with(Value(vector_of(Prim::Double, {-1e308, 1e308})), PlotKind::Plot,
               "the values span more than the largest double (-1e308 to 1e308)");
    fails_with(Value(vector_of(Prim::Double, {-1e308, 1e308})), PlotKind::Hist, "span more than the largest double");
}

TEST_CASE("plot: arguments of the wrong type are rejected before evaluation") {
    auto message = [](PlotKind kind, const Type& t) {
        try {
            check_plot_argument(kind, t, Loc{});
        } catch (const Error& e) {
            CHECK(e.kind == ErrorKind::Type);
            return e.message;
        }
        return std::string("accepted");
    };
    CHECK(message(PlotKind::Plot, t_prim(Prim::Int)) ==
          "plot: expected a rank-1 or rank-2 array or a pair of rank-1 arrays, found int");
    CHECK(message(PlotKind::Plot, t_array(3, t_prim(Prim::Float))).find("found [[[float]]]") != std::string::npos);
    CHECK(message(PlotKind::Plot, t_func(t_prim(Prim::Int), t_prim(Prim::Int))).find("found int -> int") !=
          std::string::npos);
    CHECK(message(PlotKind::Hist, t_prim(Prim::Double)) == "hist: expected an array, found double");
    CHECK(message(PlotKind::Plot, t_array(2, t_prim(Prim::Int))) == "accepted");
    CHECK(message(PlotKind::Plot, t_tuple({t_array(1, t_prim(Prim::Int)), t_array(1, t_prim(Prim::Float))})) ==
          "accepted");
    CHECK(message(PlotKind::Hist, t_array(3, t_prim(Prim::Bool))) == "accepted");
}

TEST_CASE("hist: every finite value falls in exactly one bin") {
    std::vector<double> xs;
    for (int k = 0; k < 100000; ++k)
        xs.push_back(std::sin(k * 12.9898) * 43758.5453 - std::floor(std::sin(k * 12.9898) * 43758.5453));
    xs.push_back(std::numeric_limits<double>::quiet_NaN());
    Histogram h = make_histogram(xs);
    CHECK(h.skipped == 1);
    CHECK(std::accumulate(h.counts.begin(), h.counts.end(), int64_t{0}) == 100000);
    CHECK(h.counts.size() >= size_t(Histogram::kMinBins));
    CHECK(h.counts.size() <= size_t(Histogram::kMaxBins));

    // Small integer ranges get a bin per integer, centred on it.
    Histogram dice = make_histogram(std::vector<double>{1, 2, 2, 6, 6, 6});
    CHECK(dice.counts == std::vector<int64_t>{1, 2, 0, 0, 0, 3});
    CHECK(dice.lo == -0.5 + 1);
    CHECK(make_histogram(std::vector<double>{2.5, 2.5}).counts == std::vector<int64_t>{2});

    DisplayData d = plot_display(PlotKind::Hist, Value(vector_of(Prim::Double, xs)), "h", 80, Loc{});
    CHECK(d.plain.find("100000 values in") != std::string::npos);
    CHECK(balanced_tags(svg_of(d)));
}

TEST_CASE("plot: ticks are round numbers") {
    std::vector<double> unit = nice_ticks(0, 1, 6);
    REQUIRE(unit.size() == 6);
    CHECK(unit[1] == doctest::Approx(0.2));
    CHECK(unit[5] == doctest::Approx(1));
    CHECK(nice_ticks(-3, 97, 6) == std::vector<double>{0, 20, 40, 60, 80});
    CHECK(nice_ticks(5, 5, 6) == std::vector<double>{5});
}

// ---------------------------------------------------------------- in a session

TEST_CASE("display: :plot and :hist in a session display an SVG") {
    runtime::install_compiled_backend();
    Session s;
    DisplayCapture out;
    CHECK(s.execute("let x = map (\\i -> sin (float i / 100.0)) (iota 100000)", "<t>", out));
    CHECK(s.execute(":plot x", "<t>", out));
    CHECK(s.execute(":hist x", "<t>", out));
    CHECK(s.execute(":plot (x, x)", "<t>", out));
    CHECK(s.execute(":plot zip x x", "<t>", out));
    CHECK(s.execute(":plot reshape (100, 1000) x", "<t>", out));
    INFO((out.errors.empty() ? std::string() : out.errors[0]));
    REQUIRE(out.displays.size() == 5);
    for (const DisplayData& d : out.displays) {
        CHECK(svg_of(d).size() < 100 * 1024);
        CHECK(!d.plain.empty());
    }
    CHECK(out.texts.empty());
    CHECK(out.values.empty());

    CHECK_FALSE(s.execute(":plot 3", "<t>", out));
    REQUIRE(out.errors.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Type);
    CHECK(out.errors[0].find("plot: expected a rank-1 or rank-2 array or a pair of rank-1 arrays, found int") !=
          std::string::npos);
    CHECK(out.errors[0].find("^") != std::string::npos);
    CHECK_FALSE(s.execute(":plot", "<t>", out));
    CHECK(out.errors.back().find("usage: :plot e") != std::string::npos);
    CHECK_FALSE(s.execute(":hist (iota 3, iota 4)", "<t>", out));
    CHECK(out.errors.back().find("hist: expected an array") != std::string::npos);
}

TEST_CASE("display: :cuda publishes markdown and HTML") {
    runtime::install_compiled_backend();
    Session s;
    DisplayCapture out;
    CHECK(s.execute("let x = map float (iota 1000)\n:cuda sum (map (\\v -> v * v) x)", "<t>", out));
    REQUIRE(out.displays.size() == 1);
    const DisplayData& d = out.displays[0];
    CHECK(d.plain.find("launch plan") == 0);
    CHECK(d.rich.at("text/markdown").find("```cuda\n") != std::string::npos);
    CHECK(d.rich.at("text/html").find("__global__") != std::string::npos);
}

TEST_CASE("display: the terminal width survives :reset") {
    Session s;
    s.set_columns(132);
    DisplayCapture out;
    CHECK(s.execute(":reset", "<t>", out));
    CHECK(s.settings().columns == 132);
}
