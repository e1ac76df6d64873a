// `bnn predict` on a tiny run made from generated Fashion-MNIST-format data
// (an MLP with BatchNorm, so the stored BatchNorm statistics matter): test
// images written as PNG files, or as a .npy of pixels, get the probabilities
// the run's evaluator wrote for them (swa_probs.npy, bayes_probs.npy); sample
// storage keys are validated; bad inputs are clear errors.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <iostream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data_loaders/npy.h"
#include "src/config/config.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "tests/support/array_files.h"
#include "tests/support/error_text.h"
#include "tests/support/idx_files.h"
#include "tests/support/image_files.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using bnn::testing::CommandResult;

constexpr int kSide = 28;
constexpr int kTrain = 400, kTest = 40;
constexpr int kImages = 8;  // test images given to bnn predict

// Class c is a bright horizontal band at rows 2c..2c+6 over a noisy
// background, so a small MLP learns something in two epochs.
std::vector<uint8_t> pixels_of(int index, int label) {
  std::vector<uint8_t> p(kSide * kSide);
  uint32_t state = 2463534242u + static_cast<uint32_t>(index) * 7919u;
  for (int i = 0; i < kSide * kSide; ++i) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    const int row = i / kSide;
    const bool band = row >= 2 * label && row < 2 * label + 7;
    p[i] = static_cast<uint8_t>((band ? 150 : 0) + state % 100);
  }
  return p;
}

void write_idx_split(const fs::path& dir, const std::string& prefix, int n, int first_index) {
  std::vector<uint8_t> images, labels;
  for (int i = 0; i < n; ++i) {
    const int label = (i * 7 + first_index) % 10;
    const auto p = pixels_of(first_index + i, label);
    images.insert(images.end(), p.begin(), p.end());
    labels.push_back(static_cast<uint8_t>(label));
  }
  bnn::testing::write_plain(dir / (prefix + "-images-idx3-ubyte"),
                            bnn::testing::idx_bytes(bnn::testing::kImagesMagic, {n, kSide, kSide}, images));
  bnn::testing::write_plain(dir / (prefix + "-labels-idx1-ubyte"),
                            bnn::testing::idx_bytes(bnn::testing::kLabelsMagic, {n}, labels));
}

// Test image i exactly as the IDX file holds it.
cv::Mat test_image(int i) {
  const auto p = pixels_of(kTrain + i, (i * 7 + kTrain) % 10);
  return cv::Mat(kSide, kSide, CV_8UC1, const_cast<uint8_t*>(p.data())).clone();
}

class Predict : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = bnn::testing::unique_temp_dir("bnn_predict_test");
    const fs::path data = work_ / "data";
    fs::create_directories(data);
    write_idx_split(data, "train", kTrain, 0);
    write_idx_split(data, "t10k", kTest, kTrain);
    bnn::io::write_file_atomically(work_ / "tiny.yaml", fmt::format(R"(data:
  dataset: fashion_mnist
  dir: {}
  batch_size: 50
model:
  name: mlp
  hidden: [16]
  batch_norm: true
adam:
  epochs: 2
swa:
  epochs: 1
sampler:
  epochs: 3
  burn_in: 1
  step_size: 1.0e-3
evaluation:
  bn_batches: 2
  save_sample_weights: true
  sample_weights_every: 1
  sample_weights_dtype: float32
run:
  members: 2
  seed: 3
)",
                                                                    data.string()));
    for (int i = 0; i < kImages; ++i) {
      bnn::testing::write_image(work_ / "png" / fmt::format("img_{:02d}.png", i), test_image(i));
    }
  }
  static void TearDownTestSuite() { fs::remove_all(work_); }

  static CommandResult bnn(const std::string& args) {
    return bnn::testing::run_bnn(args, work_ / fmt::format("log_{}.txt", ++calls_));
  }

  // The run of tiny.yaml with `overrides`, made once per name.
  static fs::path run(const std::string& name, const std::string& overrides = "") {
    const fs::path dir = work_ / name;
    if (fs::exists(dir / "metrics.json")) return dir;
    const CommandResult r = bnn("run --config " + (work_ / "tiny.yaml").string() + " --out " + dir.string() +
                                " --threads 1 --device cpu " + overrides);
    EXPECT_EQ(r.code, 0) << r.output;
    return dir;
  }

  static nlohmann::json predict_json(const std::string& args) {
    const fs::path out = work_ / fmt::format("predictions_{}.json", calls_ + 1);
    const CommandResult r = bnn("predict " + args + " --out " + out.string() + " --threads 1 --device cpu");
    EXPECT_EQ(r.code, 0) << r.output;
    return nlohmann::json::parse(bnn::io::read_file(out));
  }

  // Row i of the mean over members of member_NNN/<file>.
  static torch::Tensor member_mean(const fs::path& run_dir, const std::string& file) {
    return (bnn::data_loaders::read_npy(run_dir / "member_000" / file).to(torch::kDouble) +
            bnn::data_loaders::read_npy(run_dir / "member_001" / file).to(torch::kDouble)) /
           2;
  }

  // The largest |predicted - expected| over the kImages images of `method`.
  static double max_difference(const nlohmann::json& predictions, const std::string& method,
                               const torch::Tensor& expected) {
    double worst = 0;
    for (int i = 0; i < kImages; ++i) {
      const auto probs = predictions["images"][i][method]["probabilities"].get<std::vector<double>>();
      EXPECT_EQ(probs.size(), 10u);
      for (int k = 0; k < 10; ++k) worst = std::max(worst, std::abs(probs[k] - expected[i][k].item<double>()));
    }
    return worst;
  }

  static std::string error_of(const std::string& args) {
    const CommandResult r = bnn("predict " + args + " --threads 1 --device cpu");
    EXPECT_EQ(r.code, 2) << r.output;
    return r.output;
  }

  static inline fs::path work_;
  static inline int calls_ = 0;
};

// float32 weights: the evaluator's probabilities to float32 rounding.
constexpr double kFloat32Tolerance = 1e-5;
// float16 weights (relative rounding 2^-11).
constexpr double kFloat16Tolerance = 5e-3;

TEST_F(Predict, PngImagesReproduceTheEvaluatorsProbabilities) {
  const fs::path r = run("float32");
  const auto p = predict_json("--run " + r.string() + " --images " + (work_ / "png").string());
  ASSERT_EQ(p["images"].size(), static_cast<size_t>(kImages));
  EXPECT_EQ(p["images"][3]["image"], (work_ / "png" / "img_03.png").string());
  EXPECT_EQ(p["draws"]["swa"], 2);
  EXPECT_EQ(p["draws"]["bayes"], 4);  // 2 members x samples at steps 16 and 24
  EXPECT_EQ(p["class_names"][9], "Ankle boot");

  const double swa = max_difference(p, "swa", member_mean(r, "swa_probs.npy"));
  const double bayes = max_difference(p, "bayes", member_mean(r, "bayes_probs.npy"));
  std::cout << "max |predict - evaluator|: swa " << swa << ", bayes " << bayes << "\n";
  EXPECT_LE(swa, kFloat32Tolerance);
  EXPECT_LE(bayes, kFloat32Tolerance);

  for (const auto& image : p["images"]) {
    for (const char* method : {"swa", "bayes"}) {
      const auto& m = image[method];
      const auto probs = m["probabilities"].get<std::vector<double>>();
      const auto best = std::max_element(probs.begin(), probs.end()) - probs.begin();
      EXPECT_EQ(m["predicted"], best);
      EXPECT_EQ(m["class"], p["class_names"][best]);
      EXPECT_GE(m["mutual_information"].get<double>(), 0.0);
      EXPECT_LE(m["mutual_information"].get<double>(), m["entropy"].get<double>() + 1e-12);
    }
  }
  // SWA's mixture holds one draw per member, so its entropy and mutual
  // information follow from the members' own swa_probs.npy: H(mean p_m) and
  // H(mean p_m) - mean H(p_m) (float32 probabilities: 1e-4).
  const auto entropy = [](const torch::Tensor& q) { return -torch::xlogy(q, q).sum(-1); };
  const torch::Tensor p0 = bnn::data_loaders::read_npy(r / "member_000" / "swa_probs.npy").to(torch::kDouble);
  const torch::Tensor p1 = bnn::data_loaders::read_npy(r / "member_001" / "swa_probs.npy").to(torch::kDouble);
  const torch::Tensor total = entropy((p0 + p1) / 2);
  const torch::Tensor mi = (total - (entropy(p0) + entropy(p1)) / 2).clamp_min(0);
  for (int i = 0; i < kImages; ++i) {
    const auto& m = p["images"][i]["swa"];
    EXPECT_NEAR(m["entropy"].get<double>(), total[i].item<double>(), 1e-4) << i;
    EXPECT_NEAR(m["mutual_information"].get<double>(), mi[i].item<double>(), 1e-4) << i;
  }
}

TEST_F(Predict, NpyPixelsGiveTheSameAnswerAsPngFiles) {
  const fs::path r = run("float32");
  torch::Tensor pixels = torch::empty({kImages, kSide, kSide}, torch::kByte);
  for (int i = 0; i < kImages; ++i) {
    const cv::Mat image = test_image(i);
    std::copy(image.data, image.data + kSide * kSide, pixels[i].data_ptr<uint8_t>());
  }
  bnn::io::write_npy(work_ / "pixels.npy", pixels);
  const auto from_npy = predict_json("--run " + r.string() + " --images " + (work_ / "pixels.npy").string());
  const auto from_png = predict_json("--run " + r.string() + " --images " + (work_ / "png").string());
  ASSERT_EQ(from_npy["images"].size(), static_cast<size_t>(kImages));
  EXPECT_EQ(from_npy["images"][2]["image"], (work_ / "pixels.npy").string() + "[2]");
  for (int i = 0; i < kImages; ++i) {
    EXPECT_EQ(from_npy["images"][i]["bayes"], from_png["images"][i]["bayes"]) << i;
    EXPECT_EQ(from_npy["images"][i]["swa"], from_png["images"][i]["swa"]) << i;
  }
}

TEST_F(Predict, CsvAndTableOutputs) {
  const fs::path r = run("float32");
  const fs::path csv = work_ / "predictions.csv";
  CommandResult c = bnn("predict --run " + r.string() + " --images " + (work_ / "png" / "img_00.png").string() + " " +
                        (work_ / "png" / "img_01.png").string() + " --method bayes --members 1 --out " +
                        csv.string() + " --threads 1");
  ASSERT_EQ(c.code, 0) << c.output;
  const std::string text = bnn::io::read_file(csv);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "image,method,predicted,class,entropy,mutual_information,p_0,p_1,p_2,p_3,p_4,p_5,p_6,p_7,p_8,p_9");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);  // header and two bayes rows
  EXPECT_NE(text.find((work_ / "png" / "img_01.png").string() + ",bayes,"), std::string::npos) << text;
  // Its own earlier output is written over; a run's table is not (Note [Output files]).
  c = bnn("predict --run " + r.string() + " --images " + (work_ / "png" / "img_00.png").string() +
          " --method bayes --members 1 --out " + csv.string() + " --threads 1");
  ASSERT_EQ(c.code, 0) << c.output;
  const std::string again = bnn::io::read_file(csv);
  EXPECT_EQ(std::count(again.begin(), again.end(), '\n'), 2);  // header and one bayes row
  EXPECT_EQ(again, text.substr(0, text.find((work_ / "png" / "img_01.png").string())));
  const std::string metrics = bnn::io::read_file(r / "metrics.csv");
  c = bnn("predict --run " + r.string() + " --images " + (work_ / "png").string() + " --out " +
          (r / "metrics.csv").string() + " --threads 1");
  EXPECT_EQ(c.code, 2) << c.output;
  EXPECT_NE(c.output.find("the file exists and is not an earlier output of bnn predict"), std::string::npos)
      << c.output;
  EXPECT_EQ(bnn::io::read_file(r / "metrics.csv"), metrics);
  const fs::path json = work_ / "predictions_twice.json";
  for (int i = 0; i < 2; ++i) {
    c = bnn("predict --run " + r.string() + " --images " + (work_ / "png" / "img_00.png").string() + " --out " +
            json.string() + " --threads 1");
    ASSERT_EQ(c.code, 0) << c.output;
  }

  // A file name in Latin-1 (not UTF-8, which JSON must be): its byte is written as U+FFFD.
  const fs::path latin1 = work_ / "latin1" / "caf\xE9.png";
  fs::create_directories(latin1.parent_path());
  fs::copy_file(work_ / "png" / "img_00.png", latin1, fs::copy_options::overwrite_existing);
  const nlohmann::json named = predict_json("--run " + r.string() + " --images " + latin1.parent_path().string());
  ASSERT_EQ(named["images"].size(), 1U) << named;
  EXPECT_EQ(named["images"][0]["image"], (work_ / "latin1" / "caf\xEF\xBF\xBD.png").string()) << named;

  c = bnn("predict --run " + r.string() + " --images " + (work_ / "png").string() + " --threads 1");
  ASSERT_EQ(c.code, 0) << c.output;
  EXPECT_NE(c.output.find("img_07.png"), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("mut.inf"), std::string::npos) << c.output;
}

TEST_F(Predict, Float16WeightsEveryOtherSample) {
  const fs::path r = run("float16", "--set evaluation.sample_weights_dtype=float16 "
                                    "--set evaluation.sample_weights_every=2");
  // Retained samples at steps 16 and 24; every 2nd keeps the one at 24.
  for (const char* member : {"member_000", "member_001"}) {
    EXPECT_FALSE(fs::exists(r / member / "samples" / "weights_00000016.npy"));
    EXPECT_EQ(bnn::data_loaders::read_npy(r / member / "samples" / "weights_00000024.npy").scalar_type(), torch::kHalf);
    EXPECT_EQ(bnn::data_loaders::read_npy(r / member / "samples" / "buffers_00000024.npy").scalar_type(),
              torch::kFloat);
  }
  const auto p = predict_json("--run " + r.string() + " --images " + (work_ / "png").string() + " --method bayes");
  EXPECT_EQ(p["draws"]["bayes"], 2);
  EXPECT_FALSE(p["images"][0].contains("swa"));
  const double bayes = max_difference(p, "bayes", member_mean(r, "samples/step_00000024.npy"));
  std::cout << "max |predict - evaluator| with float16 weights: bayes " << bayes << "\n";
  EXPECT_LE(bayes, kFloat16Tolerance);
}

TEST_F(Predict, RunWithoutStoredSamplesNamesTheConfigKey) {
  const fs::path r = run("no_samples", "--set evaluation.save_sample_weights=false");
  const std::string images = " --images " + (work_ / "png").string();
  EXPECT_NE(error_of("--run " + r.string() + images).find(
                "no stored posterior samples (samples/weights_*.npy); run with evaluation.save_sample_weights: true"),
            std::string::npos);
  const auto p = predict_json("--run " + r.string() + images + " --method swa");
  EXPECT_LE(max_difference(p, "swa", member_mean(r, "swa_probs.npy")), kFloat32Tolerance);
}

// A member whose processes stored different samples, or whose stored
// samples changed since it finished, is refused: its stored weights' average
// would not be the mean over its retained samples.
TEST_F(Predict, PartOfAMembersSamplesIsNotItsPosterior) {
  const fs::path cut = work_ / "mixed_storage";
  const std::string args = "run --config " + (work_ / "tiny.yaml").string() + " --out " + cut.string() +
                           " --threads 1 --device cpu";
  // Killed at step 20: the sample at 16 is stored and checkpointed; the
  // resume stores none, so step 24's weights are missing.
  CommandResult r = bnn::testing::run_bnn(args, work_ / "mixed_1.txt", "BNN_KILL_AT_SAMPLER_STEP=20");
  ASSERT_EQ(r.code, 128 + 9) << r.output;
  r = bnn(args + " --set evaluation.save_sample_weights=false");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("member 0: the weights of 1 of its 2 retained samples are stored, where "
                          "evaluation.save_sample_weights false and sample_weights_every 1 keep 0"),
            std::string::npos)
      << r.output;
  const auto status = nlohmann::json::parse(bnn::io::read_file(cut / "member_000" / "status.json"));
  EXPECT_EQ(status["sample_weights"], 1);
  EXPECT_EQ(status["sample_weights_incomplete"], true);
  const std::string images = " --images " + (work_ / "png").string();
  EXPECT_NE(error_of("--run " + cut.string() + images + " --members 0 --method bayes")
                .find("member_000: the weights of only 1 of its 2 retained samples were stored"),
            std::string::npos);
  // A complete member with a stored sample removed since.
  const fs::path whole = run("float32");
  const fs::path copy = work_ / "float32_copy";
  fs::remove_all(copy);
  fs::copy(whole, copy, fs::copy_options::recursive);
  fs::remove(copy / "member_001" / "samples" / "weights_00000016.npy");
  EXPECT_NE(error_of("--run " + copy.string() + images + " --method bayes")
                .find("member_001: holds 1 stored samples (samples/weights_*.npy), but it finished with 2"),
            std::string::npos);
  const auto p = predict_json("--run " + copy.string() + images + " --method swa");  // x* is whole
  EXPECT_LE(max_difference(p, "swa", member_mean(whole, "swa_probs.npy")), kFloat32Tolerance);
}

TEST_F(Predict, BadInputsAreClearErrors) {
  const std::string run_dir = "--run " + run("float32").string();
  const fs::path bad = work_ / "bad";
  bnn::testing::write_image(bad / "wide.png", bnn::testing::pattern_image(30, 28, 1, 1));
  bnn::testing::write_garbage(bad / "garbage.png");
  bnn::io::write_npy(bad / "rgb.npy", torch::zeros({2, 3, kSide, kSide}, torch::kByte));
  bnn::io::write_npy(bad / "nhwc.npy", torch::zeros({2, kSide, kSide, 1}, torch::kByte));
  bnn::io::write_npy(bad / "float.npy", torch::zeros({2, kSide, kSide}));
  fs::create_directories(bad / "empty");
  fs::create_directories(bad / "folder.csv");
  bnn::io::write_file_atomically(bad / "other.json", "{\"images\": []}\n");  // not all of predict's keys

  const std::vector<std::pair<std::string, std::string>> cases = {
      {run_dir + " --images " + (bad / "wide.png").string(),
       (bad / "wide.png").string() + ": the image is 30 x 28 pixels (width x height), expected 28 x 28"},
      {run_dir + " --images " + (bad / "garbage.png").string(),
       (bad / "garbage.png").string() + ": cannot decode the image: not a valid JPEG, PNG or BMP file"},
      {run_dir + " --images " + (bad / "rgb.npy").string(),
       (bad / "rgb.npy").string() + ": holds images of shape 2 x 3 x 28 x 28, expected N x 1 x 28 x 28 or N x 28 x 28 "
                                   "(.npy pixels are not resized)"},
      {run_dir + " --images " + (bad / "nhwc.npy").string(),
       (bad / "nhwc.npy").string() + ": holds images of shape 2 x 28 x 28 x 1, expected N x 1 x 28 x 28 or N x 28 x "
                                    "28 (channels last: save np.transpose(x, (0, 3, 1, 2)))"},
      {run_dir + " --images " + (bad / "float.npy").string(), "holds Float values, expected uint8 pixels"},
      {run_dir + " --images " + (bad / "empty").string(), "no image files (.jpeg, .jpg, .png, .bmp) in the folder"},
      {run_dir + " --images " + (bad / "missing.png").string(), (bad / "missing.png").string() + ": no such file"},
      {"--run " + bad.string() + " --images " + (bad / "wide.png").string(),
       (bad / "preprocess.json").string() + " missing"},
      {run_dir + " --images " + (bad / "wide.png").string() + " --method all", "--method 'all': valid: swa, bayes"},
      {run_dir + " --images " + (bad / "wide.png").string() + " --members 4", "selects members outside 0-1"},
      {run_dir + " --images " + (work_ / "png").string() + " --out p.txt", "must end in .csv or .json"},
      {run_dir + " --images " + (work_ / "png").string() + " --out " + (bad / "folder.csv").string(),
       "bnn predict --out " + (bad / "folder.csv").string() + " is a folder; give a file name"},
      {run_dir + " --images " + (work_ / "png").string() + " --out " + (bad / "other.json").string(),
       "--out " + (bad / "other.json").string() + ": the file exists and is not an earlier output of bnn predict"},
  };
  for (const auto& [args, text] : cases) {
    const std::string output = error_of(args);
    EXPECT_NE(output.find(text), std::string::npos) << args << "\n" << output;
  }
}

// An arrays run's images need not be square, nor have 1 or 3 channels:
// predict takes the run's own test pixels (.npy) and, for 1 x 6 x 10, a PNG
// 10 wide and 6 high; image files for 2 channels are refused, naming the file;
// and bnn hessian standardises the uint8 pixels as training did.
TEST(PredictArrays, NonSquareImagesAndOtherChannelCounts) {
  const fs::path work = bnn::testing::unique_temp_dir("bnn_predict_arrays_test");
  auto bnn = [&work, calls = 0](const std::string& args) mutable {
    return bnn::testing::run_bnn(args, work / fmt::format("log_{}.txt", ++calls));
  };
  auto config = [&work](const std::string& name, const fs::path& data) {
    const fs::path path = work / (name + ".yaml");
    bnn::io::write_file_atomically(path, fmt::format("data: {{dataset: arrays, dir: {}, batch_size: 50}}\n"
                                                     "model: {{name: mlp, hidden: [8]}}\n"
                                                     "adam: {{epochs: 2, lr: 0.01}}\nswa: {{epochs: 1}}\n"
                                                     "sampler: {{epochs: 2, burn_in: 1, step_size: 1.0e-3}}\n"
                                                     "evaluation: {{bn_batches: 2}}\nrun: {{members: 1, seed: 5}}\n",
                                                     data.string()));
    return path.string();
  };
  bnn::testing::write_dark_and_bright(work / "wide", 3, /*channels=*/1, /*height=*/6, /*width=*/10);
  const fs::path wide = work / "wide_run";
  CommandResult r = bnn("run --config " + config("wide", work / "wide") + " --out " + wide.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path out = work / "wide.json";
  r = bnn("predict --run " + wide.string() + " --images " + (work / "wide" / "test_x.npy").string() + " --out " +
          out.string() + " --threads 1 --method swa");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto predictions = nlohmann::json::parse(bnn::io::read_file(out));
  const torch::Tensor swa = bnn::data_loaders::read_npy(wide / "member_000" / "swa_probs.npy").to(torch::kDouble);
  ASSERT_EQ(predictions["images"].size(), 100u);
  double worst = 0;
  for (int i = 0; i < 100; ++i) {
    const auto probs = predictions["images"][i]["swa"]["probabilities"].get<std::vector<double>>();
    ASSERT_EQ(probs.size(), 2u);
    for (int k = 0; k < 2; ++k) worst = std::max(worst, std::abs(probs[k] - swa[i][k].item<double>()));
  }
  EXPECT_LE(worst, kFloat32Tolerance);
  // Test image 0 as a PNG of 10 x 6 pixels: the same answer as its row.
  const torch::Tensor first = bnn::data_loaders::read_npy(work / "wide" / "test_x.npy")[0][0].contiguous();
  bnn::testing::write_image(work / "first.png", cv::Mat(6, 10, CV_8UC1, first.data_ptr<uint8_t>()).clone());
  const fs::path png = work / "first.json";
  r = bnn("predict --run " + wide.string() + " --images " + (work / "first.png").string() + " --out " + png.string() +
          " --threads 1 --method swa");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(bnn::io::read_file(png))["images"][0]["swa"], predictions["images"][0]["swa"]);
  // A PNG of the transposed size is named as what it is.
  bnn::testing::write_image(work / "tall.png", cv::Mat(10, 6, CV_8UC1, cv::Scalar(9)));
  r = bnn("predict --run " + wide.string() + " --images " + (work / "tall.png").string() + " --threads 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("the image is 6 x 10 pixels (width x height), expected 10 x 6"), std::string::npos)
      << r.output;
  r = bnn("hessian --checkpoint " + (wide / "member_000").string() + " --examples 100 --iterations 20 --threads 1");
  EXPECT_EQ(r.code, 0) << r.output;

  bnn::testing::write_dark_and_bright(work / "two", 3, /*channels=*/2);
  const fs::path two = work / "two_run";
  r = bnn("run --config " + config("two", work / "two") + " --out " + two.string() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.output;
  r = bnn("predict --run " + two.string() + " --images " + (work / "first.png").string() + " --threads 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("bnn: error: " + (work / "first.png").string() +
                          ": this run's images have 2 channels, and an image file decodes to 1 (grayscale) or 3 "
                          "(RGB); give .npy files of N x 2 x 6 x 6 uint8 pixels"),
            std::string::npos)
      << r.output;
  fs::remove_all(work);
}

TEST(PredictConfig, SampleStorageKeysAreValidated) {
  using bnn::testing::error_of;
  bnn::config::Config c = bnn::config::default_config();
  EXPECT_FALSE(c.evaluation.save_sample_weights);
  EXPECT_EQ(c.evaluation.sample_weights_every, 1);
  EXPECT_EQ(c.evaluation.sample_weights_dtype, "float32");
  bnn::config::apply_override(c, "evaluation.sample_weights_dtype=float16");
  EXPECT_EQ(c.evaluation.sample_weights_dtype, "float16");
  EXPECT_NE(error_of([&] { bnn::config::apply_override(c, "evaluation.sample_weights_dtype=float64"); })
                .find("config key 'evaluation.sample_weights_dtype': invalid value 'float64': valid: float16, float32"),
            std::string::npos);
  EXPECT_NE(error_of([&] { bnn::config::apply_override(c, "evaluation.sample_weights_every=0"); })
                .find("config key 'evaluation.sample_weights_every': invalid value '0': must be between 1 and"),
            std::string::npos);
  EXPECT_NE(error_of([&] { bnn::config::apply_override(c, "evaluation.save_sample_weights=sometimes"); })
                .find("'evaluation.save_sample_weights': invalid value 'sometimes': expected true or false"),
            std::string::npos);
}

}  // namespace
