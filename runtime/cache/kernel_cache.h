// The kernel cache on disk: one file per compiled kernel, named by its key,
// in a directory that several Shoal processes may share.
//
// - Key: SHA-256 over the kernel's source, every compile option, the target
//   architecture, the compiler (name and version) and Shoal's version, each
//   length-prefixed so that no two different inputs hash the same bytes.
// - Entry: kernel_cache_entry.h; written to a temporary file in the same
//   directory and renamed into place, so a reader sees a whole entry or
//   none. Anything that does not check out is a miss, rebuilt and
//   overwritten, never trusted.
// - Size cap (default 256 MiB) with least-recently-used eviction by file
//   modification time, which a hit refreshes. Files vanishing under it
//   (another process evicting) are fine.
// - A directory that cannot be created or written is not an error: loads
//   miss, stores fail, and store_problem() says why in one line.
#pragma once
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cache/kernel_cache_entry.h"

namespace shoal::cache {

Sha256Digest kernel_cache_key(const std::string& source, const std::vector<std::string>& options,
                              const std::string& target_arch, const std::string& compiler,
                              const std::string& shoal_version = SHOAL_VERSION);

class KernelDiskCache {
public:
    static constexpr uint64_t kDefaultMaxBytes = uint64_t(256) << 20;

    // SHOAL_CACHE_DIR, else $XDG_CACHE_HOME/shoal/kernels, else
    // ~/.cache/shoal/kernels; empty (and *why_not says so) when none is set.
    static std::filesystem::path default_directory(std::string* why_not = nullptr);

    // A cache in `directory` (created on the first store). An empty
    // directory gives a cache that stores nothing, with `why_not` as the reason.
    explicit KernelDiskCache(std::filesystem::path directory, uint64_t max_bytes = kDefaultMaxBytes,
                             std::string why_not = "no kernel cache directory");

    // The entry for `key` when it is present and valid. A present but
    // invalid one is counted as corrupt, and *problem (when given) says why.
    std::optional<CachedKernel> load(const Sha256Digest& key, ImageKind kind, std::string* problem = nullptr);
    // "" when the directory (made now if missing, 0700) belongs to this user
    // and no one else may write to it; else why not. Native code is loaded
    // only from such a directory: anyone who can write an entry could make
    // this process run their code.
    std::string private_problem() const;
    // False when the entry could not be written; store_problem() says why.
    bool store(const Sha256Digest& key, const CachedKernel& kernel);
    // Removes every entry (also other processes' entries: the directory is shared).
    void clear();

    struct Stats {
        size_t entries = 0;         // on disk now (a directory scan)
        uint64_t bytes = 0;         // their size
        uint64_t hits = 0;          // by this object
        uint64_t misses = 0;        // absent or invalid
        uint64_t corrupt = 0;       // invalid entries found (each is rebuilt by the caller)
        uint64_t stores = 0;
        uint64_t store_failures = 0;
        uint64_t evictions = 0;
    };
    Stats stats() const;

    // "" while stores succeed; else why the last one failed, e.g.
    // "cannot write to the kernel cache /x: Permission denied".
    std::string store_problem() const;

    const std::filesystem::path& directory() const { return directory_; }
    std::filesystem::path entry_path(const Sha256Digest& key) const;
    uint64_t max_bytes() const;
    void set_max_bytes(uint64_t max_bytes);  // evicts at the next store

private:
    struct Entry {
        std::filesystem::path path;
        uint64_t bytes;
        std::filesystem::file_time_type used;
    };
    std::vector<Entry> scan() const;
    void evict_down_to_cap(const std::filesystem::path& keep);
    bool store_failed(std::string why);

    const std::filesystem::path directory_;
    const std::string no_directory_reason_;
    mutable std::mutex mutex_;  // guards everything below
    uint64_t max_bytes_;
    std::optional<uint64_t> bytes_estimate_;  // on disk by the last scan plus this object's stores since
    std::string store_problem_;
    Stats counts_;
};

}  // namespace shoal::cache
