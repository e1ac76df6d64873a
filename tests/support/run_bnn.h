// Test helper: runs the bnn executable as a user would, capturing its exit
// code and everything it printed (stdout and stderr) through a log file.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/io/atomic_file.h"

namespace bnn::testing {

struct CommandResult {
  int code;
  std::string output;
};

// The tests compare runs bit for bit (resume, devices, rhat against run),
// which holds on the CPU; CUDA kernels need not repeat a trajectory across
// processes. So a command that can run on a GPU and names no device gets
// --device cpu, even where a GPU is visible; a test of CUDA names it.
inline std::string on_cpu_unless_named(const std::string& args) {
  const std::string command = args.substr(0, args.find(' '));
  const bool takes_device = command == "run" || command == "rhat" || command == "coupled-bias" ||
                            command == "hessian" || command == "predict";
  if (!takes_device || args.find("--device") != std::string::npos || args.find("--help") != std::string::npos) {
    return args;
  }
  return args + " --device cpu";
}

// Runs the shell command `command` with its stdout and stderr sent to `log`;
// its exit code and what it printed. A program killed by a signal shows as
// code 128 + signal (the shell's convention).
inline CommandResult run_logged(const std::string& command, const std::filesystem::path& log) {
  const std::string cmd = command + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return {WEXITSTATUS(status), io::read_file(log)};
}

// `log` must be unique per call: ctest runs tests as parallel processes.
// `env` ("NAME=value ...") is prepended to the command.
inline CommandResult run_bnn(const std::string& args, const std::filesystem::path& log,
                             const std::string& env = "") {
  return run_logged((env.empty() ? "" : "env " + env + " ") + std::string(BNN_BINARY) + " " +
                        on_cpu_unless_named(args),
                    log);
}

// The row of `method` at ensemble size `size` in `dir`/metrics.json (a run
// or an evaluate output); a test failure and an empty object if absent.
inline nlohmann::json ensemble_row(const std::filesystem::path& dir, const std::string& method, int64_t size) {
  const auto metrics = nlohmann::json::parse(io::read_file(dir / "metrics.json"));
  for (const auto& row : metrics["ensembles"]) {
    if (row["method"] == method && row["size"] == size) return row;
  }
  ADD_FAILURE() << "no " << method << " row of size " << size << " in " << dir / "metrics.json";
  return nlohmann::json::object();
}

}  // namespace bnn::testing
