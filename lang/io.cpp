#include "io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "format.h"

namespace shoal {

// .npy stores little-endian data; we copy it to memory as is.
static_assert(std::endian::native == std::endian::little, "Shoal's .npy reader assumes a little-endian host");

namespace {

// ---------------------------------------------------------------- files

[[noreturn]] void io_error(const Loc& loc, std::string message) {
    user_error(ErrorKind::Io, loc, std::move(message));
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_for_reading(const std::string& path, const Loc& loc) {
    struct stat st;
    // fopen succeeds on a directory on Linux; say what is wrong up front.
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        io_error(loc, "cannot open " + quoted(path) + ": " + std::strerror(EISDIR));
    File f(std::fopen(path.c_str(), "rb"));
    if (!f) io_error(loc, "cannot open " + quoted(path) + ": " + std::strerror(errno));
    return f;
}

// Reads up to n bytes; fewer only at end of file.
std::string read_up_to(std::FILE* f, size_t n, const std::string& path, const Loc& loc) {
    std::string buf(n, '\0');
    size_t got = std::fread(buf.data(), 1, n, f);
    if (got < n && std::ferror(f)) io_error(loc, "cannot read " + quoted(path) + ": " + std::strerror(errno));
    buf.resize(got);
    return buf;
}

// The whole of a text file. A NUL byte (a binary file, /dev/zero) or more
// text than the array size limit allows (an endless pipe) is an error, found
// before the rest is read.
std::string read_all(std::FILE* f, const std::string& path, const Loc& loc) {
    std::string text;
    // The text is held whole: no more than memlimit, or the memory left.
    int64_t limit = memory_limit();
    if (limit == 0) {
        const MemoryRoom room = host_memory_room();
        limit = room.free >= 0 ? room.free - room.free / 10 : std::numeric_limits<int64_t>::max();
    }
    for (;;) {
        std::string chunk = read_up_to(f, 1 << 16, path, loc);
        if (chunk.empty()) return text;
        if (size_t nul = chunk.find('\0'); nul != std::string::npos)
            io_error(loc, quoted(path) + " is not a text file (it holds a NUL byte at offset " +
                              std::to_string(text.size() + nul) + ")");
        if (static_cast<int64_t>(text.size() + chunk.size()) > limit)
            io_error(loc, quoted(path) + " is too large: more than " + human_bytes(limit) +
                              (memory_limit() > 0 ? ", the limit (:set memlimit)" : ", the memory left"));
        text += chunk;
    }
}

int64_t remaining_bytes(std::FILE* f, const std::string& path, const Loc& loc) {
    struct stat st;
    long pos = std::ftell(f);
    if (::fstat(::fileno(f), &st) != 0 || pos < 0)
        io_error(loc, "cannot read " + quoted(path) + ": " + std::strerror(errno));
    return static_cast<int64_t>(st.st_size) - pos;
}

// What `path` names: a symbolic link's target (a save replaces the file it
// points to, not the link), else `path`.
std::string link_target(const std::string& path) {
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        if (char* real = ::realpath(path.c_str(), nullptr)) {
            std::string target = real;
            std::free(real);
            return target;
        }
    }
    return path;
}

// A new name beside `target` for the file a save writes before renaming it.
std::string temporary_beside(const std::string& target) {
    static std::atomic<unsigned> counter{0};
    return target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// Writes `pieces` to a temporary file next to `path`, then renames it over
// `path`: a reader never sees a half-written file, and a failed save leaves
// the old file intact.
// An existing device, FIFO or socket (/dev/stdout) is written in place:
// renaming a file over it would replace it. A symbolic link is followed.
void write_atomically(const std::string& path, const std::vector<std::string_view>& pieces, const Loc& loc) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) io_error(loc, "cannot write " + quoted(path) + ": " + std::strerror(EISDIR));
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (!f) io_error(loc, "cannot write " + quoted(path) + ": " + std::strerror(errno));
        int err = 0;
        for (std::string_view p : pieces)
            if (!err && !p.empty() && std::fwrite(p.data(), 1, p.size(), f) != p.size()) err = errno;
        if (std::fclose(f) != 0 && !err) err = errno;
        if (err) io_error(loc, "cannot write " + quoted(path) + ": " + std::strerror(err));
        return;
    }
    const std::string target = link_target(path);
    const std::string tmp = temporary_beside(target);
    auto fail = [&](int err) {
        std::remove(tmp.c_str());
        io_error(loc, "cannot write " + quoted(path) + ": " + std::strerror(err));
    };
    std::FILE* f = std::fopen(tmp.c_str(), "wbx");  // x: never clobber an existing file
    if (!f) {
        // The file exists, so the failing step is the temporary one beside it
        // (a directory one may not create files in, such as /proc): say so.
        const int err = errno;
        const bool exists = ::stat(target.c_str(), &st) == 0;
        io_error(loc, "cannot write " + quoted(path) + ": " +
                          (exists ? "cannot create a temporary file beside it: " : "") + std::strerror(err));
    }
    int err = 0;
    for (std::string_view p : pieces)
        if (!err && !p.empty() && std::fwrite(p.data(), 1, p.size(), f) != p.size()) err = errno;
    if (std::fclose(f) != 0 && !err) err = errno;  // fclose flushes: a full disk shows here
    if (err) fail(err);
    if (std::rename(tmp.c_str(), target.c_str()) != 0) fail(errno);
}

// ---------------------------------------------------------------- .npy header

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kMaxHeaderSize = 1 << 20;  // a sane .npy header is < 1 KiB
constexpr size_t kAlign = 64;               // numpy aligns the data to 64 bytes
constexpr size_t kGrowthAxisDigits = 21;    // numpy pads for in-place growth of the shape

// A value in the header's Python dict literal that we understand.
struct PyValue {
    enum Kind { Str, Bool, Ints, Other } kind = Other;
    std::string str;
    bool flag = false;
    std::vector<int64_t> ints;
};

// Parses the header, a Python dict literal such as
//   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// tolerating any spacing, key order and trailing commas.
class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& path, const Loc& loc)
        : s_(text), path_(path), loc_(loc) {}

    std::vector<std::pair<std::string, PyValue>> dict() {
        std::vector<std::pair<std::string, PyValue>> entries;
        expect('{');
        while (!accept('}')) {
            std::string key = string_literal();
            expect(':');
            entries.emplace_back(key, value());
            if (!accept(',')) {
                expect('}');
                break;
            }
        }
        return entries;
    }

private:
    [[noreturn]] void fail(const std::string& what) {
        io_error(loc_, quoted(path_) + ": malformed .npy header: " + what);
    }
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r' || s_[pos_] == '\n'))
            ++pos_;
    }
    char peek() {
        skip_space();
        return pos_ < s_.size() ? s_[pos_] : '\0';
    }
    bool accept(char c) {
        if (peek() != c) return false;
        ++pos_;
        return true;
    }
    void expect(char c) {
        if (!accept(c)) fail(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    }
    bool accept_word(std::string_view w) {
        skip_space();
        if (s_.substr(pos_, w.size()) != w) return false;
        pos_ += w.size();
        return true;
    }

    std::string string_literal() {
        char q = peek();
        if (q != '\'' && q != '"') fail("expected a quoted key at offset " + std::to_string(pos_));
        ++pos_;
        std::string out;
        while (pos_ < s_.size() && s_[pos_] != q) {
            if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
            out += s_[pos_++];
        }
        if (pos_ >= s_.size()) fail("unterminated string");
        ++pos_;
        return out;
    }

    int64_t integer() {
        skip_space();
        int64_t v = 0;
        auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
        if (ec != std::errc() || v < 0) fail("bad extent in shape at offset " + std::to_string(pos_));
        pos_ = static_cast<size_t>(end - s_.data());
        accept('L');  // Python 2 wrote long integers as 3L
        return v;
    }

    PyValue value() {
        PyValue v;
        char c = peek();
        if (c == '\'' || c == '"') {
            v.kind = PyValue::Str;
            v.str = string_literal();
        } else if (accept_word("True")) {
            v.kind = PyValue::Bool;
            v.flag = true;
        } else if (accept_word("False")) {
            v.kind = PyValue::Bool;
        } else if (accept('(')) {
            v.kind = PyValue::Ints;
            while (!accept(')')) {
                v.ints.push_back(integer());
                if (!accept(',')) {
                    expect(')');
                    break;
                }
            }
        } else {
            skip_other();  // e.g. a structured dtype's list: kept as Other
        }
        return v;
    }

    // Skips a value we do not model, up to the ',' or '}' that ends it.
    void skip_other() {
        int depth = 0;
        while (pos_ < s_.size()) {
            char c = s_[pos_];
            if (c == '\'' || c == '"') {
                string_literal();
                continue;
            }
            if ((c == ',' || c == ']' || c == ')' || c == '}') && depth == 0) return;
            if (c == '[' || c == '(' || c == '{') ++depth;
            if (c == ']' || c == ')' || c == '}') --depth;
            ++pos_;
        }
    }

    std::string_view s_;
    size_t pos_ = 0;
    const std::string& path_;
    const Loc& loc_;
};

const char* npy_descr(Prim p) {
    switch (p) {
        case Prim::Bool: return "|b1";
        case Prim::Int: return "<i4";
        case Prim::Long: return "<i8";
        case Prim::Float: return "<f4";
        case Prim::Double: return "<f8";
    }
    return "?";
}

const char* numpy_name(Prim p) {
    switch (p) {
        case Prim::Bool: return "bool";
        case Prim::Int: return "int32";
        case Prim::Long: return "int64";
        case Prim::Float: return "float32";
        case Prim::Double: return "float64";
    }
    return "?";
}

std::optional<Prim> prim_of_type_code(std::string_view code) {
    if (code == "b1") return Prim::Bool;
    if (code == "i4") return Prim::Int;
    if (code == "i8") return Prim::Long;
    if (code == "f4") return Prim::Float;
    if (code == "f8") return Prim::Double;
    return std::nullopt;
}

Prim parse_descr(const PyValue& v, const std::string& path, const Loc& loc) {
    const std::string supported = " (Shoal reads bool, int32, int64, float32, float64)";
    if (v.kind != PyValue::Str) io_error(loc, quoted(path) + ": unsupported dtype (structured arrays are not supported)");
    const std::string& d = v.str;
    // '<' little-endian, '|' not applicable (one byte), '=' native (little here).
    std::optional<Prim> p = d.size() == 3 ? prim_of_type_code(std::string_view(d).substr(1)) : std::nullopt;
    if (p && d[0] == '>' && *p != Prim::Bool)
        io_error(loc, quoted(path) + ": big-endian dtype '" + d + "' is not supported (Shoal reads little-endian data)");
    if (!p || (d[0] != '<' && d[0] != '|' && d[0] != '=' && d[0] != '>'))
        io_error(loc, quoted(path) + ": unsupported dtype '" + d + "'" + supported);
    return *p;
}

Shape parse_shape(const PyValue& v, const std::string& path, const Loc& loc) {
    if (v.kind != PyValue::Ints) io_error(loc, quoted(path) + ": malformed .npy header: 'shape' is not a tuple");
    Shape shape(v.ints.begin(), v.ints.end());
    if (shape.empty())
        io_error(loc, quoted(path) + " holds a 0-dimensional array (a scalar); Shoal arrays have rank 1 to 3");
    if (shape.size() > 3)
        io_error(loc, quoted(path) + " holds an array of rank " + std::to_string(shape.size()) + " (shape " +
                          shape_to_string(shape) + "); Shoal arrays have rank 1 to 3");
    return shape;
}

NpyHeader interpret_header(std::string_view text, const std::string& path, const Loc& loc) {
    const PyValue* descr = nullptr;
    const PyValue* fortran = nullptr;
    const PyValue* shape = nullptr;
    auto entries = HeaderParser(text, path, loc).dict();
    for (const auto& [key, value] : entries) {
        if (key == "descr") descr = &value;
        if (key == "fortran_order") fortran = &value;
        if (key == "shape") shape = &value;
    }
    for (auto [v, name] : {std::pair{descr, "descr"}, {fortran, "fortran_order"}, {shape, "shape"}})
        if (!v) io_error(loc, quoted(path) + ": malformed .npy header: no '" + name + "' key");
    NpyHeader h{parse_descr(*descr, path, loc), parse_shape(*shape, path, loc)};
    if (fortran->kind != PyValue::Bool)
        io_error(loc, quoted(path) + ": malformed .npy header: 'fortran_order' is not True or False");
    if (fortran->flag && h.shape.size() > 1)  // a rank-1 array is the same in either order
        io_error(loc, quoted(path) + " is stored in Fortran order; Shoal reads C-order arrays "
                                     "(save numpy.ascontiguousarray(a) instead)");
    return h;
}

uint32_t little_endian(const std::string& bytes, size_t at, size_t width) {
    uint32_t v = 0;
    for (size_t k = 0; k < width; ++k) v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + k])) << (8 * k);
    return v;
}

// Reads the preamble and header; leaves `f` at the first data byte.
NpyHeader read_header(std::FILE* f, const std::string& path, const Loc& loc) {
    std::string pre = read_up_to(f, kMagicSize + 2, path, loc);
    if (pre.size() < kMagicSize || pre.compare(0, kMagicSize, kMagic) != 0)
        io_error(loc, quoted(path) + " is not a .npy file (bad magic)");
    if (pre.size() < kMagicSize + 2) io_error(loc, quoted(path) + ": truncated .npy header");
    int major = static_cast<uint8_t>(pre[6]), minor = static_cast<uint8_t>(pre[7]);
    if (major < 1 || major > 3)
        io_error(loc, quoted(path) + ": unsupported .npy version " + std::to_string(major) + "." +
                          std::to_string(minor) + " (Shoal reads 1.0 to 3.0)");
    size_t len_width = major == 1 ? 2 : 4;
    std::string len_bytes = read_up_to(f, len_width, path, loc);
    if (len_bytes.size() < len_width) io_error(loc, quoted(path) + ": truncated .npy header");
    size_t header_len = little_endian(len_bytes, 0, len_width);
    if (header_len > kMaxHeaderSize)
        io_error(loc, quoted(path) + ": .npy header of " + std::to_string(header_len) + " bytes is too long");
    std::string header = read_up_to(f, header_len, path, loc);
    if (header.size() < header_len)
        io_error(loc, quoted(path) + ": truncated .npy header (expected " + std::to_string(header_len) +
                          " bytes, found " + std::to_string(header.size()) + ")");
    return interpret_header(header, path, loc);
}

// Bytes of data the header promises, or an error when that overflows.
int64_t data_bytes(const NpyHeader& h, const std::string& path, const Loc& loc) {
    int64_t n = static_cast<int64_t>(prim_size(h.elem));
    for (int64_t extent : h.shape) {
        if (extent != 0 && n > std::numeric_limits<int64_t>::max() / extent)
            io_error(loc, quoted(path) + ": shape " + shape_to_string(h.shape) + " is too large");
        n *= extent;
    }
    return n;
}

std::string npy_header_text(Prim elem, const Shape& dims) {
    std::string shape = "(";
    for (size_t k = 0; k < dims.size(); ++k) shape += (k ? ", " : "") + std::to_string(dims[k]);
    shape += dims.size() == 1 ? ",)" : ")";
    std::string dict = std::string("{'descr': '") + npy_descr(elem) + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
    // Byte-for-byte what numpy writes: room for the first extent to grow,
    // then spaces and a newline up to a multiple of 64 bytes in all.
    dict.append(kGrowthAxisDigits - std::min(kGrowthAxisDigits, std::to_string(dims[0]).size()), ' ');
    size_t used = kMagicSize + 2 + 2 + dict.size() + 1;
    dict.append((kAlign - used % kAlign) % kAlign, ' ');
    return dict + "\n";
}

// ---------------------------------------------------------------- CSV

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    for (;;) {
        size_t at = s.find(sep);
        parts.push_back(s.substr(0, at));
        if (at == std::string_view::npos) return parts;
        s.remove_prefix(at + 1);
    }
}

double parse_field(std::string_view field, const std::string& where, const Loc& loc) {
    field = trim(field);
    if (field.empty()) io_error(loc, where + ": empty field");
    std::string_view digits = field;
    if (digits.size() > 1 && digits[0] == '+' && digits[1] != '-') digits.remove_prefix(1);  // from_chars rejects '+'
    double v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec == std::errc::result_out_of_range)
        io_error(loc, where + ": '" + std::string(field) + "' is out of range for a double");
    if (ec != std::errc() || end != digits.data() + digits.size())
        io_error(loc, where + ": '" + std::string(field) + "' is not a number");
    return v;
}

std::string csv_field(const Scalar& s) {
    if (s.type == Prim::Bool) return s.b ? "1" : "0";  // so that loadCsv reads it back
    return format_scalar(s);
}

}  // namespace

// ---------------------------------------------------------------- public

NpyHeader read_npy_header(const std::string& path, const Loc& loc) {
    File f = open_for_reading(path, loc);
    return read_header(f.get(), path, loc);
}

ArrayPtr load_npy(const std::string& path, const Loc& loc, int64_t first_row, int64_t rows) {
    File f = open_for_reading(path, loc);
    NpyHeader h = read_header(f.get(), path, loc);
    const int64_t all_rows = h.shape.empty() ? 1 : h.shape[0];
    int64_t expected = data_bytes(h, path, loc);
    int64_t actual = remaining_bytes(f.get(), path, loc);
    // Check before allocating: a corrupt header must not cause a huge allocation.
    if (actual < expected)
        io_error(loc, quoted(path) + " is truncated: shape " + shape_to_string(h.shape) + " of " +
                          numpy_name(h.elem) + " needs " + std::to_string(expected) + " bytes of data, the file has " +
                          std::to_string(actual));
    if (rows >= 0 && !h.shape.empty()) {  // rows [first_row, first_row + rows) only
        SHOAL_INTERNAL_ASSERT(first_row >= 0 && first_row + rows <= all_rows, "load_npy: rows outside the file's");
        if (first_row > 0 && ::fseeko(f.get(), static_cast<off_t>(expected / std::max<int64_t>(all_rows, 1) * first_row),
                                      SEEK_CUR) != 0)
            io_error(loc, "cannot read " + quoted(path) + ": " + std::strerror(errno));
        h.shape[0] = rows;
    }
    try {  // an extent beyond int, or more than the memory left: named with the file
        check_array_size(h.elem, h.shape);
    } catch (const Error& e) {
        io_error(loc, quoted(path) + ": " + e.message);
    }
    auto a = std::make_shared<Array>(h.elem, h.shape);
    if (!a->bytes.empty() && std::fread(a->bytes.data(), 1, a->bytes.size(), f.get()) != a->bytes.size())
        io_error(loc, "cannot read " + quoted(path) + ": " + std::strerror(errno));
    if (h.elem == Prim::Bool)  // numpy writes 0/1, but keep our invariant for any file
        for (uint8_t& b : a->bytes) b = b != 0;
    return a;
}

// The bytes before a .npy file's data: magic, version 1.0, the header.
std::string npy_preamble(Prim elem, const Shape& shape) {
    std::string header = npy_header_text(elem, shape);
    std::string preamble(kMagic, kMagicSize);
    preamble += '\x01';
    preamble += '\x00';
    preamble += static_cast<char>(header.size() & 0xff);
    preamble += static_cast<char>(header.size() >> 8);
    return preamble + header;
}

void save_npy(const std::string& path, const Array& a, const Loc& loc) {
    SHOAL_INTERNAL_ASSERT(a.rank() >= 1 && a.rank() <= 3, "save_npy of an array of rank " + std::to_string(a.rank()));
    std::string_view data(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
    write_atomically(path, {npy_preamble(a.elem, a.shape), data}, loc);
}

NpyInParts begin_npy_in_parts(const std::string& path, Prim elem, const Shape& shape, const Loc& loc) {
    SHOAL_INTERNAL_ASSERT(!shape.empty() && shape.size() <= 3, "a .npy file in parts of rank " + std::to_string(shape.size()));
    NpyInParts file;
    file.path = path;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return file;  // a device, a FIFO: written whole
    file.target = link_target(path);
    file.temporary = temporary_beside(file.target);
    const std::string preamble = npy_preamble(elem, shape);
    file.data_offset = static_cast<int64_t>(preamble.size());
    int64_t bytes = file.data_offset + static_cast<int64_t>(prim_size(elem)) * shape_size(shape);
    const int fd = ::open(file.temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
    int err = fd < 0 ? errno : 0;
    if (!err && (::pwrite(fd, preamble.data(), preamble.size(), 0) != static_cast<ssize_t>(preamble.size()) ||
                 ::ftruncate(fd, static_cast<off_t>(bytes)) != 0))
        err = errno;
    if (fd >= 0 && ::close(fd) != 0 && !err) err = errno;
    if (err) {
        std::remove(file.temporary.c_str());
        io_error(loc, "cannot write " + quoted(path) + ": " + std::strerror(err));
    }
    return file;
}

void write_npy_part(const NpyInParts& file, int64_t offset, const void* data, int64_t bytes, const Loc& loc) {
    const int fd = ::open(file.temporary.c_str(), O_WRONLY);
    int err = fd < 0 ? errno : 0;
    for (int64_t done = 0; !err && done < bytes;) {
        const ssize_t n = ::pwrite(fd, static_cast<const char*>(data) + done, static_cast<size_t>(bytes - done),
                                   static_cast<off_t>(file.data_offset + offset + done));
        if (n <= 0) err = n < 0 ? errno : EIO;
        else done += n;
    }
    if (fd >= 0 && ::close(fd) != 0 && !err) err = errno;  // a full disk may show here
    if (err) io_error(loc, "cannot write " + quoted(file.path) + ": " + std::strerror(err));
}

void end_npy_in_parts(const NpyInParts& file, bool keep, const Loc& loc) {
    if (!keep || std::rename(file.temporary.c_str(), file.target.c_str()) != 0) {
        const int err = errno;
        std::remove(file.temporary.c_str());
        if (keep) io_error(loc, "cannot write " + quoted(file.path) + ": " + std::strerror(err));
    }
}

namespace {

std::string plural(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

// The fields of a CSV line. A field may be quoted, as spreadsheets and
// pandas write them: "1.5" is read as 1.5 (as pandas reads it), "" inside
// stands for one quote, and a comma inside does not split.
std::vector<std::string> csv_fields(std::string_view line, const std::string& where, const Loc& loc) {
    std::vector<std::string> fields;
    auto fail = [&](const std::string& what) {
        io_error(loc, where + ", field " + std::to_string(fields.size() + 1) + ": " + what);
    };
    size_t i = 0;
    for (;;) {
        std::string field;
        size_t end = std::min(line.find(',', i), line.size());
        if (std::string_view start = trim(line.substr(i)); !start.empty() && start.front() == '"') {
            const size_t open = static_cast<size_t>(start.data() - line.data());
            for (i = open + 1;; ++i) {
                if (i >= line.size()) fail("the quote at column " + std::to_string(open + 1) + " is never closed");
                if (line[i] == '"' && (i + 1 == line.size() || line[i + 1] != '"')) break;
                if (line[i] == '"') ++i;  // "" is one quote
                field += line[i];
            }
            end = std::min(line.find(',', i), line.size());
            if (std::string_view rest = trim(line.substr(i + 1, end - i - 1)); !rest.empty())
                fail("expected ',' after the closing quote, found '" + std::string(rest) + "'");
        } else {
            field = line.substr(i, end - i);
        }
        fields.push_back(std::move(field));
        if (end == line.size()) return fields;
        i = end + 1;
    }
}

// Whether no field of a line reads as a number: a header ("x,y,label").
bool is_header(const std::vector<std::string>& fields) {
    for (std::string_view f : fields) {
        f = trim(f);
        if (f.empty()) return false;
        char* end = nullptr;
        const std::string text(f);
        std::strtod(text.c_str(), &end);
        if (end != text.c_str()) return false;  // starts like a number: data (perhaps malformed)
    }
    return true;
}

}  // namespace

ArrayPtr load_csv(const std::string& path, const Loc& loc, bool vector) {
    File f = open_for_reading(path, loc);
    std::string text = read_all(f.get(), path, loc);
    std::string_view body = text;
    if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);  // UTF-8 byte order mark
    std::vector<double> values;
    size_t cols = 0, rows = 0;
    int first_line = 0;
    bool first = true;
    std::vector<std::string_view> lines = split(body, '\n');
    for (size_t k = 0; k < lines.size(); ++k) {
        if (trim(lines[k]).empty()) continue;  // blank lines (and the final newline) carry no row
        int line_no = static_cast<int>(k) + 1;
        const std::string where = quoted(path) + " line " + std::to_string(line_no);
        std::vector<std::string> fields = csv_fields(lines[k], where, loc);
        // A first line with no number in it is a header: skipped.
        if (std::exchange(first, false) && is_header(fields)) continue;
        if (rows == 0) {
            cols = fields.size();
            first_line = line_no;
            if (vector && cols != 1)
                io_error(loc, where + " has " +
                                  plural(cols, "field", "fields") +
                                  ": loadCsv1 reads one value per line (use loadCsv for a matrix)");
        } else if (fields.size() != cols) {
            io_error(loc, where + " has " +
                              plural(fields.size(), "field", "fields") + ", but line " + std::to_string(first_line) +
                              " has " + std::to_string(cols));
        }
        for (size_t c = 0; c < fields.size(); ++c)
            values.push_back(parse_field(fields[c], where + ", field " + std::to_string(c + 1), loc));
        ++rows;
    }
    if (rows == 0) io_error(loc, quoted(path) + " is empty (no rows of numbers)");
    const Shape shape = vector ? Shape{static_cast<int64_t>(rows)}
                               : Shape{static_cast<int64_t>(rows), static_cast<int64_t>(cols)};
    auto a = std::make_shared<Array>(Prim::Double, shape);
    std::memcpy(a->bytes.data(), values.data(), values.size() * sizeof(double));
    return a;
}

void save_csv(const std::string& path, const Array& a, const Loc& loc) {
    if (a.rank() != 1 && a.rank() != 2)
        io_error(loc, "saveCsv writes rank 1 or 2 arrays, not shape " + shape_to_string(a.shape) + " (to " +
                          quoted(path) + ")");
    int64_t rows = a.shape[0];
    int64_t cols = a.rank() == 2 ? a.shape[1] : 1;
    std::string text;
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            if (c) text += ',';
            text += csv_field(a.get(r * cols + c));
        }
        text += '\n';
    }
    write_atomically(path, {text}, loc);
}

}  // namespace shoal
