// A map with a cap that forgets its least recently used entry (every cache
// of a long session is bounded: the plan cache, the kernel caches, the native
// objects kept open, the executors' per-plan maps; `:cache` shows each with
// its cap). find() and insert() count as a use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <utility>

namespace shoal {

template <class Key, class Value>
class LruMap {
public:
    explicit LruMap(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

    // The entry of `key`, now the most recently used; nullptr if absent.
    Value* find(const Key& key) {
        auto it = index_.find(key);
        if (it == index_.end()) return nullptr;
        order_.splice(order_.begin(), order_, it->second);
        return &it->second->second;
    }
    // Sets `key`'s entry (the most recently used), forgetting the least
    // recently used entries beyond the cap.
    Value& insert(const Key& key, Value value) {
        if (Value* v = find(key)) {
            *v = std::move(value);
            return *v;
        }
        order_.emplace_front(key, std::move(value));
        index_.emplace(key, order_.begin());
        while (order_.size() > capacity_) {
            index_.erase(order_.back().first);
            order_.pop_back();
            ++evictions_;
        }
        return order_.front().second;
    }
    bool erase(const Key& key) {
        auto it = index_.find(key);
        if (it == index_.end()) return false;
        order_.erase(it->second);
        index_.erase(it);
        return true;
    }
    void clear() {
        order_.clear();
        index_.clear();
    }
    size_t size() const { return order_.size(); }
    size_t capacity() const { return capacity_; }
    uint64_t evictions() const { return evictions_; }
    // Most recently used first.
    auto begin() const { return order_.begin(); }
    auto end() const { return order_.end(); }
    auto begin() { return order_.begin(); }
    auto end() { return order_.end(); }

private:
    size_t capacity_;
    uint64_t evictions_ = 0;
    std::list<std::pair<Key, Value>> order_;  // most recently used first
    std::map<Key, typename std::list<std::pair<Key, Value>>::iterator> index_;
};

}  // namespace shoal
