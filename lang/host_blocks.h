// Recycled blocks of host memory for large arrays: a freed block of at least
// 1 MiB is kept (up to 1 GiB in all, the oldest dropped first) for a later
// allocation of about its size, so a statement run again neither returns
// its arrays' pages to the system (munmap) nor page-faults and clears fresh
// ones (a 16 MiB result: 3-4 ms of faults against 1 ms of work). A GPU
// runtime's caching allocator does the same for device memory. Blocks of
// 2 MiB and more are 2 MiB-aligned but do not ask for transparent huge pages
// (madvise, as numpy does): where the kernel compacts memory for them on the
// first fault (THP defrag "madvise", this machine's default) a fresh 16 MiB
// result took 30 ms instead of 5, for 10% in later runs. Used by Array
// storage (lang/value.h) and by the plan buffers of the CPU executor
// (runtime/cpu/host_memory.h).
#pragma once
#include <cstddef>

namespace shoal::host_blocks {

struct Block {
    std::byte* data = nullptr;
    size_t capacity = 0;
};

// A block of at least `size` bytes (uninitialised). exact: its capacity is
// capacity_for(size) (the caller frees it knowing only its size), else
// anything in [size, 2 * size). Throws std::bad_alloc.
Block allocate(size_t size, bool exact);
// The capacity allocate(size, true) gives.
size_t capacity_for(size_t size);
// Keeps or frees a block from allocate.
void release(Block b);

}  // namespace shoal::host_blocks
