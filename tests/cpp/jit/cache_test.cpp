// The JIT's disk cache: hashing, round trips, corruption, eviction, concurrency.
#include "jit/build/cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "jit_test_util.h"
#include "kiln/status.h"
#include "test_util.h"

namespace kiln::jit {
namespace {
namespace fs = std::filesystem;
using testing::ScopedEnv;
using testing::TempDir;

constexpr uint64_t kHeader = 112;  // magic, key, length, SHA-256

std::string key_of(const std::string& s) {
  return sha256_hex(s);
}

using kiln::testing::read_bytes;
using kiln::testing::write_bytes;

void set_age(const fs::path& p, std::chrono::minutes age) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - age);
}

int count_temp_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    n += e.path().filename().string().find(".kjit.tmp-") != std::string::npos;
  }
  return n;
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DiskCache, RoundTrip) {
  TempDir tmp;
  DiskCache cache(tmp.path() / "a" / "b", 1 << 20);  // parents created on store
  std::string payload("bytes\0with\0nul", 14);
  cache.store(key_of("k1"), payload);
  cache.store(key_of("k2"), "");
  EXPECT_EQ(cache.load(key_of("k1")), payload);
  EXPECT_EQ(cache.load(key_of("k2")), std::string());
  EXPECT_TRUE(fs::exists(cache.dir() / (key_of("k1") + ".kjit")));
  EXPECT_EQ(fs::file_size(cache.dir() / (key_of("k1") + ".kjit")), kHeader + payload.size());
  EXPECT_EQ(count_temp_files(cache.dir()), 0);
  cache.store(key_of("k1"), "replaced");
  EXPECT_EQ(cache.load(key_of("k1")), "replaced");
}

// Entries are code to run: one that others may write (or that another user
// owns) is never loaded, and storing again replaces it.
TEST(DiskCache, EntriesOthersCanWriteAreNotTrusted) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  cache.store(key_of("k1"), "code");
  const fs::path entry = cache.dir() / (key_of("k1") + ".kjit");
  fs::permissions(entry, fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
  EXPECT_EQ(cache.load(key_of("k1")), std::nullopt);
  cache.store(key_of("k1"), "code");
  EXPECT_EQ(cache.load(key_of("k1")), "code");
  if (::geteuid() == 0) {  // as root: an entry owned by another user
    ASSERT_EQ(::chown(entry.c_str(), 65534, 65534), 0);
    EXPECT_EQ(cache.load(key_of("k1")), std::nullopt);
  }
}

TEST(DiskCache, MissingKey) {
  TempDir tmp;
  DiskCache cache(tmp.path() / "never-created", 1 << 20);
  EXPECT_EQ(cache.load(key_of("absent")), std::nullopt);
  EXPECT_FALSE(fs::exists(cache.dir()));
}

TEST(DiskCache, InvalidKeyThrows) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  std::string upper = key_of("x");
  for (char& c : upper) c = static_cast<char>(toupper(c));
  for (const std::string& bad : {std::string(), std::string("abc"), upper, key_of("x") + "0",
                                 std::string(64, 'g'), "../" + key_of("x").substr(3)}) {
    EXPECT_THROW(cache.load(bad), InvalidArgumentError) << bad;
    EXPECT_THROW(cache.store(bad, "v"), InvalidArgumentError) << bad;
  }
}

// Each corruption of a stored entry: load reports a miss and deletes the file.
TEST(DiskCache, CorruptEntriesAreDeleted) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const std::string key = key_of("corrupt"), payload(1000, 'p');
  const fs::path file = tmp.path() / (key + ".kjit");
  struct Case {
    const char* name;
    void (*damage)(std::string&);
  };
  const Case cases[] = {
      {"truncated payload", [](std::string& s) { s.resize(s.size() - 1); }},
      {"truncated header", [](std::string& s) { s.resize(20); }},
      {"empty file", [](std::string& s) { s.clear(); }},
      {"flipped payload byte", [](std::string& s) { s[kHeader + 500] ^= 0x01; }},
      {"flipped checksum byte", [](std::string& s) { s[90] ^= 0x80; }},
      {"flipped key byte", [](std::string& s) { s[20] ^= 0x01; }},
      {"wrong magic", [](std::string& s) { s[7] = '9'; }},
      {"first format's magic", [](std::string& s) { s[7] = '1'; }},
      {"wrong length", [](std::string& s) { s[72] ^= 0x01; }},
      {"appended byte", [](std::string& s) { s.push_back('x'); }},
  };
  for (const Case& c : cases) {
    cache.store(key, payload);
    std::string bytes = read_bytes(file);
    c.damage(bytes);
    write_bytes(file, bytes);
    EXPECT_EQ(cache.load(key), std::nullopt) << c.name;
    EXPECT_FALSE(fs::exists(file)) << c.name;
  }
}

// An entry is bound to its key: another key's valid entry copied over its
// name is a miss (and deleted), a symbolic link to one is a miss and not
// followed; the entry it pointed to stays, and a store replaces the link.
TEST(DiskCache, AnotherKeysEntryIsAMiss) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const std::string a = key_of("a"), b = key_of("b"), c = key_of("c");
  cache.store(a, "code of a");
  cache.store(b, "code of b");
  const fs::path fa = tmp.path() / (a + ".kjit"), fb = tmp.path() / (b + ".kjit"),
                 fc = tmp.path() / (c + ".kjit");
  fs::copy_file(fa, fb, fs::copy_options::overwrite_existing);
  EXPECT_EQ(cache.load(b), std::nullopt);
  EXPECT_FALSE(fs::exists(fb));
  EXPECT_EQ(cache.load(a), "code of a");

  fs::create_symlink(fa, fc);
  EXPECT_EQ(cache.load(c), std::nullopt);
  EXPECT_EQ(cache.load(a), "code of a");
  cache.store(c, "code of c");
  EXPECT_FALSE(fs::is_symlink(fc));
  EXPECT_EQ(cache.load(c), "code of c");
  EXPECT_EQ(cache.load(a), "code of a");

  // A link to the entry of the same key is not followed either.
  fs::remove(fc);
  fs::create_symlink(fa, tmp.path() / "elsewhere");
  fs::rename(fa, tmp.path() / "moved.kjit");
  fs::create_symlink(tmp.path() / "moved.kjit", fa);
  EXPECT_EQ(cache.load(a), std::nullopt);
}

TEST(DiskCache, HitRefreshesMtime) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const std::string key = key_of("lru");
  cache.store(key, "v");
  const fs::path file = tmp.path() / (key + ".kjit");
  set_age(file, std::chrono::minutes(60));
  auto before = fs::last_write_time(file);
  ASSERT_TRUE(cache.load(key));
  EXPECT_GT(fs::last_write_time(file), before + std::chrono::minutes(59));
}

// 100-byte entries under a bound of three: each store past three drops the
// least recently used, a recently loaded old entry survives, foreign files stay.
TEST(DiskCache, EvictionKeepsTheBoundAndTheNewest) {
  TempDir tmp;
  const uint64_t entry = kHeader + 100;
  DiskCache cache(tmp.path(), 3 * entry);
  write_bytes(tmp.path() / "README.txt", std::string(10000, 'r'));
  write_bytes(tmp.path() / "notakey.kjit", std::string(10000, 'r'));
  std::vector<std::string> keys;
  auto store = [&](int i) {
    keys.push_back(key_of("e" + std::to_string(i)));
    cache.store(keys.back(), std::string(100, static_cast<char>('a' + i)));
  };
  auto total = [&] {
    uint64_t n = 0;
    for (const auto& k : keys) {
      fs::path p = tmp.path() / (k + ".kjit");
      if (fs::exists(p)) n += fs::file_size(p);
    }
    return n;
  };
  for (int i = 0; i < 3; ++i) {
    store(i);
    set_age(tmp.path() / (keys.back() + ".kjit"), std::chrono::minutes(50 - i));
  }
  EXPECT_EQ(total(), 3 * entry);
  ASSERT_TRUE(cache.load(keys[0]));  // the oldest, now the most recently used
  store(3);
  EXPECT_EQ(total(), 3 * entry);
  EXPECT_FALSE(fs::exists(tmp.path() / (keys[1] + ".kjit")));
  store(4);
  EXPECT_EQ(total(), 3 * entry);
  EXPECT_FALSE(cache.load(keys[2]));
  EXPECT_TRUE(cache.load(keys[0]));
  EXPECT_TRUE(cache.load(keys[3]));
  EXPECT_TRUE(cache.load(keys[4]));
  EXPECT_TRUE(fs::exists(tmp.path() / "README.txt"));
  EXPECT_TRUE(fs::exists(tmp.path() / "notakey.kjit"));
}

TEST(DiskCache, EntryLargerThanTheBoundIsKeptAlone) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 10);
  cache.store(key_of("a"), "first");
  cache.store(key_of("b"), std::string(1000, 'b'));
  EXPECT_FALSE(cache.load(key_of("a")));
  EXPECT_EQ(cache.load(key_of("b")), std::string(1000, 'b'));
}

TEST(DiskCache, EvictionRemovesOnlyStaleTemporaries) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 1 << 20);
  const std::string k = key_of("t");
  const fs::path stale = tmp.path() / ("." + k + ".kjit.tmp-AbC123");
  const fs::path fresh = tmp.path() / ("." + k + ".kjit.tmp-XyZ789");
  const fs::path foreign = tmp.path() / ".other.kjit.tmp-AbC123";
  for (const auto& p : {stale, fresh, foreign}) write_bytes(p, "partial");
  set_age(stale, std::chrono::minutes(60));
  set_age(foreign, std::chrono::minutes(60));
  cache.store(k, "v");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));  // perhaps another process's store in progress
  EXPECT_TRUE(fs::exists(foreign));
}

TEST(DiskCache, UnwritableDirectoryThrowsNamingThePath) {
  TempDir tmp;
  write_bytes(tmp.path() / "file", "x");  // a file where a directory should be (fails as root too)
  DiskCache cache(tmp.path() / "file" / "cache", 1 << 20);
  try {
    cache.store(key_of("k"), "v");
    FAIL() << "store into an impossible directory succeeded";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find((tmp.path() / "file" / "cache").string()),
              std::string::npos)
        << e.what();
  }
}

// Writers replace one key with different payloads while readers load it:
// every load is a miss or one whole payload, and one intact entry remains.
TEST(DiskCache, ConcurrentStoresOfOneKeyLeaveOneIntactEntry) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 64 << 20);
  const std::string key = key_of("shared");
  auto payload = [](int i) { return std::string(256 << 10, static_cast<char>('A' + i)); };
  std::vector<std::thread> threads;
  std::atomic<int> bad_loads{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) cache.store(key, payload(t));
    });
    threads.emplace_back([&] {
      for (int i = 0; i < 40; ++i) {
        auto got = cache.load(key);
        bool whole = !got || (got->size() == payload(0).size() &&
                              got->find_first_not_of((*got)[0]) == std::string::npos);
        bad_loads += !whole;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad_loads.load(), 0);
  auto got = cache.load(key);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), payload(0).size());
  EXPECT_EQ(count_temp_files(tmp.path()), 0);
}

TEST(DiskCache, ConcurrentStoresFromProcesses) {
  TempDir tmp;
  DiskCache cache(tmp.path(), 64 << 20);
  const std::string key = key_of("forked");
  std::vector<pid_t> children;
  for (int c = 0; c < 3; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        for (int i = 0; i < 20; ++i)
          cache.store(key, std::string(100000, static_cast<char>('a' + c)));
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto got = cache.load(key);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->size(), 100000u);
  EXPECT_EQ(got->find_first_not_of((*got)[0]), std::string::npos);
  EXPECT_EQ(count_temp_files(tmp.path()), 0);
}

TEST(DefaultCacheDir, EnvironmentPrecedence) {
  ScopedEnv kiln("KILN_CACHE_DIR", "/k/dir");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
  ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(default_cache_dir(), fs::path("/k/dir"));
  {
    ScopedEnv empty("KILN_CACHE_DIR", "");
    EXPECT_EQ(default_cache_dir(), fs::path("/xdg/kiln"));
    ScopedEnv unset_xdg("XDG_CACHE_HOME", std::nullopt);
    EXPECT_EQ(default_cache_dir(), fs::path("/home/u/.cache/kiln"));
    ScopedEnv empty_xdg("XDG_CACHE_HOME", "");
    EXPECT_EQ(default_cache_dir(), fs::path("/home/u/.cache/kiln"));
  }
  ScopedEnv unset("KILN_CACHE_DIR", std::nullopt);
  EXPECT_EQ(default_cache_dir(), fs::path("/xdg/kiln"));
}

}  // namespace
}  // namespace kiln::jit
