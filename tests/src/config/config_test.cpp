#include "src/config/config.h"

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/support/error_text.h"
#include "tests/support/temp_dir.h"

namespace bnn::config {
namespace {

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  static const auto dir = testing::unique_temp_dir("bnn_config_test");
  const auto path = dir / (name + ".yaml");
  std::ofstream(path) << text;
  return path;
}

void expect_error(const std::function<void()>& f, const std::string& text) {
  testing::expect_error<ConfigError>(f, text);
}

TEST(Config, DefaultsAreThePapersSettings) {
  const Config c = load_config("", {});
  EXPECT_EQ(c.data.batch_size, 200);
  EXPECT_EQ(c.adam.epochs, 15);
  EXPECT_EQ(c.swa.epochs, 5);
  EXPECT_EQ(c.sampler.epochs, 40);
  EXPECT_EQ(c.sampler.burn_in, 10);
  EXPECT_DOUBLE_EQ(c.sampler.rho, 1.0 / std::sqrt(50.0));
  EXPECT_DOUBLE_EQ(*c.sampler.rho_max, 6.0 / std::sqrt(50.0));
  EXPECT_DOUBLE_EQ(*c.sampler.friction, std::sqrt(50.0));
  EXPECT_EQ(c.model.name, "fmnist_cnn");
}

TEST(Config, FileAndOverrides) {
  const auto path = write_temp("ok", "sampler:\n  name: sghmc\n  rho: 0.5\nmodel:\n  name: mlp\n  hidden: [64, 32]\n");
  const Config c = load_config(path, {"sampler.step_size=2e-4", "run.members=8"});
  EXPECT_EQ(c.sampler.name, "sghmc");
  EXPECT_DOUBLE_EQ(c.sampler.step_size, 2e-4);
  EXPECT_DOUBLE_EQ(*c.sampler.friction, 2.0);
  EXPECT_DOUBLE_EQ(*c.sampler.rho_max, 3.0);
  EXPECT_EQ(c.model.hidden, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(c.run.members, 8);
}

TEST(Config, ResolvedYamlRoundTrips) {
  Config c = load_config("", {"sampler.rho=.inf", "sampler.friction=3", "model.hidden=[5]"});
  EXPECT_TRUE(std::isinf(*c.sampler.rho_max));
  const auto path = write_temp("roundtrip", to_yaml(c));
  const Config again = load_config(path, {});
  EXPECT_EQ(to_yaml(again), to_yaml(c));
}

TEST(Config, ErrorsNameTheKeyAndValue) {
  expect_error([] { load_config("", {"sampler.hh=1"}); }, "unknown config key 'sampler.hh'");
  expect_error([] { load_config("", {"model.path="}); },
               "config key 'model.path': no value given (an empty value is YAML's null); '' is the empty string");
  expect_error([] { load_config("", {"evaluation.ood="}); },
               "config key 'evaluation.ood': no value given (an empty value is YAML's null); [] is the empty list");
  expect_error([] { load_config("", {"adam.epochs="}); },
               "config key 'adam.epochs': no value given (an empty value is YAML's null)");
  expect_error([] { load_config(write_temp("section_value", "data: arrays\n"), {}); },
               "config key 'data' is a section, not a key: give one of its keys, such as data.dataset");
  // A section whose keys are all commented out is empty, not an error.
  EXPECT_EQ(load_config(write_temp("empty_section", "evaluation:\n  # bn_batches: 10\n"), {}).evaluation.bn_batches,
            20);
  expect_error([] { load_config("", {"sampler.step_size=-1"}); },
               "config key 'sampler.step_size': invalid value '-1': must be > 0");
  expect_error([] { load_config("", {"data.batch_size=abc"}); },
               "config key 'data.batch_size': invalid value 'abc': expected an integer");
  expect_error([] { load_config("", {"sampler.name=hmc"}); },
               "config key 'sampler.name': invalid value 'hmc': valid: sms_ubu, sg_ubu, ubu_rr, sms_baoab, sg_baoab, "
               "baoab_rr, sghmc, "
               "sg_em, em_rr, sms_em, csghmc, sgld, sgnht, obabo, nogin");
  expect_error([] { load_config("", {"sampler.nogin_covariance=full"}); },
               "config key 'sampler.nogin_covariance': invalid value 'full': valid: diagonal, low_rank");
  expect_error([] { load_config("", {"sampler.burn_in=40"}); }, "'sampler.burn_in': invalid value '40': must be less");
  expect_error([] { load_config("", {"sampler.rho=0.5", "sampler.rho_max=0.1"}); },
               "config key 'sampler.rho_max': invalid value '0.1': must be at least sampler.rho (0.5)");
  expect_error([] { load_config("", {"sampler.rho=.inf"}); }, "'sampler.friction': auto means 1/rho");
  expect_error([] { load_config("", {"run.device=tpu"}); }, "'run.device': invalid value 'tpu'");
  expect_error([] { load_config("", {"novalue"}); }, "--set expects key=value, got 'novalue'");
  expect_error([] { load_config("/nonexistent/x.yaml", {}); }, "config file /nonexistent/x.yaml does not exist");
  const auto bad = write_temp("bad", "sampler:\n  step_sise: 1\n");
  expect_error([&] { load_config(bad, {}); }, "unknown config key 'sampler.step_sise'");
  const auto broken = write_temp("broken", "sampler: [1, 2\n");
  expect_error([&] { load_config(broken, {}); }, "YAML error at line");
}

// Every number ends up in float32 arithmetic: the limits are float's.
// evaluation.ood (Note [Out-of-distribution sets]): a list of maps; names
// default to the data set's; dirs resolve like data.dir and become absolute.
TEST(Config, OodSetsParseResolveAndRoundTrip) {
  EXPECT_TRUE(default_config().evaluation.ood.empty());
  const Config c = load_config("", {"evaluation.ood=[{dataset: fashion_mnist}, {dataset: arrays, dir: rel/digits, "
                                    "name: digits, limit: 500}]"});
  ASSERT_EQ(c.evaluation.ood.size(), 2u);
  EXPECT_EQ(c.evaluation.ood[0].name, "fashion_mnist");
  EXPECT_EQ(c.evaluation.ood[0].dir, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(c.evaluation.ood[0].limit, 0);
  EXPECT_EQ(c.evaluation.ood[1].name, "digits");
  EXPECT_EQ(c.evaluation.ood[1].dir, (std::filesystem::current_path() / "rel/digits").string());
  EXPECT_EQ(c.evaluation.ood[1].limit, 500);
  const auto file = write_temp("ood_round_trip", to_yaml(c));
  EXPECT_EQ(load_config(file, {}).evaluation.ood, c.evaluation.ood);
}

TEST(Config, BadOodSetsNameTheProblem) {
  const auto bad = [](const std::string& value, const std::string& text) {
    expect_error([&] { load_config("", {"evaluation.ood=" + value}); }, text);
  };
  bad("mnist", "'evaluation.ood': invalid value 'mnist': expected a list of sets");
  bad("[mnist]", "every entry is a map with dataset");
  bad("[{dir: /x}]", "every set needs dataset");
  bad("[{dataset: mnist}]", "unknown data set 'mnist'; valid: fashion_mnist, cifar10");
  bad("[{dataset: arrays, dir: /x, path: /y}]", "unknown field 'path' of a set; valid: dataset, dir, name, limit");
  bad("[{dataset: arrays, dir: /x, limit: -1}]", "limit must be >= 0");
  bad("[{dataset: arrays, dir: /x, name: a/b}]", "name 'a/b' may hold only letters, digits, _ and -");
  bad("[{dataset: arrays, dir: /x}, {dataset: arrays, dir: /y}]", "two sets are named 'arrays'");
  bad("[{dataset: image_folder}]", "set 'image_folder': image_folder has no default directory; give dir");
  expect_error([] { load_config("", {"evaluation.ood=[{dataset: cifar10}]", "evaluation.save_sample_probs=false"}); },
               "needs evaluation.save_sample_probs true");
}

// A sampler that reads no friction is given auto's value all the same (so its
// runs and checkpoints stay as bnn always wrote them); read back from the
// run's config.yaml, that value is not refused as a key the user gave.
TEST(Config, SgldsFilledInFrictionIsReadBack) {
  const double filled = *load_config("", {"sampler.name=sgld"}).sampler.friction;
  EXPECT_EQ(filled, 1.0 / load_config("", {}).sampler.rho);
  EXPECT_EQ(*load_config("", {"sampler.name=sgld", fmt::format("sampler.friction={}", filled)}).sampler.friction,
            filled);
  EXPECT_EQ(*load_config("", {"sampler.name=sgld", "sampler.rho=.inf", "sampler.friction=1"}).sampler.friction, 1.0);
  expect_error([] { load_config("", {"sampler.name=sgld", "sampler.friction=2"}); },
               "config key 'sampler.friction': invalid value '2': sampler sgld does not use it");
}

TEST(Config, NumbersMustFitInFloat) {
  EXPECT_EQ(load_config("", {"swa.lr=3.4e38"}).swa.lr, 3.4e38);
  expect_error([] { load_config("", {"swa.lr=3.5e38"}); },
               "config key 'swa.lr': invalid value '3.5e38': beyond the float32 range (3.4e38)");
  EXPECT_EQ(load_config("", {"prior.precision=1.2e-38"}).prior.precision, 1.2e-38);
  expect_error([] { load_config("", {"prior.precision=1e-39"}); },
               "config key 'prior.precision': invalid value '1e-39': below the smallest normal float32");
  EXPECT_EQ(load_config("", {"prior.precision=0"}).prior.precision, 0);  // exactly 0 is a float
  EXPECT_EQ(load_config("", {"prior.precision=0.0e-500"}).prior.precision, 0);
  // Below double's range it reads as 0; said as too small, not as "must be > 0".
  expect_error([] { load_config("", {"sampler.step_size=1e-400"}); },
               "config key 'sampler.step_size': invalid value '1e-400': below the smallest normal float32");
  EXPECT_TRUE(std::isinf(load_config("", {"sampler.rho=.inf", "sampler.friction=1"}).sampler.rho));
  expect_error([] { load_config("", {"sampler.friction=1e300"}); },
               "config key 'sampler.friction': invalid value '1e300': beyond the float32 range");
  // Beyond double's or int64's range: too large, not "expected a number".
  expect_error([] { load_config("", {"sampler.step_size=1e400"}); },
               "config key 'sampler.step_size': invalid value '1e400': beyond the float32 range");
  expect_error([] { load_config("", {"sampler.rho_max=-1e400"}); },
               "config key 'sampler.rho_max': invalid value '-1e400': beyond the float32 range");
  expect_error([] { load_config("", {"sampler.epochs=99999999999999999999"}); },
               "config key 'sampler.epochs': invalid value '99999999999999999999': must be between 1 and");
  expect_error([] { load_config("", {"run.seed=99999999999999999999"}); },
               "config key 'run.seed': invalid value '99999999999999999999': must be between 0 and "
               "18446744073709551615");
  expect_error([] { load_config("", {"sampler.epochs=4.5"}); },
               "config key 'sampler.epochs': invalid value '4.5': expected an integer");
}

// --set values are YAML: a value YAML reads otherwise than as text says how
// to quote it; a config that is no text says so, not a parser's raw bytes.
TEST(Config, ValuesYamlReadsOtherwiseSayHowToQuoteThem) {
  // The hint: YAML double quotes inside the shell's single quotes (bash leaves ! and ` alone there).
  expect_error([] { load_config("", {"data.dir=!bang"}); },
               "no value given (an empty value is YAML's null) (YAML gives !, &, *, #, %, @, `, |, > and ': ' "
               "meanings of their own: to give the text as it is, quote it: --set 'data.dir=\"!bang\"')");
  expect_error([] { load_config("", {"data.dir=*star"}); }, "quote it: --set 'data.dir=\"*star\"'");
  expect_error([] { load_config("", {"data.dir=data/x: y"}); }, "quote it: --set 'data.dir=\"data/x: y\"'");
  // A comment would drop the rest without an error; backslashes and quotes are escaped in the hint.
  expect_error([] { load_config("", {"data.dir=my\\new #1"}); },
               "--set data.dir=my\\new #1: YAML reads '#' after a space as the start of a comment, and would drop "
               "what follows (YAML gives");
  expect_error([] { load_config("", {"data.dir=my\\new #1"}); }, "quote it: --set 'data.dir=\"my\\\\new #1\"'");
  expect_error([] { load_config("", {"data.dir=it's #1"}); }, "quote it: --set 'data.dir=\"it'\\''s #1\"'");
  expect_error([] { load_config("", {"data.dir=a\t#b"}); }, "YAML reads '#' after a space as the start of a comment");
  EXPECT_EQ(std::filesystem::path(load_config("", {"data.dir=\"my\\\\new #1\""}).data.dir).filename(), "my\\new #1");
  EXPECT_EQ(load_config("", {"data.dir=\"!bang\""}).data.dir.substr(0, 1), "/");  // made absolute
  // A quoted '#' inside a list or mapping is YAML's to read.
  const Config ood = load_config("", {"evaluation.save_sample_probs=true",
                                      "evaluation.ood=[{dataset: arrays, dir: '/tmp/my #1', name: digits}]"});
  ASSERT_EQ(ood.evaluation.ood.size(), 1u);
  EXPECT_EQ(ood.evaluation.ood[0].dir, "/tmp/my #1");
  EXPECT_EQ(load_config("", {"model.hidden=[8]", "model.name=mlp"}).model.hidden, std::vector<int64_t>{8});
}

// A compressed or binary file given as a config is named as such, not as the
// YAML parser's raw bytes; text in any encoding yaml-cpp reads still loads.
TEST(Config, BinaryFilesAreNamedAndTextInAnyEncodingLoads) {
  const auto gz = write_temp("gzipped", std::string("\x1f\x8b\x08\x00\x00\x00", 6));
  expect_error([&] { load_config(gz, {}); }, "is not a YAML text file: it is a gzip file");
  const auto nul = write_temp("nul", std::string("run:\n  seed: 1\0\n", 17));
  expect_error([&] { load_config(nul, {}); }, "is not a YAML text file: it is a binary file (byte 14 is NUL)");
  EXPECT_EQ(load_config(write_temp("utf8", "# caf\u00e9 \u2014 notes\nrun:\n  seed: 3\n"), {}).run.seed, 3u);
  EXPECT_EQ(load_config(write_temp("latin1", "# caf\xe9\nrun:\n  seed: 4\n"), {}).run.seed, 4u);
  EXPECT_EQ(load_config(write_temp("bom_crlf", "\xef\xbb\xbfrun:\r\n  seed: 5\r\n"), {}).run.seed, 5u);
  std::string utf16("\xff\xfe", 2);
  for (const char c : std::string("run:\n  seed: 6\n")) utf16 += std::string{c, '\0'};
  EXPECT_EQ(load_config(write_temp("utf16", utf16), {}).run.seed, 6u);
}

// A kinetic chain moves about h per step, an overdamped one sqrt(2 h), at any
// temperature (the velocity stays N(0, I): Note [Temperature]); below
// float32's epsilon at 1 (2^-23) it cannot move.
TEST(Config, StepSizesTooSmallToMoveAreRefused) {
  const double eps = std::ldexp(1.0, -23);
  EXPECT_NO_THROW(load_config("", {fmt::format("sampler.step_size={}", eps)}));
  expect_error([&] { load_config("", {fmt::format("sampler.step_size={}", eps * 0.99)}); },
               "a step moves a weight by about h = 1.18e-07, below float32's resolution at 1 (1.19e-07), so "
               "the chain cannot move; use a step size of at least 1.19e-07");
  // A hotter target does not move the velocity further: the same bound at T = 4, and at T = 1e-6.
  expect_error([&] { load_config("", {fmt::format("sampler.step_size={}", eps / 2), "sampler.temperature=4"}); },
               "use a step size of at least 1.19e-07");
  EXPECT_NO_THROW(load_config("", {fmt::format("sampler.step_size={}", eps), "sampler.temperature=4"}));
  EXPECT_NO_THROW(load_config("", {"sampler.step_size=1e-4", "sampler.temperature=1e-6"}));
  // sgld: sqrt(2 h) >= 2^-23 needs h >= 2^-47.
  EXPECT_NO_THROW(load_config("", {"sampler.name=sgld", fmt::format("sampler.step_size={}", std::ldexp(1.0, -47))}));
  expect_error([] { load_config("", {"sampler.name=sgld", "sampler.step_size=1e-15", "sampler.temperature=9"}); },
               "about sqrt(2 h) = 4.47e-08");
}

TEST(Config, FilesThatSayNothingOrTwiceAreRefused) {
  expect_error([] { load_config(write_temp("empty", ""), {}); }, "is empty (or only comments)");
  expect_error([] { load_config(write_temp("comments", "# just a note\n"), {}); }, "is empty (or only comments)");
  expect_error([] { load_config(write_temp("twice", "run:\n  seed: 1\nrun:\n  members: 2\n"), {}); },
               "line 3: section 'run' is given twice (first at line 1); merge the two");
  expect_error([] { load_config(write_temp("key_twice", "run:\n  seed: 1\n  seed: 2\n"), {}); },
               "line 3: key 'run.seed' is given twice (first at line 2)");
  expect_error([] { load_config(std::filesystem::temp_directory_path(), {}); }, "is a directory; give a YAML file");
  // The same key in two sections is not a repeat.
  EXPECT_NO_THROW(load_config(write_temp("two_epochs", "adam:\n  epochs: 3\nswa:\n  epochs: 3\n"), {}));
  expect_error([] { load_config("", {"model.name=mlp", "model.hidden=[]"}); },
               "the mlp needs at least one hidden layer");
  EXPECT_NO_THROW(load_config("", {"model.name=logistic", "model.hidden=[]"}));
}

TEST(Config, DataDirAutoIsTheDatasetsDefault) {
  EXPECT_EQ(load_config("", {}).data.dir, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(load_config("", {"data.dataset=cifar10"}).data.dir, "/usr/share/datasets/cifar-10-batches-bin");
  EXPECT_EQ(load_config("", {"data.dataset=chest_xray"}).data.dir, "/usr/share/datasets/chest_xray");
  EXPECT_EQ(load_config("", {"data.dataset=celeba"}).data.dir, "/usr/share/datasets/celeba");
  EXPECT_EQ(load_config("", {"data.dataset=celeba", "data.dir=/data/c"}).data.dir, "/data/c");
  // A given folder becomes absolute, one spelling per folder.
  const std::string rel = (std::filesystem::current_path() / "rel" / "d").string();
  for (const char* spelling : {"rel/d", "./rel/d", "rel/d/", "rel/./d//", "rel/x/../d"}) {
    EXPECT_EQ(load_config("", {std::string("data.dir=") + spelling}).data.dir, rel) << spelling;
  }
  EXPECT_EQ(load_config("", {"data.dir=/data/c/"}).data.dir, "/data/c");
  expect_error([] { load_config("", {"data.dataset=image_folder"}); },
               "config key 'data.dir': invalid value 'auto': image_folder has no default directory");
}

TEST(Config, ImageDatasetKeysAreChecked) {
  const Config c = load_config("", {});
  EXPECT_EQ(c.data.augment_copies, (std::vector<int64_t>{18, 6}));
  EXPECT_EQ(c.data.image_size, 0);
  EXPECT_FALSE(c.data.skip_bad_images);
  expect_error([] { load_config("", {"data.image_size=64"}); },
               "config key 'data.image_size': invalid value '64': fashion_mnist images have a fixed size");
  expect_error([] { load_config("", {"data.augment_copies=[18]"}); },
               "config key 'data.augment_copies': invalid value '[18]': needs two entries");
  expect_error([] { load_config("", {"data.augment_copies=[0, 6]"}); },
               "config key 'data.augment_copies': invalid value '[0, 6]': every entry must be >= 1");
  expect_error([] { load_config("", {"data.split_ratio=1"}); },
               "config key 'data.split_ratio': invalid value '1': must be > 0 and < 1");
  expect_error([] { load_config("", {"data.split_ratio=0"}); },
               "config key 'data.split_ratio': invalid value '0': must be > 0 and < 1");
  expect_error([] { load_config("", {"data.channels=2"}); }, "config key 'data.channels': invalid value '2'");
  expect_error([] { load_config("", {"data.dataset=mnist"}); },
               "valid: fashion_mnist, cifar10, chest_xray, celeba, image_folder, arrays");
}

// A key that the chosen sampler does not read is refused, naming the
// samplers that do read it (samplers/registry.h), instead of being ignored.
TEST(Config, KeysTheSamplerDoesNotReadAreRefused) {
  expect_error([] { load_config("", {"sampler.name=sgld", "sampler.friction=5"}); },
               "config key 'sampler.friction': invalid value '5': sampler sgld does not use it (samplers that do: "
               "sms_ubu, sg_ubu, ubu_rr, sms_baoab, sg_baoab, baoab_rr, sghmc, sg_em, em_rr, sms_em, csghmc, sgnht, "
               "obabo, nogin); remove the key");
  expect_error([] { load_config("", {"sampler.nogin_covariance=low_rank"}); },
               "config key 'sampler.nogin_covariance': invalid value 'low_rank': sampler sms_ubu does not use it "
               "(samplers that do: nogin); remove the key");
  expect_error([] { load_config("", {"sampler.cycle_length=8"}); },
               "config key 'sampler.cycle_length': invalid value '8': sampler sms_ubu does not use it (samplers that "
               "do: csghmc)");
  expect_error([] { load_config("", {"sampler.name=sghmc", "sampler.mh_block=2"}); },
               "config key 'sampler.mh_block': invalid value '2': sampler sghmc does not use it (samplers that do: "
               "obabo)");
  EXPECT_EQ(load_config("", {"sampler.name=nogin", "sampler.nogin_covariance=low_rank"}).sampler.nogin_covariance,
            "low_rank");
  // sgld's friction is unread: auto needs no finite rho for it.
  EXPECT_EQ(*load_config("", {"sampler.name=sgld", "sampler.rho=.inf"}).sampler.friction, 1.0);
  expect_error([] { load_config("", {"sampler.name=sghmc", "sampler.rho=.inf"}); },
               "auto means 1/rho, which needs a finite sampler.rho");
}

TEST(Config, StandardizeIsTheDefaultAndThePaperConfigsKeepPixelsAsTheReference) {
  EXPECT_TRUE(load_config("", {}).data.standardize);
  EXPECT_FALSE(load_config("", {"data.standardize=false"}).data.standardize);
  EXPECT_FALSE(load_config("", {"data.dataset=cifar10", "data.standardize=false"}).data.standardize);
  // The reference notebooks feed p / 255 (torchvision's ToTensor alone).
  const std::string dir = std::string(BNN_SOURCE_DIR) + "/configs/";
  for (const char* paper : {"fashion_mnist_paper", "cifar10_paper", "chest_xray_paper", "celeba_paper"}) {
    EXPECT_FALSE(load_config(dir + paper + ".yaml", {}).data.standardize) << paper;
  }
}

TEST(Config, PaperConfigsStateTheStepActuallyRun) {
  const std::string dir = std::string(BNN_SOURCE_DIR) + "/configs/";
  const Config chest = load_config(dir + "chest_xray_paper.yaml", {});
  EXPECT_EQ(chest.model.name, "chest_xray_cnn");
  EXPECT_EQ(chest.data.image_size, 180);
  EXPECT_DOUBLE_EQ(chest.sampler.step_size, 2.5e-4);  // Table 6's 5e-4, halved
  EXPECT_DOUBLE_EQ(chest.sampler.rho, 1.0 / std::sqrt(50.0));
  const Config celeba = load_config(dir + "celeba_paper.yaml", {});
  EXPECT_EQ(celeba.model.name, "celeba_cnn");
  EXPECT_DOUBLE_EQ(celeba.sampler.step_size, 1.25e-4);  // Table 6's 2.5e-4, halved
  EXPECT_DOUBLE_EQ(celeba.sampler.rho, 0.2);
  EXPECT_DOUBLE_EQ(*celeba.sampler.rho_max, 1.2);
  EXPECT_DOUBLE_EQ(*celeba.sampler.friction, 5.0);
}

TEST(Config, EveryKeyIsDocumented) {
  for (const auto& doc : field_docs()) {
    EXPECT_FALSE(doc.description.empty()) << doc.key;
    EXPECT_NE(doc.key.find('.'), std::string::npos) << doc.key;
  }
}

}  // namespace
}  // namespace bnn::config
