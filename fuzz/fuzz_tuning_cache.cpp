// The tuning-cache reader (detail::parse_tuning_cache, what TuningCache does with the text of its
// file) on any text: it never throws; a text it cannot use is reported in one warning naming the
// file and is never to be overwritten; what the cache would write for the records it read reads
// back as the same records, without a warning.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_util.h"
#include "tuning/tuning_cache.h"

using fftconv::detail::TuningCacheContent;
using fftconv::detail::TuningRecord;

namespace {

constexpr char kPath[] = "/fuzz/cache.json";

bool same(const std::vector<TuningRecord>& a, const std::vector<TuningRecord>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].device != b[i].device || a[i].key != b[i].key || a[i].choice != b[i].choice ||
        a[i].ms != b[i].ms) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text_of(data, size);
  const TuningCacheContent content = fftconv::detail::parse_tuning_cache(text, kPath);

  FUZZ_CHECK(content.warnings.size() <= 1, content.warnings.front());
  for (const std::string& w : content.warnings) {
    FUZZ_CHECK(w.rfind(std::string("tuning cache ") + kPath + ": ", 0) == 0, w);
  }
  if (!content.writable) {
    FUZZ_CHECK(content.records.empty(), "records from an unusable file");
    FUZZ_CHECK(!content.warnings.empty(), "an unusable file without a warning");
    return 0;
  }
  std::set<std::pair<std::string, std::string>> keys;
  for (const TuningRecord& r : content.records) {
    FUZZ_CHECK(keys.emplace(r.device, r.key).second, "two records for " + r.device + " " + r.key);
  }

  const std::string written = fftconv::detail::format_tuning_cache(content.records);
  const TuningCacheContent reread = fftconv::detail::parse_tuning_cache(written, kPath);
  FUZZ_CHECK(reread.writable, written);
  FUZZ_CHECK(reread.warnings.empty(), reread.warnings.front() + " in\n" + written);
  FUZZ_CHECK(same(reread.records, content.records), written);
  return 0;
}
