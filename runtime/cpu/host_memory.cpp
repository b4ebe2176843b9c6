#include "runtime/cpu/host_memory.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include <sys/mman.h>

namespace shoal::cpu {

namespace {

constexpr size_t kMinCached = size_t(1) << 20;       // smaller blocks: malloc recycles them well
constexpr size_t kMaxCachedBytes = size_t(1) << 30;  // kept in all, oldest dropped first
constexpr size_t kHugePage = size_t(2) << 20;

struct Block {
    std::byte* data = nullptr;
    size_t capacity = 0;
};

class BlockCache {
public:
    // Never destroyed: buffers may be freed during static destruction.
    static BlockCache& instance() {
        static BlockCache* cache = new BlockCache;
        return *cache;
    }

    // The smallest kept block of capacity in [size, 2 * size), or none.
    Block take(size_t size) {
        std::lock_guard lock(mutex_);
        auto best = blocks_.end();
        for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
            if (it->capacity >= size && it->capacity / 2 < size && (best == blocks_.end() || it->capacity < best->capacity))
                best = it;
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

Block allocate(size_t size) {
    if (size >= kMinCached)
        if (Block b = BlockCache::instance().take(size); b.data) return b;
    const size_t align = size >= kHugePage ? kHugePage : 64;
    const size_t capacity = (size + align - 1) / align * align;
    auto* data = static_cast<std::byte*>(std::aligned_alloc(align, capacity));
    if (!data) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (align == kHugePage) madvise(data, capacity, MADV_HUGEPAGE);  // a hint: failure changes nothing
#endif
    return {data, capacity};
}

}  // namespace

HostBytes::HostBytes(size_t size) : size_(size) {
    if (size == 0) return;
    const Block b = allocate(size);
    data_ = b.data;
    capacity_ = b.capacity;
}

HostBytes::HostBytes(HostBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

HostBytes& HostBytes::operator=(HostBytes&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
}

HostBytes::~HostBytes() { release(); }

void HostBytes::release() {
    if (!data_) return;
    if (capacity_ >= kMinCached) BlockCache::instance().keep(Block{data_, capacity_});
    else std::free(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
}

}  // namespace shoal::cpu
