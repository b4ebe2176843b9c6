// Every kernel the executor tests launch also runs as native code
// (runtime/cpu/native_tier.h) on copies of its buffers, and must leave
// every buffer with the same bits and report the same failed check. A kernel
// the interpreter rejects (a check-mode violation) or the CPU printer does
// not support (shuffles) is only interpreted. Without a C++ compiler the
// native half is skipped with a message. Buffers in `unordered` hold values
// whose order depends on scheduling (slots claimed with atomics): they are
// compared sorted.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpu_printer.h"
#include "codegen/ir.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/native_tier.h"
#include "runtime/native/native_compiler.h"

namespace native_check {

inline shoal::cpu::KernelError run_both(const shoal::ir::Kernel& k, const shoal::cpu::LaunchArgs& args,
                                        const shoal::cpu::ExecOptions& options, shoal::cpu::Counters& counters,
                                        const std::set<std::string>& unordered = {}) {
    namespace ir = shoal::ir;
    namespace cpu = shoal::cpu;
    // The inputs as they are before the launch.
    std::map<std::string, std::vector<unsigned char>> before;
    for (const ir::Param& p : k.params) {
        if (p.kind != ir::ParamKind::Buffer || !args.buffers.count(p.name)) continue;
        const cpu::BufferArg& b = args.buffers.at(p.name);
        const auto* data = static_cast<const unsigned char*>(b.data);
        before[p.name].assign(data, data + b.elements * int64_t(ir::scalar_size(p.type)));
    }
    const cpu::KernelError interpreted = cpu::run_kernel(k, args, options, counters);  // throws on violations
    // Shuffles; buffers sharing memory (the native launch interprets those).
    if (!ir::cpu_unsupported_reason(k).empty() || cpu::buffers_overlap(k, args)) return interpreted;
    try {  // the interpreter also runs IR the printers refuse (tests of its own semantics)
        ir::verify(k);
    } catch (const shoal::Error&) {
        return interpreted;
    }
    if (!shoal::native::system_toolchain().why_not.empty()) {
        MESSAGE("native half skipped: " << shoal::native::system_toolchain().why_not);
        return interpreted;
    }
    std::string why;
    const auto native = cpu::NativePlan::build({k}, &why);
    REQUIRE_MESSAGE(native, "kernel " << k.name << " does not build natively: " << why);
    cpu::LaunchArgs copy = args;
    std::map<std::string, std::vector<unsigned char>> memory = before;
    for (auto& [name, bytes] : memory) copy.buffers[name].data = bytes.data();
    cpu::Counters ignored;
    const cpu::KernelError compiled = native->launch(0, k, copy, options, ignored);
    CHECK_MESSAGE(compiled.code == interpreted.code, "kernel " << k.name << ": failed check differs");
    if (compiled.code >= 0 && compiled.code == interpreted.code) {
        CHECK(compiled.index == interpreted.index);
        CHECK(compiled.extent == interpreted.extent);
    }
    for (auto& entry : memory) {
        auto& name = entry.first;
        auto& bytes = entry.second;
        const auto* expected = static_cast<const unsigned char*>(args.buffers.at(name).data);
        if (unordered.count(name)) {  // 8-byte elements, compared as sorted words
            std::vector<uint64_t> a(bytes.size() / 8), b(bytes.size() / 8);
            std::memcpy(a.data(), bytes.data(), a.size() * 8);
            std::memcpy(b.data(), expected, b.size() * 8);
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            CHECK_MESSAGE(a == b, "kernel " << k.name << ": buffer " << name << " holds other values natively");
            continue;
        }
        CHECK_MESSAGE(std::memcmp(bytes.data(), expected, bytes.size()) == 0,
                      "kernel " << k.name << ": buffer " << name << " differs between native code and the interpreter");
    }
    return interpreted;
}

}  // namespace native_check
