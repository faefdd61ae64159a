// The environment helpers every variable kiln reads goes through.
#include "core/env.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace kiln {
namespace {
using testing::ScopedEnv;

constexpr const char* kVar = "KILN_ENV_TEST_VALUE";

TEST(Env, UnsetAndEmptyAreEmpty) {
  {
    ScopedEnv v(kVar, std::nullopt);
    EXPECT_EQ(env(kVar), "");
  }
  ScopedEnv v(kVar, "a b");
  EXPECT_EQ(env(kVar), "a b");
}

TEST(Env, Seconds) {
  struct Case {
    std::optional<std::string> value;
    double want;
  };
  const Case cases[] = {
      {std::nullopt, 7}, {"", 7},   {"1", 1},   {"0.25", 0.25}, {"1e2", 100}, {"0", 7},  {"-3", 7},
      {"abc", 7},        {"5s", 7}, {"nan", 7}, {"inf", 7},     {" 2", 2},    {"2 ", 7},
  };
  for (const Case& c : cases) {
    ScopedEnv v(kVar, c.value);
    EXPECT_EQ(env_seconds(kVar, 7), c.want) << (c.value ? *c.value : "(unset)");
  }
}

TEST(Env, Counts) {
  struct Case {
    std::optional<std::string> value;
    uint64_t want;
  };
  const Case cases[] = {
      {std::nullopt, 9}, {"", 9},    {"0", 0},  {"1048576", 1048576},           {"-1", 9},
      {"1.5", 9},        {"12k", 9}, {" 3", 9}, {"99999999999999999999999", 9},
  };
  for (const Case& c : cases) {
    ScopedEnv v(kVar, c.value);
    EXPECT_EQ(env_count(kVar, 9), c.want) << (c.value ? *c.value : "(unset)");
  }
}

}  // namespace
}  // namespace kiln
