#include "src/cli/options.h"

#include <fmt/format.h>

#include "src/config/config.h"

namespace bnn::cli {

std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv,
                                                  const std::string& help_suffix) {
  auto args = options.parse(argc, argv);
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
