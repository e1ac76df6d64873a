#include "src/config/config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "data_loaders/registry.h"
#include "models/registry.h"
#include "samplers/registry.h"

namespace bnn::config {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One configuration key: where it lives, its default (YAML text), its
// description, and how to read and write it.
struct Field {
  std::string key;
  std::string default_yaml;
  std::string description;
  std::function<void(const YAML::Node&)> set;  // parses and range-checks
  std::function<YAML::Node()> get;
};

std::string show(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

[[noreturn]] void bad_value(const std::string& key, const YAML::Node& node, const std::string& why) {
  throw ConfigError(fmt::format("config key '{}': invalid value '{}': {}", key, show(node), why));
}

// `too_large` says what is wrong with a number of the right form that T
// cannot hold (an integer of 20 digits, 1e400); "expected ..." would call it
// no number at all.
template <typename T>
T scalar_as(const std::string& key, const YAML::Node& node, const char* type_name,
            const std::string& too_large = "") {
  if (!node.IsScalar()) bad_value(key, node, fmt::format("expected {}", type_name));
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    const std::string& text = node.Scalar();
    const bool whole = std::regex_match(text, std::regex("[-+]?[0-9]+"));
    const bool real = std::regex_match(text, std::regex("[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?"));
    if (!too_large.empty() && (std::is_floating_point_v<T> ? real : whole)) bad_value(key, node, too_large);
    bad_value(key, node, fmt::format("expected {}", type_name));
  }
}

struct Range {
  double lo = -kInf, hi = kInf;
  bool lo_open = false;
  bool allow_inf = false;
  bool hi_open = false;
  std::string text() const {
    std::string s = lo_open ? fmt::format("> {:g}", lo) : fmt::format(">= {:g}", lo);
    if (std::isfinite(hi)) s += fmt::format(hi_open ? " and < {:g}" : " and <= {:g}", hi);
    if (allow_inf) s += " (or .inf)";
    return s;
  }
  bool contains(double v) const {
    if (std::isnan(v)) return false;
    if (std::isinf(v)) return allow_inf && v > 0;
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
};

const std::string kBeyondFloat = "beyond the float32 range (3.4e38) in which bnn computes";
const std::string kBelowFloat = "below the smallest normal float32 (1.2e-38), in which bnn computes";

// Every number is used in float32 arithmetic on the parameters: a finite
// value outside float's range would become inf or 0 there, long after the
// config was read.
void check_float_range(const std::string& key, const YAML::Node& node, double v) {
  if (v == 0) {  // 1e-400 reads as 0: said as what it is, not as a zero
    const std::string text = node.Scalar();
    const std::string mantissa = text.substr(0, text.find_first_of("eE"));
    if (mantissa.find_first_of("123456789") == std::string::npos) return;
    bad_value(key, node, kBelowFloat);
  }
  if (!std::isfinite(v)) return;
  if (std::abs(v) > std::numeric_limits<float>::max()) bad_value(key, node, kBeyondFloat);
  if (std::abs(v) < std::numeric_limits<float>::min()) bad_value(key, node, kBelowFloat);
}

Range positive() { return {0, kInf, true, false}; }
Range at_least(double lo) { return {lo, kInf, false, false}; }

Field number(std::string key, double& target, std::string def, Range range, std::string description) {
  const std::string k = key;
  return {std::move(key), std::move(def), std::move(description),
          [&target, k, range](const YAML::Node& n) {
            const double v = scalar_as<double>(k, n, "a number", kBeyondFloat);
            check_float_range(k, n, v);
            if (!range.contains(v)) bad_value(k, n, "must be " + range.text());
            target = v;
          },
          [&target] { return YAML::Node(target); }};
}

// A number or "auto" (stored as nullopt).
Field auto_number(std::string key, std::optional<double>& target, Range range, std::string description) {
  const std::string k = key;
  return {std::move(key), "auto", std::move(description),
          [&target, k, range](const YAML::Node& n) {
            if (n.IsScalar() && n.Scalar() == "auto") {
              target.reset();
              return;
            }
            const double v = scalar_as<double>(k, n, "a number or auto", kBeyondFloat);
            check_float_range(k, n, v);
            if (!range.contains(v)) bad_value(k, n, "must be " + range.text() + " or auto");
            target = v;
          },
          [&target] { return target ? YAML::Node(*target) : YAML::Node("auto"); }};
}

Field integer(std::string key, int64_t& target, std::string def, int64_t lo, int64_t hi, std::string description) {
  const std::string k = key;
  return {std::move(key), std::move(def), std::move(description),
          [&target, k, lo, hi](const YAML::Node& n) {
            const std::string range = fmt::format("must be between {} and {}", lo, hi);
            const int64_t v = scalar_as<int64_t>(k, n, "an integer", range);
            if (v < lo || v > hi) bad_value(k, n, range);
            target = v;
          },
          [&target] { return YAML::Node(target); }};
}

Field seed_field(std::string key, uint64_t& target, std::string description) {
  const std::string k = key;
  return {std::move(key), "0", std::move(description),
          [&target, k](const YAML::Node& n) {
            target = scalar_as<uint64_t>(k, n, "a non-negative integer",
                                         fmt::format("must be between 0 and {}", std::numeric_limits<uint64_t>::max()));
          },
          [&target] { return YAML::Node(target); }};
}

Field boolean(std::string key, bool& target, std::string def, std::string description) {
  const std::string k = key;
  return {std::move(key), std::move(def), std::move(description),
          [&target, k](const YAML::Node& n) { target = scalar_as<bool>(k, n, "true or false"); },
          [&target] { return YAML::Node(target); }};
}

Field text(std::string key, std::string& target, std::string def, std::vector<std::string> choices,
           std::string description) {
  const std::string k = key;
  return {std::move(key), std::move(def), std::move(description),
          [&target, k, choices](const YAML::Node& n) {
            const auto v = scalar_as<std::string>(k, n, "a string");
            if (!choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end()) {
              bad_value(k, n, fmt::format("valid: {}", fmt::join(choices, ", ")));
            }
            target = v;
          },
          [&target] { return YAML::Node(target); }};
}

Field int_list(std::string key, std::vector<int64_t>& target, std::string def, int64_t lo, std::string description) {
  const std::string k = key;
  return {std::move(key), std::move(def), std::move(description),
          [&target, k, lo](const YAML::Node& n) {
            if (!n.IsSequence()) bad_value(k, n, "expected a list of integers");
            std::vector<int64_t> v;
            for (const auto& item : n) {
              const int64_t x = scalar_as<int64_t>(k, item, "a list of integers");
              if (x < lo) bad_value(k, n, fmt::format("every entry must be >= {}", lo));
              v.push_back(x);
            }
            target = v;
          },
          [&target] {
            YAML::Node n(YAML::NodeType::Sequence);
            for (int64_t x : target) n.push_back(x);
            return n;
          }};
}

constexpr int64_t kBig = std::numeric_limits<int32_t>::max();

// evaluation.ood: a list of {dataset, dir, name, limit} maps.
Field ood_sets(std::string key, std::vector<OodSetConfig>& target, std::string description) {
  const std::string k = key;
  return {std::move(key), "[]", std::move(description),
          [&target, k](const YAML::Node& n) {
            const auto fail = [&](const std::string& why) { bad_value(k, n, why); };
            if (!n.IsSequence()) {
              fail("expected a list of sets, e.g. [{dataset: fashion_mnist, dir: /data/mnist, name: mnist}]");
            }
            std::vector<OodSetConfig> sets;
            for (const auto& item : n) {
              if (!item.IsMap()) fail("every entry is a map with dataset (and dir, name, limit)");
              OodSetConfig set;
              set.dir = "auto";
              for (const auto& kv : item) {
                const std::string field = kv.first.Scalar();
                if (field == "dataset") {
                  set.dataset = scalar_as<std::string>(k, kv.second, "a data set name");
                  const auto names = data_loaders::dataset_names();
                  if (std::find(names.begin(), names.end(), set.dataset) == names.end()) {
                    fail(fmt::format("unknown data set '{}'; valid: {}", set.dataset, fmt::join(names, ", ")));
                  }
                } else if (field == "dir") {
                  set.dir = scalar_as<std::string>(k, kv.second, "a directory");
                } else if (field == "name") {
                  set.name = scalar_as<std::string>(k, kv.second, "a name");
                } else if (field == "limit") {
                  set.limit = scalar_as<int64_t>(k, kv.second, "an integer");
                  if (set.limit < 0) fail("limit must be >= 0 (0 = every test example)");
                } else {
                  fail(fmt::format("unknown field '{}' of a set; valid: dataset, dir, name, limit", field));
                }
              }
              if (set.dataset.empty()) fail("every set needs dataset (the loader that reads it, e.g. fashion_mnist)");
              if (set.name.empty()) set.name = set.dataset;
              const bool plain = std::all_of(set.name.begin(), set.name.end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
              });
              if (!plain) {
                fail(fmt::format("name '{}' may hold only letters, digits, _ and - (it names files)", set.name));
              }
              for (const auto& other : sets) {
                if (other.name == set.name) {
                  fail(fmt::format("two sets are named '{}'; give each a distinct name", set.name));
                }
              }
              sets.push_back(set);
            }
            target = sets;
          },
          [&target] {
            YAML::Node n(YAML::NodeType::Sequence);
            for (const auto& set : target) {
              YAML::Node m(YAML::NodeType::Map);
              m["name"] = set.name;
              m["dataset"] = set.dataset;
              m["dir"] = set.dir;
              m["limit"] = set.limit;
              n.push_back(m);
            }
            return n;
          }};
}

// data.dir's help: each data set's layout and default directory (data_loaders/registry.h).
std::string data_dir_doc() {
  std::vector<std::string> layouts, defaults;
  for (const auto& e : data_loaders::dataset_entries()) {
    layouts.push_back(e.name + ": " + e.layout);
    defaults.push_back(e.name + ": " + (e.default_dir.empty() ? "none, data.dir is required" : e.default_dir));
  }
  return fmt::format("Directory holding the data set's files ({}). auto = {}.", fmt::join(layouts, "; "),
                     fmt::join(defaults, ", "));
}

std::string image_size_doc() {
  std::vector<std::string> resizable, fixed;
  for (const auto& e : data_loaders::dataset_entries()) {
    if (e.resizable) {
      resizable.push_back(fmt::format("{} {}", e.name, e.default_side));
    } else {
      fixed.push_back(e.name);
    }
  }
  return fmt::format("Side of the square images of the resizable data sets (0 = their defaults: {}); {} have fixed "
                     "sizes and need 0.",
                     fmt::join(resizable, ", "), fmt::join(fixed, " and "));
}

// The single place where keys, defaults, bounds and descriptions live.
std::vector<Field> fields(Config& c) {
  return {
      text("data.dataset", c.data.dataset, "fashion_mnist", data_loaders::dataset_names(),
           "Dataset to load (README.md, Datasets, shows each one's directory layout)."),
      text("data.dir", c.data.dir, "auto", {}, data_dir_doc()),
      integer("data.train_limit", c.data.train_limit, "0", 0, kBig,
              "Use only the first N training examples (0 = all); for chest_xray the first N images before "
              "augmentation."),
      integer("data.test_limit", c.data.test_limit, "0", 0, kBig, "Use only the first N test examples (0 = all)."),
      integer("data.batch_size", c.data.batch_size, "200", 1, kBig,
              "Minibatch size N_b; the training set is split once into floor(N_D/N_b) fixed batches."),
      integer("data.image_size", c.data.image_size, "0", 0, 4096, image_size_doc()),
      boolean("data.skip_bad_images", c.data.skip_bad_images, "false",
              "Leave unreadable image files out (counted in the log) instead of stopping with an error naming "
              "the file (chest_xray, celeba, image_folder)."),
      int_list("data.augment_copies", c.data.augment_copies, "[18, 6]", 1,
               "chest_xray: training examples made from each image of class NORMAL, PNEUMONIA: the image and "
               "copies - 1 random augmentations (crop, rotation, flip, brightness; seeded by run.seed). "
               "[1, 1] turns augmentation off."),
      number("data.split_ratio", c.data.split_ratio, "0.8", {0, 1, /*lo_open=*/true, /*allow_inf=*/false,
                                                             /*hi_open=*/true},
             "image_folder without train/ and test/ folders: fraction of each class used for training "
             "(the class is shuffled with run.seed first)."),
      integer("data.channels", c.data.channels, "3", 1, 3, "image_folder: 1 = grayscale, 3 = RGB."),
      boolean("data.standardize", c.data.standardize, "true",
              "Standardize each image channel with the training pixels' mean and std (fashion_mnist and cifar10: "
              "the published values; the others: computed from the training split), or for arrays of features "
              "each feature. false keeps pixels p / 255 in [0, 1] (and features as they are), torchvision's "
              "ToTensor: what the reference notebooks feed their networks, so the *_paper.yaml configs set it."),
      text("model.name", c.model.name, "fmnist_cnn", models::model_names(), "Architecture (see `bnn models`)."),
      int_list("model.hidden", c.model.hidden, "[256, 256]", 1, "Hidden widths of the mlp."),
      boolean("model.batch_norm", c.model.batch_norm, "false", "BatchNorm1d after each mlp hidden layer."),
      text("model.path", c.model.path, "''", {},
           "torchscript: the classifier's file, saved in Python by torch.jit.script(model).save(path) (or "
           "torch.jit.trace when it has no BatchNorm); it maps N x C x H x W inputs (N x D x 1 x 1 for feature "
           "arrays) to N x K logits. Copied into the run directory as model.pt."),
      text("model.init", c.model.init, "seed", {"seed", "file"},
           "torchscript: seed = each member redraws the weights of every Linear/Conv-like layer (2-D or more, "
           "with its bias) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with its own seed; file = every member starts "
           "from the file's weights. Parameters saved with requires_grad False keep the file's values either "
           "way, and are neither trained nor sampled."),
      number("prior.precision", c.prior.precision, "1.0", at_least(0),
             "lambda: Gaussian prior precision on weights (and on biases when prior.biases is true)."),
      boolean("prior.biases", c.prior.biases, "false",
              "Put the prior on biases too, i.e. on every parameter (the logistic-regression experiment does, "
              "which makes its potential strongly convex)."),
      text("map.optimizer", c.map.optimizer, "none", {"none", "lbfgs"},
           "How x* is found: none = Adam then SWA; lbfgs = the MAP point by full-batch L-BFGS (strong Wolfe "
           "line search), replacing Adam and SWA (set adam.epochs and swa.epochs to 0)."),
      integer("map.iterations", c.map.iterations, "500", 1, kBig, "L-BFGS iterations at most."),
      number("map.tolerance", c.map.tolerance, "1e-5", positive(),
             "L-BFGS stops when the largest gradient component of f / N_D is at most this."),
      integer("map.history", c.map.history, "20", 1, 1000, "L-BFGS memory: correction pairs kept."),
      integer("adam.epochs", c.adam.epochs, "15", 0, kBig,
              "T_train: Adam epochs, lr decaying linearly to 0 (0 only with map.optimizer lbfgs)."),
      number("adam.lr", c.adam.lr, "0.01", positive(), "Initial Adam learning rate."),
      integer("swa.epochs", c.swa.epochs, "5", 0, kBig,
              "T_swa: epochs of Adam at constant lr, every iterate averaged (0 only with map.optimizer lbfgs)."),
      number("swa.lr", c.swa.lr, "0.001", positive(), "SWA-phase Adam learning rate."),
      text("sampler.name", c.sampler.name, "sms_ubu", samplers::sampler_names(),
           "Posterior sampler (`bnn samplers` describes each)."),
      integer("sampler.epochs", c.sampler.epochs, "40", 1, kBig, "Sampling epochs (N_m steps each)."),
      integer("sampler.burn_in", c.sampler.burn_in, "10", 0, kBig, "Epochs discarded before samples are kept."),
      integer("sampler.thin", c.sampler.thin, "0", 0, kBig,
              "Steps between retained samples; 0 = one epoch (N_m steps)."),
      number("sampler.step_size", c.sampler.step_size, "1.25e-4", positive(),
             "h, the step actually run (the reference notebooks' 'h' is twice this)."),
      number("sampler.rho", c.sampler.rho, "0.14142135623730950", {0, kInf, true, true},
             "Localization radius rho (default 50^-1/2); .inf samples the global posterior without bounces."),
      auto_number("sampler.rho_max", c.sampler.rho_max, {0, kInf, true, true},
                  "Half-width of the bounce hypercube around x*; auto = 6 rho."),
      auto_number("sampler.friction", c.sampler.friction, positive(), "gamma; auto = 1/rho."),
      number("sampler.temperature", c.sampler.temperature, "1.0", positive(), "T: samples exp(-f/T)."),
      text("sampler.order", c.sampler.order, "auto", {"auto", "sms", "rr", "iid"},
           "Minibatch order; auto = the sampler's own (sms for sms_*, iid for sg_* and nogin, rr otherwise)."),
      boolean("sampler.repartition", c.sampler.repartition, "false",
              "Cut the training examples into batches afresh at every cycle of the minibatch order (every 2 "
              "epochs for sms, every epoch otherwise), as the SMS-UBU paper's Alg. 2 does; false keeps one "
              "partition per member. The control variate then recomputes g*_b at each step "
              "(sampler.anchor_gradients auto or recomputed)."),
      text("sampler.gradient", c.sampler.gradient, "control_variate", {"plain", "control_variate"},
           "Stochastic gradient estimator (control variate at x*, as the reference runs)."),
      text("sampler.anchor_gradients", c.sampler.anchor_gradients, "auto", {"auto", "stored", "recomputed"},
           "Control variate anchors g*_b: stored (N_m*d floats) or recomputed (one more backward per step); "
           "auto = stored if they fit in sampler.anchor_memory_mb (only sampler.gradient control_variate has them)."),
      integer("sampler.anchor_memory_mb", c.sampler.anchor_memory_mb, "4096", 0, kBig,
              "Memory budget for stored anchor gradients."),
      integer("sampler.cycle_length", c.sampler.cycle_length, "0", 0, kBig,
              "csghmc only: steps per cosine step-size cycle, 2 or more (1 is plain sghmc); 0 = auto (4 epochs)."),
      integer("sampler.mh_block", c.sampler.mh_block, "0", 0, kBig,
              "obabo only: steps per Metropolis-Hastings block (exact potential at block ends); 0 = none. Samples "
              "are kept at block ends: it must divide the steps between samples and the burn-in's."),
      text("sampler.nogin_covariance", c.sampler.nogin_covariance, "diagonal", {"diagonal", "low_rank"},
           "nogin only: gradient-noise covariance from the batch's per-example gradients (N_b backward passes "
           "per step); diagonal (O(N_b d)) or low_rank (whole sample covariance by Woodbury, O(N_b^2 d))."),
      number("sampler.max_loss_increase", c.sampler.max_loss_increase, "1.0", {0, kInf, true, true},
             "Divergence check (Note [Divergence check]): a member whose mean training loss per example over the "
             "sampling epochs after burn-in exceeds x*'s by more than this, or whose x* phase ends with a loss "
             "above a uniform guess's (log K) by more than this, is marked diverged (run exits 3); .inf turns it "
             "off."),
      number("sampler.max_accuracy_drop", c.sampler.max_accuracy_drop, "0.25", {0, kInf, true, true},
             "Divergence check: likewise when the chain's mean test accuracy after burn-in falls below x*'s by "
             "more than this; .inf turns it off."),
      integer("evaluation.bn_batches", c.evaluation.bn_batches, "20", 1, kBig,
              "K: training batches used for the BatchNorm recalibration pass before each prediction."),
      boolean("evaluation.save_sample_probs", c.evaluation.save_sample_probs, "true",
              "Write every retained sample's test probabilities (member_NNN/samples/step_XXXXXXXX.npy), from "
              "which `bnn evaluate --burn-in/--thin` recomputes the Bayesian ensemble."),
      text("evaluation.sample_probs_dtype", c.evaluation.sample_probs_dtype, "float32", {"float16", "float32"},
           "With save_sample_probs: dtype of the stored probabilities. float16 halves the disk space but reads "
           "a probability below 3e-8 as 0, which raises the NLL that `bnn evaluate --burn-in/--thin` recomputes "
           "(Note [Stored sample probabilities] in src/pipeline/sampling_phase.h)."),
      boolean("evaluation.save_sample_weights", c.evaluation.save_sample_weights, "false",
              "Keep retained posterior samples on disk (member_NNN/samples/weights_XXXXXXXX.npy and the "
              "recalibrated BatchNorm statistics buffers_XXXXXXXX.npy), so that `bnn predict` scores new images "
              "with the Bayesian ensemble without re-running."),
      integer("evaluation.sample_weights_every", c.evaluation.sample_weights_every, "1", 1, kBig,
              "With save_sample_weights: keep the k-th, 2k-th, ... retained sample (1 = every one)."),
      text("evaluation.sample_weights_dtype", c.evaluation.sample_weights_dtype, "float32", {"float16", "float32"},
           "With save_sample_weights: dtype of the stored parameters (float16 halves the disk space; BatchNorm "
           "statistics stay float32)."),
      ood_sets("evaluation.ood", c.evaluation.ood,
               "Out-of-distribution sets: a list of {dataset, dir, name, limit}, each the test split of a data set "
               "bnn can load (an image_folder without train/ and test/: all of it; dir auto = its default; limit = "
               "its first N examples, 0 = all), prepared as the training images are. Every member predicts them at "
               "Adam, SWA and each retained sample; `bnn evaluate` scores how well entropy, max probability and "
               "mutual information tell them from the test set (AUROC, AUPR, FPR at 95% TPR). Needs "
               "save_sample_probs."),
      integer("run.members", c.run.members, "4", 1, 4096, "M: ensemble members (independent chains)."),
      seed_field("run.seed", c.run.seed, "Run seed; member seeds are derived from it."),
      text("run.device", c.run.device, "auto", {}, "auto, cpu, cuda or cuda:N."),
      integer("run.threads", c.run.threads, "0", 0, 1024,
              "Intra-op CPU threads; 0 = the CPUs this process may use (affinity mask, cgroup CPU quota, "
              "SLURM_CPUS_PER_TASK)."),
      boolean("run.checkpoint", c.run.checkpoint, "true",
              "Checkpoint every member at each epoch end (member_NNN/checkpoint.pt) so that an interrupted run "
              "resumes where it stopped."),
  };
}

Field* find_field(std::vector<Field>& all, const std::string& key) {
  for (auto& f : all) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

void set_key(std::vector<Field>& all, const std::string& key, const YAML::Node& value) {
  Field* f = find_field(all, key);
  if (f == nullptr) {
    const std::string prefix = key + ".";
    for (const Field& g : all) {
      if (g.key.rfind(prefix, 0) == 0) {
        if (value.IsNull()) return;  // `section:` with every key commented out: empty
        throw ConfigError(fmt::format("config key '{}' is a section, not a key: give one of its keys, such as {}",
                                      key, g.key));
      }
    }
    throw ConfigError(fmt::format("unknown config key '{}' (see `bnn run --help` for keys)", key));
  }
  if (value.IsNull()) {  // `key:` or `--set key=` with nothing after it
    const std::string& d = f->default_yaml;
    throw ConfigError(fmt::format("config key '{}': no value given (an empty value is YAML's null){}", key,
                                  d == "''"                  ? "; '' is the empty string"
                                  : !d.empty() && d[0] == '[' ? "; [] is the empty list"
                                                              : ""));
  }
  f->set(value);
}

// `seen`: every key (dotted) and section met so far, with its line.
void apply_yaml(std::vector<Field>& all, const YAML::Node& node, const std::string& prefix,
                std::map<std::string, int>& seen) {
  // YAML forbids a key twice in one mapping, but yaml-cpp keeps both; the
  // second would silently be merged into (or override) the first. A key may
  // also come twice as `sampler.step_size:` and under `sampler:`.
  for (const auto& item : node) {
    const std::string key = prefix.empty() ? item.first.Scalar() : prefix + "." + item.first.Scalar();
    const int line = item.first.Mark().line + 1;
    if (const auto [it, inserted] = seen.emplace(key, line); !inserted) {
      throw ConfigError(fmt::format("line {}: {} '{}' is given twice (first at line {}); merge the two", line,
                                    item.second.IsMap() ? "section" : "key", key, it->second));
    }
    if (item.second.IsMap()) {
      apply_yaml(all, item.second, key, seen);
    } else {
      set_key(all, key, item.second);
    }
  }
}

}  // namespace

std::vector<FieldDoc> field_docs() {
  Config c;
  std::vector<FieldDoc> docs;
  for (const auto& f : fields(c)) docs.push_back({f.key, f.default_yaml, f.description});
  return docs;
}

Config default_config() {
  Config c;
  for (auto& f : fields(c)) f.set(YAML::Load(f.default_yaml));
  return c;
}

namespace {

// What `file` is, if its first bytes say it is no text: a compressed archive,
// or a file holding NUL bytes though it starts with no UTF-16 or UTF-32 byte
// order mark; nullopt for text (of any encoding yaml-cpp reads) or a file
// that cannot be read (the YAML reader names that).
std::optional<std::string> binary_kind(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const auto starts = [&](const std::string& magic) { return head.compare(0, magic.size(), magic) == 0; };
  if (starts("\x1f\x8b")) return "a gzip file";
  if (starts("BZh")) return "a bzip2 file";
  if (starts("\xfd" "7zXZ")) return "an xz file";
  if (starts("PK\x03\x04")) return "a zip file";
  if (starts("\x28\xb5\x2f\xfd")) return "a zstd file";
  const bool wide = starts("\xff\xfe") || starts("\xfe\xff") || starts(std::string("\0\0\xfe\xff", 4));
  if (!wide && head.find('\0') != std::string::npos) {
    return fmt::format("a binary file (byte {} is NUL)", head.find('\0'));
  }
  return std::nullopt;
}

}  // namespace

void apply_override(Config& config, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(fmt::format("--set expects key=value, got '{}'", assignment));
  }
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  // YAML reads !x as a tag, &x and *x as anchors, " #x" as a comment and
  // "a: b" as a mapping; a path or name holding them needs quotes. The hint
  // puts the value in YAML double quotes (a backslash or " escaped) inside
  // the shell's single quotes, where bash leaves ! and ` alone.
  const bool special = text.find_first_of("!&*#%@`|>") != std::string::npos || text.find(": ") != std::string::npos;
  std::string shell = "'" + key + "=\"";
  for (const char c : text) {
    if (c == '\\' || c == '"') shell += '\\';
    shell += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  shell += "\"'";
  const std::string quote = special ? fmt::format(" (YAML gives !, &, *, #, %, @, `, |, > and ': ' meanings of their "
                                                  "own: to give the text as it is, quote it: --set {})",
                                                  shell)
                                    : "";
  // A comment (# after a space or tab) drops the rest of a plain value
  // without an error; a quoted value or a list or mapping is YAML's to read.
  const auto first = text.find_first_not_of(" \t");
  if (first != std::string::npos && std::string("'\"[{").find(text[first]) == std::string::npos &&
      (text[first] == '#' || text.find(" #") != std::string::npos || text.find("\t#") != std::string::npos)) {
    throw ConfigError(fmt::format("--set {}={}: YAML reads '#' after a space as the start of a comment, and would "
                                  "drop what follows{}",
                                  key, text, quote));
  }
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("--set {}: cannot parse value: {}{}", key, e.msg, quote));
  }
  auto all = fields(config);
  try {
    set_key(all, key, value);
  } catch (const ConfigError& e) {
    throw ConfigError(e.what() + quote);
  }
}

Config load_config(const std::filesystem::path& file, const std::vector<std::string>& overrides) {
  Config config = default_config();
  if (!file.empty()) {
    if (!std::filesystem::exists(file)) throw ConfigError(fmt::format("config file {} does not exist", file.string()));
    if (std::filesystem::is_directory(file)) {
      throw ConfigError(fmt::format("config file {} is a directory; give a YAML file (e.g. configs/tiny.yaml)",
                                    file.string()));
    }
    if (const auto kind = binary_kind(file)) {
      throw ConfigError(fmt::format("config file {} is not a YAML text file: it is {}", file.string(), *kind));
    }
    YAML::Node root;
    try {
      root = YAML::LoadFile(file.string());
    } catch (const YAML::Exception& e) {
      throw ConfigError(fmt::format("{}: YAML error at line {}: {}", file.string(), e.mark.line + 1, e.msg));
    }
    // An empty file would silently run the full default experiment (the
    // paper's CNN on all of Fashion-MNIST), rarely what was meant.
    if (!root.IsDefined() || root.IsNull()) {
      throw ConfigError(fmt::format("config file {} is empty (or only comments): give at least one section, e.g. "
                                    "`model: {{name: fmnist_cnn}}` to run every default",
                                    file.string()));
    }
    {
      if (!root.IsMap()) throw ConfigError(fmt::format("{}: top level must be a mapping of sections", file.string()));
      auto all = fields(config);
      try {
        std::map<std::string, int> seen;
        apply_yaml(all, root, "", seen);
      } catch (const ConfigError& e) {
        throw ConfigError(fmt::format("{}: {}", file.string(), e.what()));
      }
    }
  }
  for (const auto& o : overrides) apply_override(config, o);
  validate_and_resolve(config);
  return config;
}

namespace {

// A dir of "auto" becomes the data set's default directory; false where it
// has none (data.dir and evaluation.ood each say so in their own words).
bool resolve_auto_dir(const data_loaders::DatasetEntry& entry, std::string& dir) {
  if (dir != "auto") return true;
  if (entry.default_dir.empty()) return false;
  dir = entry.default_dir;
  return true;
}

}  // namespace

std::string absolute_dir(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
  if (p.filename().empty() && p.has_relative_path()) p = p.parent_path();
  return p.string();
}

namespace {

void validate_data(DataConfig& d) {
  const data_loaders::DatasetEntry& entry = data_loaders::dataset_entry(d.dataset);
  if (!resolve_auto_dir(entry, d.dir)) {
    throw ConfigError(fmt::format("config key 'data.dir': invalid value 'auto': {} has no default directory; "
                                  "set data.dir to the folder holding your images",
                                  d.dataset));
  }
  d.dir = absolute_dir(d.dir);
  if (d.image_size != 0 && !entry.resizable) {
    throw ConfigError(fmt::format("config key 'data.image_size': invalid value '{}': {} images have a fixed size; "
                                  "leave it at 0",
                                  d.image_size, d.dataset));
  }
  if (d.augment_copies.size() != 2) {
    throw ConfigError(fmt::format("config key 'data.augment_copies': invalid value '[{}]': needs two entries, the "
                                  "copies of a NORMAL and of a PNEUMONIA image",
                                  fmt::join(d.augment_copies, ", ")));
  }
  if (d.channels != 1 && d.channels != 3) {
    throw ConfigError(
        fmt::format("config key 'data.channels': invalid value '{}': must be 1 (grayscale) or 3 (RGB)", d.channels));
  }
}

}  // namespace

void validate_and_resolve(Config& c) {
  validate_data(c.data);
  if (c.map.optimizer == "lbfgs" && (c.adam.epochs != 0 || c.swa.epochs != 0)) {
    throw ConfigError(fmt::format("config key 'map.optimizer': lbfgs finds x* itself and replaces Adam and SWA; "
                                  "set adam.epochs and swa.epochs to 0 (they are {} and {})",
                                  c.adam.epochs, c.swa.epochs));
  }
  if (c.map.optimizer == "none") {
    for (const auto& [key, epochs] : {std::pair{"adam.epochs", c.adam.epochs}, std::pair{"swa.epochs", c.swa.epochs}}) {
      if (epochs < 1) {
        throw ConfigError(fmt::format("config key '{}': invalid value '{}': must be at least 1 (x* comes from Adam "
                                      "then SWA unless map.optimizer is lbfgs)",
                                      key, epochs));
      }
    }
  }
  if (c.model.name == "torchscript") {
    if (c.model.path.empty()) {
      throw ConfigError("config key 'model.path': model.name torchscript needs the file of your module "
                        "(model.path: FILE.pt, saved by torch.jit.script(model).save('FILE.pt'))");
    }
    c.model.path = std::filesystem::absolute(c.model.path).lexically_normal().string();
  } else {
    if (!c.model.path.empty()) {
      throw ConfigError(fmt::format("config key 'model.path': invalid value '{}': only model.name torchscript reads "
                                    "it (model.name is {})",
                                    c.model.path, c.model.name));
    }
    if (c.model.init != "seed") {
      throw ConfigError(fmt::format("config key 'model.init': invalid value '{}': only model.name torchscript reads "
                                    "it (model.name is {})",
                                    c.model.init, c.model.name));
    }
  }
  if (c.model.name == "mlp" && c.model.hidden.empty()) {
    throw ConfigError("config key 'model.hidden': invalid value '[]': the mlp needs at least one hidden layer "
                      "(model.name logistic is the network without one)");
  }
  auto& s = c.sampler;
  // A chain whose step moves a weight of size 1 by less than float32 can
  // resolve stays where it started: samples that are all x*, reported as a
  // posterior. A kinetic sampler moves about h per step, an overdamped one
  // (no friction) about sqrt(2 h), whatever the temperature: the force is
  // divided by T and the velocity stays N(0, I) (Note [Temperature]).
  const bool kinetic = samplers::reads_option(s.name, samplers::SamplerOption::kFriction);
  const double move = kinetic ? s.step_size : std::sqrt(2 * s.step_size);
  constexpr double kFloatResolution = std::numeric_limits<float>::epsilon();
  if (move < kFloatResolution) {
    throw ConfigError(
        fmt::format("config key 'sampler.step_size': invalid value '{}': a step moves a weight by about "
                    "{} = {:.3g}, below float32's resolution at 1 ({:.3g}), so the chain cannot move; "
                    "use a step size of at least {:.3g}",
                    s.step_size, kinetic ? "h" : "sqrt(2 h)", move, kFloatResolution,
                    kinetic ? kFloatResolution : kFloatResolution * kFloatResolution / 2));
  }
  if (s.burn_in >= s.epochs) {
    throw ConfigError(fmt::format("config key 'sampler.burn_in': invalid value '{}': must be less than "
                                  "sampler.epochs ({})",
                                  s.burn_in, s.epochs));
  }
  // A key the sampler does not read is an error, not silently ignored; the
  // sampler registry knows which samplers read which option.
  struct SpecificKey {
    const char* key;
    samplers::SamplerOption option;
    bool given;
    std::string value;
  };
  const bool localized = std::isfinite(s.rho);
  // The friction filled in below for a sampler that reads none is written to
  // the run's config.yaml; read back, it is no key the user gave.
  const bool filled_in_friction = s.friction && *s.friction == (localized ? 1.0 / s.rho : 1.0);
  const std::vector<SpecificKey> specific = {
      {"sampler.friction", samplers::SamplerOption::kFriction, s.friction.has_value() && !filled_in_friction,
       s.friction ? fmt::format("{}", *s.friction) : ""},
      {"sampler.cycle_length", samplers::SamplerOption::kCycleLength, s.cycle_length > 0,
       std::to_string(s.cycle_length)},
      {"sampler.mh_block", samplers::SamplerOption::kMhBlock, s.mh_block > 0, std::to_string(s.mh_block)},
      {"sampler.nogin_covariance", samplers::SamplerOption::kNoiseCovariance, s.nogin_covariance != "diagonal",
       s.nogin_covariance},
  };
  for (const SpecificKey& k : specific) {
    if (!k.given || samplers::reads_option(s.name, k.option)) continue;
    std::vector<std::string> readers;
    for (const auto& name : samplers::sampler_names()) {
      if (samplers::reads_option(name, k.option)) readers.push_back(name);
    }
    throw ConfigError(fmt::format("config key '{}': invalid value '{}': sampler {} does not use it (samplers that "
                                  "do: {}); remove the key",
                                  k.key, k.value, s.name, fmt::join(readers, ", ")));
  }
  if (s.repartition && s.mh_block > 0) {
    throw ConfigError(fmt::format("config key 'sampler.mh_block': invalid value '{}': with sampler.repartition true "
                                  "a model with BatchNorm has another potential in every cycle, and the "
                                  "Metropolis-Hastings test compares potentials across a block; bnn refuses the two "
                                  "together for every model (whether a TorchScript model has BatchNorm is known only "
                                  "once it is built); use one of the two",
                                  s.mh_block));
  }
  if (s.repartition && s.gradient == "control_variate" && s.anchor_gradients == "stored") {
    throw ConfigError("config key 'sampler.anchor_gradients': invalid value 'stored': with sampler.repartition "
                      "true the batches change every cycle, so stored anchor gradients g*_b would belong to "
                      "batches no longer used; use auto or recomputed");
  }
  if (const double float_max = std::numeric_limits<float>::max(); localized && 1.0 / (s.rho * s.rho) > float_max) {
    // The smallest rho, rounded up at 3 digits so that the value named passes.
    const double least = std::ceil(1e22 / std::sqrt(float_max)) / 1e22;
    throw ConfigError(fmt::format("config key 'sampler.rho': invalid value '{}': the localization's 1/rho^2 = {:.4g} "
                                  "is beyond the float32 range ({:.4g}); give {:.3g} or more",
                                  s.rho, 1.0 / (s.rho * s.rho), float_max, least));
  }
  if (!s.rho_max) s.rho_max = localized ? 6.0 * s.rho : kInf;
  if (!s.friction) {
    // A sampler that reads no friction (sgld) gets a value only so that every
    // key has one (and its runs, checkpoints and R-hat folders stay what older
    // bnn made): filled_in_friction above lets that value be read back.
    const bool read = samplers::reads_option(s.name, samplers::SamplerOption::kFriction);
    if (!localized && read) {
      throw ConfigError("config key 'sampler.friction': auto means 1/rho, which needs a finite sampler.rho; "
                        "set sampler.friction explicitly for a global sampler");
    }
    s.friction = localized ? 1.0 / s.rho : 1.0;
  }
  if (localized && std::isfinite(*s.rho_max) && *s.rho_max < s.rho) {
    throw ConfigError(fmt::format("config key 'sampler.rho_max': invalid value '{}': must be at least "
                                  "sampler.rho ({})",
                                  *s.rho_max, s.rho));
  }
  if (!localized && std::isfinite(*s.rho_max)) {
    throw ConfigError("config key 'sampler.rho_max': bounces need a finite sampler.rho (the hypercube is "
                      "centred on the localization anchor)");
  }
  for (OodSetConfig& set : c.evaluation.ood) {
    if (!resolve_auto_dir(data_loaders::dataset_entry(set.dataset), set.dir)) {
      throw ConfigError(fmt::format("config key 'evaluation.ood': set '{}': {} has no default directory; give dir",
                                    set.name, set.dataset));
    }
    set.dir = absolute_dir(set.dir);
  }
  if (!c.evaluation.ood.empty() && !c.evaluation.save_sample_probs) {
    throw ConfigError("config key 'evaluation.ood': needs evaluation.save_sample_probs true (the Bayesian "
                      "ensemble's OOD scores are computed from every retained sample's predictions)");
  }
  const auto& d = c.run.device;
  if (!(d == "auto" || d == "cpu" || d == "cuda" || d.rfind("cuda:", 0) == 0)) {
    throw ConfigError(fmt::format("config key 'run.device': invalid value '{}': valid: auto, cpu, cuda, cuda:N", d));
  }
}

std::vector<std::pair<std::string, std::string>> flat_values(const Config& config) {
  Config copy = config;
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& f : fields(copy)) {
    YAML::Emitter text;
    text.SetDoublePrecision(17);
    text << YAML::Flow << f.get();
    out.emplace_back(f.key, text.c_str());
  }
  return out;
}

std::string to_yaml(const Config& config) {
  Config copy = config;
  YAML::Node root(YAML::NodeType::Map);
  for (auto& f : fields(copy)) {
    const auto dot = f.key.find('.');
    root[f.key.substr(0, dot)][f.key.substr(dot + 1)] = f.get();
  }
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace bnn::config
