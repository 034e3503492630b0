// The border rule's names (the command line's --border), apart from the blur itself.
#include <string>

#include "blur.h"
#include "image_io.h"

namespace blur {

const char* border_name(Border b) { return b == Border::kZero ? "zero" : "reflect"; }

Border parse_border(const std::string& name) {
  if (name == "zero") return Border::kZero;
  if (name == "reflect") return Border::kReflect;
  throw UserError("unknown border '" + name + "' (expected zero or reflect)");
}

}  // namespace blur
