// The real NCCL behind NcclApi, loaded at its first use with dlopen (as
// cuBLAS is in cuda_runtime_table.cpp): Shoal starts on machines without it.
#include "runtime/cuda/nccl_api.h"

#include <dlfcn.h>

#include <mutex>
#include <vector>

#include "runtime/cpu/dl_symbol.h"

namespace shoal::cuda {

namespace {

class NcclLibrary final : public NcclApi {
public:
    // False with `why` saying what is missing.
    bool open(std::string& why) {
        std::vector<std::string> names = {"libnccl.so.2", "libnccl.so"};
#ifdef SHOAL_CUDA_LIBRARY_DIR
        for (size_t i = 0, n = names.size(); i < n; ++i) names.push_back(std::string(SHOAL_CUDA_LIBRARY_DIR) + "/" + names[i]);
#endif
        why = "libnccl.so.2 not found (NCCL: the CUDA toolkit's, or Debian's libnccl2)";
        for (const std::string& name : names) {
            void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed
            if (!lib) continue;
            auto bind = [lib](auto& slot, const char* symbol) { return bind_symbol(lib, slot, symbol); };
            if (!bind(get_version_, "ncclGetVersion") || !bind(get_unique_id_, "ncclGetUniqueId") ||
                !bind(comm_init_rank_, "ncclCommInitRank") || !bind(comm_destroy_, "ncclCommDestroy") ||
                !bind(comm_abort_, "ncclCommAbort") || !bind(comm_get_async_error_, "ncclCommGetAsyncError") ||
                !bind(all_gather_, "ncclAllGather") || !bind(send_, "ncclSend") || !bind(recv_, "ncclRecv") ||
                !bind(group_start_, "ncclGroupStart") || !bind(group_end_, "ncclGroupEnd") ||
                !bind(get_error_string_, "ncclGetErrorString")) {
                why = name + " lacks functions Shoal calls (NCCL 2.7 or later has them)";
                continue;
            }
            int code = 0;
            get_version_(&code);
            name_ = "NCCL " + nccl_version_text(code) + " (" + name + ")";
            return true;
        }
        return false;
    }

    std::string name() const override { return name_; }
    ncclResult_t getVersion(int* version) override { return get_version_(version); }
    ncclResult_t getUniqueId(ncclUniqueId* id) override { return get_unique_id_(id); }
    ncclResult_t commInitRank(ncclComm_t* comm, int ranks, ncclUniqueId id, int rank) override {
        return comm_init_rank_(comm, ranks, id, rank);
    }
    ncclResult_t commDestroy(ncclComm_t comm) override { return comm_destroy_(comm); }
    ncclResult_t commAbort(ncclComm_t comm) override { return comm_abort_(comm); }
    ncclResult_t commGetAsyncError(ncclComm_t comm, ncclResult_t* error) override {
        return comm_get_async_error_(comm, error);
    }
    ncclResult_t allGather(const void* send, void* receive, size_t count, ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) override {
        return all_gather_(send, receive, count, type, comm, stream);
    }
    ncclResult_t send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) override {
        return send_(data, count, type, peer, comm, stream);
    }
    ncclResult_t recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) override {
        return recv_(data, count, type, peer, comm, stream);
    }
    ncclResult_t groupStart() override { return group_start_(); }
    ncclResult_t groupEnd() override { return group_end_(); }
    const char* getErrorString(ncclResult_t result) override { return get_error_string_(result); }

private:
    std::string name_;
    decltype(&ncclGetVersion) get_version_ = nullptr;
    decltype(&ncclGetUniqueId) get_unique_id_ = nullptr;
    decltype(&ncclCommInitRank) comm_init_rank_ = nullptr;
    decltype(&ncclCommDestroy) comm_destroy_ = nullptr;
    decltype(&ncclCommAbort) comm_abort_ = nullptr;
    decltype(&ncclCommGetAsyncError) comm_get_async_error_ = nullptr;
    decltype(&ncclAllGather) all_gather_ = nullptr;
    decltype(&ncclSend) send_ = nullptr;
    decltype(&ncclRecv) recv_ = nullptr;
    decltype(&ncclGroupStart) group_start_ = nullptr;
    decltype(&ncclGroupEnd) group_end_ = nullptr;
    decltype(&ncclGetErrorString) get_error_string_ = nullptr;
};

}  // namespace

std::shared_ptr<NcclApi> real_nccl(std::string& why_not) {
    static std::once_flag once;
    static std::shared_ptr<NcclApi> loaded;
    static std::string why;
    std::call_once(once, [] {
        auto lib = std::make_shared<NcclLibrary>();
        if (lib->open(why)) loaded = lib;
    });
    why_not = loaded ? "" : why;
    return loaded;
}

std::string nccl_version_text(int code) {
    // NCCL_VERSION(X, Y, Z): X * 10000 + Y * 100 + Z since 2.9, X * 1000 + Y * 100 + Z before.
    const int major = code >= 10000 ? code / 10000 : code / 1000;
    const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace shoal::cuda
