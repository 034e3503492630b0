// The extension's plan cache: one bounded, thread-safe LRU of fftconv plans per device (and one for
// the host backend), keyed by descriptor, pass, algorithm and, for plans that keep a frozen filter,
// the filter tensor's storage. Exposed to Python as fftconv.backends.plan_cache.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <c10/core/StorageImpl.h>
#include <c10/util/intrusive_ptr.h>

#include "fftconv/plan.hpp"

namespace fftconv::torch_ext {

/// What a plan is for. `filter` is non-null only for a plan that keeps a frozen filter: the
/// StorageImpl of that filter (compared by address, never dereferenced through the key).
struct PlanKey {
  ConvDesc desc;
  Pass pass = Pass::kForward;
  Algo algo = Algo::kAuto;
  const void* filter = nullptr;

  bool operator==(const PlanKey& o) const {
    return desc == o.desc && pass == o.pass && algo == o.algo && filter == o.filter;
  }
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const noexcept;
};

/// Identity of a filter tensor at one moment: its storage (held weakly, so the address cannot be
/// reused while it is remembered), data pointer and version counter.
struct FilterIdentity {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage{c10::intrusive_ptr<c10::StorageImpl>()};
  const void* data = nullptr;
  std::uint32_t version = 0;

  /// Whether `t_storage`/`data`/`version` is the same tensor content as remembered.
  bool same(const c10::StorageImpl* t_storage, const void* t_data, std::uint32_t t_version) const;
};

/// One cached plan. `plan` is null when the work goes to aten::convolution instead (Auto ranked
/// cuDNN first: PyTorch's own cuDNN settings and memory pool then apply).
///
/// Under Auto on CUDA with torch.backends.cudnn.benchmark on, an entry may be `settle_pending`:
/// its first call with tensors settles what runs from then on (ops.cpp, settle): where the
/// engine's best algorithm and cuDNN are both in the running it holds the engine's plan and times
/// both; an fp32 aten choice is checked against float64. Until then `use_aten` is the estimate's
/// choice; while an entry is pending, calls that skip settling (a stream being captured) run aten,
/// so `plan` changes only under the mutex with no call using it. Both flags are read without the
/// mutex.
struct PlanEntry {
  std::unique_ptr<Plan> plan;
  std::atomic<bool> use_aten{false};
  std::atomic<bool> settle_pending{false};
  /// Whether settle() holds aten's fp32 results to the tolerance (decided when the entry is
  /// made: fp32, cudnn.benchmark and strict_fp32 on, cuDNN's TF32 off).
  bool check_fp32 = false;
  /// How Auto chose between the engine and aten (describe()): the estimates, or the measurement.
  std::string choice;  // written under `mutex`

  std::mutex mutex;  // guards the fields below
  /// Kept-filter plans: which tensor content the kept spectrum is of (empty: none yet).
  FilterIdentity kept;
  /// Shared plans: frozen filters seen recently (a filter seen twice gets a plan of its own).
  std::vector<FilterIdentity> seen;
  std::size_t seen_next = 0;
};

class PlanCache {
 public:
  static constexpr std::size_t kDefaultMaxSize = 1024;

  /// The entry for `key`, or null.
  std::shared_ptr<PlanEntry> find(const PlanKey& key);
  /// Stores `entry` (replacing one with the same key) and evicts the least recently used
  /// entries beyond max_size(); returns the stored entry.
  std::shared_ptr<PlanEntry> insert(const PlanKey& key, std::shared_ptr<PlanEntry> entry);

  std::size_t size() const;
  std::size_t max_size() const;
  /// One line per plan, most recently used first: the key, then what runs it (the plan's
  /// describe(), or aten) and how Auto chose.
  std::vector<std::string> describe() const;
  void set_max_size(std::size_t n);
  void clear();

 private:
  void evict_locked();

  mutable std::mutex mutex_;
  std::size_t max_size_ = kDefaultMaxSize;
  using Item = std::pair<PlanKey, std::shared_ptr<PlanEntry>>;
  std::list<Item> lru_;  // most recently used first
  std::unordered_map<PlanKey, std::list<Item>::iterator, PlanKeyHash> index_;
};

/// The cache of a CUDA device (index >= 0) or of the host backend (index -1).
PlanCache& plan_cache(int device);

}  // namespace fftconv::torch_ext
