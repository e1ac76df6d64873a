#include "src/cli/options.h"

#include <fmt/format.h>

#include "src/config/config.h"

namespace bnn::cli {

namespace {

// cxxopts names the value it could not convert, not the option: find the
// option in argv ("--name value", "--name=value" or "-n value").
[[noreturn]] void bad_option_value(const std::string& message, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    const auto eq = token.find('=');
    std::string option, value;
    if (token.rfind("-", 0) == 0 && eq != std::string::npos) {
      option = token.substr(0, eq);
      value = token.substr(eq + 1);
    } else if (token.rfind("-", 0) == 0 && i + 1 < argc) {
      option = token;
      value = argv[i + 1];
    } else {
      continue;
    }
    if (!value.empty() && message.find(value) != std::string::npos) {
      throw config::ConfigError(
          fmt::format("option {}: '{}' is not a valid value; it takes a number (see --help)", option, value));
    }
  }
  throw config::ConfigError(message);
}

}  // namespace

std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv,
                                                  const std::string& help_suffix) {
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    bad_option_value(e.what(), argc, argv);
  }
  if (args.count("help")) {
    fmt::print("{}{}", options.help(), help_suffix);
    return std::nullopt;
  }
  if (!args.unmatched().empty()) {
    throw config::ConfigError(fmt::format("unexpected argument '{}'", args.unmatched().front()));
  }
  return args;
}

std::vector<std::string> config_overrides(const cxxopts::ParseResult& args) {
  std::vector<std::string> overrides;
  if (args.count("set")) overrides = args["set"].as<std::vector<std::string>>();
  if (args.count("device")) overrides.push_back("run.device=" + args["device"].as<std::string>());
  if (args.count("threads")) overrides.push_back(fmt::format("run.threads={}", args["threads"].as<int64_t>()));
  if (args.count("seed")) overrides.push_back(fmt::format("run.seed={}", args["seed"].as<uint64_t>()));
  return overrides;
}

}  // namespace bnn::cli
