// Host memory for the buffers a plan allocates (outputs, temporaries):
// uninitialised, as device memory is, and recycled (lang/host_blocks.h), so
// a statement run again does not page-fault and clear fresh memory each time.
#pragma once
#include <cstddef>

namespace shoal::cpu {

class HostBytes {
public:
    HostBytes() = default;
    explicit HostBytes(size_t size);  // uninitialised
    HostBytes(HostBytes&& other) noexcept;
    HostBytes& operator=(HostBytes&& other) noexcept;
    ~HostBytes();

    std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    std::byte& operator[](size_t i) const { return data_[i]; }

private:
    void release();

    std::byte* data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

}  // namespace shoal::cpu
