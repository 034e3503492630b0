// The border rule's names (the command line's --border), apart from the blur itself.
#include <string>

#include "blur.h"
#include "image_io.h"

namespace blur {

const char* border_name(Border b) { return fftconv::border_name(b); }

Border parse_border(const std::string& name) {
  if (name == "zero") return Border::kZero;
  if (name == "reflect") return Border::kReflect;
  if (name == "replicate") return Border::kReplicate;
  if (name == "circular") return Border::kCircular;
  throw UserError("unknown border '" + name +
                  "' (expected zero, reflect, replicate or circular)");
}

}  // namespace blur
