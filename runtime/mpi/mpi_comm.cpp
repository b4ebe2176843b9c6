// The collectives of codegen/comm.h over MPI (mpi_comm.h).
//
// Every collective is point-to-point messages tagged with the statement.
// MPI cannot cancel a collective, so a statement that abandons one (a
// timeout, Ctrl-C) would leave an MPI_Iallgather pending forever and every
// later collective on that communicator mismatched. Tagged messages of an
// abandoned statement are simply never received.
//
// Folds go through an allgather and are done by every rank in rank order
// (ir::fold_into), never by MPI_Allreduce, whose order MPI leaves open.
// This suits the few values per rank that folds and scans exchange; bulk
// data (sort, gather) goes through alltoall, one message per pair of ranks.
#include "runtime/mpi/mpi_comm.h"

#ifdef SHOAL_HAVE_MPI
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "lang/diagnostics.h"
#include "runtime/mpi/mpi_wait.h"

namespace shoal::runtime {

namespace {
constexpr int kTagRoll = 11;  // roll call after a timeout: where a rank waits
}  // namespace

MpiComm::MpiComm(MPI_Comm comm, double timeout_seconds, const std::atomic<bool>* cancel)
    : timeout_(timeout_seconds), cancel_(cancel) {
    MPI_Comm_dup(comm, &base_);
    MPI_Comm_dup(comm, &roll_);
    MPI_Comm_set_errhandler(base_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(base_, &rank_);
    MPI_Comm_size(base_, &size_);
    if (const char* limit = std::getenv("SHOAL_MPI_MESSAGE_LIMIT")) {
        message_limit_ = std::clamp<int64_t>(std::atoll(limit), 16, INT_MAX);
        unit_bytes_ = static_cast<int>(std::min<int64_t>(unit_bytes_, message_limit_ / 4));
    }
    MPI_Type_contiguous(unit_bytes_, MPI_BYTE, &unit_);
    MPI_Type_commit(&unit_);
}

MpiComm::~MpiComm() { release(); }

void MpiComm::release() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized || base_ == MPI_COMM_NULL) return;  // MPI took its communicators with it
    MPI_Type_free(&unit_);
    MPI_Comm_free(&roll_);
    MPI_Comm_free(&base_);
}

void MpiComm::begin_statement(bool /*last_failed*/) {  // abandoned messages are never received
    abandoned_ = false;
    ++at_.statement;
    at_.collective = 0;
}

void MpiComm::arrive(const char* what) {
    if (base_ == MPI_COMM_NULL)
        user_error(ErrorKind::Runtime, {}, "the ranks these arrays were sharded over have stopped",
                   {"`:set ranks N` starts new ranks; sharded arrays of the old ones are gone"});
    if (abandoned_)
        user_error(ErrorKind::Runtime, {},
                   "this statement's collectives were abandoned (a timeout or Ctrl-C): the next statement starts afresh");
    ++at_.collective;
    what_ = what;
}

void MpiComm::check_waiting(Clock::time_point deadline) {
    if ((cancel_ && cancel_->load()) || (abandon_check_ && abandon_check_())) {
        abandoned_ = true;
        throw Error(ErrorKind::Interrupted, {}, "interrupted");
    }
    if (Clock::now() <= deadline) return;
    abandoned_ = true;
    const std::string late = roll_call();
    user_error(ErrorKind::Runtime, {},
               (late.empty() ? std::string("the ranks' ") + what_ + " did not complete"
                             : late + " did not arrive at the " + what_) +
                   " within the timeout of " + std::to_string(static_cast<int64_t>(timeout_)) + " s",
               {"`:set timeout S` waits longer; `:ranks` shows where each rank runs"});
}

void MpiComm::send_block(const char* data, size_t bytes, int r, std::vector<MPI_Request>& sent) {
    bytes_moved_ += static_cast<int64_t>(bytes);
    sent.emplace_back();
    if (static_cast<int64_t>(bytes) <= message_limit_) {
        MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, r, tag(), base_, &sent.back());
        return;
    }
    // Larger than an int count of bytes: whole units, then the rest (an
    // empty rest too, so the receiver knows the block is whole).
    const size_t units = bytes / static_cast<size_t>(unit_bytes_), whole = units * static_cast<size_t>(unit_bytes_);
    MPI_Isend(data, static_cast<int>(units), unit_, r, tag(Part::Units), base_, &sent.back());
    sent.emplace_back();
    MPI_Isend(data + whole, static_cast<int>(bytes - whole), MPI_BYTE, r, tag(Part::Rest), base_, &sent.back());
}

std::vector<std::vector<char>> MpiComm::exchange(const std::vector<const std::vector<char>*>& sends,
                                                 const std::vector<bool>& from) {
    const Clock::time_point entered = Clock::now();
    struct Timed {
        double& seconds;
        Clock::time_point entered;
        ~Timed() { seconds += std::chrono::duration<double>(Clock::now() - entered).count(); }
    } timed{seconds_, entered};
    const Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_));
    std::vector<MPI_Request> sent;
    for (int r = 0; r < size_; ++r) {
        const std::vector<char>* block = sends[static_cast<size_t>(r)];
        if (block && r != rank_) send_block(block->data(), block->size(), r, sent);
    }
    std::vector<std::vector<char>> got(static_cast<size_t>(size_));
    // A large block's two parts may arrive in either order: its units go
    // straight into got[r] (with room for the rest), a rest that came first waits here.
    struct Parts {
        bool units = false, rest = false;
        size_t whole = 0;
        std::vector<char> early_rest;
    };
    std::vector<Parts> parts(static_cast<size_t>(size_));
    std::vector<bool> waiting = from;
    waiting[static_cast<size_t>(rank_)] = false;
    int missing = static_cast<int>(std::count(waiting.begin(), waiting.end(), true));
    auto probe = [&](int r, Part part, MPI_Datatype type, int& count) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(r, tag(part), base_, &flag, &st);
        if (flag) MPI_Get_count(&st, type, &count);
        return flag != 0;
    };
    for (int spins = 0; missing > 0; ++spins) {
        bool any = false;
        for (int r = 0; r < size_; ++r) {
            if (!waiting[static_cast<size_t>(r)]) continue;
            std::vector<char>& block = got[static_cast<size_t>(r)];
            Parts& p = parts[static_cast<size_t>(r)];
            int count = 0;
            bool done = false;
            if (probe(r, Part::Whole, MPI_BYTE, count)) {
                block.resize(static_cast<size_t>(count));
                MPI_Recv(block.data(), count, MPI_BYTE, r, tag(), base_, MPI_STATUS_IGNORE);
                done = true;
            } else {
                if (!p.units && probe(r, Part::Units, unit_, count)) {
                    p.whole = static_cast<size_t>(count) * static_cast<size_t>(unit_bytes_);
                    block.resize(p.whole + p.early_rest.size());
                    MPI_Recv(block.data(), count, unit_, r, tag(Part::Units), base_, MPI_STATUS_IGNORE);
                    if (p.rest) std::copy(p.early_rest.begin(), p.early_rest.end(), block.begin() + static_cast<ptrdiff_t>(p.whole));
                    p.units = any = true;
                }
                if (!p.rest && probe(r, Part::Rest, MPI_BYTE, count)) {
                    std::vector<char> rest(static_cast<size_t>(count));
                    MPI_Recv(rest.data(), count, MPI_BYTE, r, tag(Part::Rest), base_, MPI_STATUS_IGNORE);
                    if (p.units) block.insert(block.end(), rest.begin(), rest.end());
                    else p.early_rest = std::move(rest);
                    p.rest = any = true;
                }
                done = p.units && p.rest;
            }
            if (!done) continue;
            bytes_moved_ += static_cast<int64_t>(block.size());
            waiting[static_cast<size_t>(r)] = false;
            --missing;
            any = true;
        }
        if (any) {
            spins = 0;
            continue;
        }
        check_waiting(deadline);
        mpi::pause_after(spins);
    }
    // The sends complete once their receivers took them (large ones wait for that).
    for (int spins = 0; !sent.empty(); ++spins) {
        int done = 0;
        MPI_Testall(static_cast<int>(sent.size()), sent.data(), &done, MPI_STATUSES_IGNORE);
        if (done) break;
        check_waiting(deadline);
        mpi::pause_after(spins);
    }
    return got;
}

// Every rank that times out tells every other where it waits; a rank that
// has not said the same within a grace period is not there.
std::string MpiComm::roll_call() { return late_ranks(at_.statement, at_.collective); }

std::string MpiComm::late_ranks(uint64_t statement, uint64_t collective) {
    const Mark at{statement, collective};
    sent_mark_ = at;
    for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        MPI_Request request;
        MPI_Isend(&sent_mark_, 2, MPI_UINT64_T, r, kTagRoll, roll_, &request);
        MPI_Request_free(&request);
    }
    std::vector<bool> here(static_cast<size_t>(size_), false);
    here[static_cast<size_t>(rank_)] = true;
    int missing = size_ - 1;
    const auto deadline = Clock::now() + std::chrono::duration<double>(std::min(timeout_, 5.0));
    for (int spins = 0; missing > 0 && Clock::now() < deadline; ++spins) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, kTagRoll, roll_, &flag, &st);
        if (!flag) {
            mpi::pause_after(spins);
            continue;
        }
        Mark mark;
        MPI_Recv(&mark, 2, MPI_UINT64_T, st.MPI_SOURCE, kTagRoll, roll_, MPI_STATUS_IGNORE);
        if (mark.statement == at.statement && mark.collective == at.collective &&
            !here[static_cast<size_t>(st.MPI_SOURCE)]) {
            here[static_cast<size_t>(st.MPI_SOURCE)] = true;
            --missing;
        }
    }
    std::vector<int> late;
    for (int r = 0; r < size_; ++r)
        if (!here[static_cast<size_t>(r)]) late.push_back(r);
    return late.empty() ? "" : mpi::rank_list(late);
}

std::vector<char> MpiComm::allgather(const void* mine, int64_t bytes, std::vector<int64_t>& offsets) {
    arrive("allgather");
    return gather_blocks(mine, bytes, offsets);
}

std::vector<char> MpiComm::gather_blocks(const void* mine, int64_t bytes, std::vector<int64_t>& offsets) {
    const std::vector<char> block(static_cast<const char*>(mine), static_cast<const char*>(mine) + bytes);
    std::vector<std::vector<char>> got =
        exchange(std::vector<const std::vector<char>*>(static_cast<size_t>(size_), &block),
                 std::vector<bool>(static_cast<size_t>(size_), true));
    got[static_cast<size_t>(rank_)] = block;
    offsets.assign(static_cast<size_t>(size_) + 1, 0);
    std::vector<char> all;
    for (int r = 0; r < size_; ++r) {
        all.insert(all.end(), got[static_cast<size_t>(r)].begin(), got[static_cast<size_t>(r)].end());
        offsets[static_cast<size_t>(r) + 1] = static_cast<int64_t>(all.size());
    }
    return all;
}

void MpiComm::allreduce(void* data, int64_t count, ir::ScalarType type, ir::CommOp op) {
    std::vector<int64_t> offsets;
    arrive("allreduce");
    const std::vector<char> all = gather_blocks(data, count * static_cast<int64_t>(ir::scalar_size(type)), offsets);
    ir::fold_gathered(data, all, offsets, size_, count, type, op, nullptr);
}

void MpiComm::exclusive_scan(void* data, int64_t count, ir::ScalarType type, ir::CommOp op, const void* identity) {
    std::vector<int64_t> offsets;
    arrive("exclusive scan");
    const std::vector<char> all = gather_blocks(data, count * static_cast<int64_t>(ir::scalar_size(type)), offsets);
    ir::fold_gathered(data, all, offsets, rank_, count, type, op, identity);
}

std::vector<std::vector<char>> MpiComm::alltoall(const std::vector<std::vector<char>>& sends) {
    if (static_cast<int>(sends.size()) != size_)
        internal_error(__FILE__, __LINE__, "alltoall: one block per rank expected");
    arrive("all-to-all exchange");
    std::vector<const std::vector<char>*> blocks;
    for (const std::vector<char>& b : sends) blocks.push_back(&b);
    std::vector<std::vector<char>> got = exchange(blocks, std::vector<bool>(static_cast<size_t>(size_), true));
    got[static_cast<size_t>(rank_)] = sends[static_cast<size_t>(rank_)];
    return got;
}

std::pair<std::vector<char>, std::vector<char>> MpiComm::exchange_with_neighbours(const std::vector<char>& to_previous,
                                                                                  const std::vector<char>& to_next) {
    arrive("halo exchange");
    const size_t n = static_cast<size_t>(size_);
    std::vector<const std::vector<char>*> blocks(n, nullptr);
    std::vector<bool> from(n, false);
    if (rank_ > 0) {
        blocks[static_cast<size_t>(rank_ - 1)] = &to_previous;
        from[static_cast<size_t>(rank_ - 1)] = true;
    }
    if (rank_ + 1 < size_) {
        blocks[static_cast<size_t>(rank_ + 1)] = &to_next;
        from[static_cast<size_t>(rank_ + 1)] = true;
    }
    std::vector<std::vector<char>> got = exchange(blocks, from);
    return {rank_ > 0 ? std::move(got[static_cast<size_t>(rank_ - 1)]) : std::vector<char>{},
            rank_ + 1 < size_ ? std::move(got[static_cast<size_t>(rank_ + 1)]) : std::vector<char>{}};
}

}  // namespace shoal::runtime
#endif
