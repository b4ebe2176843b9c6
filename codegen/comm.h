// The collectives that plans over sharded arrays call (docs/scale-out.md,
// "Layouts"): declared here, where the engine will use them, and
// implemented by the runtime over MPI (host buffers: runtime/mpi/mpi_comm.h)
// and later NCCL (device buffers). codegen/ never calls MPI itself.
//
// Every rank calls the same collectives in the same order within a
// statement. A collective that some rank does not reach within the world's
// timeout throws Error(Runtime) naming that rank. Ctrl-C (the statement's
// cancel flag) throws Error(Interrupted). Either way the statement's
// collectives are abandoned on every rank, and the next statement starts
// afresh (begin_statement).
//
// Folds are deterministic: every rank folds the ranks' contributions in rank
// order with Shoal's scalar semantics (lang/scalar_semantics.h). Every rank
// therefore holds bit-identical results, and a float sum's association
// depends on the number of ranks and the blocks only, never on timing.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/ir.h"

namespace shoal::ir {

enum class CommOp { Sum, Product, Min, Max };

class Comm {
public:
    virtual ~Comm() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;

    // A new statement: collectives abandoned by the last one (a timeout,
    // Ctrl-C) are left behind. Every rank calls it at the same point, and
    // `last_failed` (the last statement failed on some rank) is the same on
    // every rank: a backend whose transfers cannot be abandoned one rank at
    // a time (NCCL's) starts every rank's afresh then.
    virtual void begin_statement(bool last_failed) = 0;

    // `data` (count elements of `type`) becomes, elementwise, the fold of
    // every rank's data in rank order: ((r0 op r1) op r2) ...
    virtual void allreduce(void* data, int64_t count, ScalarType type, CommOp op) = 0;
    // `data` becomes the fold of the data of the ranks before this one, in
    // rank order; on rank 0 it becomes `identity` (one element, repeated).
    virtual void exclusive_scan(void* data, int64_t count, ScalarType type, CommOp op, const void* identity) = 0;
    // Every rank's block, concatenated in rank order (blocks may be empty);
    // `offsets` gets where each rank's block starts (size()+1 entries).
    virtual std::vector<char> allgather(const void* mine, int64_t bytes, std::vector<int64_t>& offsets) = 0;
    // `sends[r]` goes to rank r; returns what every rank sent to this one,
    // by rank (any may be empty).
    virtual std::vector<std::vector<char>> alltoall(const std::vector<std::vector<char>>& sends) = 0;
    // A halo exchange along the leading axis: `to_previous` goes to rank - 1
    // and `to_next` to rank + 1; returns (what rank - 1 sent to its next,
    // what rank + 1 sent to its previous), empty at the ends.
    virtual std::pair<std::vector<char>, std::vector<char>> exchange_with_neighbours(
        const std::vector<char>& to_previous, const std::vector<char>& to_next) = 0;

    // The control plane's settings, alike for every backend: how long a
    // wait lasts before the late ranks are named, the statement's Ctrl-C
    // flag, and (rank 0) whether another rank has left the statement already.
    virtual void set_timeout(double seconds) = 0;
    virtual void set_cancel(const std::atomic<bool>* cancel) = 0;
    virtual void set_abandon_check(std::function<bool()> check) = 0;
    // Frees what connects the ranks (before MPI is finalised); later
    // collectives throw, saying the ranks have stopped.
    virtual void release() = 0;
    // What carries the collectives, for `:ranks` ("MPI on host buffers").
    virtual std::string description() const = 0;
    // Something the user should hear once (a backend that could not be
    // used, and why), or "": the sharding layer makes it a warning.
    virtual std::string take_notice() { return ""; }

    // Bytes this rank sent and received through collectives (`:profile`).
    virtual int64_t bytes_moved() const = 0;
    // Seconds this rank spent inside collectives: the transfers and the wait
    // for the other ranks to arrive (`:time` splits it from the computation).
    virtual double seconds_in_collectives() const { return 0; }
};

// The folds the collectives use, with Shoal's scalar semantics: acc = acc op x
// for `count` elements of `type`.
void fold_into(void* acc, const void* x, int64_t count, ScalarType type, CommOp op);

// Every rank's `mine`, in rank order, on every rank (an allgather of texts).
std::vector<std::string> gather_texts(Comm& comm, const std::string& mine);

// allreduce and exclusive_scan from an allgather of every rank's `count`
// elements (`all`, blocks at `offsets`): `data` becomes the fold, in rank
// order, of the blocks of ranks [0, upto) (upto = size for allreduce, this
// rank for an exclusive scan), or `identity` repeated when upto is 0.
void fold_gathered(void* data, const std::vector<char>& all, const std::vector<int64_t>& offsets, int upto,
                   int64_t count, ScalarType type, CommOp op, const void* identity);

}  // namespace shoal::ir
