// What ptxas reports about a kernel it compiled (NVRTC's log with
// --ptxas-options=--verbose), for `:compile`:
//   ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
//   ptxas info    : Function properties for saxpy
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem, ...
#pragma once
#include <string>

namespace shoal::cuda {

// -1: not reported (a PTX image has no ptxas report at all).
struct PtxasInfo {
    int registers = -1;            // per thread
    int spill_store_bytes = -1;
    int spill_load_bytes = -1;
    int stack_frame_bytes = -1;
    int static_shared_bytes = -1;  // __shared__ arrays, per block
    bool known() const { return registers >= 0; }
};

// The report for entry function `kernel` in `log`; when `kernel` is not in
// it but the log reports exactly one entry function, that one's.
PtxasInfo parse_ptxas_info(const std::string& log, const std::string& kernel);

// "10 registers, 0 B spill stores, 0 B spill loads, 256 B static shared",
// or "no ptxas report".
std::string describe(const PtxasInfo& info);

}  // namespace shoal::cuda
