// Tests for `data.dataset: arrays` (data_loaders/arrays.h) on .npy files the
// tests write: image and feature layouts, statistics from the training split
// only, class names, and the exact error for each kind of bad input; then
// `bnn run` and `bnn predict` on both layouts as a user runs them.
#include "data_loaders/arrays.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "src/io/npy.h"
#include "tests/support/error_text.h"
#include "tests/support/run_bnn.h"
#include "tests/support/temp_dir.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

void write_npy_split(const fs::path& dir, const std::string& split, const torch::Tensor& x, const torch::Tensor& y) {
  io::write_npy(dir / (split + "_x.npy"), x);
  io::write_npy(dir / (split + "_y.npy"), y);
}

// n labels cycling through 0 .. classes-1.
torch::Tensor cycling(int64_t n, int64_t classes) { return torch::arange(n, torch::kLong).remainder(classes); }

Dataset load(const fs::path& dir, bool standardize = true, int64_t train_limit = 0) {
  LoadOptions o;
  o.dir = dir;
  o.standardize = standardize;
  o.train_limit = train_limit;
  return load_arrays(o, torch::kCPU);
}

TEST(Arrays, ImagesAreStandardizedWithTheTrainingPixelsPerChannel) {
  const auto dir = bnn::testing::unique_temp_dir("bnn_arrays_images");
  // Channel 0 of the training images holds 0 and 255 (mean 127.5/255, std 127.5/255),
  // channel 1 holds only 51 (constant: std 1).
  torch::Tensor train = torch::zeros({4, 2, 3, 3}, torch::kByte);
  train.select(1, 0).narrow(0, 0, 2).fill_(255);
  train.select(1, 1).fill_(51);
  const torch::Tensor test = torch::full({2, 2, 3, 3}, 255, torch::kByte);
  write_npy_split(dir, "train", train, torch::tensor({0, 1, 2, 1}, torch::kInt));
  write_npy_split(dir, "test", test, torch::tensor({2, 0}, torch::kLong));
  const Dataset d = load(dir);
  EXPECT_EQ(d.name, "arrays");
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_FALSE(d.features);
  EXPECT_EQ(d.train.images.scalar_type(), torch::kByte);  // Note [Pixel storage]
  EXPECT_DOUBLE_EQ(d.pixel_stats.mean[0], 0.5);
  EXPECT_DOUBLE_EQ(d.pixel_stats.std[0], 0.5);
  EXPECT_NEAR(d.pixel_stats.mean[1], 0.2, 1e-15);
  EXPECT_DOUBLE_EQ(d.pixel_stats.std[1], 1.0);
  // Test pixels 255 in channel 0 map to (1 - 0.5) / 0.5 = 1 with the training statistics.
  const torch::Tensor in = d.test.inputs();
  EXPECT_NEAR(in[0][0][0][0].item<float>(), 1.0f, 1e-6);
  EXPECT_NEAR(in[0][1][0][0].item<float>(), 0.8f, 1e-6);
  EXPECT_TRUE(d.train.labels.equal(torch::tensor({0, 1, 2, 1}, torch::kLong)));

  // N x H x W is one channel; without standardization pixels are p / 255.
  write_npy_split(dir, "train", torch::full({3, 4, 4}, 51, torch::kByte), cycling(3, 2));
  write_npy_split(dir, "test", torch::full({1, 4, 4}, 255, torch::kByte), cycling(1, 2));
  const Dataset gray = load(dir, /*standardize=*/false);
  EXPECT_EQ(gray.input_shape, (std::vector<int64_t>{1, 4, 4}));
  EXPECT_NEAR(gray.train.inputs()[0][0][1][1].item<float>(), 0.2f, 1e-6);
  EXPECT_NEAR(gray.test.inputs()[0][0][0][0].item<float>(), 1.0f, 1e-6);

  // A constant channel gets std 1 exactly: three pixels of value 1 leave a
  // residue of 3.4e-21 in E[x^2] - E[x]^2, which once gave std 5.8e-11.
  write_npy_split(dir, "train", torch::ones({3, 1, 1}, torch::kByte), cycling(3, 2));
  write_npy_split(dir, "test", torch::ones({1, 1, 1}, torch::kByte), cycling(1, 2));
  EXPECT_EQ(load(dir).pixel_stats.std[0], 1.0);
  fs::remove_all(dir);
}

TEST(Arrays, FeaturesAreStandardizedPerColumnWithTheTrainingRows) {
  const auto dir = bnn::testing::unique_temp_dir("bnn_arrays_features");
  // Column 0: 1, 3, 5, 7 (mean 4, population std sqrt(5)); column 1 constant 2 (std 1).
  const torch::Tensor train = torch::tensor({{1.f, 2.f}, {3.f, 2.f}, {5.f, 2.f}, {7.f, 2.f}});
  write_npy_split(dir, "train", train, cycling(4, 2));
  write_npy_split(dir, "test", torch::tensor({{4.f + 2.f * std::sqrt(5.f), 0.f}}), torch::tensor({1}, torch::kLong));
  io::write_file_atomically(dir / "class_names.txt", "benign\nmalignant\n");
  const Dataset d = load(dir);
  EXPECT_TRUE(d.features);
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"benign", "malignant"}));
  EXPECT_DOUBLE_EQ(d.pixel_stats.mean[0], 4.0);
  EXPECT_DOUBLE_EQ(d.pixel_stats.std[0], std::sqrt(5.0));
  EXPECT_DOUBLE_EQ(d.pixel_stats.std[1], 1.0);
  const torch::Tensor x = d.train.inputs().reshape({4, 2});
  EXPECT_NEAR(x[0][0].item<float>(), static_cast<float>(-3.0 / std::sqrt(5.0)), 1e-6);
  EXPECT_EQ(x[2][1].item<float>(), 0.0f);
  // The test split uses the training statistics: 4 + 2 sqrt(5) -> 2, 0 -> -2.
  const torch::Tensor t = d.test.inputs().reshape({1, 2});
  EXPECT_NEAR(t[0][0].item<float>(), 2.0f, 1e-5);
  EXPECT_EQ(t[0][1].item<float>(), -2.0f);
  // train_limit takes the first rows, and the statistics follow it: 1 and 3 -> mean 2.
  EXPECT_DOUBLE_EQ(load(dir, true, 2).pixel_stats.mean[0], 2.0);
  fs::remove_all(dir);
}

// A class no training example has is a stray label (an error, above), but
// under data.train_limit the rest of the file may hold it: loaded, with a
// warning.
TEST(Arrays, AClassBeyondTheTrainLimitIsLoaded) {
  const auto dir = bnn::testing::unique_temp_dir("bnn_arrays_limit");
  write_npy_split(dir, "train", torch::rand({6, 3}), torch::tensor({0, 0, 1, 1, 2, 2}));
  write_npy_split(dir, "test", torch::rand({3, 3}), cycling(3, 3));
  EXPECT_EQ(load(dir, true, 4).num_classes, 3);  // the first 4 rows lack class 2
  EXPECT_EQ(load(dir, true, 0).num_classes, 3);
  // A limit of every row reads the whole file: a stray label is an error again.
  write_npy_split(dir, "train", torch::rand({6, 3}), torch::tensor({0, 0, 1, 1, 3, 3}));
  EXPECT_NE(testing::error_of([&] { load(dir, true, 6); }).find("no training example has label 2 of the 4 classes"),
            std::string::npos);
  EXPECT_EQ(load(dir, true, 4).num_classes, 3);  // rows 0, 0, 1, 1 and the test's 0, 1, 2
  fs::remove_all(dir);
}

// An OOD set (test_only) is used for its inputs: its labels are not read,
// not even a stray 2^40 (which once made 2^40 class names).
TEST(Arrays, AnOodSetsLabelsAreNotRead) {
  const auto dir = bnn::testing::unique_temp_dir("bnn_arrays_ood_labels");
  write_npy_split(dir, "test", torch::zeros({2, 1, 4, 4}, torch::kByte),
                  torch::tensor({int64_t{0}, int64_t{1} << 40}, torch::kLong));
  LoadOptions o;
  o.dir = dir;
  o.test_only = true;
  o.stats = unit_pixel_stats(1);
  const Dataset d = load_arrays(o, torch::kCPU);
  EXPECT_EQ(d.test.size(), 2);
  EXPECT_TRUE(d.class_names.empty());
  fs::remove_all(dir);
}

TEST(Arrays, BadInputIsOneLineNamingTheFile) {
  const auto dir = bnn::testing::unique_temp_dir("bnn_arrays_bad");
  const auto good = [&] {
    write_npy_split(dir, "train", torch::rand({6, 3}), cycling(6, 3));
    write_npy_split(dir, "test", torch::rand({2, 3}), cycling(2, 3));
    fs::remove(dir / "class_names.txt");
  };
  struct Case {
    std::string name;
    std::function<void()> damage;
    std::string message;
  };
  const std::string d = dir.string() + "/";
  // A (6, 3) float32 file whose header claims `shape`, the header's padding
  // shortened to keep its length.
  const auto claiming = [](const std::string& shape) {
    std::string bytes = io::npy_bytes(torch::rand({6, 3}));
    bytes.replace(bytes.find("(6, 3)"), 6, shape);
    bytes.erase(bytes.find('\n') - (shape.size() - 6), shape.size() - 6);
    return bytes;
  };
  const std::vector<Case> cases = {
      {"missing file", [&] { fs::remove(dir / "test_y.npy"); },
       d + "test_y.npy: missing; data.dataset arrays reads train_x.npy, train_y.npy, test_x.npy and test_y.npy from "
           "data.dir"},
      {"float64 features", [&] { io::write_npy(dir / "train_x.npy", torch::rand({6, 3}, torch::kDouble)); },
       d + "train_x.npy: Double array of shape (6, 3); expected uint8 images (N x H x W or N x C x H x W) or float32 "
           "features (N x D)"},
      {"channels last", [&] { io::write_npy(dir / "train_x.npy", torch::zeros({6, 5, 5, 3}, torch::kByte)); },
       d + "train_x.npy: uint8 images of shape (6, 5, 5, 3) look channels-last (N x H x W x C); bnn reads N x C x H x "
           "W: save np.transpose(x, (0, 3, 1, 2)) instead"},
      {"uint8 rows", [&] { io::write_npy(dir / "train_x.npy", torch::zeros({6, 3}, torch::kByte)); },
       d + "train_x.npy: Byte array of shape (6, 3); expected uint8 images"},
      {"float labels", [&] { io::write_npy(dir / "train_y.npy", torch::zeros({6}, torch::kFloat)); },
       d + "train_y.npy: Float array of shape (6); expected int64 or int32 labels, one per example"},
      {"label count", [&] { io::write_npy(dir / "train_y.npy", cycling(5, 3)); },
       d + "train_y.npy: holds 5 labels, but train_x.npy holds 6 examples"},
      {"negative label", [&] { io::write_npy(dir / "test_y.npy", torch::tensor({0, -1}, torch::kLong)); },
       d + "test_y.npy: label -1 at index 1 is negative; labels are 0 .. K-1"},
      {"label beyond the class names",
       [&] { io::write_file_atomically(dir / "class_names.txt", "a\nb\n"); },
       d + "train_y.npy: label 2 at index 2 is out of range for the 2 classes named in class_names.txt"},
      {"stray test label", [&] { io::write_npy(dir / "test_y.npy", torch::tensor({0, 5}, torch::kLong)); },
       d + "train_y.npy: no training example has label 3, 4, 5 of the 6 classes that the largest label, 5 (in "
           "test_y.npy), implies; fix the labels, or list every class in class_names.txt"},
      {"many classes without examples",
       [&] {
         torch::Tensor y = cycling(20, 3);
         y[7] = 19;
         write_npy_split(dir, "train", torch::rand({20, 3}), y);
       },
       d + "train_y.npy: no training example has label 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, ... (16 labels in all) of "
           "the 20 classes that the largest label, 19 (in train_y.npy), implies"},
      {"a label beyond the examples",
       [&] { io::write_npy(dir / "test_y.npy", torch::tensor({int64_t{0}, int64_t{1} << 40}, torch::kLong)); },
       d + "test_y.npy: label 1099511627776 (row 1) implies 1099511627777 classes, more than the 6 training examples; "
           "fix the labels, or list every class in class_names.txt"},
      {"stray training label", [&] { io::write_npy(dir / "train_y.npy", torch::tensor({0, 1, 2, 0, 1, 4})); },
       d + "train_y.npy: no training example has label 3 of the 5 classes that the largest label, 4 (in "
           "train_y.npy), implies"},
      {"one class", [&] {
         io::write_npy(dir / "train_y.npy", torch::zeros({6}, torch::kLong));
         io::write_npy(dir / "test_y.npy", torch::zeros({2}, torch::kLong));
       },
       d + "train_y.npy: every label is 0; a classifier needs at least 2 classes"},
      {"NaN feature", [&] {
         torch::Tensor x = torch::rand({2, 3});
         x[1][2] = std::nanf("");
         io::write_npy(dir / "test_x.npy", x);
       },
       d + "test_x.npy: nan at row 1, column 2: features must be finite"},
      {"other example shape", [&] { io::write_npy(dir / "test_x.npy", torch::rand({2, 4})); },
       d + "test_x.npy: Float examples of shape (4), but train_x.npy holds Float examples of shape (3)"},
      {"empty split", [&] { io::write_npy(dir / "test_x.npy", torch::rand({0, 3})); },
       d + "test_x.npy: holds no examples (shape (0, 3))"},
      {"truncated file", [&] {
         const std::string bytes = io::npy_bytes(torch::rand({6, 3}));
         io::write_file_atomically(dir / "train_x.npy", bytes.substr(0, bytes.size() - 8));
       },
       d + "train_x.npy: not a valid .npy file: shape (6, 3) needs 72 data bytes, the file has 64 (cut short?)"},
      {"an empty file", [&] { io::write_file_atomically(dir / "train_x.npy", ""); },
       d + "train_x.npy: not a valid .npy file: the file is empty"},
      {"a header promising terabytes",
       [&] { io::write_file_atomically(dir / "train_x.npy", claiming("(1000000000000, 3)")); },
       d + "train_x.npy: not a valid .npy file: shape (1000000000000, 3) needs 12000000000000 data bytes, the file "
           "has 72 (cut short?)"},
      {"a shape beyond 64 bits",
       [&] { io::write_file_atomically(dir / "train_x.npy", claiming("(100000000000000000000, 3)")); },
       d + "train_x.npy: not a valid .npy file: shape (100000000000000000000, 3) needs more bytes than any file "
           "holds; the file has 72 data bytes"},
      {"a shape whose bytes overflow",
       [&] { io::write_file_atomically(dir / "train_x.npy", claiming("(4611686018427387904, 4)")); },
       d + "train_x.npy: not a valid .npy file: shape (4611686018427387904, 4) needs more bytes than any file holds"},
      {"empty class name", [&] { io::write_file_atomically(dir / "class_names.txt", "a\n\nc\n"); },
       d + "class_names.txt: line 2 is empty; give one class name per line"},
      {"a class name not in UTF-8", [&] { io::write_file_atomically(dir / "class_names.txt", "a\ncaf\xE9\nc\n"); },
       d + "class_names.txt: line 2 ('caf\\xE9') is not UTF-8 text; save class_names.txt as UTF-8"},
      {"a class name twice", [&] { io::write_file_atomically(dir / "class_names.txt", "a\nb\na\n"); },
       d + "class_names.txt: line 3 names 'a' again (line 1); give each class its own name"},
  };
  for (const auto& c : cases) {
    good();
    c.damage();
    const std::string what = error_of([&] { load(dir); });
    EXPECT_NE(what.find(c.message), std::string::npos) << c.name << ": " << what;
  }
  good();
  EXPECT_NE(error_of([&] { load(dir, true, 7); }).find(d + "train_x.npy: data.train_limit = 7 exceeds its 6 examples"),
            std::string::npos);
  EXPECT_NO_THROW(load(dir));
  fs::remove_all(dir);
}

// numpy saves a transposed (or np.asfortranarray) array in Fortran order:
// the bytes are column-major, 'fortran_order': True in the header. Here the
// array [[0, 1, 2], [3, 4, 5]] stored column by column: 0 3 1 4 2 5; and a
// 3-d array, whose Fortran bytes are the C bytes of its reversed transpose.
TEST(Npy, FortranOrderIsReadAsTheArrayItHolds) {
  const auto dir = bnn::testing::unique_temp_dir("bnn_npy_fortran");
  const auto fortran_bytes = [](const torch::Tensor& t) {
    std::vector<int64_t> reverse;
    for (int64_t i = t.dim() - 1; i >= 0; --i) reverse.push_back(i);
    std::string bytes = io::npy_bytes(t.permute(reverse).contiguous());
    std::string shape = "(";
    for (int64_t i = 0; i < t.dim(); ++i) shape += std::to_string(t.size(i)) + (i + 1 < t.dim() ? ", " : ")");
    std::string reversed = "(";
    for (int64_t i = t.dim() - 1; i >= 0; --i) reversed += std::to_string(t.size(i)) + (i > 0 ? ", " : ")");
    // Same lengths, so the header's padding stays right.
    bytes.replace(bytes.find("'fortran_order': False"), 22, "'fortran_order': True ");
    bytes.replace(bytes.find(reversed), reversed.size(), shape);
    return bytes;
  };
  const torch::Tensor two = torch::arange(6, torch::kFloat).reshape({2, 3});
  const std::string bytes = fortran_bytes(two);
  const std::string column_major = std::string(reinterpret_cast<const char*>(torch::tensor({0.F, 3.F, 1.F, 4.F, 2.F,
                                                                                             5.F}).data_ptr()), 24);
  EXPECT_EQ(bytes.substr(bytes.size() - 24), column_major);
  io::write_file_atomically(dir / "two.npy", bytes);
  EXPECT_TRUE(read_npy(dir / "two.npy").equal(two));
  const torch::Tensor three = torch::arange(24, torch::kLong).reshape({2, 3, 4});
  io::write_file_atomically(dir / "three.npy", fortran_bytes(three));
  const torch::Tensor back = read_npy(dir / "three.npy");
  EXPECT_TRUE(back.equal(three));
  EXPECT_TRUE(back.is_contiguous());
  fs::remove_all(dir);
}

// `bnn run` and `bnn predict` as a user runs them, on features and on images.
TEST(Arrays, RunAndPredictOnBothLayouts) {
  const auto work = bnn::testing::unique_temp_dir("bnn_arrays_run");
  const auto features = work / "features";
  const auto images = work / "images";
  fs::create_directories(features);
  fs::create_directories(images);
  torch::manual_seed(3);
  // Two well separated classes of 5 features, and the same as 1 x 6 x 6 images.
  const torch::Tensor y = cycling(400, 2);
  const torch::Tensor x = torch::randn({400, 5}) + 3.0 * y.unsqueeze(1).to(torch::kFloat);
  write_npy_split(features, "train", x.narrow(0, 0, 300), y.narrow(0, 0, 300).to(torch::kInt));
  write_npy_split(features, "test", x.narrow(0, 300, 100), y.narrow(0, 300, 100));
  io::write_file_atomically(features / "class_names.txt", "low\nhigh\n");
  const torch::Tensor pixels = (y.view({400, 1, 1}) * 150 + torch::randint(0, 100, {400, 6, 6})).to(torch::kByte);
  write_npy_split(images, "train", pixels.narrow(0, 0, 300), y.narrow(0, 0, 300));
  write_npy_split(images, "test", pixels.narrow(0, 300, 100), y.narrow(0, 300, 100));

  for (const auto& data : {features, images}) {
    const auto out = work / ("run_" + data.filename().string());
    const std::string set =
        " --set data.dataset=arrays --set data.dir=" + data.string() +
        " --set model.name=mlp --set model.hidden=[16] --set data.batch_size=50"
        " --set data.train_limit=0 --set data.test_limit=0"
        " --set run.members=1 --set evaluation.bn_batches=1 --set evaluation.save_sample_weights=true";
    const auto run = bnn::testing::run_bnn("run --config " + std::string(BNN_SOURCE_DIR) + "/configs/tiny.yaml --out " +
                                               out.string() + " --threads 1" + set,
                                           work / ("run_" + data.filename().string() + ".txt"));
    ASSERT_EQ(run.code, 0) << run.output;
    const auto metrics = bnn::testing::ensemble_row(out, "bayes", 1);
    EXPECT_GT(metrics["accuracy"]["mean"].get<double>(), 0.9) << data;
    // predict on the test examples, given as a user would give them.
    const auto csv = work / (data.filename().string() + ".csv");
    const auto predict = bnn::testing::run_bnn(
        "predict --run " + out.string() + " --images " + (data / "test_x.npy").string() + " --out " + csv.string(),
        work / ("predict_" + data.filename().string() + ".txt"));
    ASSERT_EQ(predict.code, 0) << predict.output;
    const std::string table = io::read_file(csv);
    EXPECT_NE(table.find("test_x.npy[99]"), std::string::npos) << table.substr(0, 400);
    if (data == features) {
      EXPECT_NE(table.find("high"), std::string::npos) << table.substr(0, 400);
    }
  }
  // A features run refuses images, and feature arrays of the wrong width.
  io::write_npy(work / "wide.npy", torch::rand({3, 6}));
  const auto wide = bnn::testing::run_bnn("predict --run " + (work / "run_features").string() + " --images " +
                                              (work / "wide.npy").string(),
                                          work / "wide.txt");
  EXPECT_EQ(wide.code, 2);
  EXPECT_NE(wide.output.find("wide.npy: holds Float values of shape 3 x 6; this run was trained on float32 "
                             "features, give N x 5 float32 arrays"),
            std::string::npos)
      << wide.output;

  // A second member run into the same folder after the test labels changed
  // (a node reading another copy of the data) is refused: its labels.npy
  // would score the first member against a test set it was not scored on.
  const auto labels_before = io::read_file(work / "run_features" / "labels.npy");
  torch::Tensor changed = y.narrow(0, 300, 100).clone();
  changed[7] = 1 - changed[7];
  io::write_npy(features / "test_y.npy", changed);
  const std::string second = " --set data.dataset=arrays --set data.dir=" + features.string() +
                             " --set model.name=mlp --set model.hidden=[16] --set data.batch_size=50"
                             " --set data.train_limit=0 --set data.test_limit=0"
                             " --set run.members=1 --set evaluation.bn_batches=1 "
                             "--set evaluation.save_sample_weights=true";
  const auto refused =
      bnn::testing::run_bnn("run --config " + std::string(BNN_SOURCE_DIR) + "/configs/tiny.yaml --out " +
                                (work / "run_features").string() + " --threads 1" + second,
                            work / "changed.txt");
  EXPECT_EQ(refused.code, 2) << refused.output;
  EXPECT_NE(refused.output.find((work / "run_features" / "labels.npy").string() +
                                ": the test split of data.dir is not the one this run's members were scored on (1 of "
                                "100 differ, the first at row 7: 1 there, 0 now)"),
            std::string::npos)
      << refused.output;
  EXPECT_EQ(io::read_file(work / "run_features" / "labels.npy"), labels_before);
  fs::remove_all(work);
}

}  // namespace
}  // namespace bnn::data_loaders
