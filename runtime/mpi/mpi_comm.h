// The collectives of codegen/comm.h over MPI, on host buffers (the CPU
// executor's arrays). Debian's Open MPI is not CUDA-aware: device buffers
// go to the NCCL backend, never here.
#pragma once
#ifdef SHOAL_HAVE_MPI
#include <atomic>
#include <chrono>
#include <climits>
#include <functional>
#include <string>

#include <mpi.h>

#include "codegen/comm.h"

namespace shoal::runtime {

class MpiComm final : public ir::Comm {
    using Clock = std::chrono::steady_clock;

public:
    // Over the ranks of `comm` (duplicated: its own traffic never meets
    // anyone else's). `timeout_seconds`: how long a collective waits for a
    // rank; `cancel`: the statement's Ctrl-C flag (may be null).
    MpiComm(MPI_Comm comm, double timeout_seconds, const std::atomic<bool>* cancel);
    ~MpiComm() override;
    MpiComm(const MpiComm&) = delete;
    MpiComm& operator=(const MpiComm&) = delete;

    // Frees the communicators (before the world's are freed and MPI
    // finalised: they connect a spawned job to its parent); later
    // collectives throw. Also done by the destructor.
    void release() override;

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    void begin_statement(bool last_failed) override;
    void allreduce(void* data, int64_t count, ir::ScalarType type, ir::CommOp op) override;
    void exclusive_scan(void* data, int64_t count, ir::ScalarType type, ir::CommOp op, const void* identity) override;
    std::vector<char> allgather(const void* mine, int64_t bytes, std::vector<int64_t>& offsets) override;
    std::vector<std::vector<char>> alltoall(const std::vector<std::vector<char>>& sends) override;
    std::pair<std::vector<char>, std::vector<char>> exchange_with_neighbours(const std::vector<char>& to_previous,
                                                                             const std::vector<char>& to_next) override;
    int64_t bytes_moved() const override { return bytes_moved_; }
    double seconds_in_collectives() const override { return seconds_; }
    void set_timeout(double seconds) override { timeout_ = seconds; }
    void set_cancel(const std::atomic<bool>* cancel) override { cancel_ = cancel; }
    // Rank 0 of a session: whether another rank left the statement (it
    // reported its end) while this one waits in a collective it will never join.
    void set_abandon_check(std::function<bool()> check) override { abandon_check_ = std::move(check); }
    std::string description() const override { return "MPI on host buffers"; }
    // After a timeout at a wait another backend numbers (statement, collective
    // within it: the NCCL backend's), every rank that timed out there calls
    // this: the ranks not waiting at that point ("rank 2"), or "".
    std::string late_ranks(uint64_t statement, uint64_t collective);

private:
    struct Mark {  // where a rank waits: a roll call compares them
        uint64_t statement = 0, collective = 0;
    };
    // The next collective of the statement, named for errors.
    void arrive(const char* what);
    // Every rank's block, in rank order (allgather's body).
    std::vector<char> gather_blocks(const void* mine, int64_t bytes, std::vector<int64_t>& offsets);
    // The body of every collective: sends[r] (if given) goes to rank r, and
    // one message comes from every rank in `from`; returns them by rank.
    // Point to point, tagged with the statement: a message of an abandoned
    // statement never meets a later one's (MPI cannot cancel a collective,
    // so an abandoned MPI_Iallgather would poison the communicator).
    std::vector<std::vector<char>> exchange(const std::vector<const std::vector<char>*>& sends,
                                            const std::vector<bool>& from);
    // Throws when Ctrl-C was pressed or the timeout passed (naming the late ranks).
    void check_waiting(Clock::time_point deadline);
    // After a timeout: the ranks that are not waiting at this collective.
    std::string roll_call();
    // The statement's tags (MPI promises tags up to 32767): a message whole,
    // or the two parts of one larger than one MPI message carries.
    enum class Part { Whole, Units, Rest };
    int tag(Part part = Part::Whole) const {
        return 100 + 10000 * static_cast<int>(part) + static_cast<int>(at_.statement % 10000);
    }
    // Sends `bytes` to rank r: one message, or (more than message_limit_
    // bytes) its whole units and the rest, as two.
    void send_block(const char* data, size_t bytes, int r, std::vector<MPI_Request>& sent);

    MPI_Comm base_ = MPI_COMM_NULL, roll_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    double timeout_;
    const std::atomic<bool>* cancel_;
    bool abandoned_ = false;
    Mark at_, sent_mark_;
    const char* what_ = "";
    int64_t bytes_moved_ = 0;
    double seconds_ = 0;  // inside exchange(), every collective's one way in
    std::function<bool()> abandon_check_;
    // The most bytes one message carries (MPI counts are ints; a test may
    // set less: SHOAL_MPI_MESSAGE_LIMIT), and the unit larger blocks go in.
    int64_t message_limit_ = INT_MAX;
    int unit_bytes_ = 1 << 20;
    MPI_Datatype unit_ = MPI_DATATYPE_NULL;
};

}  // namespace shoal::runtime
#endif
