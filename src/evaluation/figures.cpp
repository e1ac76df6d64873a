#include "src/evaluation/figures.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "src/evaluation/ood.h"
#include "src/io/atomic_file.h"
#include "src/runtime/stop_signal.h"

namespace bnn::evaluation {
namespace {

struct Point {
  double value;
  bool outcome;
};

std::vector<ReliabilityBin> bin_points(const std::vector<Point>& points, int64_t bins) {
  TORCH_CHECK(bins >= 1, "reliability diagrams need at least one bin, got ", bins);
  std::vector<ReliabilityBin> out(bins);
  for (int64_t b = 0; b < bins; ++b) {
    out[b].lower = static_cast<double>(b) / static_cast<double>(bins);
    out[b].upper = static_cast<double>(b + 1) / static_cast<double>(bins);
  }
  for (const Point& p : points) {
    // Bin b holds (b/B, (b+1)/B], as in ece(); 0 joins the first bin.
    const auto b = std::clamp(static_cast<int64_t>(std::ceil(p.value * static_cast<double>(bins))) - 1,
                              int64_t{0}, bins - 1);
    out[b].count += 1;
    out[b].confidence += p.value;
    out[b].frequency += p.outcome ? 1.0 : 0.0;
  }
  for (ReliabilityBin& bin : out) {
    if (bin.count == 0) continue;
    bin.confidence /= static_cast<double>(bin.count);
    bin.frequency /= static_cast<double>(bin.count);
  }
  return out;
}

// probs and labels as CPU double / int64, checked by the metrics' own rules.
std::pair<torch::Tensor, torch::Tensor> checked(const torch::Tensor& probs, const torch::Tensor& labels) {
  accuracy(probs, labels);  // throws on malformed inputs (Note [Metric conventions])
  return {probs.detach().to(torch::kCPU, torch::kDouble).contiguous(),
          labels.detach().to(torch::kCPU, torch::kLong).contiguous()};
}

// Finds gnuplot: $BNN_GNUPLOT if set, else `gnuplot` on PATH. Empty if absent.
std::string find_gnuplot() {
  if (const char* env = std::getenv("BNN_GNUPLOT"); env != nullptr && *env != '\0') {
    return ::access(env, X_OK) == 0 ? std::string(env) : std::string();
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path == nullptr ? "" : path);
  std::string d;
  while (std::getline(dirs, d, ':')) {
    const auto candidate = std::filesystem::path(d.empty() ? "." : d) / "gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

// Runs `command` with /bin/sh, capturing stdout and stderr, its stdin
// /dev/null and no other descriptor of bnn's open in it (a data-parallel
// rank's sockets, held open by a gnuplot that outlived the rank, would keep
// its peers from seeing it die). Returns the exit status (-1 if it could not be started or was
// killed). Note [Stop signals] (src/runtime/stop_signal.h): where bnn takes
// SIGINT as a request to stop (at the end of the evaluation it is in), in a
// process group of its own, so that a Ctrl-C, which the terminal sends to
// bnn's whole group, does not kill gnuplot and with it the figures; a second
// signal, which ends bnn, ends that group too (runtime::HelperGroup).
int run_captured(const std::string& command, std::string& output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  // Every other descriptor open now, closed in the child (those opened with
  // O_CLOEXEC would close anyway; one closed meanwhile is no error).
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int fd = std::stoi(name);
    if (fd > 2 && fd != fds[0] && fd != fds[1]) ::posix_spawn_file_actions_addclose(&actions, fd);
  }
  ::posix_spawnattr_init(&attributes);
  const bool own_group = runtime::stops_on_signals();
  if (own_group) {
    ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    ::posix_spawnattr_setpgroup(&attributes, 0);  // a new group, led by the shell
  }
  std::string shell = "sh", flag = "-c", script = command;
  char* argv[] = {shell.data(), flag.data(), script.data(), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    return -1;
  }
  std::optional<runtime::HelperGroup> helper;
  if (own_group) helper.emplace(pid);
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      output.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Every figure is drawn twice, once per terminal, from the same body.
struct Terminal {
  const char* extension;
  const char* setting;
};
constexpr Terminal kTerminals[] = {
    {"png", "pngcairo noenhanced font 'sans,10'"},
    {"svg", "svg noenhanced dynamic font 'sans,10'"},
};

// Whether `bytes` is a file gnuplot finished: a PNG ends in its IEND chunk
// (the type's 4 bytes, then the CRC), an SVG in </svg> and white space.
bool complete_figure(const std::string& bytes, const std::string& extension) {
  if (extension == "png") return bytes.size() >= 20 && bytes.compare(bytes.size() - 8, 4, "IEND") == 0;
  const size_t end = bytes.rfind("</svg>");
  return end != std::string::npos && bytes.find_first_not_of(" \t\r\n", end + 6) == std::string::npos;
}

void add_figure(std::string& script, const std::string& name, int width, int height, const std::string& body) {
  for (const Terminal& t : kTerminals) {
    fmt::format_to(std::back_inserter(script), "reset\nset terminal {} size {},{}\nset output '{}.{}'.suffix\n",
                   t.setting, width, height, name, t.extension);
    script += body;
    script += "unset multiplot\nunset output\n\n";
  }
}

std::string method_words(const FigureInputs& in) {
  std::string words;
  for (const auto& [method, probs] : in.ensemble_probs) words += (words.empty() ? "" : " ") + method;
  return words;
}

void metrics_vs_size(const FigureInputs& in, const std::filesystem::path& dir, std::string& script) {
  std::string data =
      "# one block per method: size, then mean and std of accuracy, nll, ace, rps (std 0 where a size has one "
      "group: no spread to draw)\n";
  const auto bar = [](const Summary& s) { return std::isnan(s.std) ? 0.0 : s.std; };
  int64_t max_size = 1;
  for (const auto& [method, probs] : in.ensemble_probs) {
    fmt::format_to(std::back_inserter(data), "# {}\n", method);
    for (const EnsembleRow& r : in.rows) {
      if (r.method != method) continue;
      max_size = std::max(max_size, r.size);
      fmt::format_to(std::back_inserter(data), "{} {:.10g} {:.10g} {:.10g} {:.10g} {:.10g} {:.10g} {:.10g} {:.10g}\n",
                     r.size, r.accuracy.mean, bar(r.accuracy), r.nll.mean, bar(r.nll), r.ace.mean, bar(r.ace),
                     r.rps.mean, bar(r.rps));
    }
    data += "\n\n";
  }
  io::write_file_atomically(dir / "data" / "metrics_vs_size.dat", data);
  std::string body = fmt::format(
      "methods = \"{}\"\n"
      "set multiplot layout 2,2 title 'Metrics against ensemble size (mean and std over groups)'\n"
      "set logscale x 2\nset xrange [0.7:{}]\nset xlabel 'ensemble size'\nset key top right\nset grid\n",
      method_words(in), static_cast<double>(max_size) * 1.4);
  const char* titles[] = {"accuracy", "NLL", "ACE", "RPS"};
  for (int m = 0; m < 4; ++m) {
    fmt::format_to(std::back_inserter(body),
                   "set title '{0}'\nset ylabel '{0}'\n"
                   "plot for [i=1:words(methods)] 'data/metrics_vs_size.dat' index (i-1) using 1:{1}:{2} "
                   "with yerrorlines lw 2 pt 7 title word(methods, i)\n",
                   titles[m], 2 + 2 * m, 3 + 2 * m);
  }
  add_figure(script, "metrics_vs_size", 1000, 760, body);
}

void write_bins(std::string& data, const std::vector<ReliabilityBin>& bins) {
  bool any = false;
  for (const ReliabilityBin& b : bins) {
    if (b.count == 0) continue;
    any = true;
    fmt::format_to(std::back_inserter(data), "{:.10g} {:.10g} {} {:.10g} {:.10g}\n", (b.lower + b.upper) / 2,
                   b.upper - b.lower, b.count, b.confidence, b.frequency);
  }
  TORCH_INTERNAL_ASSERT(any, "reliability diagram without points");
  data += "\n\n";
}

void reliability(const FigureInputs& in, const std::filesystem::path& dir, std::string& script,
                 std::vector<std::string>& names) {
  for (const auto& [method, probs] : in.ensemble_probs) {
    const std::string name = "reliability_" + method;
    std::string data = "# index 0 top-label, index 1 class-wise: bin centre, width, count, confidence, frequency\n";
    write_bins(data, top_label_reliability(probs, in.labels));
    write_bins(data, classwise_reliability(probs, in.labels));
    io::write_file_atomically(dir / "data" / (name + ".dat"), data);
    std::string body = fmt::format(
        "set multiplot layout 1,2 title 'Reliability of the {0} ensemble'\n"
        "set xrange [0:1]\nset yrange [0:1]\nset size ratio 1\nset grid\nset key top left\n"
        "set style fill solid 0.5 border -1\nset xlabel 'predicted probability'\nset ylabel 'observed frequency'\n",
        method);
    const char* panels[] = {"top-label (confidence of the predicted class)", "class-wise (every class)"};
    for (int i = 0; i < 2; ++i) {
      fmt::format_to(std::back_inserter(body),
                     "set title '{0}'\n"
                     "plot 'data/{1}.dat' index {2} using 1:5:2 with boxes lc rgb '#4477aa' title 'observed', "
                     "'' index {2} using 1:4 with points pt 7 lc rgb '#ee6677' title 'mean confidence', "
                     "x with lines dt 2 lc rgb 'black' title 'calibrated'\n",
                     panels[i], name, i);
    }
    add_figure(script, name, 1000, 520, body);
    names.push_back(name);
  }
}

void loss_traces(const FigureInputs& in, const std::filesystem::path& dir, std::string& script) {
  std::string data = "# one block per member: epoch (counted across phases), training loss\n";
  std::string members;
  for (const LossTrace& t : in.traces) {
    fmt::format_to(std::back_inserter(data), "# {}\n", t.member);
    for (size_t e = 0; e < t.loss.size(); ++e) {
      fmt::format_to(std::back_inserter(data), "{} {:.10g}\n", e + 1, t.loss[e]);
    }
    data += "\n\n";
    members += (members.empty() ? "" : " ") + t.member;
  }
  io::write_file_atomically(dir / "data" / "loss_traces.dat", data);
  std::string body = fmt::format(
      "members = \"{}\"\nset title 'Training loss per member (mean cross-entropy per example)'\n"
      "set xlabel 'epoch (Adam, then SWA, then sampling)'\nset ylabel 'training loss'\nset grid\n"
      "set key outside right\nset xrange [0.5:{}]\n",
      members, static_cast<double>(in.traces.front().loss.size()) + 0.5);
  // Phase boundaries of the first member (every member runs the same schedule),
  // each phase named where it starts.
  const auto& phases = in.traces.front().phase;
  for (size_t e = 0; e < phases.size(); ++e) {
    if (e > 0 && phases[e] == phases[e - 1]) continue;
    const double x = static_cast<double>(e) + 0.5;
    if (e > 0) {
      fmt::format_to(std::back_inserter(body),
                     "set arrow from {0}, graph 0 to {0}, graph 1 nohead dt 2 lc rgb 'gray40'\n", x);
    }
    fmt::format_to(std::back_inserter(body), "set label '{}' at {}, graph 0.96 left offset 0.5,0 tc rgb 'gray40'\n",
                   phases[e], x);
  }
  body += "plot for [i=1:words(members)] 'data/loss_traces.dat' index (i-1) using 1:2 with linespoints pt 7 ps 0.5 "
          "title word(members, i)\n";
  add_figure(script, "loss_traces", 1000, 560, body);
}

// Two panels, classic and split R-hat; data block 2i is curve i's classic
// R-hat, block 2i+1 its split R-hat (finite values only).
void rhat_vs_epoch(const std::vector<RhatCurve>& curves, const std::string& title, const std::filesystem::path& dir,
                   std::string& script) {
  std::string data = "# two blocks per curve, classic then split R-hat: epoch, R-hat, draws per chain\n";
  std::string labels;
  int64_t last_epoch = 1;
  for (const RhatCurve& c : curves) {
    if (!c.points.empty()) last_epoch = std::max(last_epoch, c.points.back().epoch);
    for (const bool split : {false, true}) {
      fmt::format_to(std::back_inserter(data), "# {} {}\n", c.label, split ? "split" : "classic");
      for (const RhatAtEpoch& p : c.points) {
        const double value = split ? p.split_rhat : p.rhat;
        if (std::isfinite(value)) fmt::format_to(std::back_inserter(data), "{} {:.10g} {}\n", p.epoch, value, p.draws);
      }
      data += "\n\n";
    }
    labels += (labels.empty() ? "\"" : " \"") + c.label + "\"";
  }
  io::write_file_atomically(dir / "data" / "rhat_vs_epoch.dat", data);
  std::string body = fmt::format(
      "curves = '{}'\nset multiplot layout 1,2 title '{}'\n"
      "set xlabel 'last epoch used (draws from the end of burn-in)'\nset ylabel 'R-hat'\nset grid\n"
      "set key below\nset yrange [*<0.99:1.12<*]\nset xtics {}\n",
      labels, title, (last_epoch + 9) / 10);
  const char* panels[] = {"R-hat", "split R-hat"};
  for (int i = 0; i < 2; ++i) {
    fmt::format_to(std::back_inserter(body),
                   "set title '{}'\n"
                   "plot for [i=1:words(curves)] 'data/rhat_vs_epoch.dat' index (2*i-{}) using 1:2 "
                   "with linespoints pt 7 ps 0.6 title word(curves, i), "
                   "1.1 with lines dt 2 lw 2 lc rgb '#cc3311' title '1.1', "
                   "1.01 with lines dt 3 lw 2 lc rgb '#0077bb' title '1.01'\n",
                   panels[i], 2 - i);
  }
  add_figure(script, "rhat_vs_epoch", 1000, 480, body);
}

void ood_figure(const OodFigure& f, const std::filesystem::path& dir, std::string& script,
                std::vector<std::string>& names) {
  const std::string name = "ood_" + f.set;
  // Common bins over every entropy shown, from 0 to the largest (at most log K).
  double top = 1e-12;
  for (size_t m = 0; m < f.methods.size(); ++m) {
    top = std::max({top, f.test_entropy[m].max().item<double>(), f.ood_entropy[m].max().item<double>()});
  }
  constexpr int64_t kBins = 30;
  const double width = top / kBins;
  std::string data = "# per method two blocks: histogram (bin centre, test density, OOD density), then the ROC "
                     "curve (false positive rate, true positive rate)\n";
  for (size_t m = 0; m < f.methods.size(); ++m) {
    fmt::format_to(std::back_inserter(data), "# {} histogram\n", f.methods[m]);
    const auto density = [&](const torch::Tensor& h) {
      const torch::Tensor e = h.to(torch::kDouble).contiguous();
      std::vector<double> counts(kBins, 0.0);
      for (int64_t i = 0; i < e.numel(); ++i) {
        const auto b = std::min<int64_t>(kBins - 1, static_cast<int64_t>(e.data_ptr<double>()[i] / width));
        counts[static_cast<size_t>(std::max<int64_t>(b, 0))] += 1.0 / (static_cast<double>(e.numel()) * width);
      }
      return counts;
    };
    const auto in = density(f.test_entropy[m]), out = density(f.ood_entropy[m]);
    for (int64_t b = 0; b < kBins; ++b) {
      fmt::format_to(std::back_inserter(data), "{:.10g} {:.10g} {:.10g}\n", (b + 0.5) * width, in[b], out[b]);
    }
    fmt::format_to(std::back_inserter(data), "\n\n# {} ROC\n", f.methods[m]);
    for (const auto& [fpr, tpr] : roc_curve(f.test_entropy[m], f.ood_entropy[m])) {
      fmt::format_to(std::back_inserter(data), "{:.10g} {:.10g}\n", fpr, tpr);
    }
    data += "\n\n";
  }
  io::write_file_atomically(dir / "data" / (name + ".dat"), data);
  std::string methods;
  for (const auto& m : f.methods) methods += (methods.empty() ? "" : " ") + m;
  const auto cols = static_cast<int64_t>(f.methods.size()) + 1;
  std::string body = fmt::format(
      "methods = \"{0}\"\n"
      "set multiplot layout 1,{1} title 'Test set against OOD set {2}: predictive entropy of the full ensemble'\n"
      "set grid\nset style fill transparent solid 0.45 noborder\nset key top right\n"
      "set xlabel 'predictive entropy (nats)'\nset ylabel 'density'\n",
      methods, cols, f.set);
  for (size_t m = 0; m < f.methods.size(); ++m) {
    fmt::format_to(std::back_inserter(body),
                   "set title '{0}'\n"
                   "plot 'data/{1}.dat' index {2} using 1:2 with boxes lc rgb '#4477aa' title 'test', "
                   "'' index {2} using 1:3 with boxes lc rgb '#ee6677' title '{3}'\n",
                   f.methods[m], name, 2 * m, f.set);
  }
  fmt::format_to(std::back_inserter(body),
                 "set title 'ROC, OOD as positive'\nset xlabel 'false positive rate'\nset ylabel 'true positive rate'\n"
                 "set xrange [0:1]\nset yrange [0:1]\nset size ratio 1\nset key bottom right\n"
                 "plot for [i=1:words(methods)] 'data/{0}.dat' index (2*i-1) using 1:2 with lines lw 2 "
                 "title word(methods, i), x with lines dt 2 lc rgb 'black' title 'chance'\n",
                 name);
  add_figure(script, name, static_cast<int>(380 * cols), 440, body);
  names.push_back(name);
}

std::string script_header() {
  return "# Drawn by bnn (src/evaluation/figures.h); rerun with `gnuplot figures.gp` in this folder.\n"
         "if (!exists('suffix')) suffix = ''\n\n";
}

// Writes figures.gp and runs it (Note [Figures]); `names` are the figures it draws.
FigureOutcome run_script(const std::string& script, const std::vector<std::string>& names,
                         const std::filesystem::path& dir, io::StagedFiles* staged) {
  io::write_file_atomically(dir / "figures.gp", script);
  FigureOutcome outcome;
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty()) {
    outcome.error = "gnuplot not found (install the Debian package gnuplot-nox, e.g. with scripts/install-deps.sh, "
                    "or set BNN_GNUPLOT)";
    return outcome;
  }
  const std::string where = std::filesystem::absolute(dir).string();
  if (where.find('\'') != std::string::npos || gnuplot.find('\'') != std::string::npos) {
    outcome.error = "cannot run gnuplot on a path with a single quote: " + where;
    return outcome;
  }
  const auto remove_temporaries = [&] {
    for (const std::string& name : names) {
      for (const Terminal& t : kTerminals) {
        std::error_code ec;
        std::filesystem::remove(dir / fmt::format("{}.{}.tmp", name, t.extension), ec);
      }
    }
  };
  std::string output;
  const int status = run_captured(fmt::format("cd {} && exec {} -e \"suffix='.tmp'\" figures.gp", quoted(where),
                                              quoted(gnuplot)), output);
  try {
    io::write_file_atomically(dir / "gnuplot.log", output);
  } catch (const std::exception&) {
    remove_temporaries();  // what gnuplot drew: no figure is renamed now
    throw;
  }
  if (status != 0) {
    outcome.error = fmt::format("gnuplot failed (exit status {}); see {}", status, (dir / "gnuplot.log").string());
    remove_temporaries();  // what it wrote before it failed
    return outcome;
  }
  // gnuplot exits 0 even where its writes failed (a full disk leaves empty
  // or cut files): every figure is checked before any replaces the one
  // there, by a rename.
  for (const std::string& name : names) {
    for (const Terminal& t : kTerminals) {
      const std::filesystem::path tmp = dir / fmt::format("{}.{}.tmp", name, t.extension);
      if (!std::filesystem::exists(tmp)) {
        outcome.error = fmt::format("gnuplot did not write {}", tmp.string());
      } else if (const std::string bytes = io::read_file(tmp); !complete_figure(bytes, t.extension)) {
        outcome.error = fmt::format("gnuplot's {} is incomplete ({} bytes; a full disk?)", tmp.string(), bytes.size());
      }
      if (!outcome.error.empty()) break;
    }
    if (!outcome.error.empty()) break;
  }
  if (!outcome.error.empty()) {
    remove_temporaries();
    outcome.error += "; no figure was replaced";
    return outcome;
  }
  for (const std::string& name : names) {
    for (const Terminal& t : kTerminals) {
      const auto file = dir / fmt::format("{}.{}", name, t.extension);
      if (staged != nullptr) {  // renamed with the caller's other files
        staged->adopt(file.string() + ".tmp", file);
        continue;
      }
      std::error_code ec;
      std::filesystem::rename(file.string() + ".tmp", file, ec);
      if (ec) {
        remove_temporaries();
        outcome.error = fmt::format("cannot rename a figure into {}: {}", file.string(), ec.message());
        return outcome;
      }
    }
  }
  outcome.figures = names;
  return outcome;
}

// Note [Figures]: a write that fails (the data, the script, a figure: a full
// disk, a read-only folder) is the reason nothing was drawn, as a missing
// gnuplot is, and never an exception that would cost the caller its tables.
FigureOutcome or_the_failed_write(const std::function<FigureOutcome()>& draw) {
  try {
    return draw();
  } catch (const std::runtime_error& e) {  // std::filesystem's errors too; not a TORCH_CHECK
    FigureOutcome outcome;
    outcome.error = e.what();
    return outcome;
  }
}

}  // namespace

std::vector<ReliabilityBin> top_label_reliability(const torch::Tensor& probs, const torch::Tensor& labels,
                                                  int64_t bins) {
  const auto [p, y] = checked(probs, labels);
  const auto n = p.size(0);
  const auto confidence = p.max(/*dim=*/1);
  const torch::Tensor conf = std::get<0>(confidence).contiguous();
  // argmax with ties to the lowest index, as accuracy() counts it.
  const torch::Tensor predicted = p.argmax(/*dim=*/1).contiguous();
  std::vector<Point> points;
  points.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    points.push_back({conf.data_ptr<double>()[i], predicted.data_ptr<int64_t>()[i] == y.data_ptr<int64_t>()[i]});
  }
  return bin_points(points, bins);
}

std::vector<ReliabilityBin> classwise_reliability(const torch::Tensor& probs, const torch::Tensor& labels,
                                                  int64_t bins) {
  const auto [p, y] = checked(probs, labels);
  const auto n = p.size(0), k = p.size(1);
  std::vector<Point> points;
  points.reserve(n * k);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) points.push_back({p.data_ptr<double>()[i * k + c], y.data_ptr<int64_t>()[i] == c});
  }
  return bin_points(points, bins);
}

FigureOutcome draw_figures(const FigureInputs& inputs, const std::filesystem::path& dir, io::StagedFiles* staged) {
  TORCH_CHECK(!inputs.ensemble_probs.empty() && !inputs.traces.empty(), "figures need ensembles and loss traces");
  return or_the_failed_write([&] {
    std::filesystem::create_directories(dir / "data");
    std::string script = script_header();
    std::vector<std::string> names = {"metrics_vs_size"};
    metrics_vs_size(inputs, dir, script);
    reliability(inputs, dir, script, names);
    names.push_back("loss_traces");
    loss_traces(inputs, dir, script);
    for (const OodFigure& f : inputs.ood) ood_figure(f, dir, script, names);
    if (has_split_rhat(inputs.rhat_curves)) {
      names.push_back("rhat_vs_epoch");
      rhat_vs_epoch(inputs.rhat_curves, inputs.rhat_title, dir, script);
    }
    return run_script(script, names, dir, staged);
  });
}

bool has_split_rhat(const std::vector<RhatCurve>& curves) {
  for (const RhatCurve& c : curves) {
    for (const RhatAtEpoch& p : c.points) {
      if (std::isfinite(p.split_rhat)) return true;
    }
  }
  return false;
}

FigureOutcome draw_rhat_figure(const std::vector<RhatCurve>& curves, const std::string& title,
                               const std::filesystem::path& dir, io::StagedFiles* staged) {
  TORCH_CHECK(has_split_rhat(curves), "the R-hat figure needs a split R-hat value (4 draws per chain)");
  return or_the_failed_write([&] {
    std::filesystem::create_directories(dir / "data");
    std::string script = script_header();
    rhat_vs_epoch(curves, title, dir, script);
    return run_script(script, {"rhat_vs_epoch"}, dir, staged);
  });
}

}  // namespace bnn::evaluation
