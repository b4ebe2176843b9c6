// The session's ranks over MPI (docs/scale-out.md): the control plane that
// starts them, hands rank 0's statements to the others, agrees on each
// statement's outcome, carries Ctrl-C and names a rank that is late.
//
// Two ways to start, one protocol:
//  - interactive: `shoal --ranks N` or `:set ranks N` spawns N-1 workers
//    (this program with --rank-worker) with MPI_Comm_spawn and merges them
//    into one communicator with this process as rank 0;
//  - batch: `mpirun -np N shoal script.shoal` starts N processes; rank 0 runs
//    the front end, the others serve it.
// Built only when Shoal was configured with MPI (SHOAL_HAVE_MPI); without it
// the functions say so (mpi_unavailable_reason) and the session stays one rank.
#pragma once
#include <memory>
#include <string>

#include "lang/rank_world.h"
#include "lang/session.h"

namespace shoal::runtime {

// Empty when MPI is built in; else why the session runs on one rank only.
std::string mpi_unavailable_reason();

// Whether mpirun (Open MPI, MPICH) started this process as one of several.
bool launched_by_mpirun();

// The factory behind `:set ranks N` and `--ranks N`: spawns workers running
// `worker_program --rank-worker`. Does nothing without MPI.
void install_rank_world_factory(const std::string& worker_program);

// Under mpirun: joins MPI_COMM_WORLD. Rank 0 gets the world to join its
// session to; the others serve it (serve_rank).
std::shared_ptr<RankWorld> join_launched_world();

// A worker that `--ranks`/`:set ranks` spawned (--rank-worker): joins its
// parent's world, serves it until rank 0 stops it, and returns the exit status.
int run_spawned_worker();

// A rank other than 0: adopts rank 0's session state, then runs the
// statements rank 0 hands over until it stops the world. Returns the exit status.
int serve_rank(Session& session, RankWorld& world);

// At exit, on rank 0: stops the other ranks and finalises MPI (if it was started).
void leave_world(Session& session);

}  // namespace shoal::runtime
