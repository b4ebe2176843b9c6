// Runtime values of the reference evaluator (and, later, what the session
// stores for its bindings).
//
// Arrays are dense, row-major (C order), immutable once built and shared by
// reference. An array of tuples is a Tuple of Arrays of equal shape (see
// types.h): the helpers at the end treat such "array-like" values uniformly.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <string>
#include <vector>

#include "memory_limit.h"
#include "host_blocks.h"
#include "types.h"

namespace shoal {

// One scalar of any Prim type.
struct Scalar {
    Prim type = Prim::Int;
    union {
        bool b;
        int32_t i;
        int64_t l;
        float f;
        double d;
    };
    Scalar() : l(0) {}

    static Scalar of_bool(bool v) { Scalar s; s.type = Prim::Bool; s.b = v; return s; }
    static Scalar of_int(int32_t v) { Scalar s; s.type = Prim::Int; s.i = v; return s; }
    static Scalar of_long(int64_t v) { Scalar s; s.type = Prim::Long; s.l = v; return s; }
    static Scalar of_float(float v) { Scalar s; s.type = Prim::Float; s.f = v; return s; }
    static Scalar of_double(double v) { Scalar s; s.type = Prim::Double; s.d = v; return s; }

    // Value converted to a wider C++ type (no checks; bool is 0/1).
    double as_double() const;
    int64_t as_long() const;
    bool as_bool() const { return type == Prim::Bool ? b : as_long() != 0; }
};

// Converts a scalar to another Prim with Shoal's conversion rules
// (float -> integer truncates toward zero; NaN -> 0; out of range saturates).
Scalar convert_scalar(const Scalar& s, Prim to);

using Shape = std::vector<int64_t>;
// Number of elements; "array of shape ... is too large" if it overflows int64.
int64_t shape_size(const Shape& s);

// Throws "array of shape ... is too large: ..." when an array of `elem` and
// `shape` may not be created: an extent beyond the int range, or more bytes
// than are left where it will live (lang/memory_limit.h: the host's memory,
// or `room`, which an executor answers for its device), before anything is
// allocated.
void check_array_size(Prim elem, const Shape& shape, const MemoryRoomQuery& room = {});
std::string shape_to_string(const Shape& s);  // "(3)", "(2, 3)"
std::string human_bytes(int64_t bytes);       // "512 bytes", "3.2 GiB"

// A byte vector whose resize() leaves new bytes uninitialised: an array
// that a kernel is about to overwrite need not be zeroed first. Its memory
// is recycled (lang/host_blocks.h): rebinding a large array and computing it
// again reuses the pages of the one it replaces.
template <class T> struct UninitialisedAllocator : std::allocator<T> {
    template <class U> struct rebind { using other = UninitialisedAllocator<U>; };
    UninitialisedAllocator() = default;
    template <class U> UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
    T* allocate(size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        return reinterpret_cast<T*>(host_blocks::allocate(n * sizeof(T), /*exact=*/true).data);
    }
    void deallocate(T* p, size_t n) noexcept {
        host_blocks::release({reinterpret_cast<std::byte*>(p), host_blocks::capacity_for(n * sizeof(T))});
    }
    template <class U> void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
    template <class U, class... A> void construct(U* p, A&&... a) { ::new (static_cast<void*>(p)) U(std::forward<A>(a)...); }
};
using ByteVector = std::vector<uint8_t, UninitialisedAllocator<uint8_t>>;

// A copy of an array's elements in another memory (a GPU's), made by an
// executor (runtime/) the first time a kernel reads the array there, so that
// it is uploaded once and released with the array. Arrays are immutable, so
// it never goes stale. Opaque to lang/.
struct ArrayCopy {
    virtual ~ArrayCopy() = default;
};

// Array's slot for that copy. Copying an Array does not copy it: a copy is
// made to be written before it is shared.
class ArrayCopySlot {
public:
    ArrayCopySlot() = default;
    ArrayCopySlot(const ArrayCopySlot&) {}
    ArrayCopySlot& operator=(const ArrayCopySlot&) { return *this; }
    const std::shared_ptr<ArrayCopy>& get() const { return copy_; }
    void set(std::shared_ptr<ArrayCopy> c) { copy_ = std::move(c); }

private:
    std::shared_ptr<ArrayCopy> copy_;
};

struct Array {
    Prim elem = Prim::Int;
    Shape shape;       // rank = shape.size(), 1..3
    ByteVector bytes;  // shape_size(shape) * prim_size(elem)
    mutable ArrayCopySlot device_copy;  // see ArrayCopy

    Array(Prim elem, Shape shape);  // zero-filled
    struct Uninitialised {};
    // Elements undefined until written: for producers that write every one.
    Array(Prim elem, Shape shape, Uninitialised);

    int rank() const { return static_cast<int>(shape.size()); }
    int64_t size() const { return shape_size(shape); }
    template <class T> T* data() { return reinterpret_cast<T*>(bytes.data()); }
    template <class T> const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }

    Scalar get(int64_t flat) const;             // element at a row-major flat index
    void set(int64_t flat, const Scalar& v);    // v must have type `elem`
};
using ArrayPtr = std::shared_ptr<Array>;

// A callable value: a closure or a (partially applied) builtin. The evaluator
// defines the concrete kinds.
struct Function {
    virtual ~Function() = default;
};

// A delayed array: a node of the compiled backend's array graph
// (docs/compiler.md). Its element type and shape are known eagerly (so shape
// errors are raised where the reference evaluator raises them); its elements
// exist only once it is forced. force() computes the array once and returns
// the same array afterwards. Code that needs host data calls shoal::force
// (eval.h) at its choke point instead of looking at a Delayed value.
struct DelayedArray {
    virtual ~DelayedArray() = default;
    virtual Prim elem() const = 0;
    virtual const Shape& shape() const = 0;
    virtual ArrayPtr force() const = 0;
    // Computes the elements where the backend keeps them (a GPU's memory)
    // without copying them to the host, raising its errors now: bindings are
    // computed this way, printing forces.
    virtual void compute() const { force(); }
    // The host array once there is one (forced, or computed on the host).
    virtual ArrayPtr host() const { return nullptr; }
    // How the array is split over a session's ranks (`:ranks`); empty: whole here.
    virtual std::string layout_description() const { return {}; }
    // Split over ranks: even a plain element or row read goes to the
    // backend (which fetches it from its owner), not to a forced whole copy.
    virtual bool distributed() const { return false; }
    // Rows `which` (ascending, of the leading axis) as an array of just those
    // rows: printing a distributed array fetches only the rows it shows.
    virtual ArrayPtr rows(const std::vector<int64_t>& which) const;
};
using DelayedPtr = std::shared_ptr<const DelayedArray>;

// Rows `which` of the leading axis of `a`, as an array of just those rows.
ArrayPtr rows_of_array(const Array& a, const std::vector<int64_t>& which);

// What a scalar means while `:emit` traces a function (codegen/emit_trace.h):
// how it is computed from the function's parameters. The evaluator computes
// with the scalar's value as usual; the symbol rides along on the Value and
// is opaque to lang/. Null outside a trace and for constants.
struct ScalarSymbol {
    virtual ~ScalarSymbol() = default;
};
using SymbolPtr = std::shared_ptr<const ScalarSymbol>;

class Value {
public:
    enum class Kind : uint8_t { Unit, Scalar, Array, Tuple, Function, String, Delayed };

    Value() : kind_(Kind::Unit) {}
    Value(Scalar s) : kind_(Kind::Scalar), scalar_(s) {}
    Value(ArrayPtr a) : kind_(Kind::Array), array_(std::move(a)) {}
    Value(std::vector<Value> elems)
        : kind_(Kind::Tuple), tuple_(std::make_shared<std::vector<Value>>(std::move(elems))) {}
    Value(std::shared_ptr<const Function> f) : kind_(Kind::Function), fn_(std::move(f)) {}
    Value(DelayedPtr d) : kind_(Kind::Delayed), delayed_(std::move(d)) {}
    // Only the member of the value's kind is set, so a copy copies only it
    // (a loop of scalar code copies values every step).
    Value(const Value& o) : kind_(o.kind_), scalar_(o.scalar_), symbol_(o.symbol_) {
        switch (kind_) {
            case Kind::Array: array_ = o.array_; break;
            case Kind::Tuple: tuple_ = o.tuple_; break;
            case Kind::Function: fn_ = o.fn_; break;
            case Kind::String: str_ = o.str_; break;
            case Kind::Delayed: delayed_ = o.delayed_; break;
            case Kind::Unit:
            case Kind::Scalar: break;
        }
    }
    Value(Value&& o) noexcept : kind_(o.kind_), scalar_(o.scalar_), symbol_(std::move(o.symbol_)) { take(o); }
    Value& operator=(const Value& o) {
        if (this != &o) *this = Value(o);
        return *this;
    }
    Value& operator=(Value&& o) noexcept {
        if (this == &o) return *this;
        drop();
        kind_ = o.kind_;
        scalar_ = o.scalar_;
        symbol_ = std::move(o.symbol_);
        take(o);
        return *this;
    }
    ~Value() = default;
    static Value string(std::string s) { Value v; v.kind_ = Kind::String; v.str_ = std::make_shared<std::string>(std::move(s)); return v; }

    Kind kind() const { return kind_; }
    bool is_unit() const { return kind_ == Kind::Unit; }
    bool is_scalar() const { return kind_ == Kind::Scalar; }
    bool is_array() const { return kind_ == Kind::Array; }
    bool is_tuple() const { return kind_ == Kind::Tuple; }
    bool is_function() const { return kind_ == Kind::Function; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_delayed() const { return kind_ == Kind::Delayed; }

    const Scalar& scalar() const { return scalar_; }
    const ArrayPtr& array() const { return array_; }
    const std::vector<Value>& tuple() const { return *tuple_; }
    const std::shared_ptr<const Function>& function() const { return fn_; }
    const std::string& str() const { return *str_; }
    const DelayedPtr& delayed() const { return delayed_; }
    // A scalar's symbol during a trace (see ScalarSymbol); null otherwise.
    const SymbolPtr& symbol() const { return symbol_; }
    Value with_symbol(SymbolPtr s) const {
        Value v = *this;
        v.symbol_ = std::move(s);
        return v;
    }

private:
    // The member of the value's kind moved from o (the only one o has set).
    void take(Value& o) noexcept {
        switch (kind_) {
            case Kind::Array: array_ = std::move(o.array_); break;
            case Kind::Tuple: tuple_ = std::move(o.tuple_); break;
            case Kind::Function: fn_ = std::move(o.fn_); break;
            case Kind::String: str_ = std::move(o.str_); break;
            case Kind::Delayed: delayed_ = std::move(o.delayed_); break;
            case Kind::Unit:
            case Kind::Scalar: break;
        }
    }
    void drop() noexcept {
        switch (kind_) {
            case Kind::Array: array_.reset(); break;
            case Kind::Tuple: tuple_.reset(); break;
            case Kind::Function: fn_.reset(); break;
            case Kind::String: str_.reset(); break;
            case Kind::Delayed: delayed_.reset(); break;
            case Kind::Unit:
            case Kind::Scalar: break;
        }
    }

    Kind kind_;
    Scalar scalar_;
    ArrayPtr array_;
    std::shared_ptr<const std::vector<Value>> tuple_;
    std::shared_ptr<const Function> fn_;
    std::shared_ptr<const std::string> str_;
    DelayedPtr delayed_;
    SymbolPtr symbol_;
};

// ---- array-like values: an Array, or a Tuple whose elements are array-like
// with one common shape (an array of tuples).
bool is_array_like(const Value& v);
// (also a Delayed array's shape, known before it is computed)
Shape array_like_shape(const Value& v);
// Whether a value holds an array split over ranks (DelayedArray::distributed).
bool distributed(const Value& v);
// Element at a row-major flat index: a Scalar, or a Tuple of them.
Value array_like_get(const Value& v, int64_t flat);

}  // namespace shoal
