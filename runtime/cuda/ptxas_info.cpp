#include "runtime/cuda/ptxas_info.h"

#include <cctype>
#include <map>
#include <sstream>

namespace shoal::cuda {

namespace {

// The integer right before `suffix` in `line` ("256" in "256 bytes smem"); -1 if absent.
int number_before(const std::string& line, const std::string& suffix) {
    size_t end = line.find(suffix);
    if (end == std::string::npos) return -1;
    size_t start = end;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(line[start - 1]))) --start;
    return start == end ? -1 : std::stoi(line.substr(start, end - start));
}

// The text between the first pair of single quotes after `marker`, or "".
std::string quoted_after(const std::string& line, const std::string& marker) {
    size_t at = line.find(marker);
    if (at == std::string::npos) return "";
    size_t open = line.find('\'', at + marker.size());
    size_t close = open == std::string::npos ? open : line.find('\'', open + 1);
    return close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

std::string word_after(const std::string& line, const std::string& marker) {
    size_t at = line.find(marker);
    if (at == std::string::npos) return "";
    std::istringstream rest(line.substr(at + marker.size()));
    std::string word;
    rest >> word;
    return word;
}

}  // namespace

PtxasInfo parse_ptxas_info(const std::string& log, const std::string& kernel) {
    std::map<std::string, PtxasInfo> entries;
    std::string entry;       // the entry function being reported
    std::string properties;  // whose "Function properties" follow (device functions have them too)
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("ptxas", 0) != 0) continue;
        if (std::string name = quoted_after(line, "Compiling entry function"); !name.empty()) {
            entry = name;
            entries[entry];
        } else if (std::string name = word_after(line, "Function properties for "); !name.empty()) {
            properties = name;
        } else if (!entry.empty() && properties == entry && line.find("bytes stack frame") != std::string::npos) {
            PtxasInfo& info = entries[entry];
            info.stack_frame_bytes = number_before(line, " bytes stack frame");
            info.spill_store_bytes = number_before(line, " bytes spill stores");
            info.spill_load_bytes = number_before(line, " bytes spill loads");
        } else if (!entry.empty() && line.find("Used ") != std::string::npos &&
                   line.find(" registers") != std::string::npos) {
            PtxasInfo& info = entries[entry];
            info.registers = number_before(line, " registers");
            // ptxas leaves smem out when a kernel has no shared memory.
            int smem = number_before(line, " bytes smem");
            info.static_shared_bytes = smem < 0 ? 0 : smem;
        }
    }
    if (auto it = entries.find(kernel); it != entries.end()) return it->second;
    return entries.size() == 1 ? entries.begin()->second : PtxasInfo{};
}

std::string describe(const PtxasInfo& info) {
    if (!info.known()) return "no ptxas report";
    std::ostringstream out;
    out << info.registers << " registers";
    if (info.spill_store_bytes >= 0)
        out << ", " << info.spill_store_bytes << " B spill stores, " << info.spill_load_bytes << " B spill loads";
    if (info.static_shared_bytes >= 0) out << ", " << info.static_shared_bytes << " B static shared";
    return out.str();
}

}  // namespace shoal::cuda
