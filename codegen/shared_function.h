// A function shared by its copies, never changed after it is made.
//
// A pull array's element function captures the pull arrays it reads, by
// value: copying a std::function copied the whole delayed graph below it,
// closure by closure (a tuple_of of a fused expression allocated a few
// hundred times, for every plan a loop ran). Copies of a SharedFunction share
// one closure: a reference count, one allocation when it is made.
#pragma once
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace shoal::ir {

template <class Signature> class SharedFunction;

template <class R, class... Args> class SharedFunction<R(Args...)> {
public:
    SharedFunction() = default;
    SharedFunction(std::nullptr_t) {}
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, SharedFunction> &&
                                                !std::is_same_v<std::decay_t<F>, std::nullptr_t> &&
                                                std::is_invocable_r_v<R, const std::decay_t<F>&, Args...>>>
    SharedFunction(F&& f) : fn_(std::make_shared<const Holder<std::decay_t<F>>>(std::forward<F>(f))) {}

    R operator()(Args... args) const { return fn_->call(std::forward<Args>(args)...); }
    explicit operator bool() const { return fn_ != nullptr; }

private:
    struct Callable {
        virtual ~Callable() = default;
        virtual R call(Args... args) const = 0;
    };
    template <class F> struct Holder final : Callable {
        explicit Holder(F f) : f(std::move(f)) {}
        R call(Args... args) const override { return f(std::forward<Args>(args)...); }
        F f;
    };
    std::shared_ptr<const Callable> fn_;
};

}  // namespace shoal::ir
