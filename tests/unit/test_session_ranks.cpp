// The session's side of a world of ranks (lang/rank_world.h), with an
// in-process world standing for the others: which statements are handed
// over, that every top-level statement agrees once before it commits or
// prints, and that another rank's error fails it here without changing a
// binding. The MPI transport itself is tested by tests/run_ranks.py.
#include <doctest/doctest.h>

#include "lang/lexer.h"
#include "session_capture.h"

namespace shoal {
namespace {

// Rank 0 of a world of two whose other rank fails every statement that
// mentions `fails_there` (as its own error, located in the statement).
struct FakeWorld : RankWorld {
    std::vector<std::string> handed;  // statement texts handed over
    int agreements = 0;
    bool stopped = false;
    double seconds = 60;

    int rank() const override { return 0; }
    int size() const override { return 2; }
    bool running() const override { return !stopped; }
    void begin_statement(const SourcePtr& source, StatementSpan span) override {
        handed.push_back(source->text.substr(span.begin, span.end - span.begin));
    }
    std::optional<Error> agree(const std::optional<Error>& mine, const SourcePtr& statement_source,
                               std::atomic<bool>&) override {
        ++agreements;
        if (mine) return mine;
        if (handed.back().find("fails_there") != std::string::npos)
            return Error(ErrorKind::Io, source_loc(statement_source, 0, 3), "cannot open 'x.npy' on rank 1",
                         {"on rank 1 of 2; every rank stopped the statement"});
        return std::nullopt;
    }
    std::string report() const override { return "2 ranks (a fake world)"; }
    void set_timeout(double s) override { seconds = s; }
    double timeout() const override { return seconds; }
    void stop() override { stopped = true; }
};

TEST_CASE("ranks: every top-level statement is handed over and agreed once; another rank's error fails it here") {
    runtime::install_compiled_backend();
    Session s;
    auto world = std::make_shared<FakeWorld>();
    s.join_world(world);
    testing::SessionCapture out;
    s.execute("let a = 1\nlet fails_there = 2\na + 1\nlet b = fails_there + 1\n:ranks", "<t>", out);
    CHECK(world->handed ==
          std::vector<std::string>{"let a = 1", "let fails_there = 2", "a + 1", "let b = fails_there + 1", ":ranks"});
    CHECK(world->agreements == 5);
    REQUIRE(out.errors.size() == 2);
    CHECK(out.errors[0].find("cannot open 'x.npy' on rank 1") != std::string::npos);
    CHECK(out.errors[0].find("note: on rank 1 of 2") != std::string::npos);
    CHECK(out.values == std::vector<std::string>{"2"});
    CHECK(s.binding_names() == std::vector<std::string>{"a"});  // neither failed let committed
    REQUIRE(out.texts.size() == 1);
    CHECK(out.texts[0].find("2 ranks (a fake world)") != std::string::npos);

    // An expression statement prints only after the agreement: nothing when another rank failed.
    out.clear();
    s.execute("fails_there", "<t>", out);
    CHECK(out.values.empty());
    CHECK(out.errors.size() == 1);

    // `:set timeout` reaches the world; it is a statement like any other.
    world->handed.clear();
    world->agreements = 0;
    s.execute(":set timeout 9", "<t>", out);
    CHECK(world->seconds == 9);
    CHECK(world->handed.size() == 1);
    CHECK(world->agreements == 1);

    // `:set ranks 1` stops the world; the session goes on alone.
    out.clear();
    s.execute(":set ranks 1\nlet c = a + 1\nc", "<t>", out);
    CHECK(world->stopped);
    CHECK(s.world() == nullptr);
    CHECK(out.values == std::vector<std::string>{"2"});
}

TEST_CASE("ranks: a session with bindings cannot start ranks the bindings would be missing on") {
    Session s;
    testing::SessionCapture out;
    s.execute("let a = 1\n:set ranks 3", "<t>", out);
    REQUIRE(out.errors.size() == 1);
    CHECK(out.errors[0].find("cannot start 3 ranks in a session that has bindings (a)") != std::string::npos);
    CHECK(s.world() == nullptr);
}

TEST_CASE("ranks: a new rank adopts rank 0's settings and random stream") {
    runtime::install_compiled_backend();
    Session front;
    testing::SessionCapture out;
    front.execute(":set print 9\n:seed 11\n:set fusion off\nrandom 3", "<t>", out);
    const RankState state = front.rank_state();
    CHECK(state.random_stream == 1);
    Session rank;
    rank.adopt_rank_state(state);
    CHECK(rank.settings().print_threshold == 9);
    CHECK(rank.settings().seed == 11);
    CHECK(!rank.settings().optimisations.fusion);
    CHECK(testing::printed(rank, "random 2") == testing::printed(front, "random 2"));
}

}  // namespace
}  // namespace shoal
