// The RTL unit tests' record of results that differ from the reference model's: how many, and
// the first few described for the failure message.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>

namespace tpu::test {

class MismatchLog {
 public:
  // Records `got` against `want`; for one of the first few mismatches, `describe(out)` writes
  // the inputs that gave it.
  template <typename Describe>
  void check(std::uint32_t got, std::uint32_t want, Describe describe) {
    if (got == want) return;
    if (count_++ < kDescribed) {
      text_ << std::hex;
      describe(static_cast<std::ostream&>(text_));
      text_ << " got=0x" << got << " want=0x" << want << "\n";
    }
  }
  std::uint64_t count() const { return count_; }
  std::string text() const { return text_.str(); }

 private:
  static constexpr std::uint64_t kDescribed = 8;
  std::uint64_t count_ = 0;
  std::ostringstream text_;
};

}  // namespace tpu::test

#define EXPECT_NO_MISMATCH(m) EXPECT_EQ((m).count(), 0u) << (m).text()
