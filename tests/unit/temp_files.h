// Files for tests that write to disk (test_io.cpp, test_kernel_cache.cpp): a
// fresh directory per test case and whole-file reads and writes.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace shoal::testing {

// A fresh, empty directory named after `prefix` and this process, removed
// with its contents afterwards (made writable again first: some tests take
// the write permission away).
struct TempDir {
    std::filesystem::path dir;
    explicit TempDir(const std::string& prefix) {
        static int counter = 0;
        dir = std::filesystem::temp_directory_path() /
              (prefix + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
        std::filesystem::remove_all(dir, ec);
    }
    std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

inline std::string read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace shoal::testing
