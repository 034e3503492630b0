// The implementation list: every algorithm of the library behind one interface, in priority order
// (oneDNN style). Auto ranks the entries of the plan's backend by estimate; a forced Algo picks
// its entry. Adding an algorithm: one file (or folder) under lib/algos/ with an AlgoFactory, and
// one line in algorithm_list() (registry.cpp). docs/design.md walks through it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algos/algo.h"

namespace fftconv::detail {

class AlgoFactory {
 public:
  /// `name`: short name for reports and describe(), e.g. "fft", "fft_tiled", "cudnn", "cpu_fft";
  /// `algo`: the public Algo value that forces this entry; `backend`: where its plans run (kGpu or
  /// kCpu, never kAuto).
  constexpr AlgoFactory(const char* name, Algo algo, Backend backend)
      : name_(name), algo_(algo), backend_(backend) {}
  virtual ~AlgoFactory() = default;
  const char* name() const { return name_; }
  Algo algo() const { return algo_; }
  Backend backend() const { return backend_; }
  /// Whether it can run the pass of `o` on `d` at all (cheap: no allocation, no timing); when not,
  /// a status and a reason a user can act on.
  virtual Support can_implement(const ConvDesc& d, const Options& o) const = 0;
  /// Estimated device time in microseconds, for ranking; only asked after can_implement said
  /// yes. `detail` (may be null) receives what the estimate is of, e.g. "128x128".
  virtual double estimate_us(const ConvDesc& d, const Options& o, std::string* detail) const = 0;
  /// Builds the algorithm. `first`: it was forced or ranked first, so it honours Options' size
  /// forcing and autotuning (the entries after it are fallbacks built with their heuristic sizes).
  /// `reason` receives how its sizes were chosen ("" when by heuristic). Throws Error:
  /// kNotSupported or kOutOfMemory when it cannot be built here (Auto then tries the next).
  virtual std::unique_ptr<ConvAlgo> create(const ConvDesc& d, const Options& o, bool first,
                                           std::string* reason) const = 0;
  /// Whether its kernels apply a border other than zeros (ConvDesc::border) as they load, in
  /// `pass`; an entry that does not runs bordered problems through the bordered-input stage
  /// (see create_entry).
  virtual bool loads_border(Pass /*pass*/) const { return false; }

 private:
  const char* name_;
  Algo algo_;
  Backend backend_;
};

// ---- an entry on a descriptor ---------------------------------------------------------------
// What the planner asks of an entry goes through these: with a border other than zeros, an entry
// that does not load it (AlgoFactory::loads_border) is asked about, estimated on and built for
// the bordered problem (bordered_desc, lib/stages/border.h) with the workspace of the bordered
// input set aside, and what it builds is wrapped in the stage that writes the bordered input
// (forward, backward filter) or folds its gradient back into dx (backward data).

/// Whether `f` can run the pass of `o` on `d`, borders included.
Support entry_support(const AlgoFactory& f, const ConvDesc& d, const Options& o);
/// Its estimate (the bordered-input stage included where it takes one).
double entry_estimate_us(const AlgoFactory& f, const ConvDesc& d, const Options& o,
                         std::string* detail);
/// Builds it (see AlgoFactory::create); `reason` also says how the border is applied.
std::unique_ptr<ConvAlgo> create_entry(const AlgoFactory& f, const ConvDesc& d, const Options& o,
                                       bool first, std::string* reason);

/// "12.3 us": an estimate as the planner's texts show it.
std::string us_text(double us);

/// Every algorithm, in priority order (ties in estimate go to the earlier entry).
const std::vector<const AlgoFactory*>& algorithm_list();

/// The backend a plan with these options runs on: kGpu and kCpu as given, kAuto the GPU when
/// fftconv::device_count() > 0, else the CPU. Throws Error(kInvalidArgument) for a value that
/// is not a Backend.
Backend resolve_backend(Backend requested);

/// The entry Auto ranks first for `d` and `o` (by estimate, nothing built): the Algo a plan with
/// Options::algo = kAuto tries first; kAuto when no entry can implement it. For callers that run
/// some algorithms elsewhere (the PyTorch extension hands cuDNN's to aten::convolution).
Algo auto_first_choice(const ConvDesc& d, const Options& o);

/// One entry of Auto's ranking: its Algo and estimated device time.
struct RankedAlgo {
  Algo algo = Algo::kAuto;
  double us = 0.0;
};

/// Every entry of the backend of `o` that can implement `d`, cheapest estimate first (ties: the
/// earlier entry), nothing built. auto_first_choice is its first entry.
std::vector<RankedAlgo> auto_ranking(const ConvDesc& d, const Options& o);

/// GPU forward and backward-data plans under Auto (Options::kept_separable): `built` wrapped so
/// that a kept filter whose planes are low rank runs on the separable path where its estimate
/// beats `built_us`, `built`'s estimate (algos/separable.cpp); `built` itself otherwise.
std::unique_ptr<ConvAlgo> with_kept_separable(const ConvDesc& d, const Options& o,
                                              std::unique_ptr<ConvAlgo> built, double built_us);

/// Builds the algorithm of a plan: the forced entry, or Auto's ranking of the entries of the
/// backend. Fills `info` (what was chosen, every candidate, and why). Throws Error when none can
/// run the plan.
std::unique_ptr<ConvAlgo> build_algorithm(const ConvDesc& d, const Options& o, PlanInfo* info);

}  // namespace fftconv::detail
