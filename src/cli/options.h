// Command-line parsing shared by the bnn subcommands.
#pragma once

#include <optional>
#include <string>
#include <vector>

// cxxopts splits the values of a vector option at this character. Its default,
// ',', broke `--set model.hidden=[256,256]` into two overrides and a run
// directory or file name holding a comma into two; argv strings cannot hold
// '\0', so every value stays whole. Every file of bnn that uses cxxopts
// includes it through this header, so all agree on the definition.
#ifdef CXXOPTS_HPP_INCLUDED
#error "include src/cli/options.h instead of cxxopts.hpp"
#endif
#define CXXOPTS_VECTOR_DELIMITER '\0'
#include <cxxopts.hpp>

namespace bnn::cli {

// Parses argv with `options`. With --help, prints the help followed by
// `help_suffix` and returns nullopt (the command then exits 0). Positional
// arguments nobody declared are a config::ConfigError naming the first.
std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv,
                                                  const std::string& help_suffix = "");

// The number `text` is, all of it (std::stod's forms, inf and nan included);
// nullopt for anything else.
std::optional<double> number_in(const std::string& text);

// The config overrides of a command that takes --set key=value (repeatable)
// and the shortcuts --device, --threads and --seed, in that order.
std::vector<std::string> config_overrides(const cxxopts::ParseResult& args);

}  // namespace bnn::cli
