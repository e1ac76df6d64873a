#include "data_loaders/image_folder.h"

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "data_loaders/registry.h"
#include "tests/support/error_text.h"
#include "tests/support/image_files.h"
#include "tests/support/temp_dir.h"

namespace bnn::data_loaders {
namespace {

namespace fs = std::filesystem;
using bnn::testing::error_of;

class ImageFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = bnn::testing::unique_temp_dir("bnn_image_folder");
    options_.dir = dir_;
    options_.side = 12;
    options_.threads = 2;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `n` images of class `name` under `folder` (PNG and JPEG alternating).
  void write_class(const fs::path& folder, const std::string& name, int n, int channels = 3) {
    for (int i = 0; i < n; ++i) {
      const auto file = folder / name / fmt::format("{}_{}.{}", name, i, i % 2 == 0 ? "png" : "jpg");
      bnn::testing::write_image(file, bnn::testing::pattern_image(20, 16, channels, ++seed_));
    }
  }

  Dataset load() const { return load_image_folder(options_, torch::kCPU); }

  fs::path dir_;
  LoadOptions options_;
  int seed_ = 0;
};

TEST_F(ImageFolder, SplitFoldersGiveSortedClasses) {
  for (const char* c : {"dog", "cat", "emu"}) {
    write_class(dir_ / "train", c, 4);
    write_class(dir_ / "test", c, 2);
  }
  const Dataset d = load();
  EXPECT_EQ(image_folder_classes(dir_), (std::vector<std::string>{"cat", "dog", "emu"}));
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{3, 12, 12}));
  EXPECT_EQ(d.train.images.sizes(), (std::vector<int64_t>{12, 3, 12, 12}));
  EXPECT_EQ(d.train.images.scalar_type(), torch::kByte);
  EXPECT_EQ(d.test.size(), 6);
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(d.train.labels.eq(k).sum().item<int64_t>(), 4);
    EXPECT_EQ(d.test.labels.eq(k).sum().item<int64_t>(), 2);
  }
  EXPECT_TRUE(torch::equal(d.test.labels, torch::tensor({0, 1, 2, 0, 1, 2}, torch::kLong)));
}

// Note [Out-of-distribution sets]: a folder without train/ and test/ is all
// test split; with split folders only test/ is read; pixels map with the stats given.
TEST_F(ImageFolder, TestOnlyTakesEveryImageOfAFlatFolder) {
  write_class(dir_, "a", 3, 1);
  write_class(dir_, "b", 2, 1);
  options_.channels = 1;
  options_.test_only = true;
  options_.stats = ChannelStats{{0.5}, {0.5}};
  const Dataset d = load();
  EXPECT_EQ(d.train.size(), 0);
  EXPECT_EQ(d.test.size(), 5);
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{1, 12, 12}));
  // uint8 storage: p * scale + shift = (p / 255 - 0.5) / 0.5.
  EXPECT_NEAR(d.test.scale.item<double>(), 2.0 / 255, 1e-9);
  EXPECT_NEAR(d.test.shift.item<double>(), -1.0, 1e-9);

  fs::create_directories(dir_ / "split");
  for (const char* c : {"a", "b"}) write_class(dir_ / "split" / "test", c, 1, 1);
  // train/ names the classes; its (here empty) class folders are not read.
  fs::create_directories(dir_ / "split" / "train" / "a");
  fs::create_directories(dir_ / "split" / "train" / "b");
  options_.dir = dir_ / "split";
  EXPECT_EQ(load().test.size(), 2);
}

TEST_F(ImageFolder, SplitRatioWithoutSplitFoldersIsSeeded) {
  write_class(dir_, "a", 10, 1);
  write_class(dir_, "b", 5, 1);
  options_.channels = 1;
  options_.split_ratio = 0.6;
  options_.seed = 3;
  const Dataset d = load();
  EXPECT_EQ(d.input_shape, (std::vector<int64_t>{1, 12, 12}));
  EXPECT_EQ(d.train.labels.eq(0).sum().item<int64_t>(), 6);
  EXPECT_EQ(d.train.labels.eq(1).sum().item<int64_t>(), 3);
  EXPECT_EQ(d.test.size(), 6);
  options_.threads = 1;
  const Dataset again = load();
  EXPECT_TRUE(torch::equal(d.train.images, again.train.images));
  EXPECT_TRUE(torch::equal(d.test.images, again.test.images));
  options_.seed = 4;
  EXPECT_FALSE(torch::equal(d.test.images, load().test.images));
}

TEST_F(ImageFolder, MissingClassFolderInTheTestSplit) {
  write_class(dir_ / "train", "cat", 2);
  write_class(dir_ / "train", "dog", 2);
  write_class(dir_ / "test", "cat", 2);
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "test" / "dog").string() + ": missing class folder dog of the test split");
}

TEST_F(ImageFolder, EmptySplitAndTooFewClasses) {
  write_class(dir_ / "train", "cat", 2);
  write_class(dir_ / "train", "dog", 2);
  fs::create_directories(dir_ / "test" / "cat");
  fs::create_directories(dir_ / "test" / "dog");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "test").string() +
                ": empty split: no image files (.jpeg, .jpg, .png, .bmp) in its class folders cat, dog");
  fs::remove_all(dir_ / "train" / "dog");
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "train").string() +
                ": an image folder needs at least two class subfolders, found 1 (with a train/ folder, the classes "
                "are its subfolders)");
  fs::remove_all(dir_ / "train");
  fs::remove_all(dir_ / "test");
  write_class(dir_, "cat", 1);
  EXPECT_EQ(error_of([&] { load(); }),
            dir_.string() + ": an image folder needs at least two class subfolders, found 1");
}

// The classes are train/'s: a test class folder train/ lacks is an error, not
// images left out.
TEST_F(ImageFolder, ATestClassFolderOutsideTrainIsRefused) {
  write_class(dir_ / "train", "cat", 2);
  write_class(dir_ / "train", "dog", 2);
  write_class(dir_ / "test", "cat", 1);
  write_class(dir_ / "test", "dog", 1);
  // Hidden folders (a notebook's, a tool's) are no classes on either side.
  fs::create_directories(dir_ / "test" / ".ipynb_checkpoints");
  fs::create_directories(dir_ / "train" / ".cache");
  EXPECT_EQ(load().class_names, (std::vector<std::string>{"cat", "dog"}));
  write_class(dir_ / "test", "emu", 1);
  EXPECT_EQ(error_of([&] { load(); }),
            (dir_ / "test" / "emu").string() +
                ": class folder emu is not one of train/'s (cat, dog); the classes are train/'s subfolders, and test/ "
                "must use the same");
  options_.test_only = true;  // an OOD set too: its images would be left out
  options_.stats = unit_pixel_stats(3);
  EXPECT_NE(error_of([&] { load(); }).find("class folder emu is not one of train/'s"), std::string::npos);
}

// data.skip_bad_images leaves bad files out, but not a whole class.
TEST_F(ImageFolder, SkippingEveryImageOfAClassIsAnError) {
  write_class(dir_ / "train", "cat", 2);
  write_class(dir_ / "train", "dog", 2);
  write_class(dir_ / "test", "cat", 1);
  write_class(dir_ / "test", "dog", 1);
  options_.skip_bad_images = true;
  bnn::testing::write_garbage(dir_ / "train" / "dog" / "dog_0.png");
  EXPECT_EQ(load().train.size(), 3);  // one skipped, each class still there
  bnn::testing::write_garbage(dir_ / "train" / "dog" / "dog_1.jpg");
  EXPECT_EQ(error_of([&] { load(); }),
            "image_folder: no training image of class dog is left after data.skip_bad_images skipped 2 unreadable "
            "file(s) (the first: " +
                (dir_ / "train" / "dog" / "dog_0.png").string() + "): the class has no training example");
}

TEST_F(ImageFolder, SplitRatioThatEmptiesASplit) {
  write_class(dir_, "a", 1);
  write_class(dir_, "b", 1);
  options_.split_ratio = 0.9;
  EXPECT_EQ(error_of([&] { load(); }), dir_.string() + ": split_ratio 0.9 leaves the test split empty");
}

// Class names go into JSON files, which hold UTF-8 only: a folder named in
// Latin-1 is refused at once, naming it (it used to fail in the JSON library
// after the run folder was made).
TEST_F(ImageFolder, AClassFolderNameThatIsNotUtf8IsRefused) {
  write_class(dir_, "cat", 5);
  write_class(dir_, "caf\xC3\xA9", 5);  // cafe with an acute e, in UTF-8: a name like any other
  EXPECT_EQ(load().class_names, (std::vector<std::string>{"caf\xC3\xA9", "cat"}));
  fs::rename(dir_ / "caf\xC3\xA9", dir_ / "caf\xE9");
  EXPECT_EQ(error_of([&] { load(); }),
            dir_.string() + "/caf\\xE9: a class folder's name is not UTF-8 text; rename it");
}

// Through load_dataset, as bnn loads it: a split_ratio that gives a small
// class no training image is refused (the class would be scored but never
// learnt), and a folder that cannot be listed is the path and the reason.
TEST_F(ImageFolder, ThroughTheRegistryEveryClassIsTrainedAndListingErrorsNameThePath) {
  write_class(dir_, "cat", 6);
  write_class(dir_, "dog", 1);
  options_.split_ratio = 0.4;  // llround(0.4 x 1) = 0 dogs to train on
  EXPECT_EQ(error_of([&] { load_dataset("image_folder", options_, torch::kCPU); }),
            dir_.string() + ": data.dataset image_folder: no training example is of class 1 ('dog') (of 2); a model "
                            "cannot learn a class it never sees: check the training split's class folders, or "
                            "data.split_ratio");
  options_.split_ratio = 0.8;
  EXPECT_EQ(load_dataset("image_folder", options_, torch::kCPU).train.size(), 6);
  fs::create_symlink("loop.png", dir_ / "cat" / "loop.png");
  EXPECT_EQ(error_of([&] { load_dataset("image_folder", options_, torch::kCPU); }),
            (dir_ / "cat" / "loop.png").string() + ": cannot read: Too many levels of symbolic links");
}

TEST_F(ImageFolder, CorruptImageNamesTheFile) {
  write_class(dir_ / "train", "cat", 2);
  write_class(dir_ / "train", "dog", 2);
  write_class(dir_ / "test", "cat", 1);
  write_class(dir_ / "test", "dog", 1);
  const auto bad = dir_ / "train" / "dog" / "dog_1.jpg";
  bnn::testing::truncate_to_half(bad);
  EXPECT_EQ(error_of([&] { load(); }),
            bad.string() + ": cannot decode the image: truncated JPEG (no end-of-image marker after the image data)");
  write_class(dir_ / "train", "dog", 2);  // whole again
  const auto bad_png = dir_ / "train" / "dog" / "dog_0.png";
  const auto size = fs::file_size(bad_png);
  bnn::testing::truncate_to_half(bad_png);
  EXPECT_EQ(error_of([&] { load(); }),
            fmt::format("{}: cannot decode the image: truncated PNG (the file's {} bytes end before its IEND chunk)",
                        bad_png.string(), size / 2));
  // Only the last 12 bytes (the IEND chunk) gone: still found.
  write_class(dir_ / "train", "dog", 2);
  fs::resize_file(bad_png, size - 12);
  EXPECT_NE(error_of([&] { load(); }).find("truncated PNG"), std::string::npos);
}

}  // namespace
}  // namespace bnn::data_loaders
