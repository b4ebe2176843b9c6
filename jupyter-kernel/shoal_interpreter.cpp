// The Jupyter kernel's interpreter: every request goes to the one
// shoal::Session, exactly as the terminal REPL's input does.
#include "shoal_interpreter.h"

#include <cctype>
#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

#include <xeus/xhelper.hpp>

#include "runtime/mpi/mpi_world.h"

#include "lang/diagnostics.h"
#include "lang/display.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "unknown"
#endif

namespace shoal::kernel {

namespace {

bool is_continuation_byte(unsigned char c) { return (c & 0xC0) == 0x80; }

// Publishes a cell's output as it arrives. Every value but the cell's last
// goes out as display_data when the next output arrives (so the order is
// kept); the last one is the execute_result.
class CellOutput : public SessionOutput {
public:
    CellOutput(Interpreter& k, const Session& session, int execution_count, bool silent)
        : k_(k), session_(session), count_(execution_count), silent_(silent) {}

    void value(const Value& v, const Type& type, const std::string& text) override {
        flush();
        nl::json data = nl::json::object();
        data["text/plain"] = text;
        try {
            std::string html = value_html(v, type, session_.settings().print_threshold);
            if (!html.empty()) data["text/html"] = std::move(html);
        } catch (const std::exception& e) {
            // The text is what matters; a bug in the table must not lose it.
            std::fprintf(stderr, "shoal-kernel: value_html failed: %s\n", e.what());
        }
        pending_ = std::move(data);
    }

    void text(const std::string& s) override { stream("stdout", s); }

    void warning(const std::string& formatted) override { stream("stderr", formatted); }

    void display(const DisplayData& d) override {
        flush();
        if (silent_) return;
        nl::json data = nl::json::object();
        data["text/plain"] = d.plain;
        for (const auto& [mime, content] : d.rich) data[mime] = content;
        k_.display_data(std::move(data), nl::json::object(), nl::json::object());
    }

    void error(const Error& e) override {
        flush();
        std::string ename = error_kind_name(e.kind);
        std::vector<std::string> traceback = error_traceback(e);
        if (!silent_) k_.publish_execution_error(ename, e.message, traceback);
        if (!error_) error_ = ErrorInfo{ename, e.message, std::move(traceback)};
    }

    // The reply to execute_request; publishes the execute_result first.
    nl::json finish() {
        if (pending_ && !silent_) k_.publish_execution_result(count_, std::move(*pending_), nl::json::object());
        pending_.reset();
        nl::json reply;
        if (error_) {
            // Built here: xeus 2.4.1's create_error_reply swaps ename and evalue.
            reply["status"] = "error";
            reply["ename"] = error_->ename;
            reply["evalue"] = error_->evalue;
            reply["traceback"] = error_->traceback;
        } else {
            reply["status"] = "ok";
            reply["payload"] = nl::json::array();
            reply["user_expressions"] = nl::json::object();
        }
        reply["execution_count"] = count_;
        return reply;
    }

private:
    struct ErrorInfo {
        std::string ename, evalue;
        std::vector<std::string> traceback;
    };

    void flush() {
        if (pending_ && !silent_) k_.display_data(std::move(*pending_), nl::json::object(), nl::json::object());
        pending_.reset();
    }

    void stream(const char* name, const std::string& s) {
        flush();
        if (!silent_) k_.publish_stream(name, s + "\n");
    }

    Interpreter& k_;
    const Session& session_;
    int count_;
    bool silent_;
    std::optional<nl::json> pending_;
    std::optional<ErrorInfo> error_;
};

bool is_word_char(unsigned char c) { return std::isalnum(c) || c == '_' || c == '\'' || c >= 0x80; }

bool is_operator_char(unsigned char c) {
    return std::string_view("+-*/%<>=!&|^~.@#$?").find(static_cast<char>(c)) != std::string_view::npos;
}

}  // namespace

size_t byte_offset(const std::string& text, long code_points) {
    size_t i = 0;
    for (long n = 0; n < code_points && i < text.size(); ++n) {
        ++i;
        while (i < text.size() && is_continuation_byte(static_cast<unsigned char>(text[i]))) ++i;
    }
    return i;
}

long code_point_offset(const std::string& text, size_t bytes) {
    long n = 0;
    for (size_t i = 0; i < bytes && i < text.size(); ++i)
        if (!is_continuation_byte(static_cast<unsigned char>(text[i]))) ++n;
    return n;
}

std::string banner(Session& session) {
    return std::string("Shoal ") + SHOAL_VERSION + " -- an interactive array language\n" +
           "running: " + session.engine_description() + "\n" + "Type :help for the builtins and commands.";
}

Interpreter::Interpreter() : session_(std::make_unique<Session>()) {}
Interpreter::~Interpreter() { runtime::leave_world(*session_); }

void Interpreter::request_cancel() {
    std::lock_guard<std::mutex> lock(session_mutex_);
    session_->request_cancel();
}

void Interpreter::configure_impl() {}

nl::json Interpreter::execute_request_impl(int execution_counter, const std::string& code, bool silent,
                                           bool /*store_history*/, nl::json /*user_expressions*/,
                                           bool /*allow_stdin*/) {
    CellOutput out(*this, *session_, execution_counter, silent);
    session_->execute(code, "cell[" + std::to_string(execution_counter) + "]", out);
    bool quit = session_->quit_requested();
    if (quit) {
        out.text(":quit: the session's bindings and settings are gone; the next cell starts a fresh session "
                 "(Kernel > Shut Down stops the kernel)");
    }
    nl::json reply = out.finish();
    if (quit) {
        {
            std::lock_guard<std::mutex> lock(session_mutex_);
            session_->start_ranks(1);  // its other ranks leave with it
            session_ = std::make_unique<Session>();
        }
        // Front ends that support it (jupyter console, qtconsole) exit.
        if (reply["status"] == "ok")
            reply["payload"] = nl::json::array({{{"source", "ask_exit"}, {"keepkernel", false}}});
    }
    return reply;
}

nl::json Interpreter::complete_request_impl(const std::string& code, int cursor_pos) {
    try {
        return complete(code, cursor_pos);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shoal-kernel: complete_request failed: %s\n", e.what());
        return xeus::create_complete_reply(nl::json::array(), cursor_pos, cursor_pos);
    }
}

nl::json Interpreter::complete(const std::string& code, int cursor_pos) {
    size_t cursor = byte_offset(code, cursor_pos);
    cursor_pos = static_cast<int>(code_point_offset(code, cursor));  // clamped to the code
    // The session completes within one line: hand it the cursor's line.
    size_t line_begin = code.rfind('\n', cursor == 0 ? std::string::npos : cursor - 1);
    line_begin = (line_begin == std::string::npos || cursor == 0) ? 0 : line_begin + 1;
    size_t line_end = code.find('\n', cursor);
    if (line_end == std::string::npos) line_end = code.size();
    std::string line = code.substr(line_begin, line_end - line_begin);
    size_t start = cursor - line_begin;
    std::vector<std::string> matches = session_->complete(line, cursor - line_begin, start);
    if (start > cursor - line_begin) start = cursor - line_begin;
    long cursor_start = code_point_offset(code, line_begin + start);
    return xeus::create_complete_reply(matches, static_cast<int>(cursor_start), cursor_pos);
}

nl::json Interpreter::inspect_request_impl(const std::string& code, int cursor_pos, int detail_level) {
    try {
        return inspect(code, cursor_pos, detail_level);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shoal-kernel: inspect_request failed: %s\n", e.what());
        return xeus::create_inspect_reply(false);
    }
}

nl::json Interpreter::inspect(const std::string& code, int cursor_pos, int detail_level) {
    size_t cursor = byte_offset(code, cursor_pos);
    auto word_at = [&](auto pred) {
        size_t b = cursor, e = cursor;
        while (b > 0 && pred(static_cast<unsigned char>(code[b - 1]))) --b;
        while (e < code.size() && pred(static_cast<unsigned char>(code[e]))) ++e;
        return code.substr(b, e - b);
    };
    std::string word = word_at(is_word_char);
    if (word.empty()) word = word_at(is_operator_char);
    std::string doc = word.empty() ? std::string() : session_->inspect(word, detail_level >= 1);
    if (doc.empty()) return xeus::create_inspect_reply(false);
    nl::json data = nl::json::object();
    data["text/plain"] = doc;
    return xeus::create_inspect_reply(true, data);
}

nl::json Interpreter::is_complete_request_impl(const std::string& code) {
    try {
        switch (session_->check_input(code)) {
            case InputStatus::Complete: return xeus::create_is_complete_reply("complete");
            case InputStatus::Incomplete: return xeus::create_is_complete_reply("incomplete", "  ");
            case InputStatus::Invalid: return xeus::create_is_complete_reply("invalid");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "shoal-kernel: is_complete_request failed: %s\n", e.what());
    }
    return xeus::create_is_complete_reply("unknown");
}

nl::json Interpreter::kernel_info_request_impl() {
    nl::json reply = xeus::create_info_reply("5.3", "shoal-kernel", SHOAL_VERSION, "shoal", SHOAL_VERSION,
                                             "text/x-shoal", ".shoal", "haskell", "haskell", "", banner(*session_),
                                             false, nl::json::array());
    reply["status"] = "ok";
    return reply;
}

void Interpreter::shutdown_request_impl() {}

}  // namespace shoal::kernel
