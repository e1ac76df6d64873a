#include "src/cli/predict_command.h"

#include <fmt/format.h>

#include "src/cli/options.h"
#include "src/config/config.h"
#include "src/pipeline/predict.h"
#include "src/pipeline/run.h"
#include "src/runtime/threads.h"

namespace bnn::cli {

int cmd_predict(int argc, char** argv) {
  cxxopts::Options opts("bnn predict",
                        "Class probabilities, predictive entropy and mutual information of new images from a "
                        "finished run's SWA weights and stored posterior samples.");
  opts.add_options()("run", "Run directory of `bnn run`", cxxopts::value<std::string>())(
      "images",
      "Image files (JPEG, PNG, BMP), folders of them (not their subfolders), or .npy files of uint8 pixels "
      "(N x H x W or N x C x H x W); for a run on feature arrays, .npy files of float32 N x D features",
      cxxopts::value<std::vector<std::string>>())(
      "o,out", "Write the predictions to FILE.csv or FILE.json (default: print a table)",
      cxxopts::value<std::string>())(
      "members", "Members to use: 3, 0-3, 0,2,5-7 (default every finished member)", cxxopts::value<std::string>())(
      "method", "swa, bayes or both (bayes needs evaluation.save_sample_weights: true in the run)",
      cxxopts::value<std::string>()->default_value("both"))(
      "device", "auto, cpu, cuda or cuda:N", cxxopts::value<std::string>()->default_value("auto"))(
      "threads", "CPU threads (default: the CPUs this process may use)", cxxopts::value<int64_t>())(
      "h,help", "Show this help");
  opts.parse_positional({"images"});
  opts.positional_help("--run RUN_DIR --images PATH [PATH...]").show_positional_help();
  const auto parsed = parse_or_help(opts, argc, argv);
  if (!parsed) return 0;
  const cxxopts::ParseResult& args = *parsed;
  if (!args.count("run")) throw config::ConfigError("bnn predict needs --run RUN_DIR (see bnn predict --help)");
  if (!args.count("images")) {
    throw config::ConfigError("bnn predict needs --images PATH... (image files, folders or .npy)");
  }
  pipeline::PredictOptions options;
  options.run_dir = args["run"].as<std::string>();
  for (const auto& path : args["images"].as<std::vector<std::string>>()) options.inputs.emplace_back(path);
  const std::string method = args["method"].as<std::string>();
  if (method != "swa" && method != "bayes" && method != "both") {
    throw config::ConfigError(fmt::format("--method '{}': valid: swa, bayes, both", method));
  }
  options.swa = method != "bayes";
  options.bayes = method != "swa";
  if (args.count("members")) {
    const auto config = config::load_config(options.run_dir / pipeline::kConfigFile, {});
    options.members = pipeline::parse_member_list(args["members"].as<std::string>(), config.run.members);
  }
  if (args.count("out")) pipeline::check_predictions_path(args["out"].as<std::string>());
  options.device = args["device"].as<std::string>();
  runtime::configure_threads(args.count("threads") ? static_cast<int>(args["threads"].as<int64_t>()) : 0);
  const pipeline::Predictions predictions = pipeline::predict_images(options);
  if (!args.count("out")) {
    fmt::print("{}", pipeline::to_table(predictions));
    return 0;
  }
  const std::filesystem::path out = args["out"].as<std::string>();
  pipeline::write_predictions(predictions, out);
  fmt::print("written: {} ({} image{})\n", out.string(), predictions.images.size(),
             predictions.images.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace bnn::cli
