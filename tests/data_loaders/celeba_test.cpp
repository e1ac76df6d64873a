#include "data_loaders/celeba.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "src/io/atomic_file.h"
#include "tests/support/error_text.h"
#include "tests/support/image_files.h"
#include "tests/support/temp_dir.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;
using bnn::testing::CelebaEntry;
using bnn::testing::error_of;

// Train: blond, brown, both (dropped), neither (dropped), brown. Val: blond
// (not used). Test: brown, blond.
const std::vector<CelebaEntry> kEntries = {
    {0, true, false}, {0, false, true}, {0, true, true}, {0, false, false},
    {0, false, true}, {1, true, false}, {2, false, true}, {2, true, false},
};

class Celeba : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = bnn::testing::unique_temp_dir("bnn_celeba");
    bnn::testing::write_celeba_dir(dir_, kEntries);
    options_.dir = dir_;
    options_.side = 16;
    options_.threads = 2;
  }
  void TearDown() override { fs::remove_all(dir_); }

  Dataset load() const { return load_celeba(options_, torch::kCPU); }

  // Replaces line `line_no` (1-based) of `name` with `text`.
  void replace_line(const std::string& name, int line_no, const std::string& text) const {
    std::ifstream in(dir_ / name);
    std::string all, line;
    for (int i = 1; std::getline(in, line); ++i) all += (i == line_no ? text : line) + "\n";
    io::write_file_atomically(dir_ / name, all);
  }

  fs::path dir_;
  LoadOptions options_;
};

TEST_F(Celeba, KeepsExactlyOneHairColourPerPartition) {
  const Dataset d = load();
  EXPECT_EQ(d.name, "celeba");
  EXPECT_EQ(d.num_classes, 2);
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{3, 16, 16}));
  EXPECT_EQ(d.train.images.sizes(), (std::vector<int64_t>{3, 3, 16, 16}));
  EXPECT_EQ(d.train.images.scalar_type(), torch::kByte);
  EXPECT_TRUE(torch::equal(d.train.labels, torch::tensor({0, 1, 1}, torch::kLong))) << d.train.labels;
  EXPECT_TRUE(torch::equal(d.test.labels, torch::tensor({1, 0}, torch::kLong))) << d.test.labels;
  EXPECT_EQ(d.train.inputs().scalar_type(), torch::kFloat);
}

TEST_F(Celeba, CentreSquareCropThenResizeInRgbOrder) {
  const Dataset d = load();
  // Test image 0 is file 000007.jpg, 36 x 44: at least twice the side 16, so
  // decoded at half scale (18 x 22), then rows 2..19 cropped.
  cv::Mat bgr = cv::imread((dir_ / "img_align_celeba" / "000007.jpg").string(), cv::IMREAD_REDUCED_COLOR_2);
  ASSERT_EQ(bgr.size(), cv::Size(18, 22));
  cv::Mat rgb, small;
  cv::cvtColor(bgr(cv::Rect(0, 2, 18, 18)), rgb, cv::COLOR_BGR2RGB);
  cv::resize(rgb, small, cv::Size(16, 16), 0, 0, cv::INTER_AREA);
  const torch::Tensor expected =
      torch::from_blob(small.data, {16, 16, 3}, torch::kByte).permute({2, 0, 1}).contiguous();
  EXPECT_TRUE(torch::equal(d.test.images[0], expected));
}

TEST_F(Celeba, MalformedAttributeLineNamesFileAndLine) {
  replace_line("list_attr_celeba.txt", 5, "000003.jpg 1 -1");
  EXPECT_EQ(error_of([&] { load(); }), (dir_ / "list_attr_celeba.txt").string() +
                                           ":5: expected 41 fields (an image name and 40 attribute values), got 3");
}

TEST_F(Celeba, BadAttributeValueAndHeaderAreErrors) {
  std::string line = "000002.jpg";
  for (int a = 0; a < 40; ++a) line += a == 11 ? " yes" : " -1";
  replace_line("list_attr_celeba.txt", 4, line);
  EXPECT_EQ(error_of([&] { load(); }), (dir_ / "list_attr_celeba.txt").string() +
                                           ":4: attribute Brown_Hair of 000002.jpg is 'yes', expected 1 or -1");
  bnn::testing::write_celeba_dir(dir_, kEntries);
  replace_line("list_attr_celeba.txt", 1, "many");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "list_attr_celeba.txt").string() + ":1: expected the number of images, got 'many'");
  replace_line("list_attr_celeba.txt", 1, "9");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "list_attr_celeba.txt").string() + ": the first line says 9 images but 8 are listed");
}

TEST_F(Celeba, MalformedPartitionLineNamesFileAndLine) {
  replace_line("list_eval_partition.txt", 3, "000003.jpg 7");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "list_eval_partition.txt").string() + ":3: expected '<image> <0|1|2>', got '000003.jpg 7'");
}

TEST_F(Celeba, AnImageListedTwiceInThePartitionsIsAnError) {
  replace_line("list_eval_partition.txt", 4, "000003.jpg 0");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "list_eval_partition.txt").string() + ":4: lists 000003.jpg again (line 3)");
}

TEST_F(Celeba, MissingFilesAreErrors) {
  fs::remove(dir_ / "list_eval_partition.txt");
  EXPECT_EQ(error_of([&] { load(); }),
            dir_.string() + ": missing CelebA file list_eval_partition.txt; the directory needs img_align_celeba/, "
                            "list_attr_celeba.txt and list_eval_partition.txt");
}

TEST_F(Celeba, CorruptImageIsAnErrorOrSkipped) {
  const auto bad = dir_ / "img_align_celeba" / "000002.jpg";
  bnn::testing::write_garbage(bad);
  EXPECT_EQ(error_of([&] { load(); }), bad.string() + ": cannot decode the image: not a valid JPEG, PNG or BMP file");
  options_.skip_bad_images = true;
  EXPECT_TRUE(torch::equal(load().train.labels, torch::tensor({0, 1}, torch::kLong)));
}

// CelebA names its images in list_attr_celeba.txt, so the folder listing's
// regular-file filter never sees them: a directory or a FIFO listed as an
// image is refused by the reader (a FIFO used to block the run forever), or
// skipped with data.skip_bad_images.
TEST_F(Celeba, AListedImageThatIsNotARegularFileIsAnErrorOrSkipped) {
  const auto listed = dir_ / "img_align_celeba" / "000002.jpg";
  fs::remove(listed);
  fs::create_directory(listed);
  EXPECT_EQ(error_of([&] { load(); }),
            listed.string() + ": cannot read the file: it is a directory, not an image file");
  fs::remove(listed);
  ASSERT_EQ(mkfifo(listed.c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { load(); }), listed.string() + ": cannot read the file: it is a FIFO, not an image file");
  options_.skip_bad_images = true;
  EXPECT_TRUE(torch::equal(load().train.labels, torch::tensor({0, 1}, torch::kLong)));
}

TEST_F(Celeba, AnImageNameThatLeavesItsFolderIsAnError) {
  std::string line = "../000002.jpg";
  for (int a = 0; a < 40; ++a) line += " -1";
  replace_line("list_attr_celeba.txt", 4, line);
  EXPECT_EQ(error_of([&] { load(); }), (dir_ / "list_attr_celeba.txt").string() +
                                           ":4: image '../000002.jpg' is not a file name of img_align_celeba/");
}

TEST_F(Celeba, EmptySplitIsAnError) {
  for (int line = 7; line <= 8; ++line) {
    replace_line("list_eval_partition.txt", line, fmt::format("{:06d}.jpg 1", line));
  }
  EXPECT_EQ(error_of([&] { load(); }),
            dir_.string() + ": empty split: no blond or brown-haired images in partition 2");
}

}  // namespace
}  // namespace bnn::data_loaders
