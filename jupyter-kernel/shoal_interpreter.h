// The Jupyter kernel's interpreter: a thin xeus 2.4.1 front end over the same
// shoal::Session the terminal REPL uses.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>
#include <xeus/xinterpreter.hpp>

#include "lang/session.h"

namespace shoal::kernel {

namespace nl = nlohmann;

// Code point offsets (Jupyter's cursor_pos) to UTF-8 byte offsets and back;
// both clamp to the text.
size_t byte_offset(const std::string& text, long code_points);
long code_point_offset(const std::string& text, size_t bytes);

// The banner kernel_info shows (version, backend, device).
std::string banner(Session& session);

class Interpreter : public xeus::xinterpreter {
public:
    Interpreter();
    ~Interpreter() override;  // the session's other ranks (`:set ranks`) leave with it
    Session& session() { return *session_; }

    // Cancels the running cell (the interrupt thread calls it on SIGINT; an
    // interrupt while idle is harmless: the next cell clears the flag).
    void request_cancel();

private:
    void configure_impl() override;
    nl::json execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                  bool store_history, nl::json user_expressions, bool allow_stdin) override;
    nl::json complete_request_impl(const std::string& code, int cursor_pos) override;
    nl::json inspect_request_impl(const std::string& code, int cursor_pos, int detail_level) override;
    nl::json is_complete_request_impl(const std::string& code) override;
    nl::json kernel_info_request_impl() override;
    void shutdown_request_impl() override;
    nl::json complete(const std::string& code, int cursor_pos);
    nl::json inspect(const std::string& code, int cursor_pos, int detail_level);

    // Replaced by a fresh one after `:quit` (a session that quit stops
    // after each statement); the mutex guards the swap against request_cancel.
    std::unique_ptr<Session> session_;
    std::mutex session_mutex_;
};

}  // namespace shoal::kernel
