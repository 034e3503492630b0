// The answer to "can this run that?": success, or a status and a reason a user can act on.
#pragma once

#include <string>
#include <utility>

#include "fftconv/status.hpp"

namespace fftconv::detail {

/// Whether an algorithm can implement a descriptor; when not, a status and a reason a user can act
/// on.
struct Support {
  Status status = Status::kSuccess;
  std::string reason;
  bool ok() const { return status == Status::kSuccess; }
  static Support yes() { return {}; }
  static Support no(Status st, std::string why) { return {st, std::move(why)}; }
};

}  // namespace fftconv::detail
