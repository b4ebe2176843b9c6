// The control plane of a session on several ranks, over MPI (mpi_world.h,
// docs/scale-out.md).
//
// Protocol, on one communicator in which rank 0 is the front end:
//  - rank 0 broadcasts a request header per top-level statement (the source
//    text follows when it is new: a script is sent once, its statements by span);
//  - every other rank runs the statement and sends its outcome to rank 0
//    (point to point, so rank 0 knows who has not arrived);
//  - rank 0 broadcasts the verdict: success, or the error every rank ends
//    the statement with; nothing commits or prints before it.
// Waits poll (MPI_Test, then short sleeps) instead of blocking in MPI: a
// blocking collective spins a core, and on a machine with fewer cores than
// ranks that cost 12-20 ms per statement against 0.06 ms. Ctrl-C travels on a
// second communicator that a watcher thread of each rank polls while its
// statement runs.
#include "runtime/mpi/mpi_world.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#ifdef SHOAL_HAVE_MPI
#include "codegen/sharding.h"
#include "lang/session.h"
#include "runtime/mpi/gpu_collectives.h"
#include "runtime/mpi/mpi_comm.h"
#include "runtime/mpi/mpi_wait.h"
#endif

namespace shoal::runtime {

bool launched_by_mpirun() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
        if (const char* v = std::getenv(var); v && std::atoi(v) > 1) return true;
    return false;
}

#ifndef SHOAL_HAVE_MPI

std::string mpi_unavailable_reason() {
    return "this Shoal was built without MPI, so it runs on one rank only (install Open MPI, Debian: libopenmpi-dev "
           "openmpi-bin, and rebuild)";
}
void install_rank_world_factory(const std::string&) {}
std::shared_ptr<RankWorld> join_launched_world() { user_error(ErrorKind::Runtime, {}, mpi_unavailable_reason()); }
int run_spawned_worker() {
    std::fprintf(stderr, "shoal: %s\n", mpi_unavailable_reason().c_str());
    return 2;
}
int serve_rank(Session&, RankWorld&) { return 2; }
void leave_world(Session&) {}

#else

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTagStatus = 1;  // a rank's outcome of a statement, to rank 0: success
constexpr int kTagFailed = 4;  // ... a failure (rank 0 stops waiting in a collective for it)
constexpr int kTagCancel = 2;  // Ctrl-C: stop the statement with this serial (on the cancel communicator)
constexpr int kTagStop = 3;    // the world is given up: leave now (on the cancel communicator)

enum RequestKind : int64_t { kNewSource = 1, kSameSource = 2, kStop = 3, kVerdict = 4 };
struct Header {
    int64_t kind = 0;
    uint64_t serial = 0;
    int64_t text_bytes = 0, name_bytes = 0, begin = 0, end = 0;
};

bool g_mpi_started = false;
bool g_world_broken = false;  // a rank was lost: MPI_Finalize would wait for it

std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    return std::string(text, static_cast<size_t>(length));
}

// A session started as one process (not by mpirun) is an MPI singleton; to
// spawn workers on this machine Open MPI needs a host file with room for
// them and leave to oversubscribe the cores. A user's own settings win.
void prepare_singleton_environment() {
    if (!std::getenv("OMPI_MCA_orte_default_hostfile")) {
        static std::string path;
        char dir[] = "/tmp/shoal-ranks-XXXXXX";
        if (mkdtemp(dir)) {
            path = std::string(dir) + "/hostfile";
            if (std::FILE* f = std::fopen(path.c_str(), "w")) {
                std::fputs("localhost slots=1024\n", f);
                std::fclose(f);
                setenv("OMPI_MCA_orte_default_hostfile", path.c_str(), 0);
            }
        }
    }
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
    if (geteuid() == 0) {  // containers run as root; Open MPI refuses root unless told
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
}

void start_mpi(bool singleton) {
    if (g_mpi_started) return;
    if (singleton) prepare_singleton_environment();
    // A peer that ended (a crashed rank, or one that left first at exit)
    // makes a write to its socket raise SIGPIPE: an error to handle, not
    // the end of the session.
    std::signal(SIGPIPE, SIG_IGN);
    // A singleton's MPI_Init forks Open MPI's daemon, which forwards its
    // standard input to the first worker it spawns: the statements piped
    // into rank 0 would vanish into a worker. The daemon gets /dev/null.
    // (The spawn info key "ompi_stdin_target" crashes Open MPI 4.1.4's daemon.)
    const int saved_stdin = singleton ? dup(STDIN_FILENO) : -1;
    if (saved_stdin >= 0) {
        const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            close(null);
        }
    }
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (saved_stdin >= 0) {
        dup2(saved_stdin, STDIN_FILENO);
        close(saved_stdin);
    }
    if (rc != MPI_SUCCESS) user_error(ErrorKind::Runtime, {}, "MPI could not start (MPI_Init_thread failed)");
    g_mpi_started = true;
    // Errors come back as codes, reported as Shoal errors, instead of aborting every rank.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
}

// ---------------------------------------------------------------- encoding
class Writer {
public:
    void u64(uint64_t v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
    void str(const std::string& s) {
        u64(s.size());
        bytes_ += s;
    }
    std::string& bytes() { return bytes_; }

private:
    std::string bytes_;
};

class Reader {
public:
    explicit Reader(const std::string& bytes) : bytes_(bytes) {}
    uint64_t u64() {
        need(sizeof(uint64_t));
        uint64_t v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof v);
        pos_ += sizeof v;
        return v;
    }
    std::string str() {
        const uint64_t n = u64();
        need(n);
        std::string s = bytes_.substr(pos_, n);
        pos_ += n;
        return s;
    }

private:
    void need(uint64_t n) const {
        if (n > bytes_.size() - pos_) internal_error(__FILE__, __LINE__, "a rank sent a truncated message");
    }
    const std::string& bytes_;
    size_t pos_ = 0;
};

// An error as it travels between ranks. Its location is usually in the
// statement's own source, which every rank has: only other sources (a
// :load'ed file) travel with their text.
void write_error(Writer& w, const Error& e, const SourcePtr& statement_source) {
    w.u64(static_cast<uint64_t>(e.kind));
    w.u64(e.loc.valid());
    if (e.loc.valid()) {
        const bool same = e.loc.source == statement_source;
        w.u64(same);
        if (!same) {
            w.str(e.loc.source->name);
            w.str(e.loc.source->text);
        }
        w.u64(static_cast<uint64_t>(e.loc.line));
        w.u64(static_cast<uint64_t>(e.loc.col));
        w.u64(static_cast<uint64_t>(e.loc.length));
    }
    w.str(e.message);
    w.u64(e.notes.size());
    for (const std::string& n : e.notes) w.str(n);
}

Error read_error(Reader& r, const SourcePtr& statement_source) {
    const auto kind = static_cast<ErrorKind>(r.u64());
    Loc loc;
    if (r.u64()) {
        if (r.u64()) {
            loc.source = statement_source;
        } else {
            std::string name = r.str();
            loc.source = std::make_shared<const Source>(std::move(name), r.str());
        }
        loc.line = static_cast<int>(r.u64());
        loc.col = static_cast<int>(r.u64());
        loc.length = static_cast<int>(r.u64());
    }
    std::string message = r.str();
    std::vector<std::string> notes(r.u64());
    for (std::string& n : notes) n = r.str();
    return Error(kind, std::move(loc), std::move(message), std::move(notes));
}

std::string host_name() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

// ---------------------------------------------------------------- the world
class MpiWorld final : public RankWorld {
public:
    enum class Start { Spawned, Mpirun };

    MpiWorld(MPI_Comm comm, Start how) : comm_(comm), how_(how) {
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
        MPI_Comm_dup(comm_, &cancel_comm_);
        if (const char* t = std::getenv("SHOAL_RANK_TIMEOUT")) timeout_ = std::max(1.0, std::atof(t));
    }
    ~MpiWorld() override { stop_watching(); }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    bool running() const override { return running_; }
    void set_timeout(double seconds) override {
        timeout_ = seconds;
        for (ir::Comm* c : backends()) c->set_timeout(seconds);  // one timeout for every wait
    }
    double timeout() const override { return timeout_; }
    bool stop_requested() const { return stop_requested_; }

    // Collective, once, as the world starts: where each rank runs, and rank
    // 0's session state for the others to adopt.
    RankState handshake(const RankState& mine) {
        Place me{};
        std::snprintf(me.host, sizeof me.host, "%s", host_name().c_str());
        me.pid = getpid();
        places_.resize(static_cast<size_t>(size_));
        MPI_Gather(&me, sizeof me, MPI_BYTE, places_.data(), sizeof me, MPI_BYTE, 0, comm_);
        Writer w;
        w.str(mine.script);
        w.u64(mine.random_stream);
        uint64_t length = w.bytes().size();
        MPI_Bcast(&length, 1, MPI_UINT64_T, 0, comm_);
        std::string bytes = rank_ == 0 ? w.bytes() : std::string(length, '\0');
        MPI_Bcast(bytes.data(), static_cast<int>(length), MPI_BYTE, 0, comm_);
        Reader r(bytes);
        RankState state;
        state.script = r.str();
        state.random_stream = r.u64();
        // The collectives sharded arrays use, on a communicator of their own.
        collectives_ = std::make_shared<MpiComm>(comm_, timeout_, nullptr);
        configure(*collectives_);
        return state;
    }

    void begin_statement(const SourcePtr& source, StatementSpan span) override {
        if (!running_) return;
        ++serial_;
        in_statement_ = true;
        const bool fresh = source != last_source_;
        Header h{fresh ? kNewSource : kSameSource, serial_, 0, 0, static_cast<int64_t>(span.begin),
                 static_cast<int64_t>(span.end)};
        if (fresh) {
            h.text_bytes = static_cast<int64_t>(source->text.size());
            h.name_bytes = static_cast<int64_t>(source->name.size());
        }
        broadcast_header(h);
        if (fresh) {
            std::string payload = source->name + source->text;
            broadcast_bytes(payload);
            last_source_ = source;
        }
    }

    std::optional<Error> agree(const std::optional<Error>& mine, const SourcePtr& statement_source,
                               std::atomic<bool>& cancel) override {
        if (!running_) return std::nullopt;  // stopped during the statement (`:set ranks`)
        struct NextStatement {  // however the agreement ends, the collectives start afresh
            std::vector<ir::Comm*> comms;
            bool failed = true;  // unless the agreement says every rank succeeded
            ~NextStatement() {
                for (ir::Comm* c : comms) c->begin_statement(failed);
            }
        } next{backends()};
        std::optional<Error> outcome =
            rank_ == 0 ? agree_as_front(mine, statement_source, cancel) : agree_as_worker(mine, statement_source);
        next.failed = outcome.has_value();
        return outcome;
    }

    ArrayBackend* sharding(ArrayBackend* inner, int64_t shard_threshold, const std::atomic<bool>* cancel) override {
        if (!collectives_) return inner;
        std::shared_ptr<ir::Comm> comm = collectives_;
        // Blocks computed on a GPU move by NCCL (made once, on every rank alike:
        // every rank's session has the same executor).
        auto* compiled = dynamic_cast<CompiledBackend*>(inner);
        if (compiled && compiled->executor_name() == "cuda") {
            if (!gpu_tried_) {
                gpu_tried_ = true;
                gpu_collectives_ = gpu_collectives(collectives_, comm_, timeout_, gpu_why_not_);
                if (gpu_collectives_) configure(*gpu_collectives_);
            }
            if (gpu_collectives_) comm = gpu_collectives_;
        }
        if (!sharding_ || sharding_inner_ != inner || sharding_comm_ != comm) {
            sharding_ = std::make_unique<compiled::ShardingBackend>(inner, comm);
            sharding_inner_ = inner;
            sharding_comm_ = comm;
        }
        sharding_->set_threshold(shard_threshold);
        collectives_->set_cancel(cancel);  // the NCCL id travels over MPI
        comm->set_cancel(cancel);
        return sharding_.get();
    }

    std::vector<std::string> gather_texts(const std::string& mine) override {
        if (!collectives_) return {mine};
        return ir::gather_texts(*collectives_, mine);
    }

    CommunicationTotals communication() const override {
        CommunicationTotals totals;
        for (const ir::Comm* c : backends()) totals.seconds += c->seconds_in_collectives(), totals.bytes += c->bytes_moved();
        return totals;
    }

    std::string report() const override {
        std::string s = std::to_string(size_) + " ranks (" +
                        (how_ == Start::Spawned ? "workers spawned by this process over MPI" : "started by mpirun") +
                        "), timeout " + std::to_string(static_cast<int64_t>(timeout_)) + " s";
        for (int r = 0; r < size_; ++r) {
            const Place& p = places_[static_cast<size_t>(r)];
            s += "\n  rank " + std::to_string(r) + ": pid " + std::to_string(p.pid) + " on " + p.host +
                 (r == 0 ? " (the front end)" : "");
        }
        if (sharding_comm_) s += "\nsharded arrays move by " + sharding_comm_->description();
        if (gpu_tried_ && !gpu_collectives_) s += " (not NCCL: " + gpu_why_not_ + ")";
        return s;
    }

    void stop() override {
        if (!running_ || rank_ != 0) return;
        running_ = false;
        if (in_statement_) collect_statuses_briefly();
        Header h{kStop, serial_, 0, 0, 0, 0};
        broadcast_header(h);
        disconnect();
    }

    // ---------------------------------------------------------------- the other ranks
    // Waits for rank 0's next request; false when the world stops.
    bool next_statement(SourcePtr& source, StatementSpan& span, uint64_t& serial) {
        Header h;
        if (!receive_header(h) || h.kind == kStop) return false;
        if (h.kind == kNewSource) {
            std::string payload(static_cast<size_t>(h.name_bytes + h.text_bytes), '\0');
            broadcast_bytes(payload);
            last_source_ = std::make_shared<const Source>(payload.substr(0, static_cast<size_t>(h.name_bytes)),
                                                          payload.substr(static_cast<size_t>(h.name_bytes)));
        }
        serial_ = static_cast<uint64_t>(h.serial);
        source = last_source_;
        span = StatementSpan{static_cast<size_t>(h.begin), static_cast<size_t>(h.end)};
        serial = serial_;
        return true;
    }

    // While a statement runs on a rank other than 0: Ctrl-C from rank 0 sets `cancel`.
    void watch_for_cancel(std::atomic<bool>& cancel) {
        stop_watching();
        if (cancelled_serial_.load() == serial_) cancel.store(true);  // it came before the statement
        watching_.store(true);
        watcher_ = std::thread([this, &cancel] {
            while (watching_.load()) {
                if (poll_cancel_channel()) cancel.store(true);
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        });
    }
    void stop_watching() {
        watching_.store(false);
        if (watcher_.joinable()) watcher_.join();
    }

    void leave() {
        stop_watching();
        if (!g_world_broken) disconnect();
    }

private:
    // Spawned ranks are a job of their own, connected to rank 0's by these
    // communicators: both ends disconnect before MPI_Finalize.
    void disconnect() {
        release_collectives();  // sharded arrays may still hold them
        if (how_ != Start::Spawned) return;
        MPI_Comm_free(&cancel_comm_);
        MPI_Comm_free(&comm_);
    }

    // The backends of the collectives made so far: MPI's, then NCCL's.
    std::vector<ir::Comm*> backends() const {
        std::vector<ir::Comm*> made;
        for (ir::Comm* c : {static_cast<ir::Comm*>(collectives_.get()), gpu_collectives_.get()})
            if (c) made.push_back(c);
        return made;
    }
    // The control plane's hold on a backend of the collectives.
    void configure(ir::Comm& comm) {
        comm.set_timeout(timeout_);
        if (rank_ == 0)  // a rank that reported while this one waits in a collective has left the statement
            comm.set_abandon_check([this] {
                int flag = 0;
                MPI_Iprobe(MPI_ANY_SOURCE, kTagFailed, comm_, &flag, MPI_STATUS_IGNORE);
                return flag != 0;
            });
    }
    void release_collectives() {
        if (gpu_collectives_) gpu_collectives_->release();  // before the MPI communicators its id came over
        if (collectives_) collectives_->release();
    }

    struct Place {
        char host[64];
        int64_t pid;
    };

    // Messages on the cancel channel: a Ctrl-C for the running statement
    // (true), a stale one (ignored), or the order to leave (stop_requested_).
    bool poll_cancel_channel() {
        bool cancel_now = false;
        for (;;) {
            int flag = 0;
            MPI_Status st;
            MPI_Iprobe(0, MPI_ANY_TAG, cancel_comm_, &flag, &st);
            if (!flag) return cancel_now;
            uint64_t serial = 0;
            MPI_Recv(&serial, 1, MPI_UINT64_T, 0, st.MPI_TAG, cancel_comm_, MPI_STATUS_IGNORE);
            if (st.MPI_TAG == kTagStop) {
                stop_requested_ = true;
                cancel_now = true;
            } else {
                // A Ctrl-C can overtake the statement's own header (another
                // communicator): one for a later statement is kept for it.
                cancelled_serial_ = std::max(cancelled_serial_.load(), serial);
                cancel_now = cancel_now || serial == serial_;
            }
        }
    }

    void broadcast_header(Header& h) {
        MPI_Request request;
        MPI_Ibcast(&h, sizeof h, MPI_BYTE, 0, comm_, &request);
        mpi::wait_polling(request, [] { return false; });
    }
    bool receive_header(Header& h) {
        MPI_Request request;
        MPI_Ibcast(&h, sizeof h, MPI_BYTE, 0, comm_, &request);
        // Rank 0 may give the world up (a rank lost) while this one waits.
        return mpi::wait_polling(request, [this] {
            poll_cancel_channel();
            return stop_requested_;
        });
    }
    void broadcast_bytes(std::string& bytes) {
        if (!bytes.empty()) MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, comm_);
    }

    std::optional<Error> agree_as_worker(const std::optional<Error>& mine, const SourcePtr& statement_source) {
        stop_watching();
        Writer w;
        w.u64(serial_);
        w.u64(mine.has_value());
        if (mine) write_error(w, *mine, statement_source);
        MPI_Request sent;
        MPI_Isend(w.bytes().data(), static_cast<int>(w.bytes().size()), MPI_BYTE, 0, mine ? kTagFailed : kTagStatus,
                  comm_, &sent);
        Header h;
        const bool heard = receive_header(h);
        if (!heard || h.kind == kStop) {
            running_ = false;
            stop_requested_ = true;
            return std::nullopt;
        }
        std::string payload(static_cast<size_t>(h.text_bytes), '\0');
        broadcast_bytes(payload);
        MPI_Wait(&sent, MPI_STATUS_IGNORE);
        poll_cancel_channel();  // a Ctrl-C that came after this rank finished
        if (payload.empty()) return std::nullopt;
        Reader r(payload);
        return read_error(r, statement_source);
    }

    std::optional<Error> agree_as_front(const std::optional<Error>& mine, const SourcePtr& statement_source,
                                        std::atomic<bool>& cancel) {
        in_statement_ = false;
        std::vector<std::optional<Error>> outcome(static_cast<size_t>(size_));
        std::vector<bool> arrived(static_cast<size_t>(size_), false);
        outcome[0] = mine;
        arrived[0] = true;
        int waiting = size_ - 1;
        bool cancel_sent = false, late = false;
        std::string late_ranks;
        auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
        for (int spins = 0; waiting > 0; ++spins) {
            if (receive_status(statement_source, outcome, arrived)) {
                --waiting;
                spins = 0;
                continue;
            }
            // Ctrl-C, or a rank that failed: the others stop (a collective
            // they wait in cannot complete without it).
            const bool stop_others = cancel.load() || mine.has_value() ||
                                     std::any_of(outcome.begin(), outcome.end(), [](const auto& e) { return e.has_value(); });
            if (stop_others && !cancel_sent) {
                send_to_missing(kTagCancel, arrived);
                cancel_sent = true;
            }
            if (spins % 1000 == 999) {  // about every second: a rank on this machine that died
                const std::string dead = dead_ranks(arrived);
                if (!dead.empty())
                    give_up(dead + " ended without finishing the statement (it crashed or was killed)");
            }
            if (Clock::now() > deadline) {
                if (late)
                    give_up(missing(arrived) + " did not finish the statement within the timeout of " +
                            std::to_string(static_cast<int64_t>(timeout_)) + " s, nor stop when asked");
                // Too late: ask the late ranks to stop, and give them a moment to answer.
                late = true;
                late_ranks = missing(arrived);
                if (!cancel_sent) send_to_missing(kTagCancel, arrived);
                cancel_sent = true;
                deadline = Clock::now() + std::chrono::duration<double>(std::min(timeout_, 5.0));
            }
            mpi::pause_after(spins);
        }
        std::optional<Error> verdict;
        if (late) {
            verdict = Error(ErrorKind::Runtime, {},
                            late_ranks + " did not finish the statement within the timeout of " +
                                std::to_string(static_cast<int64_t>(timeout_)) + " s: it was stopped on every rank",
                            {"`:set timeout S` waits longer; `:ranks` shows where each rank runs"});
        } else {
            // The lowest rank's error; an interruption only when there is
            // nothing else (the others were stopped because of that error).
            for (int r = 0; r < size_ && !verdict; ++r)
                if (outcome[static_cast<size_t>(r)] && outcome[static_cast<size_t>(r)]->kind != ErrorKind::Interrupted) {
                    verdict = outcome[static_cast<size_t>(r)];
                    if (r != 0)
                        verdict->notes.push_back("on rank " + std::to_string(r) + " of " + std::to_string(size_) +
                                                 "; every rank stopped the statement");
                }
            for (int r = 0; r < size_ && !verdict; ++r) verdict = outcome[static_cast<size_t>(r)];
        }
        Writer w;
        if (verdict) write_error(w, *verdict, statement_source);
        Header h{kVerdict, serial_, static_cast<int64_t>(w.bytes().size()), 0, 0, 0};
        broadcast_header(h);
        broadcast_bytes(w.bytes());
        return verdict;
    }

    // One outcome that arrived, if any.
    bool receive_status(const SourcePtr& statement_source, std::vector<std::optional<Error>>& outcome,
                        std::vector<bool>& arrived) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, kTagFailed, comm_, &flag, &st);
        if (!flag) MPI_Iprobe(MPI_ANY_SOURCE, kTagStatus, comm_, &flag, &st);
        if (!flag) return false;
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        std::string bytes(static_cast<size_t>(count), '\0');
        MPI_Recv(bytes.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, comm_, MPI_STATUS_IGNORE);
        Reader r(bytes);
        const uint64_t serial = r.u64();
        if (serial != serial_ || arrived[static_cast<size_t>(st.MPI_SOURCE)]) return false;  // stale
        if (r.u64()) outcome[static_cast<size_t>(st.MPI_SOURCE)] = read_error(r, statement_source);
        arrived[static_cast<size_t>(st.MPI_SOURCE)] = true;
        return true;
    }

    void send_to_missing(int tag, const std::vector<bool>& arrived) {
        uint64_t serial = serial_;
        for (int r = 1; r < size_; ++r)
            if (!arrived[static_cast<size_t>(r)]) MPI_Send(&serial, 1, MPI_UINT64_T, r, tag, cancel_comm_);
    }

    static std::string missing(const std::vector<bool>& arrived) {
        std::vector<int> ranks;
        for (size_t r = 0; r < arrived.size(); ++r)
            if (!arrived[r]) ranks.push_back(static_cast<int>(r));
        return mpi::rank_list(ranks);
    }

    // A rank that neither finished nor stopped when asked: the world cannot
    // go on (its collectives would wait for it forever). The others are told
    // to leave; this process goes on alone with its bindings.
    [[noreturn]] void give_up(const std::string& what) {
        running_ = false;
        g_world_broken = true;
        release_collectives();  // a sharded array used later says its ranks are gone
        uint64_t serial = serial_;
        for (int r = 1; r < size_; ++r) {
            if (!alive(r)) continue;
            MPI_Request request;
            MPI_Isend(&serial, 1, MPI_UINT64_T, r, kTagStop, cancel_comm_, &request);
            MPI_Request_free(&request);
        }
        user_error(ErrorKind::Runtime, {},
                   what + "; the other ranks were let go and the session goes on as this process alone, with "
                          "every binding but the arrays sharded over the ranks (their other blocks are gone)",
                   {"`:set ranks N` starts new ranks; `:set timeout S` waits longer"});
    }

    // Whether rank r's process still exists, as far as this machine can
    // tell (a rank on another host is assumed alive: the timeout finds it).
    bool alive(int r) const {
        const Place& p = places_[static_cast<size_t>(r)];
        if (host_name() != p.host) return true;
        return ::kill(static_cast<pid_t>(p.pid), 0) == 0 || errno != ESRCH;
    }
    std::string dead_ranks(const std::vector<bool>& arrived) const {
        std::vector<int> dead;
        for (int r = 1; r < size_; ++r)
            if (!arrived[static_cast<size_t>(r)] && !alive(r)) dead.push_back(r);
        return dead.empty() ? "" : mpi::rank_list(dead);
    }

    // `:set ranks` during a statement: the others finished it; take their answers.
    void collect_statuses_briefly() {
        in_statement_ = false;
        std::vector<std::optional<Error>> outcome(static_cast<size_t>(size_));
        std::vector<bool> arrived(static_cast<size_t>(size_), false);
        arrived[0] = true;
        const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_);
        int waiting = size_ - 1;
        while (waiting > 0 && Clock::now() < deadline) {
            if (receive_status(last_source_, outcome, arrived)) --waiting;
            else std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }

    MPI_Comm comm_;
    MPI_Comm cancel_comm_ = MPI_COMM_NULL;
    Start how_;
    int rank_ = 0, size_ = 1;
    bool running_ = true, in_statement_ = false, stop_requested_ = false;
    double timeout_ = 60;
    uint64_t serial_ = 0;
    SourcePtr last_source_;
    std::vector<Place> places_;
    std::shared_ptr<MpiComm> collectives_;
    std::shared_ptr<ir::Comm> gpu_collectives_;  // NCCL, for blocks on GPUs (gpu_collectives.h)
    bool gpu_tried_ = false;
    std::string gpu_why_not_;
    std::unique_ptr<compiled::ShardingBackend> sharding_;
    ArrayBackend* sharding_inner_ = nullptr;
    std::shared_ptr<ir::Comm> sharding_comm_;
    std::atomic<bool> watching_{false};
    std::atomic<uint64_t> cancelled_serial_{0};  // the latest statement rank 0 cancelled
    std::thread watcher_;
};

std::string g_worker_program;

std::shared_ptr<RankWorld> spawn_world(int n, const RankState& state) {
    if (launched_by_mpirun())
        user_error(ErrorKind::Usage, {}, "this session was started by mpirun, which fixed its ranks",
                   {"`mpirun -np N shoal ...` chooses N"});
    start_mpi(true);
    char option[] = "--rank-worker";
    char* argv[] = {option, nullptr};
    std::vector<int> codes(static_cast<size_t>(n - 1), MPI_SUCCESS);
    MPI_Comm inter = MPI_COMM_NULL;
    const int rc = MPI_Comm_spawn(g_worker_program.c_str(), argv, n - 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter,
                                  codes.data());
    if (rc != MPI_SUCCESS)
        user_error(ErrorKind::Runtime, {},
                   "could not start " + std::to_string(n - 1) + " worker" + (n == 2 ? "" : "s") + " (" +
                       g_worker_program + "): " + mpi_error_text(rc),
                   {"docs/scale-out.md says how to run on a cluster (mpirun, a host file)"});
    MPI_Comm merged = MPI_COMM_NULL;
    MPI_Intercomm_merge(inter, 0, &merged);
    MPI_Comm_free(&inter);
    auto world = std::make_shared<MpiWorld>(merged, MpiWorld::Start::Spawned);
    world->handshake(state);
    return world;
}

// A rank's session gets no output: rank 0 shows the statement's values and
// errors (the errors of every rank come to it through the verdict).
struct Discard : SessionOutput {
    void value(const Value&, const Type&, const std::string&) override {}
    void text(const std::string&) override {}
    void error(const Error&) override {}
    void warning(const std::string&) override {}
};

// Tests (tests/run_ranks.py): SHOAL_TEST_STALL="RANK:MODE" changes what
// that rank does at every statement whose text holds `stall_here`: "slow"
// waits until Ctrl-C reaches it, "hang" ignores Ctrl-C too (a rank stuck in
// a library), "fail" fails it there alone (a file only that rank lacks),
// "crash" kills it (a segmentation fault, the node lost).
enum class Stall { None, Slow, Hang, Fail, Crash };
Stall stall_here(const MpiWorld& world, const std::string& text) {
    const char* spec = std::getenv("SHOAL_TEST_STALL");
    if (!spec || text.find("stall_here") == std::string::npos) return Stall::None;
    const std::string s = spec;
    const size_t colon = s.find(':');
    if (colon == std::string::npos || std::atoi(s.substr(0, colon).c_str()) != world.rank()) return Stall::None;
    const std::string mode = s.substr(colon + 1);
    return mode == "hang" ? Stall::Hang : mode == "fail" ? Stall::Fail : mode == "crash" ? Stall::Crash : Stall::Slow;
}

}  // namespace

std::string mpi_unavailable_reason() { return {}; }

void install_rank_world_factory(const std::string& worker_program) {
    g_worker_program = worker_program;
    set_rank_world_factory(spawn_world);
}

std::shared_ptr<RankWorld> join_launched_world() {
    start_mpi(false);
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    auto world = std::make_shared<MpiWorld>(comm, MpiWorld::Start::Mpirun);
    if (world->rank() == 0) world->handshake(RankState{});  // a fresh session: the others adopt its defaults
    return world;
}

int run_spawned_worker() {
    std::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches a worker from rank 0, as a message
    start_mpi(false);
    MPI_Comm parent = MPI_COMM_NULL;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        std::fputs("shoal: --rank-worker is started by `shoal --ranks N` or `:set ranks N`, not by hand\n", stderr);
        MPI_Finalize();
        return 2;
    }
    MPI_Comm merged = MPI_COMM_NULL;
    MPI_Intercomm_merge(parent, 1, &merged);
    MPI_Comm_free(&parent);
    auto world = std::make_shared<MpiWorld>(merged, MpiWorld::Start::Spawned);
    Session session;
    session.join_world(world);
    return serve_rank(session, *world);
}

int serve_rank(Session& session, RankWorld& rank_world) {
    auto& world = static_cast<MpiWorld&>(rank_world);
    if (world.rank() == 0) return 0;
    if (world.size() > 1 && session.world().get() != &world)
        internal_error(__FILE__, __LINE__, "serve_rank: the session is not joined to the world it serves");
    session.adopt_rank_state(world.handshake({}));
    Discard discard;
    SourcePtr source;
    StatementSpan span{};
    uint64_t serial = 0;
    while (!world.stop_requested() && world.next_statement(source, span, serial)) {
        session.cancel_flag().store(false);  // before the watcher starts: its Ctrl-C may come at once
        world.watch_for_cancel(session.cancel_flag());
        const Stall stall = stall_here(world, source->text.substr(span.begin, span.end - span.begin));
        if (stall == Stall::Crash) std::raise(SIGKILL);
        if (stall == Stall::Fail) {
            world.agree(Error(ErrorKind::Runtime, {}, "a failure on this rank alone (SHOAL_TEST_STALL)"), source,
                        session.cancel_flag());
            continue;
        }
        if (stall != Stall::None) {
            const auto until = Clock::now() + std::chrono::minutes(10);
            while ((stall == Stall::Hang || !session.cancel_flag().load()) && Clock::now() < until &&
                   !world.stop_requested())
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (world.stop_requested()) break;
            world.agree(Error(ErrorKind::Interrupted, {}, "interrupted"), source, session.cancel_flag());
            continue;
        }
        session.run_handed_statement(source, span, discard);
        world.stop_watching();
    }
    world.leave();
    if (!g_world_broken) MPI_Finalize();
    return 0;
}

void leave_world(Session& session) {
    if (const auto& world = session.world(); world && world->rank() == 0 && world->running()) world->stop();
    session.join_world(nullptr);
    if (g_mpi_started && !g_world_broken) MPI_Finalize();
}

#endif

}  // namespace shoal::runtime
