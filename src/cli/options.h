// Command-line parsing shared by the bnn subcommands.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <cxxopts.hpp>

namespace bnn::cli {

// Parses argv with `options`. With --help, prints the help followed by
// `help_suffix` and returns nullopt (the command then exits 0). Positional
// arguments nobody declared are a config::ConfigError naming the first.
std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv,
                                                  const std::string& help_suffix = "");

// The config overrides of a command that takes --set key=value (repeatable)
// and the shortcuts --device, --threads and --seed, in that order.
std::vector<std::string> config_overrides(const cxxopts::ParseResult& args);

}  // namespace bnn::cli
