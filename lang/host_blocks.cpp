#include "lang/host_blocks.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace shoal::host_blocks {

namespace {

constexpr size_t kMinCached = size_t(1) << 20;       // smaller blocks: malloc recycles them well
constexpr size_t kMaxCachedBytes = size_t(1) << 30;  // kept in all, oldest dropped first
constexpr size_t kHugePage = size_t(2) << 20;

class BlockCache {
public:
    // Never destroyed: arrays may be freed during static destruction.
    static BlockCache& instance() {
        static BlockCache* cache = new BlockCache;
        return *cache;
    }

    // The smallest kept block of capacity exactly `capacity` (exact) or in
    // [size, 2 * size), or none.
    Block take(size_t size, size_t capacity, bool exact) {
        std::lock_guard lock(mutex_);
        auto best = blocks_.end();
        for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
            const bool fits = exact ? it->capacity == capacity : it->capacity >= size && it->capacity / 2 < size;
            if (fits && (best == blocks_.end() || it->capacity < best->capacity)) best = it;
        }
        if (best == blocks_.end()) return {};
        const Block b = *best;
        blocks_.erase(best);
        bytes_ -= b.capacity;
        return b;
    }

    void keep(Block b) {
        std::lock_guard lock(mutex_);
        blocks_.push_back(b);
        bytes_ += b.capacity;
        while (bytes_ > kMaxCachedBytes) {
            bytes_ -= blocks_.front().capacity;
            std::free(blocks_.front().data);
            blocks_.erase(blocks_.begin());
        }
    }

private:
    std::mutex mutex_;
    std::vector<Block> blocks_;  // oldest first
    size_t bytes_ = 0;
};

size_t alignment_for(size_t size) { return size >= kHugePage ? kHugePage : 64; }

}  // namespace

size_t capacity_for(size_t size) {
    const size_t align = alignment_for(size);
    return size == 0 ? align : (size + align - 1) / align * align;
}

Block allocate(size_t size, bool exact) {
    const size_t capacity = capacity_for(size);
    if (size >= kMinCached)
        if (Block b = BlockCache::instance().take(size, capacity, exact); b.data) return b;
    const size_t align = alignment_for(size);
    auto* data = static_cast<std::byte*>(std::aligned_alloc(align, capacity));
    if (!data) throw std::bad_alloc();
    return {data, capacity};
}

void release(Block b) {
    if (!b.data) return;
    if (b.capacity >= kMinCached) BlockCache::instance().keep(b);
    else std::free(b.data);
}

}  // namespace shoal::host_blocks
