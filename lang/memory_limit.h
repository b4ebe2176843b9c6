// How large an array may be: limits from the machine, not a constant.
//
// An array is refused before anything is allocated when it would not fit the
// memory actually left where it will live: the host's MemAvailable (less a
// tenth, so the system keeps some), or the GPU's free memory as its executor
// reports it (lang/ never calls CUDA: codegen asks its executor for a
// MemoryRoom). `:set memlimit N` caps what Shoal may hold instead. The
// message names the size, what is free and what Shoal holds. Because it asks
// the memory left at the moment of the allocation, the statement's own
// temporaries count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shoal {

// The memory left where an array will live.
struct MemoryRoom {
    std::string where = "memory";  // "memory" (the host), "GPU memory"
    int64_t free = -1;             // bytes that can still be allocated there (-1: unknown)
    int64_t held = -1;             // bytes Shoal holds there (-1: unknown)
};
using MemoryRoomQuery = std::function<MemoryRoom()>;

// The host: MemAvailable from /proc/meminfo; Shoal's resident memory.
MemoryRoom host_memory_room();

// `:set memlimit`: the most Shoal may hold (bytes), 0 when the limit is the
// machine's memory. Starts from the environment variable SHOAL_MEMLIMIT
// (bytes, or with a unit: 512MiB, 2GiB) if set.
int64_t memory_limit();
void set_memory_limit(int64_t bytes);  // 0: back to the machine's memory
// "4GiB", "512 MiB", "1000" -> bytes; -1 if malformed.
int64_t parse_byte_size(const std::string& text);

// Arrays at least this large ask where they live how much is left (smaller
// ones are too small to matter and too many to ask for).
constexpr int64_t kAskRoomFrom = int64_t{64} << 20;
constexpr int64_t kAskRoomFromUnderMemlimit = int64_t{1} << 20;

// The bound on an array a kernel builds inside a function (never
// materialised there, so no memory to ask): memlimit if set, else 4 GiB.
int64_t nested_array_bytes_limit();

// Throws "array of shape ... is too large: ..." (ErrorKind::Runtime, no
// location: the caller's statement gets it) when an array of `elem_bytes`-wide
// elements and `shape` may not be created in `room` (the host when null).
void check_array_fits(int64_t elem_bytes, const std::vector<int64_t>& shape, const MemoryRoomQuery& room = {});

// `message` up to the memory it names ("array of shape (n) is too large"):
// the memory left moves between two runs of one statement, the error does not.
std::string without_memory_state(const std::string& message);

}  // namespace shoal
