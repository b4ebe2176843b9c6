// One Shoal session: the bindings, settings and the pipeline from source text
// to printed values. The terminal REPL, the Jupyter kernel and the tests are
// thin front ends over this class.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "diagnostics.h"
#include "profile.h"
#include "eval.h"
#include "rank_world.h"
#include "parser.h"
#include "typecheck.h"
#include "value.h"

namespace shoal {

// Rich output of a command (:cuda, :ir, :plot, :hist, :profile, :time): the
// plain text every front end can show, plus richer renderings keyed by MIME
// type ("text/html", "text/markdown", "image/svg+xml") for front ends that
// display them (the Jupyter kernel's display_data).
struct DisplayData {
    std::string plain;
    std::map<std::string, std::string> rich;
};

// Where a session's results go. Front ends implement it.
class SessionOutput {
public:
    virtual ~SessionOutput() = default;
    // Rich output; a front end without rich display shows the plain text.
    virtual void display(const DisplayData& d) { text(d.plain); }
    // The value of an expression statement; `text` is its one-line rendering.
    virtual void value(const Value& v, const Type& type, const std::string& text) = 0;
    // Output of a command (:help, :type, :env, ...), ending without a newline.
    virtual void text(const std::string& s) = 0;
    // A failed statement (already formatted by format_error when shown as text).
    virtual void error(const Error& e) = 0;
    // A warning, formatted by format_diagnostic.
    virtual void warning(const std::string& formatted) = 0;
};

// The array compiler's optimisations, each switchable per session
// (`:set fusion|sharedmem|hoist on|off`) to see what it does: results are
// the same, the plans differ (docs/optimisations.md).
struct Optimisations {
    bool fusion = true;         // producers fused into their consumers' kernels
    bool shared_memory = true;  // overlapping reads of one array served from shared tiles
    bool hoist = true;          // invariant nested array expressions computed once, before the kernel
    bool blas = true;           // products call the vendor BLAS (cuBLAS, OpenBLAS) instead of the tiled kernel
};

struct SessionSettings {
    int print_threshold = 20;   // :set print N
    uint64_t seed = kDefaultSeed;  // :seed k
    bool check = false;         // :set check on|off (used by the array compiler)
    // :set backend compiled|reference. Compiled is the default wherever the
    // program registered the array compiler (below); else the reference evaluator.
    bool compiled = true;
    // :set arch sm_XY: the architecture :compile targets (empty: the GPU's, else sm_90).
    std::string arch;
    // :set gpu NAME: the GPU :profile estimates kernel times for (lang/profile.h gpu_models).
    std::string gpu = "h100";
    Optimisations optimisations;
    // :set shard N: on several ranks, arrays of at least N elements are
    // sharded over them (docs/scale-out.md); 0: off, every array whole.
    int64_t shard = 0;
    // Width of the output device in columns; the terminal REPL sets it from
    // the terminal (terminal plots are sized to it).
    int columns = 80;
};

// The array compiler lives in libraries that depend on this one, so the
// program registers how to make it (runtime/executors.h's
// install_compiled_backend, which picks the executor); without a factory
// `:set backend compiled`, `:ir` and `:cuda` report that it is unavailable.
// The backend's explain() runs `run` recording the launch plans it builds.
// How `:ir` / `:cuda` show the plans of a statement.
struct ExplainOptions {
    bool cuda = false;      // the CUDA source (else the kernel IR)
    bool full = false;      // `:cuda --full`: each plan's complete CUDA unit, helper functions included
    std::string function;   // the function or statement explained: it names the kernels ("saxpy")
};

// `:emit f g to "name"` (docs/emit.md): what the backend needs to write the
// functions as CUDA kernels with C++ wrappers.
struct EmitFunction {
    std::string name;       // the Shoal binding ("rmse")
    std::string cpp_name;   // the wrapper's name (`:emit rmse as "compute_rmse"`)
    Value value;            // the function
    Type type;              // concrete
    std::vector<std::string> params;  // its parameters' names
    std::string source;     // its definition as written, for the files' comments
    Loc loc;                // where the command names it
};
struct EmitRequest {
    std::string unit;       // "finance": the namespace and the files' stem
    std::string command;    // the command as typed, for the files' first comment
    std::string version;    // Shoal's
    std::vector<EmitFunction> functions;
    EvalContext context;    // the session's globals, seed and array names
};
struct EmittedFile {
    std::string name;  // relative to the target directory: finance.h, finance.cu, shoal_runtime.h
    std::string text;
};

class CompiledBackend : public ArrayBackend {
public:
    // `:emit`: the files for the request's functions, or an Error saying why
    // a function cannot be emitted. Writes nothing.
    virtual std::vector<EmittedFile> emit(const EmitRequest& request) = 0;
    virtual void set_check(bool on) = 0;
    virtual void set_optimisations(const Optimisations& on) = 0;
    // Runs `run`, recording every launch plan forced meanwhile; returns them
    // printed as the plan view plus the kernel IR or the CUDA source, with
    // the user's names (EvalContext::parameter_names) and source expressions.
    virtual std::string explain(const std::function<void()>& run, const ExplainOptions& options) = 0;
    // Runs `run`; reports every kernel launched meanwhile, in order of first
    // launch, and the fusion decisions of its plans. `arch` ("sm_90";
    // "default": the GPU's, else sm_90; "": none) compiles the kernels for
    // their registers and spills.
    virtual ProfileReport profile(const std::function<void()>& run, const std::string& arch) = 0;
    // Why arrays forced from now on are materialised rather than fused
    // ("a top-level let binds it"), for `:profile`; "" for the default.
    virtual void forcing_because(const std::string& why) = 0;
    // What runs the arrays, for banners and `:help`: "compiled kernels on the CPU executor (...)".
    virtual std::string description() const = 0;
    // The executor's short name ("cpu", "cuda").
    virtual std::string executor_name() const = 0;
    // Switches the executor (`:set executor cpu|cuda`; the CPU after a GPU
    // stopped). Arrays move between memories when they are next used. Throws
    // Error(Runtime) saying why the executor is not available.
    virtual void use_executor(const std::string& name) = 0;
    // Why the GPU can no longer be used (a sticky CUDA error), or empty.
    virtual std::string device_lost() const = 0;
    // `:device`: the GPU (name, compute capability, SMs, memory, driver and
    // runtime versions), or why there is none.
    virtual std::string device_report() const = 0;
    // Host <-> device copies the current executor made since it started.
    virtual TransferCounters transfers() const = 0;
    // Kernels it compiled or found in the caches since it started.
    virtual CompileCounters compilation() const = 0;
    // `:compile e`: runs `run`, then compiles the kernels of every plan it
    // ran for `arch` ("sm_90"; empty: the GPU's, else sm_90) and reports them.
    virtual std::string compile_report(const std::function<void()>& run, const std::string& arch) = 0;
    // `:mem`: the memory arrays use where the executor keeps them; `bindings`
    // names them (each binding's array leaves).
    virtual std::string memory_report(const std::vector<std::pair<std::string, Value>>& bindings) const = 0;
    // `:cache` and `:cache clear`.
    virtual std::string cache_report() const = 0;
    virtual std::string clear_cache() = 0;
};
using CompiledBackendFactory = std::shared_ptr<CompiledBackend> (*)();
void set_compiled_backend_factory(CompiledBackendFactory factory);

// What `:emit` does with the files it made: `directory` is that of its
// `to "..."` path (empty: the current one), `loc` that path's position for
// errors; returns the line the session shows. The default writes them
// (runtime/cuda/simulated_cudart.cpp instead checks them against the files
// a program was built from).
using EmitWriter =
    std::function<std::string(const std::string& directory, const std::vector<EmittedFile>& files, const Loc& loc)>;

class Session {
public:
    Session();
    ~Session();

    // Runs every statement of `text` in order; `name` labels diagnostics.
    // A failing statement reports an error and leaves the session exactly as
    // before it; later statements still run. Returns false if any failed.
    // single_statement: all of text is one statement (REPL continuation lines).
    bool execute(std::string_view text, const std::string& name, SessionOutput& out,
                 bool single_statement = false);

    // Runs a script file into the session (:load, `shoal file.shoal`).
    bool execute_file(const std::string& path, SessionOutput& out);

    InputStatus check_input(std::string_view text, bool single_statement = false) const;

    // Completion candidates for the word ending at `cursor` in `line`
    // (bindings, builtins, keywords, or :commands at the start of a line);
    // `start` receives the byte offset where the completed word begins.
    std::vector<std::string> complete(std::string_view line, size_t cursor, size_t& start) const;

    // "name : type" plus its one-line doc, for a binding or builtin; empty if unknown.
    // detail adds the definition where there is one.
    std::string inspect(std::string_view name, bool detail = false) const;

    // Interrupts the running statement. Async-signal-safe (sets an atomic flag).
    void request_cancel() { cancel_.store(true); }
    std::atomic<bool>& cancel_flag() { return cancel_; }

    bool quit_requested() const { return quit_; }
    const SessionSettings& settings() const { return settings_; }
    void set_columns(int columns) { settings_.columns = columns; }

    // Replaces how `:emit` writes its files (null: the default).
    void set_emit_writer(EmitWriter writer);

    // Names bound at top level, sorted.
    std::vector<std::string> binding_names() const;

    // The session's compiled backend (made on first use; null without a
    // factory). It lives as long as the session: delayed arrays refer to it.
    CompiledBackend* compiled_backend();
    // What runs the session's arrays, for banners and `:help`: the compiled
    // backend's description (its executor's), or the reference evaluator.
    std::string engine_description();

    // Statements whose parsing and type checking were reused from an earlier
    // run of the same text (lang/front_end_cache.h).
    uint64_t front_end_reuses() const;

    // ---------------------------------------------------------------- ranks (docs/scale-out.md)
    // Runs this session as one rank of `world`: rank 0 hands its top-level
    // statements to the others, every rank agrees on each statement's outcome.
    void join_world(std::shared_ptr<RankWorld> world);
    const std::shared_ptr<RankWorld>& world() const;
    // Rank 0: starts a world of n ranks through the installed factory
    // (`shoal --ranks N`, `:set ranks N`); n = 1 stops the other ranks.
    // Throws Error(Runtime|Usage) when it cannot: no MPI, bindings that the
    // new ranks would not have.
    void start_ranks(int n, const Loc& loc = {});
    // A rank other than 0: runs one statement rank 0 handed over, as
    // execute() runs it there (its output is this rank's: usually discarded).
    // The caller clears the cancel flag first (rank 0's Ctrl-C may come early).
    bool run_handed_statement(const SourcePtr& source, StatementSpan span, SessionOutput& out);
    // What a new rank adopts so that its session matches this one, and the adoption.
    RankState rank_state() const;
    void adopt_rank_state(const RankState& state);

private:
    // The context a statement is evaluated in (the current backend included).
    EvalContext eval_context();

    // :load: like execute_file, but a file that cannot be read is an error at `loc`.
    bool load_file(const std::string& path, const Loc& loc, SessionOutput& out);

    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::atomic<bool> cancel_{false};
    bool quit_ = false;
    SessionSettings settings_;
    friend struct SessionCommands;
};

}  // namespace shoal
