#include "display.h"

#include <cstdio>

#include <algorithm>
#include <cctype>
#include <set>

#include "eval.h"
#include "format.h"

namespace shoal {

std::string html_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

namespace {

// ---------------------------------------------------------------- array tables

// "float", or "(int, float)" for an array of tuples.
std::string element_name(const Value& array_like) {
    if (array_like.is_array()) return prim_name(array_like.array()->elem);
    std::string out = "(";
    for (const Value& c : array_like.tuple()) out += (out.size() > 1 ? ", " : "") + element_name(c);
    return out + ")";
}

std::string element_text(const Value& array_like, int64_t flat) {
    return format_value(array_like_get(array_like, flat));
}

// Inline styles: the HTML is self-contained (no stylesheet to rely on in a
// notebook), and a front end's own table CSS still applies to what we leave unset.
constexpr const char* kTableStyle = "border-collapse:collapse;font-family:monospace;font-size:12px";
constexpr const char* kCaptionStyle =
    "caption-side:top;text-align:left;color:#666;padding-bottom:2px;white-space:nowrap";
constexpr const char* kCellStyle = "text-align:right;padding:1px 6px";
constexpr const char* kIndexStyle = "text-align:right;padding:1px 6px;color:#888;font-weight:normal";

std::string cell(const std::string& text) {
    return "<td style=\"" + std::string(kCellStyle) + "\">" + html_escape(text) + "</td>";
}
std::string index_cell(const std::string& text) {
    return "<th style=\"" + std::string(kIndexStyle) + "\">" + html_escape(text) + "</th>";
}
// The label of a shown index (-1 stands for the elided middle).
std::string index_label(int64_t k, const char* ellipsis) { return k < 0 ? ellipsis : std::to_string(k); }

// Rank 1: one row per element; an array of tuples gets one column per component.
std::string vector_rows(const Value& v, int64_t extent, int threshold) {
    const std::vector<Value> components = v.is_tuple() ? v.tuple() : std::vector<Value>{v};
    std::string rows;
    if (v.is_tuple()) {
        rows += "<tr>" + index_cell("");
        for (size_t c = 0; c < components.size(); ++c) rows += index_cell("." + std::to_string(c));
        rows += "</tr>";
    }
    for (int64_t k : shown_indices(extent, threshold)) {
        rows += "<tr>" + index_cell(index_label(k, "\u22ee"));
        for (const Value& c : components) rows += k < 0 ? cell("\u22ee") : cell(element_text(c, k));
        rows += "</tr>";
    }
    return rows;
}

// Rank 2: a header row of column indices, a row index on each row.
std::string matrix_rows(const Value& v, const Shape& shape, int threshold) {
    const std::vector<int64_t> rows = shown_indices(shape[0], threshold);
    const std::vector<int64_t> cols = shown_indices(shape[1], threshold);
    std::string out = "<tr>" + index_cell("");
    for (int64_t j : cols) out += index_cell(index_label(j, "\u22ef"));
    out += "</tr>";
    for (int64_t i : rows) {
        out += "<tr>" + index_cell(index_label(i, "\u22ee"));
        for (int64_t j : cols) {
            if (i < 0 || j < 0)
                out += cell(i < 0 && j < 0 ? "\u22f1" : i < 0 ? "\u22ee" : "\u22ef");
            else
                out += cell(element_text(v, i * shape[1] + j));
        }
        out += "</tr>";
    }
    return out;
}

// Rank 3: the planes one after another as text, each row on its own line.
std::string planes_text(const Value& v, const Shape& shape, int threshold) {
    std::string out;
    for (int64_t p : shown_indices(shape[0], threshold)) {
        if (p < 0) {
            out += "...\n\n";
            continue;
        }
        out += "[" + std::to_string(p) + ", :, :]\n";
        for (int64_t i : shown_indices(shape[1], threshold)) {
            if (i < 0) {
                out += " ...\n";
                continue;
            }
            std::string line;
            for (int64_t j : shown_indices(shape[2], threshold)) {
                line += line.empty() ? " [" : ", ";
                line += j < 0 ? "..." : element_text(v, (p * shape[1] + i) * shape[2] + j);
            }
            out += line + "]\n";
        }
        out += "\n";
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

// ---------------------------------------------------------------- CUDA highlighting

const std::set<std::string_view>& cuda_keywords() {
    static const std::set<std::string_view> words = {"if",
                                                     "else",
                                                     "for",
                                                     "while",
                                                     "do",
                                                     "return",
                                                     "break",
                                                     "continue",
                                                     "switch",
                                                     "case",
                                                     "default",
                                                     "goto",
                                                     "extern",
                                                     "static",
                                                     "const",
                                                     "constexpr",
                                                     "volatile",
                                                     "inline",
                                                     "struct",
                                                     "union",
                                                     "typedef",
                                                     "template",
                                                     "typename",
                                                     "sizeof",
                                                     "true",
                                                     "false",
                                                     "nullptr",
                                                     "__global__",
                                                     "__device__",
                                                     "__host__",
                                                     "__shared__",
                                                     "__constant__",
                                                     "__restrict__",
                                                     "__launch_bounds__",
                                                     "__forceinline__",
                                                     "__noinline__",
                                                     "asm"};
    return words;
}

const std::set<std::string_view>& cuda_types() {
    static const std::set<std::string_view> words = {
        "void",     "bool",     "char",   "short",  "int",     "long",    "float",   "double",    "signed",
        "unsigned", "auto",     "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",   "uint16_t",
        "uint32_t", "uint64_t", "float2", "float4", "int2",    "int4",    "dim3",    "ShoalError"};
    return words;
}

const std::set<std::string_view>& cuda_builtins() {
    static const std::set<std::string_view> words = {"threadIdx",
                                                     "blockIdx",
                                                     "blockDim",
                                                     "gridDim",
                                                     "warpSize",
                                                     "__syncthreads",
                                                     "__syncwarp",
                                                     "__shfl_sync",
                                                     "__shfl_down_sync",
                                                     "__shfl_up_sync",
                                                     "__shfl_xor_sync",
                                                     "__ballot_sync",
                                                     "__activemask",
                                                     "__threadfence",
                                                     "atomicAdd",
                                                     "atomicSub",
                                                     "atomicMin",
                                                     "atomicMax",
                                                     "atomicCAS",
                                                     "atomicExch",
                                                     "atomicAnd",
                                                     "atomicOr",
                                                     "atomicXor",
                                                     "__float_as_int",
                                                     "__int_as_float",
                                                     "__double_as_longlong",
                                                     "__longlong_as_double"};
    return words;
}

// Colours of GitHub's light theme, readable on a notebook's white background.
constexpr const char* kCommentStyle = "color:#6a737d;font-style:italic";
constexpr const char* kKeywordStyle = "color:#d73a49;font-weight:bold";
constexpr const char* kTypeStyle = "color:#6f42c1";
constexpr const char* kBuiltinStyle = "color:#e36209";
constexpr const char* kNumberStyle = "color:#005cc5";
constexpr const char* kStringStyle = "color:#032f62";
constexpr const char* kPreStyle =
    "font-family:monospace;font-size:12px;line-height:1.35;background:#f6f8fa;padding:8px;"
    "border-radius:4px;overflow-x:auto";

std::string span(const char* style, std::string_view text) {
    return "<span style=\"" + std::string(style) + "\">" + html_escape(text) + "</span>";
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// ---------------------------------------------------------------- :ir / :cuda

// One launch plan of an explain text: its plan view, then the kernels
// (CUDA source or IR), as CpuCompiledBackend::explain writes them.
struct ExplainPart {
    std::string plan;
    std::string code;
};

// The plan view is "launch plan NAME" and lines indented under it; the code
// runs from the first line that is not, up to the next "launch plan".
std::vector<ExplainPart> split_explain(const std::string& text) {
    std::vector<ExplainPart> parts;
    bool in_plan = false;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        std::string_view line(text.data() + pos, eol - pos);
        if (line.starts_with("launch plan ")) {
            parts.push_back({});
            in_plan = true;
        } else if (in_plan && !line.starts_with("  ")) {
            in_plan = false;
        }
        if (parts.empty()) parts.push_back({});  // text that is not a plan at all
        (in_plan ? parts.back().plan : parts.back().code).append(line).append("\n");
        pos = eol + 1;
    }
    for (ExplainPart& p : parts) {
        for (std::string* s : {&p.plan, &p.code}) {
            while (!s->empty() && (s->back() == '\n' || s->back() == ' ')) s->pop_back();
            s->erase(0, s->find_first_not_of('\n'));  // npos on an all-blank text: erases it all
        }
    }
    return parts;
}

// A Markdown code fence longer than any run of backticks in `body`.
std::string fenced(const std::string& body, const std::string& language) {
    size_t longest = 0, run = 0;
    for (char c : body) {
        run = c == '`' ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    std::string fence(std::max<size_t>(3, longest + 1), '`');
    return fence + language + "\n" + body + "\n" + fence;
}

std::string pre(const std::string& body) {
    return "<pre style=\"" + std::string(kPreStyle) + "\">" + html_escape(body) + "</pre>";
}

}  // namespace

std::string value_html(const Value& value, const Type&, int print_threshold) {
    // Split over ranks: forcing it here (rank 0 alone) would wait for the
    // others in a gather they never join. The text shows its rows.
    if (distributed(value)) return {};
    const Value v = force(value);
    if (!is_array_like(v)) return {};
    const Shape shape = array_like_shape(v);
    const std::string caption = "shape " + shape_to_string(shape) + " \u00b7 " + element_name(v);
    if (shape.size() == 3) {
        return "<div style=\"font-family:monospace;font-size:12px\"><div style=\"" + std::string(kCaptionStyle) +
               "\">" + html_escape(caption) + "</div>" + pre(planes_text(v, shape, print_threshold)) + "</div>";
    }
    std::string rows =
        shape.size() == 1 ? vector_rows(v, shape[0], print_threshold) : matrix_rows(v, shape, print_threshold);
    return "<table style=\"" + std::string(kTableStyle) + "\"><caption style=\"" + kCaptionStyle + "\">" +
           html_escape(caption) + "</caption>" + rows + "</table>";
}

std::string highlight_cuda_html(std::string_view src) {
    std::string out = "<pre style=\"" + std::string(kPreStyle) + "\">";
    size_t i = 0;
    const size_t n = src.size();
    bool line_start = true;  // only blanks since the last newline (for # directives)
    while (i < n) {
        char c = src[i];
        size_t j = i + 1;
        if (c == '/' && i + 1 < n && src[i + 1] == '/') {
            j = std::min(src.find('\n', i), n);
            out += span(kCommentStyle, src.substr(i, j - i));
        } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
            size_t close = src.find("*/", i + 2);
            j = close == std::string_view::npos ? n : close + 2;
            out += span(kCommentStyle, src.substr(i, j - i));
        } else if (c == '#' && line_start) {
            j = std::min(src.find('\n', i), n);
            out += span(kKeywordStyle, src.substr(i, j - i));
        } else if (c == '"' || c == '\'') {
            while (j < n && src[j] != c && src[j] != '\n') j += src[j] == '\\' && j + 1 < n ? 2 : 1;
            j = std::min(j + 1, n);
            out += span(kStringStyle, src.substr(i, j - i));
        } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                   (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
            // 12, 0x1f, 1.5e-3f, 10ull: digits, letters, dots and an exponent's sign.
            const bool hex = c == '0' && j < n && (src[j] == 'x' || src[j] == 'X');
            while (j < n) {
                const char d = src[j];
                const bool exponent_sign = !hex && (d == '-' || d == '+') && (src[j - 1] == 'e' || src[j - 1] == 'E');
                if (!ident_char(d) && d != '.' && !exponent_sign) break;
                ++j;
            }
            out += span(kNumberStyle, src.substr(i, j - i));
        } else if (ident_start(c)) {
            while (j < n && ident_char(src[j])) ++j;
            std::string_view word = src.substr(i, j - i);
            if (cuda_keywords().count(word))
                out += span(kKeywordStyle, word);
            else if (cuda_types().count(word))
                out += span(kTypeStyle, word);
            else if (cuda_builtins().count(word))
                out += span(kBuiltinStyle, word);
            else
                out += html_escape(word);
        } else {
            out += html_escape(src.substr(i, 1));
        }
        for (size_t k = i; k < j; ++k) {
            if (src[k] == '\n')
                line_start = true;
            else if (src[k] != ' ' && src[k] != '\t')
                line_start = false;
        }
        i = j;
    }
    return out + "</pre>";
}

DisplayData explain_display(const std::string& explain_text, bool cuda) {
    DisplayData d;
    d.plain = explain_text;
    std::string markdown, html;
    for (const ExplainPart& part : split_explain(explain_text)) {
        if (!part.plan.empty()) {
            markdown += (markdown.empty() ? "" : "\n\n") + fenced(part.plan, "");
            html += pre(part.plan);
        }
        if (part.code.empty()) continue;
        // Code follows a plan; text before any plan ("no kernels: ...") is a message.
        const bool source = cuda && !part.plan.empty();
        markdown += (markdown.empty() ? "" : "\n\n") + fenced(part.code, source ? "cuda" : "");
        html += source ? highlight_cuda_html(part.code) : pre(part.code);
    }
    d.rich["text/markdown"] = markdown;
    d.rich["text/html"] = "<div>" + html + "</div>";
    return d;
}

namespace {

// "812 ns", "12.3 us", "4.56 ms", "1.23 s".
std::string duration_text(double seconds) {
    char buf[32];
    if (seconds < 1e-6) std::snprintf(buf, sizeof buf, "%.0f ns", seconds * 1e9);
    else if (seconds < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
    else if (seconds < 1) std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
    else std::snprintf(buf, sizeof buf, "%.2f s", seconds);
    return buf;
}

// "512 B", "4.0 KiB", "38.1 MiB", "1.50 GiB".
std::string bytes_text(int64_t bytes) {
    char buf[32];
    const double b = static_cast<double>(bytes);
    if (bytes < 1024) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
    else if (bytes < (int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
    else if (bytes < (int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
    else std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
    return buf;
}

// Rows of cells as an aligned text table (first column left, the rest right)
// and as an HTML table; the last row is set apart when it is a total.
DisplayData table_display(const std::vector<std::vector<std::string>>& rows, bool total_row, const std::string& note) {
    std::vector<size_t> width(rows[0].size(), 0);
    for (const auto& r : rows)
        for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    DisplayData d;
    std::string html = "<table style=\"" + std::string(kTableStyle) + "\">";
    for (size_t i = 0; i < rows.size(); ++i) {
        std::string line;
        const bool header = i == 0, total = total_row && i + 1 == rows.size();
        html += total ? "<tr style=\"border-top:1px solid #999\">" : "<tr>";
        for (size_t c = 0; c < rows[i].size(); ++c) {
            const std::string& t = rows[i][c];
            const std::string pad(width[c] - t.size(), ' ');
            line += (c ? "  " : "") + (c == 0 ? t + pad : pad + t);
            const char* align = c == 0 ? "left" : "right";
            html += std::string(header ? "<th" : "<td") + " style=\"padding:1px 6px;text-align:" + align +
                    (total ? ";font-weight:bold" : "") + "\">" + html_escape(t) + (header ? "</th>" : "</td>");
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        d.plain += (i ? "\n" : "") + line;
        html += "</tr>";
    }
    html += "</table>";
    if (!note.empty()) {
        d.plain += "\n" + note;
        html += "<div style=\"color:#666;font-family:monospace;font-size:12px\">" + html_escape(note) + "</div>";
    }
    d.rich["text/html"] = html;
    return d;
}

}  // namespace

std::string ranks_text(const TimeBreakdown& breakdown) {
    return "on " + std::to_string(breakdown.ranks) + " ranks (the time is rank 0's" +
           (breakdown.collective_bytes || breakdown.collective_seconds > 0
                ? ", of which " + duration_text(breakdown.collective_seconds) + " in collectives moving " +
                      bytes_text(breakdown.collective_bytes)
                : std::string()) +
           "), then " + duration_text(breakdown.agreement_seconds) + " until every rank had finished";
}

namespace {
// "; 1 copy to the device (24 bytes); 2 copies to the host (8 bytes)", or "".
std::string transfers_text(const TransferCounters& moved) {
    auto copies = [](int64_t n, int64_t bytes, const char* where) {
        return "; " + std::to_string(n) + (n == 1 ? " copy " : " copies ") + where + " (" + human_bytes(bytes) + ")";
    };
    std::string text;
    if (moved.to_device_copies) text += copies(moved.to_device_copies, moved.to_device_bytes, "to the device");
    if (moved.to_host_copies) text += copies(moved.to_host_copies, moved.to_host_bytes, "to the host");
    return text;
}
}  // namespace

namespace {

// "the longer of bytes / 3.35 TB/s and float ops / 67 TFLOP/s (FP64: 34) on an NVIDIA H100 SXM"
std::string roofline_text(const GpuModel& gpu) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "the longer of bytes / %.2f TB/s and float ops / %.0f TFLOP/s (FP64: %.0f) on an %s",
                  gpu.bytes_per_second / 1e12, gpu.fp32_per_second / 1e12, gpu.fp64_per_second / 1e12, gpu.full_name);
    return buf;
}

std::string percent_text(double fraction) { return std::to_string(static_cast<int>(fraction * 100 + 0.5)) + "%"; }

std::string ratio_text(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, r < 10 ? "%.2fx" : "%.1fx", r);
    return buf;
}

// Appends a titled section (plain lines and HTML) to d.
void append(DisplayData& d, const DisplayData& part, const std::string& title = "") {
    d.plain += "\n" + (title.empty() ? "" : title + "\n") + part.plain;
    std::string& html = d.rich["text/html"];
    if (!title.empty()) html += "<div style=\"font-family:monospace;font-size:12px;margin-top:6px\"><b>" + html_escape(title) + "</b></div>";
    html += part.rich.at("text/html");
}

}  // namespace

namespace {

// "advice: ..." lines after a display, plain and HTML.
void append_advice(DisplayData& d, const std::vector<std::string>& advice) {
    for (const std::string& a : advice) {
        d.plain += "\nadvice: " + a;
        auto html = d.rich.find("text/html");
        if (html != d.rich.end()) html->second += "<div style=\"color:#a60\">advice: " + html_escape(a) + "</div>";
    }
}

}  // namespace

DisplayData profile_display(const ProfileReport& report, double wall_seconds, const std::string& engine,
                            const TransferCounters& moved, const GpuModel& gpu, const std::vector<std::string>& advice) {
    DisplayData d = profile_tables(report, wall_seconds, engine, moved, gpu);
    append_advice(d, advice);
    return d;
}

DisplayData profile_tables(const ProfileReport& report, double wall_seconds, const std::string& engine,
                           const TransferCounters& moved, const GpuModel& gpu) {
    const std::vector<KernelProfile>& kernels = report.kernels;
    if (kernels.empty() && !report.calls.empty()) {
        DisplayData d;
        d.plain = engine + "; the statement took " + duration_text(wall_seconds) + " in all\n" + calls_text(report.calls);
        return d;
    }
    if (kernels.empty()) {
        DisplayData d;
        d.plain = "no kernels ran (" + duration_text(wall_seconds) +
                  "): this expression is evaluated by the reference evaluator or needs no array work";
        return d;
    }
    KernelProfile total;
    for (const KernelProfile& k : kernels) {
        total += k;
        total.double_precision = total.double_precision || k.double_precision;
    }
    auto label = [](const KernelProfile& k) { return k.plan == k.kernel ? k.kernel : k.plan + " / " + k.kernel; };
    // Every kernel loads or stores something: all zero means the executor
    // (a GPU's) does not model memory traffic, and the columns are left out.
    const bool traffic = total.global_bytes_loaded || total.global_bytes_stored || total.atomics;
    const std::string estimate = std::string(gpu.name) + " estimate";
    std::vector<std::vector<std::string>> rows = {{"kernel", "launches", "time"}};
    if (traffic)
        rows[0].insert(rows[0].end(), {"loaded", "stored", "sectors", "coalesced", "bank conflicts", "atomics", "least",
                                       "x least", estimate});
    else
        rows[0].insert(rows[0].end(), {"least", estimate + " from the least"});
    auto row = [&](const std::string& label, const KernelProfile& k, int64_t least) {
        std::vector<std::string> r{label, std::to_string(k.launches), duration_text(static_cast<double>(k.nanoseconds) * 1e-9)};
        if (!traffic) {
            // A GPU's executor counts no traffic: the estimate beside the
            // measured time assumes the least traffic (a lower bound).
            KernelProfile bound = k;
            bound.global_bytes_loaded = least;
            bound.global_bytes_stored = 0;
            r.insert(r.end(), {bytes_text(least), duration_text(roofline_seconds(bound, gpu))});
            return r;
        }
        const int64_t moved_bytes = k.global_bytes_loaded + k.global_bytes_stored;
        r.insert(r.end(), {bytes_text(k.global_bytes_loaded), bytes_text(k.global_bytes_stored),
                           std::to_string(k.global_sectors),
                           k.global_sectors ? percent_text(static_cast<double>(moved_bytes) / (32.0 * static_cast<double>(k.global_sectors)))
                                            : "-",
                           std::to_string(k.shared_bank_conflicts), std::to_string(k.atomics), bytes_text(least),
                           least ? ratio_text(static_cast<double>(moved_bytes) / static_cast<double>(least)) : "-",
                           duration_text(roofline_seconds(k, gpu))});
        return r;
    };
    for (const KernelProfile& k : kernels) rows.push_back(row(label(k), k, k.minimum_bytes));
    // The statement's least traffic counts each array it reads once, however
    // many kernels read it: what fusion can reach.
    rows.push_back(row("total", total, report.minimum_bytes));
    DisplayData d = table_display(
        rows, true,
        engine + "; the statement took " + duration_text(wall_seconds) + " in all" +
            (traffic ? " (bytes and sectors are what a GPU would move; coalesced: bytes used / bytes of the sectors "
                       "touched; least: each input byte read once, each result byte written once; times are the CPU "
                       "interpreter's, which counts the traffic of the plans a GPU runs, shared tiles included: "
                       "elsewhere the CPU executor runs native code when a C++ compiler is there, see :time)\n" +
                       estimate + ": " +
                       roofline_text(gpu) + ", from the counters above: an estimate, not a measurement (`:set gpu`)"
                     : " (kernel times from CUDA events; the CPU executor also counts memory traffic)\n" + estimate +
                           " from the least: " + roofline_text(gpu) + ", with the least traffic the kernel needs: a lower "
                           "bound to set beside the measured time") +
            transfers_text(moved));

    std::vector<std::vector<std::string>> detail = {
        {"kernel", "computes", "grid x block", "shared static / dynamic", "registers" + (report.arch.empty() ? "" : " (" + report.arch + ")"),
         "spills", "occupancy", "float ops"}};
    for (const KernelProfile& k : kernels) {
        const bool known = k.registers >= 0;
        detail.push_back({label(k), k.source.empty() ? "-" : k.source,
                          std::to_string(k.grid) + " x " + std::to_string(k.block), bytes_text(k.static_shared) + " / 0 B",
                          known ? std::to_string(k.registers) : (k.resources_note.empty() ? "-" : k.resources_note),
                          known ? bytes_text(k.spill_bytes) : "-",
                          known && k.occupancy_percent >= 0 ? std::to_string(k.occupancy_percent) + "%" : "-",
                          traffic ? std::to_string(k.flops) : "-"});
    }
    append(d, table_display(detail, false, ""), "kernels");

    std::vector<std::vector<std::string>> fusion = {{"plan", "computes", "fused into it", "read from memory (why it is not fused)"}};
    auto joined = [](const std::vector<std::string>& xs) {
        std::string t;
        for (const std::string& x : xs) t += (t.empty() ? "" : "; ") + x;
        return t.empty() ? std::string("-") : t;
    };
    for (const PlanDecisions& p : report.plans)
        fusion.push_back({p.plan, p.source.empty() ? "-" : p.source, joined(p.fused), joined(p.materialised)});
    append(d, table_display(fusion, false, ""), "fusion decisions");
    if (!report.calls.empty()) {
        d.plain += "\n" + calls_text(report.calls);
        d.rich["text/html"] += "<pre>" + html_escape(calls_text(report.calls)) + "</pre>";
    }
    return d;
}

// "library calls: gemm 3.1 ms (1 call, OpenBLAS sgemm, 87.0 GFLOP/s) for a @ b -- matmul: the BLAS (...)"
std::string calls_text(const std::vector<LibraryCallProfile>& calls) {
    std::string t = "library calls:";
    for (const LibraryCallProfile& c : calls) {
        char rate[48] = "";
        if (c.nanoseconds > 0)
            std::snprintf(rate, sizeof rate, ", %.1f GFLOP/s", static_cast<double>(c.flops) / static_cast<double>(c.nanoseconds));
        t += "\n  " + c.plan + " / " + c.function + ": " + duration_text(static_cast<double>(c.nanoseconds) * 1e-9) + " (" +
             std::to_string(c.calls) + (c.calls == 1 ? " call, " : " calls, ") + c.implementation + rate + ")" +
             (c.source.empty() ? "" : " for " + c.source) + (c.why.empty() ? "" : "\n    why: " + c.why);
    }
    return t;
}

DisplayData time_display(const std::vector<KernelProfile>& kernels, double wall_seconds, bool compiled,
                         const TimeBreakdown& breakdown, const std::vector<LibraryCallProfile>& calls,
                         const std::vector<std::string>& advice) {
    const CompileCounters& built = breakdown.compiled;
    KernelProfile total;
    for (const KernelProfile& k : kernels) total += k;
    const int64_t launches = total.launches, nanoseconds = total.nanoseconds;
    DisplayData d;
    d.plain = "time: " + duration_text(wall_seconds);
    if (!compiled) d.plain += " (reference evaluator)";
    else if (launches)
        d.plain += " (kernels " + duration_text(static_cast<double>(nanoseconds) * 1e-9) + " in " +
                   std::to_string(launches) + (launches == 1 ? " launch" : " launches") + " of " +
                   std::to_string(kernels.size()) + (kernels.size() == 1 ? " kernel" : " kernels") +
                   (total.native_launches == 0           ? ")"
                    : total.native_launches == launches ? ", native code)"
                                                        : ", " + std::to_string(total.native_launches) + " as native code)");
    if (!calls.empty()) {
        int64_t n = 0, ns = 0;
        std::string names;
        for (const LibraryCallProfile& c : calls) {
            n += c.calls;
            ns += c.nanoseconds;
            if (names.find(c.implementation) == std::string::npos) names += (names.empty() ? "" : ", ") + c.implementation;
        }
        const std::string text = std::string("library ") + (n == 1 ? "call " : "calls ") +
                                 duration_text(static_cast<double>(ns) * 1e-9) + " (" + names + ")";
        d.plain += launches ? "; " + text : " (" + text + ")";
    }
    d.plain += "; front end " + duration_text(breakdown.front_end_seconds);
    // How many plans the statement lowered: a loop that lowers every step is slow on the host.
    // A replayed loop step runs its plans without evaluating the body (docs/compiler.md).
    if (breakdown.plans > 1) {
        const int64_t evaluated = breakdown.plans - breakdown.plans_replayed;
        d.plain += "; " + std::to_string(breakdown.plans) + " plans, ";
        if (breakdown.plans_replayed)
            d.plain += std::to_string(breakdown.plans_replayed) + " replayed, " +
                       (breakdown.plans_found == evaluated ? std::string("the others") : std::to_string(breakdown.plans_found) + " others");
        else
            d.plain += breakdown.plans_found == breakdown.plans ? std::string("all") : std::to_string(breakdown.plans_found);
        d.plain += " found before lowering";
    }
    if (built.compiled)
        d.plain += "; compiled " + std::to_string(built.compiled) + (built.compiled == 1 ? " kernel (" : " kernels (") +
                   duration_text(built.seconds) + ")";
    if (built.cache_hits)
        d.plain += "; " + std::to_string(built.cache_hits) + (built.cache_hits == 1 ? " kernel" : " kernels") +
                   " from the cache" + (built.cache_seconds > 0 ? " (" + duration_text(built.cache_seconds) + ")" : "");
    d.plain += transfers_text(breakdown.moved);
    if (breakdown.ranks > 1)
        d.plain += "; " + ranks_text(breakdown);
    d.rich["text/html"] = "<div style=\"color:#666;font-family:monospace;font-size:12px\">" + html_escape(d.plain) + "</div>";
    append_advice(d, advice);
    return d;
}

}  // namespace shoal
