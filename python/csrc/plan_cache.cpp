#include "plan_cache.h"

#include <stdexcept>
#include <string>

namespace fftconv::torch_ext {

namespace {

void mix(std::size_t& h, std::uint64_t v) {
  h ^= static_cast<std::size_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
}

}  // namespace

std::size_t PlanKeyHash::operator()(const PlanKey& k) const noexcept {
  const ConvDesc& d = k.desc;
  std::size_t h = 0;
  for (std::int64_t v : {d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.pad_h, d.pad_w, d.stride_h,
                         d.stride_w, d.dil_h, d.dil_w, d.groups}) {
    mix(h, static_cast<std::uint64_t>(v));
  }
  mix(h, static_cast<std::uint64_t>(d.dtype));
  mix(h, static_cast<std::uint64_t>(d.border));
  mix(h, static_cast<std::uint64_t>(k.pass));
  mix(h, static_cast<std::uint64_t>(k.algo));
  mix(h, reinterpret_cast<std::uintptr_t>(k.filter));
  return h;
}

bool FilterIdentity::same(const c10::StorageImpl* t_storage, const void* t_data,
                          std::uint32_t t_version) const {
  // The weak reference keeps the StorageImpl's address from being reused, so an unexpired one at
  // the same address is the same storage.
  return !storage.expired() && storage._unsafe_get_target() == t_storage && data == t_data &&
         version == t_version;
}

std::shared_ptr<PlanEntry> PlanCache::find(const PlanKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

std::shared_ptr<PlanEntry> PlanCache::insert(const PlanKey& key,
                                             std::shared_ptr<PlanEntry> entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(key);
  if (it != index_.end()) {
    // Another thread built the same plan meanwhile: keep the one already shared.
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(key, std::move(entry));
  index_.emplace(key, lru_.begin());
  evict_locked();
  return lru_.front().second;
}

void PlanCache::evict_locked() {
  while (lru_.size() > max_size_ && !lru_.empty()) {
    index_.erase(lru_.back().first);
    lru_.pop_back();  // a call still using the entry holds its own shared_ptr
  }
}

std::size_t PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

std::vector<std::string> PlanCache::describe() const {
  std::vector<std::shared_ptr<PlanEntry>> entries;
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Item& item : lru_) {
      const PlanKey& k = item.first;
      lines.push_back(k.desc.to_string() + " pass=" + pass_name(k.pass) + " algo=" +
                      algo_name(k.algo) + (k.filter ? " (kept filter)" : "") + ": ");
      entries.push_back(item.second);
    }
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    PlanEntry& e = *entries[i];
    std::lock_guard<std::mutex> lock(e.mutex);
    lines[i] += e.use_aten ? std::string("aten::convolution") : e.plan ? e.plan->describe() : "none";
    if (e.settle_pending) lines[i] += " (to be settled at the next call)";
    if (!e.choice.empty()) lines[i] += " [" + e.choice + "]";
  }
  return lines;
}

std::size_t PlanCache::max_size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_size_;
}

void PlanCache::set_max_size(std::size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  max_size_ = n;
  evict_locked();
}

void PlanCache::clear() {
  std::list<Item> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    index_.clear();
    dropped.swap(lru_);
  }
  // Plans are destroyed outside the lock (clear_filter waits for the device).
}

PlanCache& plan_cache(int device) {
  // One cache per device index, made on first use; no lock on the way to a device's cache.
  constexpr int kMaxDevices = 64;
  static PlanCache caches[kMaxDevices + 1];  // [0] is the host's
  if (device < -1 || device >= kMaxDevices) {
    throw std::invalid_argument("plan_cache: device index " + std::to_string(device) +
                                " outside -1.." + std::to_string(kMaxDevices - 1));
  }
  return caches[device + 1];
}

}  // namespace fftconv::torch_ext
