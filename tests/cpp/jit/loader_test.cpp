// Loading compiled code from bytes: failures, symbols, distinct modules.
#include "jit/build/loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "jit/build/toolchain.h"
#include "kiln/status.h"

namespace kiln::jit {
namespace {

// Compiles `source` with the system toolchain plus `extra_flags`; "" without a compiler.
std::string compile(const std::string& source, std::vector<std::string> extra_flags = {}) {
  std::string why;
  auto tc = find_toolchain(&why);
  if (!tc) {
    ADD_FAILURE() << "no compiler: " << why;
    return "";
  }
  tc->flags.insert(tc->flags.end(), extra_flags.begin(), extra_flags.end());
  return compile_shared_object(*tc, source);
}

// A shared object whose `kiln_value` returns `value`.
std::string module_returning(int value, std::vector<std::string> extra_flags = {}) {
  return compile("extern \"C\" int kiln_value() { return " + std::to_string(value) + "; }\n",
                 std::move(extra_flags));
}

// How many mappings of loaded JIT modules the process has.
int mapped_modules() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) n += line.find("memfd:kiln-jit") != std::string::npos;
  return n;
}

int value_of(const LoadedModule& m) {
  return reinterpret_cast<int (*)()>(m.symbol("kiln_value"))();
}

TEST(LoadedModule, GarbageBytesThrow) {
  for (const std::string& bytes : {std::string(), std::string("not an ELF object"),
                                   std::string("\x7f"
                                               "ELF") +
                                       std::string(100, '\0')}) {
    try {
      LoadedModule::load(bytes);
      FAIL() << "loaded garbage";
    } catch (const InternalError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot load"), std::string::npos) << e.what();
    }
  }
}

TEST(LoadedModule, MissingSymbolThrowsNamingIt) {
  std::string so = module_returning(1);
  ASSERT_FALSE(so.empty());
  LoadedModule m = LoadedModule::load(so);
  try {
    m.symbol("kiln_absent");
    FAIL() << "found an absent symbol";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("'kiln_absent'"), std::string::npos) << e.what();
  }
}

// Same symbol name, different code: live modules and successive ones never alias.
TEST(LoadedModule, ModulesDoNotAlias) {
  std::string one = module_returning(1), two = module_returning(2);
  ASSERT_FALSE(one.empty() || two.empty());
  {
    LoadedModule a = LoadedModule::load(one), b = LoadedModule::load(two);
    LoadedModule c = LoadedModule::load(one);  // equal bytes, still its own module
    EXPECT_EQ(value_of(a), 1);
    EXPECT_EQ(value_of(b), 2);
    EXPECT_EQ(value_of(c), 1);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(value_of(LoadedModule::load(one)), 1);
    EXPECT_EQ(value_of(LoadedModule::load(two)), 2);
  }
}

// dlclose does not unload a NODELETE object; the next module must still be the new code.
TEST(LoadedModule, ResidentModuleDoesNotShadowTheNext) {
  std::string sticky = module_returning(7, {"-Wl,-z,nodelete"}), next = module_returning(8);
  ASSERT_FALSE(sticky.empty() || next.empty());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(value_of(LoadedModule::load(sticky)), 7);
    EXPECT_EQ(value_of(LoadedModule::load(next)), 8);
  }
}

// A static in an inline function would be a GNU unique symbol (the object could
// never be unloaded) without the toolchain's -fno-gnu-unique.
TEST(LoadedModule, DestructionUnloads) {
  std::string so = compile(
      "inline int& counter() { static int c = 0; return c; }\n"
      "extern \"C\" int kiln_value() { return ++counter(); }\n");
  ASSERT_FALSE(so.empty());
  const int before = mapped_modules();
  {
    LoadedModule m = LoadedModule::load(so);
    EXPECT_GT(mapped_modules(), before);
    EXPECT_EQ(value_of(m), 1);
    EXPECT_EQ(value_of(m), 2);
  }
  EXPECT_EQ(mapped_modules(), before);
  EXPECT_EQ(value_of(LoadedModule::load(so)), 1);  // a fresh copy of its statics
}

TEST(LoadedModule, MoveTransfersOwnership) {
  std::string so = module_returning(5);
  ASSERT_FALSE(so.empty());
  LoadedModule a = LoadedModule::load(so);
  LoadedModule b = std::move(a);
  EXPECT_EQ(value_of(b), 5);
  EXPECT_THROW(a.symbol("kiln_value"), InternalError);  // NOLINT(bugprone-use-after-move)
  a = std::move(b);
  EXPECT_EQ(value_of(a), 5);
}

}  // namespace
}  // namespace kiln::jit
