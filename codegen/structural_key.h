// A compact, injective encoding of kernel IR for keys (the structural plan
// cache, plan_memo.h). Printing the IR as text for a key was most of a
// probe's cost (~11k of 15k instructions a plan); this appends each node's
// kind, type, operator, constant bits and length-prefixed names, so two
// different trees never give the same bytes. Not for reading: :ir prints.
// Source positions are left out, as to_string_without_positions does.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "codegen/ir.h"

namespace shoal::ir {

// Writes the encoding into a string without a library call per byte (a
// probe writes a few hundred): room is made in doublings, and the string is
// cut to what was written when the writer goes. One writer for a whole key.
class KeyWriter {
public:
    explicit KeyWriter(std::string& out);
    ~KeyWriter();
    KeyWriter(const KeyWriter&) = delete;
    KeyWriter& operator=(const KeyWriter&) = delete;

    void byte(int v) {
        room(1);
        out_[len_++] = static_cast<char>(v);
    }
    void bytes(const void* p, size_t n) {
        room(n);
        std::memcpy(&out_[len_], p, n);
        len_ += n;
    }
    void int64(int64_t v) { bytes(&v, sizeof v); }
    void count(size_t n) { int64(static_cast<int64_t>(n)); }
    void name(const std::string& s) {
        int64(static_cast<int64_t>(s.size()));
        bytes(s.data(), s.size());
    }
    void expr(const ExprPtr& e);
    void exprs(const std::vector<ExprPtr>& es) {
        count(es.size());
        for (const ExprPtr& e : es) expr(e);
    }
    void stmt(const StmtPtr& s);
    void stmts(const std::vector<StmtPtr>& ss) {
        count(ss.size());
        for (const StmtPtr& s : ss) stmt(s);
    }
    void block(const BlockStmtPtr& b);
    void kernel(const Kernel& k);

private:
    void room(size_t n) {
        if (len_ + n > out_.size()) grow(n);
    }
    void grow(size_t n);
    std::string& out_;
    size_t len_;
};

// One expression's encoding appended to out.
void append_key(std::string& out, const ExprPtr& e);

}  // namespace shoal::ir
