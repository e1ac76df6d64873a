// Tests for src/evaluation/figures.h: reliability bins against the ECE, and the
// figures as decodable PNG and SVG files (or a stated reason, without gnuplot).
#include "src/evaluation/figures.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "src/evaluation/metrics.h"
#include "src/io/atomic_file.h"
#include "tests/support/figure_files.h"
#include "tests/support/synthetic_labels.h"
#include "tests/support/temp_dir.h"

namespace bnn::evaluation {
namespace {

torch::Tensor synthetic_probs(int64_t n, int64_t k, double sharpness) {
  const torch::Tensor grid = torch::arange(n * k, torch::kDouble).reshape({n, k});
  return torch::softmax(torch::sin(grid * 0.37) * sharpness, /*dim=*/1);
}

using testing::synthetic_labels;

TEST(Reliability, TopLabelBinsGiveTheEce) {
  const torch::Tensor p = synthetic_probs(500, 10, 3.0), y = synthetic_labels(500, 10);
  const auto bins = top_label_reliability(p, y);
  ASSERT_EQ(static_cast<int64_t>(bins.size()), kEceBins);
  double from_bins = 0;
  int64_t total = 0;
  for (const auto& b : bins) {
    from_bins += static_cast<double>(b.count) / 500.0 * std::abs(b.frequency - b.confidence);
    total += b.count;
    if (b.count > 0) {
      EXPECT_GT(b.confidence, b.lower);
      EXPECT_LE(b.confidence, b.upper + 1e-12);
    }
  }
  EXPECT_EQ(total, 500);
  EXPECT_NEAR(from_bins, ece(p, y), 1e-12);
}

TEST(Reliability, ClasswisePoolsEveryClass) {
  const torch::Tensor p = synthetic_probs(300, 4, 2.0), y = synthetic_labels(300, 4);
  const auto bins = classwise_reliability(p, y, /*bins=*/10);
  int64_t total = 0;
  double hits = 0, confidence = 0;
  for (const auto& b : bins) {
    total += b.count;
    hits += b.frequency * static_cast<double>(b.count);
    confidence += b.confidence * static_cast<double>(b.count);
  }
  EXPECT_EQ(total, 300 * 4);
  EXPECT_NEAR(hits, 300.0, 1e-9);        // one true class per example
  EXPECT_NEAR(confidence, 300.0, 1e-9);  // rows sum to one
}

FigureInputs synthetic_inputs() {
  FigureInputs in;
  in.labels = synthetic_labels(200, 10);
  const std::vector<torch::Tensor> members = {synthetic_probs(200, 10, 2.0), synthetic_probs(200, 10, 4.0)};
  for (const char* method : {"adam", "swa", "bayes"}) {
    auto rows = ensemble_table(method, members, in.labels);
    in.rows.insert(in.rows.end(), rows.begin(), rows.end());
    in.ensemble_probs.emplace_back(method, (members[0] + members[1]) / 2);
  }
  for (int m = 0; m < 2; ++m) {
    LossTrace t;
    t.member = "member_00" + std::to_string(m);
    t.phase = {"adam", "adam", "swa", "sample", "sample", "sample"};
    t.loss = {1.0 + m, 0.6, 0.5, 0.45, 0.47, 0.46};
    in.traces.push_back(t);
  }
  return in;
}

TEST(Figures, PngAndSvgFilesDecode) {
  if (!testing::has_gnuplot()) GTEST_SKIP() << testing::kNoGnuplot;
  const auto dir = testing::unique_temp_dir("bnn_figures_test");
  const FigureOutcome outcome = draw_figures(synthetic_inputs(), dir);
  ASSERT_TRUE(outcome.error.empty()) << outcome.error;
  const std::vector<std::string> expected = {"metrics_vs_size", "reliability_adam", "reliability_swa",
                                             "reliability_bayes", "loss_traces"};
  EXPECT_EQ(outcome.figures, expected);
  for (const auto& name : expected) {
    const testing::PngSize size = testing::decode_png(dir / (name + ".png"));
    EXPECT_GE(size.width, 500u) << name;
    EXPECT_GE(size.height, 300u) << name;
    EXPECT_TRUE(testing::is_svg(dir / (name + ".svg"))) << name;
    EXPECT_FALSE(std::filesystem::exists(dir / (name + ".png.tmp"))) << name;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "figures.gp"));
  EXPECT_TRUE(std::filesystem::exists(dir / "data" / "reliability_bayes.dat"));
  std::filesystem::remove_all(dir);
}

// gnuplot exits 0 where its writes failed (a full disk): cut files do not
// replace the figures drawn before.
TEST(Figures, CutFilesKeepTheFiguresThere) {
  if (!testing::has_gnuplot()) GTEST_SKIP() << testing::kNoGnuplot;
  const auto dir = testing::unique_temp_dir("bnn_figures_test");
  ASSERT_TRUE(draw_figures(synthetic_inputs(), dir).error.empty());
  const std::string png = io::read_file(dir / "loss_traces.png"), svg = io::read_file(dir / "loss_traces.svg");
  const auto cut_after = [&](const std::string& cut) {
    const auto fake = dir / "cutting_gnuplot.sh";
    io::write_file_atomically(fake, "#!/bin/sh\ngnuplot \"$@\" || exit\nfor f in " + cut + "; do\n"
                                    "  head -c 100 \"$f\" > \"$f.cut\" && mv \"$f.cut\" \"$f\"\ndone\n");
    std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
    ::setenv("BNN_GNUPLOT", fake.c_str(), 1);
    const FigureOutcome outcome = draw_figures(synthetic_inputs(), dir);
    ::unsetenv("BNN_GNUPLOT");
    return outcome;
  };
  for (const std::string cut : {"loss_traces.png.tmp", "reliability_swa.svg.tmp"}) {
    const FigureOutcome outcome = cut_after(cut);
    EXPECT_TRUE(outcome.figures.empty()) << cut;
    EXPECT_NE(outcome.error.find("gnuplot's " + (dir / cut).string() + " is incomplete (100 bytes; a full disk?); "
                                 "no figure was replaced"),
              std::string::npos)
        << outcome.error;
    EXPECT_EQ(io::read_file(dir / "loss_traces.png"), png);
    EXPECT_EQ(io::read_file(dir / "loss_traces.svg"), svg);
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
    }
  }
  std::filesystem::remove_all(dir);
}

// gnuplot gets no descriptor of bnn's but its stdin, stdout and stderr: a
// data-parallel rank's sockets, held open by a gnuplot that outlived the
// rank, kept its peers from seeing it die. Here this process holds a
// descriptor without O_CLOEXEC, and a stand-in gnuplot looks for it.
TEST(Figures, GnuplotInheritsNoDescriptorOfBnns) {
  const auto dir = testing::unique_temp_dir("bnn_figures_test");
  const int held = ::open("/dev/null", O_RDONLY);
  ASSERT_GT(held, 2);
  const auto fake = dir / "looking_gnuplot.sh";
  io::write_file_atomically(fake, fmt::format("#!/bin/sh\n[ -e /proc/$$/fd/1 ] && echo 'fd 1 open'\n"
                                              "[ -e /proc/$$/fd/{0} ] && echo 'fd {0} inherited'\nexit 1\n",
                                              held));
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  ::setenv("BNN_GNUPLOT", fake.c_str(), 1);
  const FigureOutcome outcome = draw_figures(synthetic_inputs(), dir);
  ::unsetenv("BNN_GNUPLOT");
  ::close(held);
  EXPECT_NE(outcome.error.find("gnuplot failed (exit status 1)"), std::string::npos) << outcome.error;
  const std::string log = io::read_file(dir / "gnuplot.log");
  EXPECT_NE(log.find("fd 1 open"), std::string::npos) << log;  // the stand-in's look works
  EXPECT_EQ(log.find("inherited"), std::string::npos) << log;
  std::filesystem::remove_all(dir);
}

// Where gnuplot.log cannot be written after gnuplot drew, nothing it drew is
// left behind (a folder stands where the log goes).
TEST(Figures, ALogThatCannotBeWrittenLeavesNoTemporaryFigures) {
  if (!testing::has_gnuplot()) GTEST_SKIP() << testing::kNoGnuplot;
  const auto dir = testing::unique_temp_dir("bnn_figures_test");
  std::filesystem::create_directories(dir / "gnuplot.log" / "a_file_inside");
  const FigureOutcome outcome = draw_figures(synthetic_inputs(), dir);
  EXPECT_TRUE(outcome.figures.empty());
  EXPECT_NE(outcome.error.find("cannot write " + (dir / "gnuplot.log").string()), std::string::npos)
      << outcome.error;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
  std::filesystem::remove_all(dir);
}

TEST(Figures, MissingGnuplotIsAReasonNotACrash) {
  const auto dir = testing::unique_temp_dir("bnn_figures_test");
  ::setenv("BNN_GNUPLOT", "/no/such/gnuplot", 1);
  const FigureOutcome outcome = draw_figures(synthetic_inputs(), dir);
  ::unsetenv("BNN_GNUPLOT");
  EXPECT_TRUE(outcome.figures.empty());
  EXPECT_NE(outcome.error.find("gnuplot not found"), std::string::npos) << outcome.error;
  // The data and the script are there to draw by hand later.
  EXPECT_TRUE(std::filesystem::exists(dir / "figures.gp"));
  EXPECT_TRUE(std::filesystem::exists(dir / "data" / "metrics_vs_size.dat"));
  std::filesystem::remove_all(dir);
}

TEST(ImageCheck, RejectsWhatIsNotAnImage) {
  const auto dir = testing::unique_temp_dir("bnn_figures_test");
  io::write_file_atomically(dir / "fake.png", "\x89PNG\r\n\x1a\nnot really");
  io::write_file_atomically(dir / "fake.svg", "<html><svg></html>");
  EXPECT_THROW(testing::decode_png(dir / "fake.png"), std::runtime_error);
  EXPECT_FALSE(testing::is_svg(dir / "fake.svg"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bnn::evaluation
