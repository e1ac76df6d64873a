#include "src/cli/options.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "src/config/config.h"

namespace bnn::cli {

namespace {

// What an option's value failed to be, judged from the value (cxxopts does not
// say the option's type): inf and nan are refused by every option; a number
// in another form (a fraction, an exponent, a sign +) by a whole-number one;
// a negative one by a count; a whole number in digits only when too large.
std::string wanted(const std::string& value) {
  const std::optional<double> number = number_in(value);
  if (!number) return "a number";
  const double v = *number;
  if (!std::isfinite(v)) return "a finite number";
  if (v != std::floor(v) || value.find_first_not_of("-0123456789") != std::string::npos) {
    return "a whole number, in digits";
  }
  if (v < 0) return "a whole number, 0 or more";
  return "a smaller whole number";
}

// cxxopts names the value it could not convert, not the option: "Argument
// 'abc' failed to parse" (with typographic quotes where it uses them). Find
// the option whose value is exactly that ("--name value", "--name=value" or
// "-n value").
[[noreturn]] void bad_option_value(const std::string& message, int argc, char** argv) {
  const std::string head = "Argument ", tail = " failed to parse";
  std::string quoted;
  if (message.rfind(head, 0) == 0 && message.size() > head.size() + tail.size() &&
      message.compare(message.size() - tail.size(), tail.size(), tail) == 0) {
    quoted = message.substr(head.size(), message.size() - head.size() - tail.size());
  }
  for (int i = 1; i < argc && !quoted.empty(); ++i) {
    const std::string token = argv[i];
    if (token.rfind("-", 0) != 0) continue;
    const auto eq = token.find('=');
    const std::string option = eq == std::string::npos ? token : token.substr(0, eq);
    const std::string value = eq != std::string::npos ? token.substr(eq + 1) : (i + 1 < argc ? argv[i + 1] : "");
    // The value inside the quotes: ASCII ' or the 3-byte UTF-8 ‘ ’.
    for (const size_t q : {size_t{1}, size_t{3}}) {
      if (quoted.size() == value.size() + 2 * q && quoted.compare(q, value.size(), value) == 0) {
        throw config::ConfigError(
            fmt::format("option {}: '{}' is not a valid value; it takes {} (see --help)", option, value,
                        wanted(value)));
      }
    }
  }
  throw config::ConfigError(message);
}

// The name in a cxxopts message "Option ‘name’ ..." (its quotes are ‘ and ’,
// or ' where it uses ASCII); empty if there is none.
std::string quoted_name(const std::string& message) {
  for (const auto& [open, close] : {std::pair{"\xE2\x80\x98", "\xE2\x80\x99"}, std::pair{"'", "'"}}) {
    const auto start = message.find(open);
    if (start == std::string::npos) continue;
    const auto from = start + std::string(open).size();
    const auto end = message.find(close, from);
    if (end != std::string::npos) return message.substr(from, end - from);
  }
  return "";
}

std::string dashed(const std::string& name) { return (name.size() == 1 ? "-" : "--") + name; }

// An option that takes one value, given twice with two values: cxxopts keeps
// the last, as Unix tools do and as wrappers rely on (scripts/paper-slice.sh
// appends its own --members-per-device after the user's options). A careless
// `--members 0-31 ... --members 32-63` would train only the second range, so
// the first value is not dropped without a word. Options that collect values
// (--set) may repeat; the same value twice is harmless. An empty value is
// never meant (`--config "$CONFIG"` with the variable unset).
void check_values(const cxxopts::Options& options, const cxxopts::ParseResult& args, int argc, char** argv) {
  std::set<std::string> collecting;
  std::map<std::string, std::string> short_of;  // long name -> its one-letter spelling
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& o : options.group_help(group).options) {
      for (const std::string& l : o.l) short_of[l] = o.s;
      if (!o.is_container) continue;
      collecting.insert(o.s);
      collecting.insert(o.l.begin(), o.l.end());
    }
  }
  std::map<std::string, std::string> latest;  // option -> the value given last so far
  for (const cxxopts::KeyValue& given : args.arguments()) {
    if (given.value().empty()) {
      // A positional argument (bnn evaluate's run directories) is named as one, not by its inner option name.
      const std::string option = dashed(given.key());
      const std::string letter = short_of.count(given.key()) && !short_of[given.key()].empty()
                                     ? "-" + short_of[given.key()]
                                     : "";
      const bool named = std::any_of(argv + 1, argv + argc, [&](const char* a) {
        const std::string arg = a;
        return arg == option || arg.rfind(option + "=", 0) == 0 || (!letter.empty() && arg == letter);
      });
      throw config::ConfigError(named ? fmt::format("option {}: '' is an empty value (an unset shell variable?); "
                                                    "give one",
                                                    option)
                                      : "an argument is '', empty (an unset shell variable?); give one");
    }
    if (collecting.count(given.key())) continue;
    const auto [seen, fresh] = latest.emplace(given.key(), given.value());
    if (!fresh && seen->second != given.value()) {
      spdlog::warn("option {} is given twice, as '{}' and then as '{}': the last one is used", dashed(given.key()),
                   seen->second, given.value());
      seen->second = given.value();
    }
  }
}

}  // namespace

std::optional<double> number_in(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size()) return std::nullopt;
  return v;
}

std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv,
                                                  const std::string& help_suffix) {
  cxxopts::ParseResult args;
  try {
    args = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    bad_option_value(e.what(), argc, argv);
  } catch (const cxxopts::exceptions::no_such_option& e) {
    throw config::ConfigError(fmt::format("{} has no option {} (see {} --help)", options.program(),
                                          dashed(quoted_name(e.what())), options.program()));
  } catch (const cxxopts::exceptions::missing_argument& e) {
    throw config::ConfigError(fmt::format("option {} needs a value (see {} --help)", dashed(quoted_name(e.what())),
                                          options.program()));
  }
  if (args.count("help")) {
    fmt::print("{}{}", options.help(), help_suffix);
    return std::nullopt;
  }
  if (!args.unmatched().empty()) {
    throw config::ConfigError(fmt::format("unexpected argument '{}'", args.unmatched().front()));
  }
  check_values(options, args, argc, argv);
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
