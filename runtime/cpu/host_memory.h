// Host memory for the buffers a plan allocates (outputs, temporaries):
// uninitialised, as device memory is, and recycled. A freed block of at
// least 1 MiB is kept (up to 1 GiB in all) for a later allocation of about
// its size, so a statement run again does not page-fault and clear fresh
// memory each time (a GPU runtime's caching allocator does the same for
// device memory). Blocks of 2 MiB and more ask for transparent huge pages,
// as numpy does for its arrays.
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
