// A session on several ranks (docs/scale-out.md): joining a world, starting
// one from a running session (`:set ranks N`), what a new rank adopts so its
// session matches rank 0's, and the `:ranks` command. The transport (MPI) is
// behind lang/rank_world.h, in runtime/mpi/.
#include "session_internal.h"

namespace shoal {

namespace {
RankWorldFactory& factory_slot() {
    static RankWorldFactory factory;
    return factory;
}
}  // namespace

void set_rank_world_factory(RankWorldFactory factory) { factory_slot() = std::move(factory); }
const RankWorldFactory& rank_world_factory() { return factory_slot(); }

void Session::join_world(std::shared_ptr<RankWorld> world) { impl_->world = std::move(world); }
const std::shared_ptr<RankWorld>& Session::world() const { return impl_->world; }

void Session::start_ranks(int n, const Loc& loc) {
    Impl& I = *impl_;
    const int now = I.ranks() ? I.world->size() : 1;
    if (n == now) return;
    // Back to one rank: the world's sharded arrays are gathered whole first,
    // on every rank alike (bindings in name order), so that the bindings
    // survive. (Any other change of ranks is refused while there are bindings.)
    if (n == 1 && I.ranks()) {
        for (const auto& [name, key] : I.names) {
            BindingPtr& b = I.globals.at(key);
            if (!b->value.is_delayed() || b->value.delayed()->layout_description().empty()) continue;
            auto whole = std::make_shared<Binding>(*b);
            whole->value = Value(b->value.delayed()->force());
            b = whole;
        }
    }
    if (I.world && I.world->rank() != 0) return;  // rank 0 runs the world; the others follow it
    if (n > 1 && !I.names.empty()) {
        std::string names;
        for (const auto& [name, _] : I.names) names += (names.empty() ? "" : ", ") + name;
        user_error(ErrorKind::Usage, loc,
                   "cannot start " + std::to_string(n) + " ranks in a session that has bindings (" + names +
                       "): the new ranks would not have them",
                   {"set the ranks first: `shoal --ranks " + std::to_string(n) + "`, or `:reset` then `:set ranks " +
                    std::to_string(n) + "`"});
    }
    if (n > 1 && !rank_world_factory())
        user_error(ErrorKind::Runtime, loc, "this Shoal was built without MPI, so it runs on one rank only",
                   {"install Open MPI (Debian: libopenmpi-dev openmpi-bin) and rebuild; docs/scale-out.md"});
    if (I.world && I.world->running()) I.world->stop();
    I.world = nullptr;
    if (n == 1) return;
    try {
        I.world = rank_world_factory()(n, rank_state());
    } catch (Error& e) {
        if (!e.loc.valid()) e.loc = loc;
        throw;
    }
}

bool Session::run_handed_statement(const SourcePtr& source, StatementSpan span, SessionOutput& out) {
    Impl& I = *impl_;
    // The cancel flag is the caller's to clear, before it starts watching
    // for rank 0's Ctrl-C: one that came early must not be lost.
    I.interrupt_reported = false;
    ++I.depth;  // a top-level statement, as in execute()
    struct DepthGuard {
        int& d;
        ~DepthGuard() { --d; }
    } guard{I.depth};
    return SessionCommands::run_statement(*this, source, span, out);
}

RankState Session::rank_state() const {
    const SessionSettings& d = SessionSettings{};
    const SessionSettings& s = settings_;
    auto on_off = [](bool on) { return on ? "on" : "off"; };
    std::string script;
    auto line = [&script](const std::string& l) { script += l + "\n"; };
    if (s.print_threshold != d.print_threshold) line(":set print " + std::to_string(s.print_threshold));
    if (s.check != d.check) line(std::string(":set check ") + on_off(s.check));
    if (s.compiled != d.compiled) line(std::string(":set backend ") + (s.compiled ? "compiled" : "reference"));
    if (!s.arch.empty()) line(":set arch " + s.arch);
    if (s.gpu != d.gpu) line(":set gpu " + s.gpu);
    const Optimisations& o = s.optimisations;
    for (auto [name, on, was] : {std::tuple{"fusion", o.fusion, d.optimisations.fusion},
                                 {"sharedmem", o.shared_memory, d.optimisations.shared_memory},
                                 {"hoist", o.hoist, d.optimisations.hoist},
                                 {"blas", o.blas, d.optimisations.blas}})
        if (on != was) line(std::string(":set ") + name + " " + on_off(on));
    if (s.shard != d.shard) line(":set shard " + std::to_string(s.shard));
    if (s.seed != d.seed) line(":seed " + std::to_string(s.seed));
    return {script, impl_->random_stream};
}

void Session::adopt_rank_state(const RankState& state) {
    struct Quiet : SessionOutput {
        std::string errors;
        void value(const Value&, const Type&, const std::string&) override {}
        void text(const std::string&) override {}
        void error(const Error& e) override { errors += format_error(e) + "\n"; }
        void warning(const std::string&) override {}
    } quiet;
    // Run here alone: rank 0 does not hand these statements over.
    std::shared_ptr<RankWorld> world = std::exchange(impl_->world, nullptr);
    const bool ok = execute(state.script, "<rank 0's settings>", quiet);
    impl_->world = std::move(world);
    if (!ok)
        internal_error(__FILE__, __LINE__, "a new rank could not adopt rank 0's settings: " + quiet.errors);
    impl_->random_stream = state.random_stream;
}

bool SessionCommands::ranks() {
    if (!I.ranks()) {
        out.text("1 rank: this process alone (`:set ranks N` or `shoal --ranks N` runs the session on N ranks; "
                 "docs/scale-out.md)");
        return true;
    }
    std::string text = I.world->report() + "\narrays: " +
                       (s.settings_.shard > 0 ? "those of at least " + std::to_string(s.settings_.shard) +
                                                    (s.settings_.shard == 1 ? " element" : " elements") + " made by iota, random, fill, generate or load, and what "
                                                    "the builtins that keep them sharded make of them (docs/scale-out.md), are sharded by "
                                                    "rows; the others are whole on every rank"
                                              : std::string("every array is whole on every rank (`:set shard N` shards "
                                                            "those of at least N elements)"));
    for (const auto& [name, key] : I.names) {
        const Value& v = I.globals.at(key)->value;
        if (v.is_delayed())
            if (std::string layout = v.delayed()->layout_description(); !layout.empty())
                text += "\n  " + name + ": " + layout;
    }
    out.text(text);
    return true;
}

bool SessionCommands::set_ranks(std::string_view key, std::string_view value) {
    uint64_t n = 0;
    if (key == "ranks") {
        constexpr uint64_t kMaxRanks = 1024;
        if (!parse_u64(value, n) || n < 1 || n > kMaxRanks)
            bad_setting(key, value, "a whole number of ranks from 1 to " + std::to_string(kMaxRanks),
                        ":set ranks N  (N processes over MPI; 1: this one alone)");
        s.start_ranks(static_cast<int>(n), part_loc(value));
        if (I.world && I.world->rank() == 0) out.text(I.world->report());
        return true;
    }
    if (key == "shard") {
        if (value == "off") {
            s.settings_.shard = 0;
            return true;
        }
        if (!parse_u64(value, n) || n < 1 || n > (uint64_t{1} << 40))
            bad_setting(key, value, "a number of elements from 1 up, or off",
                        ":set shard N|off  (on several ranks, arrays of at least N elements are split over them)");
        s.settings_.shard = static_cast<int64_t>(n);
        return true;
    }
    // timeout
    constexpr uint64_t kMaxTimeout = 86400;
    if (!parse_u64(value, n) || n < 1 || n > kMaxTimeout)
        bad_setting(key, value, "a whole number of seconds from 1 to " + std::to_string(kMaxTimeout),
                    ":set timeout S  (seconds a rank may be late at an exchange before it is named)");
    if (!I.world) user_error(ErrorKind::Usage, part_loc(key), "the session runs on one rank: there is no exchange to time",
                             {"`:set ranks N` first"});
    I.world->set_timeout(static_cast<double>(n));
    return true;
}

}  // namespace shoal
