// The ranks a session runs on (docs/scale-out.md). Every rank runs the same
// session, so bindings, types and plans agree everywhere; rank 0 owns the
// front end (the terminal, the notebook's sockets) and hands each top-level
// statement to the others. Declared here so the session can drive it; the
// MPI implementation lives in runtime/mpi/ (lang must not call MPI).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics.h"
#include "eval.h"
#include "parser.h"
#include "source.h"

namespace shoal {

class RankWorld {
public:
    virtual ~RankWorld() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // False once the world was stopped (`:set ranks`, a rank lost): the
    // session then runs on this process alone.
    virtual bool running() const = 0;

    // Rank 0, before a top-level statement runs: every other rank runs the
    // same statement of the same source next.
    virtual void begin_statement(const SourcePtr& source, StatementSpan span) = 0;

    // The end of every top-level statement on every rank, before it commits
    // or prints: each rank's outcome (`mine`: its error, or none) goes to rank
    // 0, which answers with the outcome of the statement everywhere: none
    // when every rank succeeded, else the error of the lowest failing rank
    // (noted with that rank). The wait watches `cancel` (Ctrl-C on rank 0
    // stops the statement on every rank) and the world's timeout (a rank
    // that does not arrive is named). `statement_source` is the statement's
    // own source, which an error located in it refers to on every rank.
    virtual std::optional<Error> agree(const std::optional<Error>& mine, const SourcePtr& statement_source,
                                       std::atomic<bool>& cancel) = 0;

    // `:ranks`: the world and where each rank runs.
    virtual std::string report() const = 0;
    // Seconds a rank may be late at an exchange before it is named (`:set timeout`).
    virtual void set_timeout(double seconds) = 0;
    virtual double timeout() const = 0;
    // Rank 0: stops the other ranks (they leave their loops and exit).
    virtual void stop() = 0;

    // The session's array backend on these ranks: `inner` with the arrays
    // of at least `shard_threshold` elements sharded over them
    // (codegen/sharding.h). `cancel`: the session's Ctrl-C flag, which the
    // collectives watch.
    virtual ArrayBackend* sharding(ArrayBackend* inner, int64_t shard_threshold, const std::atomic<bool>* cancel) {
        (void)shard_threshold, (void)cancel;
        return inner;
    }
    // This rank's collectives of sharded arrays so far: seconds inside them
    // and bytes moved (`:time`'s communication share).
    struct CommunicationTotals {
        double seconds = 0;
        int64_t bytes = 0;
    };
    virtual CommunicationTotals communication() const { return {}; }
    // Every rank's `mine`, in rank order, on every rank (`:mem` per rank).
    // Every rank calls it at the same point of a statement.
    virtual std::vector<std::string> gather_texts(const std::string& mine) { return {mine}; }
};

// What a new rank adopts first so that its session matches rank 0's: the
// settings as `:set`/`:seed` commands and the random generator's position.
struct RankState {
    std::string script;
    uint64_t random_stream = 0;
};

// What `:set ranks N` and `shoal --ranks N` call to start a world of n ranks
// with this process as rank 0 (runtime/mpi installs it when Shoal was built
// with MPI). Throws Error(Runtime) with the reason when it cannot (no MPI,
// the spawn failed).
using RankWorldFactory = std::function<std::shared_ptr<RankWorld>(int ranks, const RankState& state)>;
void set_rank_world_factory(RankWorldFactory factory);
const RankWorldFactory& rank_world_factory();

}  // namespace shoal
