// `bnn hessian --checkpoint` on a tiny run: the saved weights are the member's
// (they reproduce its SWA predictions), and the four points of appendix D.2
// get finite spectral norms in hessian.json.

#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "models/flat_parameters.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "src/pipeline/member.h"
#include "src/pipeline/run.h"
#include "tests/support/data_paths.h"
#include "tests/support/logistic_slice.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {
using bnn::testing::kTinyConfig;

// This test program's own folder (removed at its end unless a test failed).
const std::filesystem::path& hessian_work() {
  static const auto dir = bnn::testing::unique_temp_dir("bnn_hessian_test");
  return dir;
}

bnn::testing::CommandResult hessian_cli(const std::string& args) {
  static int calls = 0;
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return bnn::testing::run_bnn(args, hessian_work() / (test + "_" + std::to_string(++calls) + ".txt"));
}

TEST(HessianCli, FourPointsOfATinyRun) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto run = hessian_work() / "tiny";
  std::filesystem::remove_all(run);
  const auto r = hessian_cli("run --config " + kTinyConfig + " --out " + run.string() + " --members 0 --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto member = run / "member_000";

  // swa_weights.npy is x*: loaded into a fresh model it predicts swa_probs.npy.
  const auto config = bnn::config::load_config(run / "config.yaml", {});
  const auto data = bnn::pipeline::load_dataset(config, torch::kCPU);
  auto model = bnn::models::make_model(bnn::pipeline::model_spec(config, data), /*seed=*/0);
  bnn::models::FlatParameters flat(*model);
  {
    torch::NoGradGuard no_grad;
    flat.values().copy_(bnn::data_loaders::read_npy(member / "swa_weights.npy"));
  }
  const torch::Tensor probs = bnn::models::predict_probabilities(*model, data.test.images);
  EXPECT_TRUE(
      torch::allclose(probs, bnn::data_loaders::read_npy(member / "swa_probs.npy"), /*rtol=*/1e-5, /*atol=*/1e-6));

  const auto h = hessian_cli("hessian --checkpoint " + member.string() +
                         " --examples 200 --iterations 30 --seed 7 --tolerance 1e-3 --threads 1");
  ASSERT_EQ(h.code, 0) << h.output;
  const auto report = nlohmann::json::parse(bnn::io::read_file(member / "hessian.json"));
  EXPECT_EQ(report["examples"], 200);
  EXPECT_EQ(report["seed"], 7);
  EXPECT_EQ(report["max_iterations"], 30);
  EXPECT_EQ(report["tolerance"], 1e-3);
  EXPECT_EQ(report["device"], "cpu");
  EXPECT_NEAR(report["localization"].get<double>(), 50.0, 1e-9);  // 1 / rho^2, rho = 50^(-1/2)
  std::vector<std::string> names;
  for (const auto& p : report["points"]) {
    names.push_back(p["point"]);
    const double norm = p["spectral_norm"].get<double>();
    EXPECT_TRUE(std::isfinite(norm) && norm > 0) << p;
    EXPECT_LE(std::abs(p["rayleigh"].get<double>()), norm * (1 + 1e-4)) << p;
    EXPECT_NEAR(p["localized"].get<double>(), p["rayleigh"].get<double>() + 50.0, 1e-6) << p;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"init", "adam", "swa", "swa_perturbed"}));
  EXPECT_NE(h.output.find("swa_perturbed"), std::string::npos) << h.output;

  // A second command on the member does not write over the first's result: it
  // refuses before any work, naming the file; with --out it writes elsewhere,
  // and the same seed and options give the same numbers.
  const std::string first = bnn::io::read_file(member / "hessian.json");
  const auto again = hessian_cli("hessian --checkpoint " + member.string() + " --examples 100 --threads 1");
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find((member / "hessian.json").string() +
                              " already holds a Hessian result, which bnn hessian does not write over: give --out "
                              "FILE for this one, or remove it"),
            std::string::npos)
      << again.output;
  EXPECT_EQ(again.output.find("hessian at"), std::string::npos) << again.output;  // no work done
  EXPECT_EQ(bnn::io::read_file(member / "hessian.json"), first);
  const auto other = hessian_work() / "same_seed.json";
  const auto elsewhere = hessian_cli("hessian --checkpoint " + member.string() + " --out " + other.string() +
                                     " --examples 200 --iterations 30 --seed 7 --tolerance 1e-3 --threads 1");
  ASSERT_EQ(elsewhere.code, 0) << elsewhere.output;
  EXPECT_NE(elsewhere.output.find("written: " + other.string()), std::string::npos) << elsewhere.output;
  EXPECT_EQ(bnn::io::read_file(other), first);
  EXPECT_EQ(bnn::io::read_file(member / "hessian.json"), first);
  const auto folder = hessian_cli("hessian --checkpoint " + member.string() + " --out " + run.string());
  EXPECT_EQ(folder.code, 2) << folder.output;
  EXPECT_NE(folder.output.find("--out " + run.string() + " is a folder: give the result file's name"),
            std::string::npos)
      << folder.output;
  // A dangling link counts as a file there (link(2) would fail on it after all the work).
  const auto dangling = hessian_work() / "dangling.json";
  std::filesystem::create_symlink("/no/such/target.json", dangling);
  const auto linked = hessian_cli("hessian --checkpoint " + member.string() + " --out " + dangling.string());
  EXPECT_EQ(linked.code, 2) << linked.output;
  EXPECT_NE(linked.output.find("--out " + dangling.string() + ": the file exists, and bnn hessian writes only a new "
                               "file"),
            std::string::npos)
      << linked.output;
  const auto typo = hessian_cli("hessian --checkpoint " + (run / "member_009").string());
  EXPECT_EQ(typo.code, 2) << typo.output;
  EXPECT_NE(typo.output.find((run / "member_009").string() + " is not a member directory of a bnn run: no such folder"),
            std::string::npos)
      << typo.output;
  const auto nowhere = hessian_cli("hessian --checkpoint " + member.string() + " --out /no/such/folder/h.json");
  EXPECT_EQ(nowhere.code, 2) << nowhere.output;
  EXPECT_NE(nowhere.output.find("--out /no/such/folder/h.json: the folder /no/such/folder does not exist"),
            std::string::npos)
      << nowhere.output;
  std::filesystem::remove_all(run);
}

// A run whose x* is the MAP point by L-BFGS has map_weights.npy instead of
// adam_ and swa_weights.npy: its points are init, map and map_perturbed, and
// a missing file names the phase that writes it.
TEST(HessianCli, PointsOfAnLbfgsRun) {
  BNN_SKIP_WITHOUT_FASHION_MNIST();
  const auto run = hessian_work() / "lbfgs";
  std::filesystem::remove_all(run);
  const auto r = hessian_cli("run --config " + bnn::testing::kLogisticConfig + bnn::testing::kLogisticSlice +
                         " --set sampler.epochs=2 --set sampler.burn_in=1 --out " + run.string());
  ASSERT_EQ(r.code, 0) << r.output;
  const auto member = run / "member_000";
  const auto h = hessian_cli("hessian --checkpoint " + member.string() + " --examples 200 --iterations 20 --threads 1");
  ASSERT_EQ(h.code, 0) << h.output;
  const auto report = nlohmann::json::parse(bnn::io::read_file(member / "hessian.json"));
  std::vector<std::string> names;
  for (const auto& p : report["points"]) names.push_back(p["point"]);
  EXPECT_EQ(names, (std::vector<std::string>{"init", "map", "map_perturbed"}));
  // The run is global (sampler.rho .inf): the perturbation is 50^-1/2, as bnn
  // rhat's, so the perturbed point is not the MAP point itself.
  if (names.size() == 3) {
    EXPECT_NE(report["points"][1]["rayleigh"].get<double>(), report["points"][2]["rayleigh"].get<double>());
  }
  EXPECT_NEAR(report["perturbation"].get<double>(), 1.0 / std::sqrt(50.0), 1e-12);
  const auto whole_run = hessian_cli("hessian --checkpoint " + run.string());
  EXPECT_EQ(whole_run.code, 2) << whole_run.output;
  EXPECT_NE(whole_run.output.find(run.string() + " is a run directory; give --checkpoint one of its member folders, "
                                  "e.g. " + member.string()),
            std::string::npos)
      << whole_run.output;
  std::filesystem::remove(member / "map_weights.npy");
  const auto missing = hessian_cli("hessian --checkpoint " + member.string() + " --out " +
                                   (hessian_work() / "lbfgs_missing.json").string() + " --examples 200 --threads 1");
  EXPECT_EQ(missing.code, 2) << missing.output;
  // A finished member without weights was gathered by pack-members (or emptied by hand).
  EXPECT_NE(missing.output.find("member_000 finished, but its folder holds none of its weights (no swa_weights.npy or "
                                "map_weights.npy): a run gathered by scripts/pack-members.sh unpack"),
            std::string::npos)
      << missing.output;
  std::filesystem::remove(member / "status.json");
  const auto unfinished = hessian_cli("hessian --checkpoint " + member.string() + " --out " +
                                      (hessian_work() / "lbfgs_missing.json").string() + " --examples 200 --threads 1");
  EXPECT_EQ(unfinished.code, 2) << unfinished.output;
  EXPECT_NE(unfinished.output.find("map_weights.npy missing: the member has not finished L-BFGS"), std::string::npos)
      << unfinished.output;
  std::filesystem::remove_all(run);
}

TEST(HessianCli, MissingCheckpointIsAClearError) {
  const auto r = hessian_cli("hessian --checkpoint /no/such/run/member_000");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("is not a member directory of a bnn run"), std::string::npos) << r.output;
}

}  // namespace
