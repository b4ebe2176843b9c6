#include "memory_limit.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <unistd.h>

#include "diagnostics.h"
#include "value.h"

namespace shoal {

namespace {

std::atomic<int64_t> g_memory_limit{-1};  // -1: not read from the environment yet

// Linux MemAvailable, or the free pages elsewhere; -1 if unknown.
int64_t available_host_bytes() {
    if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        long long kb = -1;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
        std::fclose(f);
        if (kb >= 0) return static_cast<int64_t>(kb) * 1024;
    }
    long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return static_cast<int64_t>(pages) * page;
    return -1;
}

// This process's resident memory (/proc/self/statm), or -1.
int64_t resident_bytes() {
    long long size = 0, resident = 0;
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return -1;
    const bool ok = std::fscanf(f, "%lld %lld", &size, &resident) == 2;
    std::fclose(f);
    return ok ? static_cast<int64_t>(resident) * ::sysconf(_SC_PAGESIZE) : -1;
}

[[noreturn]] void too_large(const Shape& shape, const std::string& why, std::vector<std::string> notes = {}) {
    user_error(ErrorKind::Runtime, Loc{}, "array of shape " + shape_to_string(shape) + " is too large: " + why,
               std::move(notes));
}

std::string held_by_shoal(const MemoryRoom& room) {
    return room.held >= 0 ? "Shoal holds " + human_bytes(room.held) : "what Shoal holds is unknown";
}

}  // namespace

MemoryRoom host_memory_room() { return MemoryRoom{"memory", available_host_bytes(), resident_bytes()}; }

int64_t parse_byte_size(const std::string& text) {
    size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == 0 || i > 18) return -1;
    int64_t n = std::stoll(text.substr(0, i));
    while (i < text.size() && text[i] == ' ') ++i;
    std::string unit;
    for (; i < text.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    int shift = 0;
    if (unit.empty() || unit == "b" || unit == "bytes") shift = 0;
    else if (unit == "k" || unit == "kib" || unit == "kb") shift = 10;
    else if (unit == "m" || unit == "mib" || unit == "mb") shift = 20;
    else if (unit == "g" || unit == "gib" || unit == "gb") shift = 30;
    else if (unit == "t" || unit == "tib" || unit == "tb") shift = 40;
    else return -1;
    if (n > (std::numeric_limits<int64_t>::max() >> shift)) return -1;
    return n << shift;
}

int64_t memory_limit() {
    int64_t v = g_memory_limit.load(std::memory_order_relaxed);
    if (v < 0) {
        v = 0;
        if (const char* env = std::getenv("SHOAL_MEMLIMIT")) v = std::max<int64_t>(0, parse_byte_size(env));
        g_memory_limit.store(v, std::memory_order_relaxed);
    }
    return v;
}

void set_memory_limit(int64_t bytes) { g_memory_limit.store(std::max<int64_t>(0, bytes), std::memory_order_relaxed); }

int64_t nested_array_bytes_limit() {
    const int64_t limit = memory_limit();
    return limit > 0 ? limit : int64_t{4} << 30;
}

void check_array_fits(int64_t elem_bytes, const Shape& shape, const MemoryRoomQuery& room_query) {
    for (int64_t extent : shape)
        if (extent > std::numeric_limits<int32_t>::max())
            too_large(shape, "an extent is larger than " + std::to_string(std::numeric_limits<int32_t>::max()));
    const int64_t n = shape_size(shape);
    if (n > std::numeric_limits<int64_t>::max() / elem_bytes) too_large(shape, "its size overflows");
    // Row operations (reverse, take, filter, gather, ...) keep one 64-bit
    // index per outermost row: count them too, or an array with no elements
    // but 2^31 rows, such as fill (2147483647, 0) 1, would be free to create
    // and then exhaust the memory.
    const int64_t rows = shape.size() < 2 ? 0 : shape[0];
    const int64_t bytes = std::max(n * elem_bytes, rows * int64_t{8});
    const std::string needs = (bytes == n * elem_bytes ? "it needs " : "its " + std::to_string(rows) + " rows need ") +
                              human_bytes(bytes) + (bytes == n * elem_bytes ? "" : " of row indices");
    const int64_t limit = memory_limit();
    if (bytes < (limit > 0 ? kAskRoomFromUnderMemlimit : kAskRoomFrom)) return;
    const MemoryRoom room = room_query ? room_query() : host_memory_room();
    if (limit > 0) {
        if (bytes > limit - std::max<int64_t>(room.held, 0))
            too_large(shape,
                      needs + ", but " + held_by_shoal(room) + " in " + room.where + " of its limit of " +
                          human_bytes(limit),
                      {"`:set memlimit N` (e.g. 8GiB) changes the limit; `:set memlimit off` lets Shoal use the "
                       "machine's memory"});
        return;
    }
    if (room.free >= 0 && bytes > room.free - room.free / 10)
        too_large(shape,
                  needs + ", but only " + human_bytes(room.free) + " of " + room.where + " is free (" +
                      held_by_shoal(room) + ")",
                  {"a tenth of the free memory is kept for the system; rebinding a large array releases it (:mem "
                   "and :env list them)"});
}

std::string without_memory_state(const std::string& message) {
    const size_t at = message.find(" is too large: ");
    if (at == std::string::npos || message.find(" but ", at) == std::string::npos) return message;
    return message.substr(0, at) + " is too large";
}

}  // namespace shoal
