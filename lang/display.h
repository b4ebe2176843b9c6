// Rich renderings for front ends that can show more than text (the Jupyter
// kernel, and plots in the terminal): HTML tables of array values, highlighted
// CUDA, SVG and Unicode plots. Everything here is pure: values in, text out.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "session.h"
#include "types.h"
#include "value.h"

namespace shoal {

// Text with the HTML (and XML) special characters replaced by entities.
std::string html_escape(std::string_view text);

// A compact HTML table for an array value of rank 1 or 2 (an array of tuples:
// one column group per component), with a caption giving its shape and
// element type, summarised like format_value beyond `print_threshold`
// elements per axis; rank 3 as preformatted text under the same caption.
// Empty for values that are not arrays (scalars, tuples of scalars, functions).
std::string value_html(const Value& v, const Type& type, int print_threshold);

// CUDA C++ source as HTML with inline-styled syntax highlighting (keywords,
// types, comments, numbers, strings), escaped; self-contained (no CSS classes).
std::string highlight_cuda_html(std::string_view cuda_source);

// The :ir / :cuda output (plan view, then IR or CUDA source) for display:
// plain text as the REPL prints it, text/markdown (the CUDA in a ```cuda
// fence) and text/html (highlighted).
DisplayData explain_display(const std::string& explain_text, bool cuda);

// :profile: one row per kernel (launches, time, global bytes loaded and
// stored, 32-byte sectors, coalescing, bank conflicts, atomics, the least
// traffic it needs and the ratio to it, a roofline estimate on `gpu`) and a
// total; then per kernel the source expression, launch geometry, shared
// memory, registers and spills; then the fusion decisions of each plan.
// Aligned text tables and HTML tables. wall_seconds: the whole statement.
// `engine`: what ran the kernels (Session::engine_description).
DisplayData profile_display(const ProfileReport& report, double wall_seconds, const std::string& engine,
                            const TransferCounters& moved, const GpuModel& gpu, const std::vector<std::string>& advice = {});
// The same without the advice lines.
DisplayData profile_tables(const ProfileReport& report, double wall_seconds, const std::string& engine,
                           const TransferCounters& moved, const GpuModel& gpu);

// :time: "time: 12.3 ms (kernels 10.1 ms in 5 launches, 3 kernels)"; without
// kernels (the reference evaluator, or no array work) the wall time alone.
// What a statement's time went to, beyond the kernels.
struct TimeBreakdown {
    double front_end_seconds = 0;  // parsing and type checking
    CompileCounters compiled;      // kernels compiled or found in the caches
    TransferCounters moved;        // host <-> device copies
    int64_t plans = 0;             // launch plans run
    int64_t plans_found = 0;       // of those, found before lowering (nothing lowered or printed)
    int64_t plans_replayed = 0;    // of those, run by a replayed loop step (the body not evaluated)
    int ranks = 1;                 // the ranks that ran it (docs/scale-out.md)
    double agreement_seconds = 0;  // on several: the wait for their agreement, after the computation
    double collective_seconds = 0; // on several: rank 0's time inside collectives (sharded arrays)
    int64_t collective_bytes = 0;  // and the bytes they moved to and from rank 0
};
// "on 3 ranks (the time is rank 0's, of which 1.2 ms in collectives moving
// 4.0 KiB), then 30 us until every rank had finished" (breakdown.ranks > 1).
std::string ranks_text(const TimeBreakdown& breakdown);
// `advice`: performance_advice's lines, each shown as "advice: ...".
DisplayData time_display(const std::vector<KernelProfile>& kernels, double wall_seconds, bool compiled,
                         const TimeBreakdown& breakdown = {}, const std::vector<LibraryCallProfile>& calls = {},
                         const std::vector<std::string>& advice = {});
// The library calls of a statement, one per line with why the plan made them.
std::string calls_text(const std::vector<LibraryCallProfile>& calls);

}  // namespace shoal
