#include "src/pipeline/throughput.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "src/config/config.h"

namespace bnn::pipeline {

namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// The fields of one line, each without surrounding blanks (a Windows line
// end included); none for a blank line.
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  const std::string text = trimmed(line);
  if (text.empty()) return fields;
  std::stringstream in(text);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(trimmed(field));
  if (text.back() == ',') fields.emplace_back();
  return fields;
}

// Two finishing times equal but for rounding (K x E / r in doubles).
bool same_time(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

}  // namespace

ThroughputTable read_throughput_table(const std::filesystem::path& file) {
  const auto fail = [&](const std::string& why) {
    return config::ConfigError(fmt::format("--throughput {}: {}", file.string(), why));
  };
  std::ifstream in(file);
  if (!in) throw fail("cannot be read");
  std::string line;
  if (!std::getline(in, line) || split_csv_line(line).empty()) {
    throw fail("is empty, not a members_per_device.csv of bench/members_per_device.sh");
  }
  const std::vector<std::string> header = split_csv_line(line);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* name : {"design", "members", "exit", "member_epochs_per_s"}) {
    if (!column.count(name)) {
      throw fail(fmt::format("has no column '{}' in its first line; not a members_per_device.csv of "
                             "bench/members_per_device.sh",
                             name));
    }
  }
  ThroughputTable table{file, {}};
  std::map<std::pair<std::string, int64_t>, int64_t> seen;  // (design, K) -> the line of its finished run
  for (int64_t number = 2; std::getline(in, line); ++number) {
    const std::vector<std::string> fields = split_csv_line(line);
    if (fields.empty()) continue;
    if (fields.size() != header.size()) {
      throw fail(fmt::format("line {} has {} fields, the header {}", number, fields.size(), header.size()));
    }
    const auto number_in = [&](const char* name) {
      const std::string& text = fields[column.at(name)];
      size_t used = 0;
      double value = 0.0;
      try {
        value = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (text.empty() || used != text.size()) {
        throw fail(fmt::format("line {}: '{}' in column {} is not a number", number, text, name));
      }
      return value;
    };
    if (number_in("exit") != 0.0) continue;  // a failed run: no rate
    const double members = number_in("members");
    if (!std::isfinite(members) || members < 1 || members > 999999 || members != std::floor(members)) {
      throw fail(fmt::format("line {}: '{}' in column members is not a member count", number,
                             fields[column.at("members")]));
    }
    const double rate = number_in("member_epochs_per_s");
    if (rate < 0.0) {
      throw fail(fmt::format("line {}: '{}' in column member_epochs_per_s is not a rate (0 or more)", number,
                             fields[column.at("member_epochs_per_s")]));
    }
    if (!(rate > 0.0) || !std::isfinite(rate)) continue;  // nan: a run too short to time
    const std::string& design = fields[column.at("design")];
    const auto [at, fresh] = seen.emplace(std::make_pair(design, static_cast<int64_t>(members)), number);
    if (!fresh) {
      throw fail(fmt::format("lines {} and {} are both a finished {} run of {} members: keep one (tables of two "
                             "machines or two runs are not merged)",
                             at->second, number, design, static_cast<int64_t>(members)));
    }
    table.rows.push_back({design, static_cast<int64_t>(members), rate});
  }
  return table;
}

bool usable_for(const ThroughputRow& row, std::string_view design) {
  return row.design == design || (design == "stacked" && row.design == "streams" && row.members == 1);
}

void require_usable(const ThroughputTable& table, std::string_view design) {
  if (std::none_of(table.rows.begin(), table.rows.end(),
                   [&](const ThroughputRow& row) { return usable_for(row, design); })) {
    throw config::ConfigError(fmt::format("--throughput {}: no finished run of the {} design to choose from",
                                          table.file.string(), design));
  }
}

std::optional<MembersForTime> members_for_time(const ThroughputTable& table, std::string_view design, int64_t epochs,
                                               int64_t members_to_run, double seconds, int64_t most) {
  std::optional<MembersForTime> best;
  double best_done = 0.0;  // when the last of best's whole members ends
  for (const ThroughputRow& row : table.rows) {
    if (!usable_for(row, design) || row.members > std::min(most, members_to_run)) continue;
    MembersForTime candidate;
    candidate.members_per_device = row.members;
    candidate.member_epochs_per_s = row.member_epochs_per_s;
    candidate.member_seconds = kThroughputMargin * static_cast<double>(row.members * epochs) / row.member_epochs_per_s;
    // The stacked design runs one member at a time in two slots, one free
    // (src/pipeline/run.cpp), each pass computing both: up to twice the
    // streams row's time.
    if (design == "stacked" && row.design != design) candidate.member_seconds *= 2.0;
    // In doubles: a rate of 1e300 must not overflow a count.
    const double rounds = std::max(0.0, std::floor(seconds / candidate.member_seconds));
    candidate.whole_members = static_cast<int64_t>(
        std::min(static_cast<double>(members_to_run), rounds * static_cast<double>(row.members)));
    const double done =
        candidate.whole_members > 0
            ? static_cast<double>((candidate.whole_members + row.members - 1) / row.members) * candidate.member_seconds
            : candidate.member_seconds;
    // The most whole members; then the earliest done; then the fewest at once.
    const bool better =
        !best || candidate.whole_members > best->whole_members ||
        (candidate.whole_members == best->whole_members &&
         (same_time(done, best_done) ? candidate.members_per_device < best->members_per_device : done < best_done));
    if (better) {
      best = candidate;
      best_done = done;
    }
  }
  return best;
}

}  // namespace bnn::pipeline
