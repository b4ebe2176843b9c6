#include "runtime/native/native_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/cache/sha256.h"

extern char** environ;

namespace shoal::native {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string read_whole(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Runs argv with stdin from /dev/null and stdout + stderr into `log`; the
// exit status, or -1 when it could not start (*why says why).
int run_command(const std::vector<std::string>& argv, const fs::path& log, std::string* why) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    // A process group of its own: Ctrl-C at the terminal interrupts the
    // statement, not a build running in the background for a later one.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = 0;
    const int error = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) {
        if (why) *why = "cannot run " + argv[0] + ": " + std::strerror(error);
        return -1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (why) *why = argv[0] + " was killed by signal " + std::to_string(WTERMSIG(status));
    return -1;
}

// A private scratch directory, removed with the object.
struct ScratchDir {
    fs::path path;
    ScratchDir() {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/shoal-native-XXXXXX";
        if (char* made = mkdtemp(pattern.data())) path = made;
    }
    ~ScratchDir() {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

// "model name" and "flags" of the first processor: what -march=native sees.
std::string cpu_description() {
    std::ifstream in("/proc/cpuinfo");
    std::string model, flags;
    for (std::string l; std::getline(in, l) && (model.empty() || flags.empty());) {
        auto value = [&] { return l.substr(l.find(':') == std::string::npos ? l.size() : l.find(':') + 1); };
        if (model.empty() && l.rfind("model name", 0) == 0) model = value();
        if (flags.empty() && l.rfind("flags", 0) == 0) flags = value();
    }
    return model + " |" + flags;
}

}  // namespace

bool Toolchain::is_gcc() const { return identity.find("clang") == std::string::npos; }

std::vector<std::string> Toolchain::gcc_only_flags() const {
    if (!is_gcc()) return {};
    return {"-fvect-cost-model=dynamic", "-fno-gnu-unique"};
}

Toolchain probe_toolchain() {
    Toolchain t;
    std::vector<std::string> candidates;
    if (const char* cxx = std::getenv("SHOAL_CXX"); cxx && *cxx) candidates = {cxx};
    else candidates = {"c++", "g++"};
    ScratchDir scratch;
    if (scratch.path.empty()) {
        t.why_not = "cannot make a scratch directory for the C++ compiler";
        return t;
    }
    std::string why = "no C++ compiler";
    for (const std::string& c : candidates) {
        const fs::path log = scratch.path / "version.txt";
        std::string problem;
        const int status = run_command({c, "--version"}, log, &problem);
        if (status != 0) {
            why = problem.empty() ? c + " --version failed (exit status " + std::to_string(status) + ")" : problem;
            continue;
        }
        std::string first = read_whole(log);
        first = first.substr(0, first.find('\n'));
        t.compiler = c;
        t.identity = first;
        t.cpu = cpu_description();
        // -fvect-cost-model=dynamic: -O2's "very cheap" model vectorises no
        // loop whose trip count is not a known multiple of the vector width
        // (a thread range clipped at the array's end);
        // -fno-trapping-math: GCC 12 vectorises no guarded loop without it;
        // -fno-gnu-unique: no symbol that would keep an object loaded after
        // dlclose (its /proc/self/fd path is reused); -nostdlib: the code
        // needs no start files or C++ library (a fifth of the build time);
        // -lm all the same: an unversioned reference to expf would bind to
        // glibc's oldest, slowest version of it;
        // -ffp-contract=off: no fused multiply-add, the same bits as the
        // interpreter; -fno-math-errno: sqrt as an instruction.
        t.flags = {"-std=c++20", "-O2", "-march=native", "-fPIC", "-shared", "-fno-math-errno",
                   "-fno-trapping-math", "-ffp-contract=off", "-fno-exceptions", "-fno-rtti", "-nostdlib", "-w"};
        for (const std::string& f : t.gcc_only_flags()) t.flags.push_back(f);
        t.libraries = {"-lm"};
        if (const char* extra = std::getenv("SHOAL_NATIVE_FLAGS")) {
            std::istringstream words(extra);
            for (std::string w; words >> w;) t.flags.push_back(w);
        }
        return t;
    }
    t.why_not = why;
    return t;
}

namespace {

// dlopen of `image` through an anonymous memory file.
std::shared_ptr<NativeModule> load_image(const std::string& image, std::string* why) {
    const int fd = memfd_create("shoal-native", MFD_CLOEXEC);
    if (fd < 0) {
        *why = std::string("memfd_create: ") + std::strerror(errno);
        return nullptr;
    }
    size_t done = 0;
    while (done < image.size()) {
        const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            *why = std::string("writing the shared object: ") + std::strerror(errno);
            ::close(fd);
            return nullptr;
        }
        done += size_t(n);
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = dlerror();
        *why = std::string("dlopen: ") + (e ? e : "failed");
        ::close(fd);
        return nullptr;
    }
    return std::make_shared<NativeModule>(handle, fd);
}

}  // namespace

NativeModule::~NativeModule() {
    if (handle_) dlclose(handle_);
    ::close(fd_);
}

void* NativeModule::symbol(const std::string& name) const { return dlsym(handle_, name.c_str()); }

const Toolchain& system_toolchain() {
    static const Toolchain t = probe_toolchain();
    return t;
}

NativeCompiler::NativeCompiler(const Toolchain& toolchain, std::shared_ptr<cache::KernelDiskCache> disk)
    : toolchain_(toolchain), disk_(std::move(disk)) {
    if (disk_) {
        disk_problem_ = disk_->private_problem();
        if (!disk_problem_.empty()) disk_.reset();
    }
}

NativeBuild NativeCompiler::build(const std::string& source) {
    NativeBuild b;
    if (!toolchain_.why_not.empty()) {
        b.error = toolchain_.why_not;
        return b;
    }
    std::vector<std::string> options = toolchain_.flags;
    options.insert(options.end(), toolchain_.libraries.begin(), toolchain_.libraries.end());
    const cache::Sha256Digest key =
        cache::kernel_cache_key(source, options, toolchain_.cpu, toolchain_.compiler + " | " + toolchain_.identity);
    const auto t0 = Clock::now();
    if (disk_) {
        if (std::optional<cache::CachedKernel> hit = disk_->load(key, cache::ImageKind::NativeObject)) {
            std::string why;
            if ((b.module = load_image(hit->image, &why))) {
                b.cache_hit = true;
                b.load_seconds = seconds_since(t0);
                b.image_bytes = hit->image.size();
                std::lock_guard hold(mutex_);
                ++stats_.hits;
                return b;
            }
            // A valid entry dlopen refuses (another libc?): rebuilt below.
        }
    }
    ScratchDir scratch;
    if (scratch.path.empty()) {
        b.error = "cannot make a scratch directory for the C++ compiler";
        return b;
    }
    const fs::path src = scratch.path / "plan.cpp", obj = scratch.path / "plan.so", log = scratch.path / "log.txt";
    {
        std::ofstream out(src, std::ios::binary);
        out << source;
    }
    std::vector<std::string> argv = {toolchain_.compiler};
    argv.insert(argv.end(), toolchain_.flags.begin(), toolchain_.flags.end());
    argv.insert(argv.end(), {"-o", obj.string(), src.string()});
    argv.insert(argv.end(), toolchain_.libraries.begin(), toolchain_.libraries.end());  // after the source
    std::string why;
    const int status = run_command(argv, log, &why);
    b.compile_seconds = seconds_since(t0);
    {
        std::lock_guard hold(mutex_);
        stats_.compile_seconds += b.compile_seconds;
        ++(status == 0 ? stats_.compiles : stats_.compile_failures);
    }
    if (status != 0) {
        b.error = why.empty() ? toolchain_.compiler + " failed (exit status " + std::to_string(status) + "):\n" +
                                    read_whole(log)
                              : why;
        return b;
    }
    const std::string image = read_whole(obj);
    b.image_bytes = image.size();
    const auto t1 = Clock::now();
    if (!(b.module = load_image(image, &b.error))) return b;
    b.load_seconds = seconds_since(t1);
    if (disk_) disk_->store(key, cache::CachedKernel{cache::ImageKind::NativeObject, image, read_whole(log)});
    return b;
}

NativeCompiler::Stats NativeCompiler::stats() const {
    std::lock_guard hold(mutex_);
    return stats_;
}

std::shared_ptr<cache::KernelDiskCache> default_disk_cache() {
    std::string why_not;
    fs::path dir = cache::KernelDiskCache::default_directory(&why_not);
    if (dir.empty()) return nullptr;
    return std::make_shared<cache::KernelDiskCache>(dir, cache::KernelDiskCache::kDefaultMaxBytes, why_not);
}

NativeCompiler& shared_native_compiler() {
    static NativeCompiler compiler(system_toolchain(), default_disk_cache());
    return compiler;
}

}  // namespace shoal::native
