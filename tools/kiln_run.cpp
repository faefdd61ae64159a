// kiln-run: lists a saved model's signatures and runs one on .npy inputs.
//
//   kiln-run DIR                                   the signatures and variables
//   kiln-run DIR --signature NAME --input x=a.npy [--input k=b.npy ...] [--output-dir OUT]
//
// Each output is printed (name, dtype, shape, values) and, with --output-dir,
// written as OUT/<name>.npy (OUT is created when missing). Exit status 2 on
// bad usage, 1 on a kiln error; -h or --help prints the usage.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "kiln/npy.h"
#include "kiln/saved_model.h"

namespace {

constexpr const char* kUsage =
    "usage: kiln-run DIR [--signature NAME --input KEY=FILE.npy ... [--output-dir OUT]]\n";

int usage(const char* msg) {
  std::fprintf(stderr, "kiln-run: %s\n%s", msg, kUsage);
  return 2;
}

int help() {
  std::printf(
      "%s\nLists the signatures and variables of the SavedModel in DIR; with --signature,\n"
      "runs that signature on the .npy inputs given as KEY=FILE.npy, prints each output\n"
      "and, with --output-dir, writes it as OUT/<name>.npy (creating OUT).\n",
      kUsage);
  return 0;
}

// Creates `dir` with its parents; "" on success, else why not.
std::string make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ec.message();
  if (!std::filesystem::is_directory(dir)) return "not a directory";
  return "";
}

// An output's name used as a file name: a model's names are not trusted.
bool plain_file_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos &&
         n.find('\0') == std::string::npos;
}

void list(const kiln::saved_model::SavedModel& sm) {
  std::printf("%s\n", sm.directory().c_str());
  std::printf("signatures:\n");
  for (const auto& [k, s] : sm.signatures()) std::printf("  %s\n", s.to_string().c_str());
  if (sm.signatures().empty()) std::printf("  (none)\n");
  std::printf("variables: %zu\n", sm.variables().size());
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) return help();
  if (argc < 2) return usage("no directory given");
  std::string dir = argv[1], sig, out_dir;
  std::map<std::string, std::string> inputs;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--signature") {
      sig = v;
    } else if (a == "--output-dir") {
      out_dir = v;
    } else if (a == "--input") {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return usage("--input takes KEY=FILE.npy");
      inputs[v.substr(0, eq)] = v.substr(eq + 1);
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }
  try {
    auto sm = kiln::saved_model::load(dir);
    if (sig.empty()) {
      if (!inputs.empty()) return usage("--input needs --signature");
      list(*sm);
      return 0;
    }
    if (!out_dir.empty()) {
      if (const std::string why = make_dir(out_dir); !why.empty()) {
        std::fprintf(stderr, "kiln-run: cannot create the output directory %s: %s\n",
                     out_dir.c_str(), why.c_str());
        return 1;
      }
    }
    std::map<std::string, kiln::Tensor> feed;
    for (const auto& [k, path] : inputs) feed[k] = kiln::npy::read(path);
    auto result = sm->signature(sig)(feed);
    for (const auto& [k, t] : result) {
      std::printf("%s: %s\n", k.c_str(), t.to_string().c_str());
      if (out_dir.empty()) continue;
      if (!plain_file_name(k)) {
        std::fprintf(stderr, "kiln-run: output '%s' is not a file name; not written\n", k.c_str());
        return 1;
      }
      kiln::npy::write(out_dir + "/" + k + ".npy", t);
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln-run: %s\n", e.what());
    return 1;
  }
  return 0;
}
