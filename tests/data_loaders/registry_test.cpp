// The data set registry (data_loaders/registry.h) is what the config, `bnn
// run` and `bnn predict` know of a data set: its names, default directories
// and traits decide the config's checks and predict's preprocessing.
#include "data_loaders/registry.h"

#include <functional>

#include <gtest/gtest.h>

#include "src/config/config.h"
#include "src/pipeline/preprocess.h"
#include "tests/support/error_text.h"

namespace bnn::data_loaders {
namespace {

config::Config config_for(const DatasetEntry& e, std::vector<std::string> overrides) {
  overrides.push_back("data.dataset=" + e.name);
  if (e.default_dir.empty()) overrides.push_back("data.dir=/some/images");
  return config::load_config("", overrides);
}

TEST(DatasetRegistry, EveryEntryIsComplete) {
  ASSERT_EQ(dataset_names(), (std::vector<std::string>{"fashion_mnist", "cifar10", "chest_xray", "celeba",
                                                       "image_folder", "arrays"}));
  for (const auto& e : dataset_entries()) {
    SCOPED_TRACE(e.name);
    EXPECT_NE(e.load, nullptr);
    EXPECT_FALSE(e.layout.empty());
    EXPECT_EQ(e.resizable, e.default_side > 0);
  }
}

// The config's checks follow each entry's traits.
TEST(DatasetRegistry, ConfigChecksFollowTheTraits) {
  for (const auto& e : dataset_entries()) {
    SCOPED_TRACE(e.name);
    EXPECT_EQ(config_for(e, {}).data.dir, e.default_dir.empty() ? "/some/images" : e.default_dir);
    const std::string size_error = testing::error_or_empty([&] { config_for(e, {"data.image_size=48"}); });
    EXPECT_EQ(size_error.empty(), e.resizable) << size_error;
    EXPECT_FALSE(config_for(e, {"data.standardize=false"}).data.standardize);  // every data set: p / 255
    if (e.default_dir.empty()) {
      EXPECT_NE(testing::error_of([&] { config::load_config("", {"data.dataset=" + e.name}); })
                    .find("has no default directory"),
                std::string::npos);
    }
  }
  EXPECT_NE(
      testing::error_of([] {
        dataset_entry("mnist");
      }).find("unknown data set 'mnist'; valid: fashion_mnist, cifar10, chest_xray, celeba, image_folder, arrays"),
      std::string::npos);
}

// `bnn predict` resizes the images of resizable data sets and crops CelebA's
// to their centre square first, as the loaders do.
TEST(DatasetRegistry, PredictPreprocessingFollowsTheEntry) {
  for (const auto& e : dataset_entries()) {
    SCOPED_TRACE(e.name);
    Dataset data;
    data.name = e.name;
    data.input_shape = {1, 28, 28};
    data.num_classes = 10;
    data.train.images = torch::zeros({4, 1, 28, 28});
    data.train.labels = torch::zeros({4}, torch::kLong);
    config::Config config = config_for(e, {"model.name=mlp"});
    const auto p = pipeline::preprocess_of(config, data);
    EXPECT_EQ(p.resize, e.resizable);
    EXPECT_EQ(p.center_square, e.center_square);
  }
  EXPECT_TRUE(dataset_entry("celeba").center_square);
  EXPECT_FALSE(dataset_entry("chest_xray").center_square);
}

}  // namespace
}  // namespace bnn::data_loaders
