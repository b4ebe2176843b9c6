#include "runtime/cache/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

namespace shoal::cache {

namespace fs = std::filesystem;

namespace {

constexpr const char* kEntrySuffix = ".kernel";
constexpr const char* kTempPrefix = ".tmp-";
// Larger files are not entries (a kernel image is kilobytes to megabytes).
constexpr uint64_t kLargestEntry = uint64_t(1) << 30;
// A temporary file this old belongs to a writer that died.
constexpr auto kStaleTemp = std::chrono::hours(1);

bool is_entry(const fs::path& p) {
    return p.extension() == kEntrySuffix && p.stem().string().size() == 64;
}

bool is_temp(const fs::path& p) { return p.filename().string().rfind(kTempPrefix, 0) == 0; }

// pid + random + a counter: unique among the processes and threads sharing the directory.
std::string temp_name() {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t seed = std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}();
    char name[80];
    std::snprintf(name, sizeof name, "%s%ld-%016llx-%llu", kTempPrefix, static_cast<long>(getpid()),
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(counter++));
    return name;
}

std::string errno_text(int error) { return std::strerror(error); }

// Writes all of `bytes` to a new file `path`; "" or the reason it failed.
std::string write_new_file(const fs::path& path, const std::string& bytes) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return errno_text(errno);
    std::string error;
    for (size_t done = 0; done < bytes.size() && error.empty();) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno != EINTR) error = errno_text(errno);
        if (n > 0) done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0 && error.empty()) error = errno_text(errno);
    return error;
}

// The whole file, or nothing when it does not exist or cannot be read
// (*problem then says why, except for a plain absence).
std::optional<std::string> read_file(const fs::path& path, std::string* problem) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) *problem = "cannot read it: " + errno_text(errno);
        return std::nullopt;
    }
    std::optional<std::string> bytes;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        *problem = "cannot read it: " + errno_text(errno);
    } else if (static_cast<uint64_t>(st.st_size) > kLargestEntry) {
        *problem = "too large to be an entry (" + std::to_string(st.st_size) + " bytes)";
    } else {
        bytes.emplace(static_cast<size_t>(st.st_size), '\0');
        size_t done = 0;
        while (done < bytes->size()) {
            ssize_t n = ::read(fd, bytes->data() + done, bytes->size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;  // shrank under us: decoding reports it truncated
            done += static_cast<size_t>(n);
        }
        bytes->resize(done);
    }
    ::close(fd);
    return bytes;
}

// Marks `path` as used now. File systems stamp writes with a coarse clock
// (a few milliseconds), so every stamp Shoal relies on is set explicitly
// from the fine one. Not being allowed to (another user's entry) only
// weakens the LRU order.
void touch(const fs::path& path) {
    std::error_code ignored;
    fs::last_write_time(path, fs::file_time_type::clock::now(), ignored);
}

}  // namespace

Sha256Digest kernel_cache_key(const std::string& source, const std::vector<std::string>& options,
                              const std::string& target_arch, const std::string& compiler,
                              const std::string& shoal_version) {
    Sha256 h;
    h.field("shoal kernel cache key v1");
    h.field(source);
    h.u64(options.size());
    for (const auto& o : options) h.field(o);
    h.field(target_arch).field(compiler).field(shoal_version);
    return h.finish();
}

fs::path KernelDiskCache::default_directory(std::string* why_not) {
    auto env = [](const char* name) -> std::string {
        const char* value = std::getenv(name);
        return value ? value : "";
    };
    if (std::string dir = env("SHOAL_CACHE_DIR"); !dir.empty()) return dir;
    // The XDG spec ignores a relative XDG_CACHE_HOME.
    if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && xdg[0] == '/') return fs::path(xdg) / "shoal" / "kernels";
    if (std::string home = env("HOME"); !home.empty()) return fs::path(home) / ".cache" / "shoal" / "kernels";
    if (why_not) *why_not = "no kernel cache directory: none of SHOAL_CACHE_DIR, XDG_CACHE_HOME and HOME is set";
    return {};
}

KernelDiskCache::KernelDiskCache(fs::path directory, uint64_t max_bytes, std::string why_not)
    : directory_(std::move(directory)), no_directory_reason_(std::move(why_not)), max_bytes_(max_bytes) {}

fs::path KernelDiskCache::entry_path(const Sha256Digest& key) const { return directory_ / (to_hex(key) + kEntrySuffix); }

std::string KernelDiskCache::private_problem() const {
    if (directory_.empty()) return no_directory_reason_;
    struct stat st {};
    if (::stat(directory_.c_str(), &st) != 0) {
        if (errno != ENOENT) return "cannot read the kernel cache " + directory_.string() + ": " + errno_text(errno);
        std::error_code ec;  // made now, private
        if (fs::create_directories(directory_, ec) && !ec) fs::permissions(directory_, fs::perms::owner_all, ec);
        if (ec || ::stat(directory_.c_str(), &st) != 0)
            return "cannot create the kernel cache " + directory_.string() + (ec ? ": " + ec.message() : "");
    }
    if (!S_ISDIR(st.st_mode)) return "the kernel cache " + directory_.string() + " is not a directory";
    if (st.st_uid != ::geteuid())
        return "the kernel cache " + directory_.string() + " belongs to another user (uid " + std::to_string(st.st_uid) + ")";
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return "the kernel cache " + directory_.string() + " is writable by others (chmod 700 it)";
    return "";
}

std::optional<CachedKernel> KernelDiskCache::load(const Sha256Digest& key, ImageKind kind, std::string* problem) {
    std::string why;
    std::optional<CachedKernel> kernel;
    if (!directory_.empty()) {
        const fs::path path = entry_path(key);
        if (std::optional<std::string> bytes = read_file(path, &why)) kernel = decode_entry(*bytes, key, kind, &why);
        if (kernel) touch(path);
    }
    std::lock_guard<std::mutex> hold(mutex_);
    ++(kernel ? counts_.hits : counts_.misses);
    if (!why.empty()) ++counts_.corrupt;
    if (problem) *problem = why;
    return kernel;
}

bool KernelDiskCache::store_failed(std::string why) {
    std::lock_guard<std::mutex> hold(mutex_);
    ++counts_.store_failures;
    store_problem_ = std::move(why);
    return false;
}

bool KernelDiskCache::store(const Sha256Digest& key, const CachedKernel& kernel) {
    if (directory_.empty()) return store_failed(no_directory_reason_);
    std::error_code ec;
    // A new directory is private (0700): the native tier loads code from it.
    if (fs::create_directories(directory_, ec) && !ec) fs::permissions(directory_, fs::perms::owner_all, ec);
    if (ec) return store_failed("cannot create the kernel cache " + directory_.string() + ": " + ec.message());
    const std::string bytes = encode_entry(key, kernel);
    const fs::path temp = directory_ / temp_name();
    if (std::string error = write_new_file(temp, bytes); !error.empty()) {
        fs::remove(temp, ec);
        return store_failed("cannot write to the kernel cache " + directory_.string() + ": " + error);
    }
    touch(temp);
    const fs::path path = entry_path(key);
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        const int error = errno;
        fs::remove(temp, ec);
        return store_failed("cannot rename into the kernel cache " + directory_.string() + ": " + errno_text(error));
    }
    std::lock_guard<std::mutex> hold(mutex_);
    ++counts_.stores;
    store_problem_.clear();
    if (!bytes_estimate_) {
        uint64_t total = 0;
        for (const Entry& e : scan()) total += e.bytes;
        bytes_estimate_ = total;
    } else {
        *bytes_estimate_ += bytes.size();
    }
    if (*bytes_estimate_ > max_bytes_) evict_down_to_cap(path);
    return true;
}

std::vector<KernelDiskCache::Entry> KernelDiskCache::scan() const {
    std::vector<Entry> entries;
    std::error_code ec;
    for (fs::directory_iterator it(directory_, ec), end; !ec && it != end; it.increment(ec)) {
        if (!is_entry(it->path())) continue;
        // Another process may remove a file between listing and asking.
        std::error_code gone;
        const uint64_t bytes = it->file_size(gone);
        const auto used = it->last_write_time(gone);
        if (!gone) entries.push_back(Entry{it->path(), bytes, used});
    }
    return entries;
}

void KernelDiskCache::evict_down_to_cap(const fs::path& keep) {
    std::vector<Entry> entries = scan();
    uint64_t total = 0;
    for (const Entry& e : entries) total += e.bytes;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.used != b.used ? a.used < b.used : a.path < b.path;
    });
    for (const Entry& e : entries) {
        if (total <= max_bytes_) break;
        if (e.path == keep) continue;  // just stored: about to be used
        std::error_code ec;
        fs::remove(e.path, ec);  // already gone: another process evicted it
        total -= e.bytes;
        if (!ec) ++counts_.evictions;
    }
    bytes_estimate_ = total;
    // Temporary files of writers that died.
    std::error_code ec;
    const auto now = fs::file_time_type::clock::now();
    for (fs::directory_iterator it(directory_, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code ignored;
        if (is_temp(it->path()) && now - it->last_write_time(ignored) > kStaleTemp) fs::remove(it->path(), ignored);
    }
}

void KernelDiskCache::clear() {
    std::lock_guard<std::mutex> hold(mutex_);
    for (const Entry& e : scan()) {
        std::error_code ignored;
        fs::remove(e.path, ignored);
    }
    bytes_estimate_ = 0;
}

KernelDiskCache::Stats KernelDiskCache::stats() const {
    std::lock_guard<std::mutex> hold(mutex_);
    Stats s = counts_;
    for (const Entry& e : scan()) {
        ++s.entries;
        s.bytes += e.bytes;
    }
    return s;
}

std::string KernelDiskCache::store_problem() const {
    std::lock_guard<std::mutex> hold(mutex_);
    return store_problem_;
}

uint64_t KernelDiskCache::max_bytes() const {
    std::lock_guard<std::mutex> hold(mutex_);
    return max_bytes_;
}

void KernelDiskCache::set_max_bytes(uint64_t max_bytes) {
    std::lock_guard<std::mutex> hold(mutex_);
    max_bytes_ = max_bytes;
}

}  // namespace shoal::cache
