// libFuzzer target: the .npy and CSV loaders on any bytes. The first byte
// picks the loader (npy header only, npy, CSV as a matrix, CSV as a vector);
// every problem must be an Io error naming the file.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "fuzz_common.h"
#include "lang/io.h"

using namespace shoal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const std::string path = "/tmp/shoal_fuzz_loader_" + std::to_string(::getpid());
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(data + 1, 1, size - 1, f);
        std::fclose(f);
    }
    const Loc loc{std::make_shared<const Source>("fuzz.shoal", std::string("load \"x\"")), 1, 1, 4};
    try {
        switch (data[0] % 4) {
            case 0: read_npy_header(path, loc); break;
            case 1: load_npy(path, loc); break;
            case 2: load_csv(path, loc, false); break;
            default: load_csv(path, loc, true); break;
        }
    } catch (const Error& e) {
        if (e.kind != ErrorKind::Io && e.kind != ErrorKind::Runtime) fuzz::finding("loader error kind", format_error(e));
        if (!e.loc.valid()) fuzz::finding("error without a location", format_error(e));
    }
    return 0;
}
