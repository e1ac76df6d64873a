// Test helper: runs the bnn executable as a user would, capturing its exit
// code and everything it printed (stdout and stderr) through a log file.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "src/io/atomic_file.h"

namespace bnn::testing {

struct CommandResult {
  int code;
  std::string output;
};

// `log` must be unique per call: ctest runs tests as parallel processes.
// `env` ("NAME=value ...") is prepended to the command. A bnn killed by a
// signal shows as code 128 + signal (the shell's convention).
inline CommandResult run_bnn(const std::string& args, const std::filesystem::path& log,
                             const std::string& env = "") {
  const std::string cmd =
      (env.empty() ? "" : "env " + env + " ") + std::string(BNN_BINARY) + " " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return {WEXITSTATUS(status), io::read_file(log)};
}

}  // namespace bnn::testing
