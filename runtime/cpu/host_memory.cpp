#include "runtime/cpu/host_memory.h"

#include <utility>

#include "lang/host_blocks.h"

namespace shoal::cpu {

HostBytes::HostBytes(size_t size) : size_(size) {
    if (size == 0) return;
    const host_blocks::Block b = host_blocks::allocate(size, /*exact=*/false);
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
    host_blocks::release({data_, capacity_});
    data_ = nullptr;
    size_ = capacity_ = 0;
}

}  // namespace shoal::cpu
