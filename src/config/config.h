// The run configuration: typed structs, and one table (config.cpp, fields())
// where every key's default, bound and description are declared together.
//
// A config is built from defaults, then a YAML file, then `--set key=value`
// overrides, then checked as a whole and resolved ("auto" values replaced by
// what they mean). Unknown keys, wrong types and out-of-range values raise
// ConfigError naming the key and the value. The resolved config is written
// into the run directory, so a run can be repeated from it exactly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bnn::config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DataConfig {
  std::string dataset;
  std::string dir;  // "auto" resolves to the dataset's default directory
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  int64_t batch_size = 0;
  int64_t image_size = 0;  // 0 = the dataset's own size
  bool skip_bad_images = false;
  std::vector<int64_t> augment_copies;  // chest_xray: per class NORMAL, PNEUMONIA
  double split_ratio = 0;               // image_folder without split folders
  int64_t channels = 0;                 // image_folder: 1 or 3
  bool standardize = true;              // false = pixels p / 255 in [0, 1] (arrays: features as they are)
};

struct ModelConfig {
  std::string name;
  std::vector<int64_t> hidden;
  bool batch_norm = false;
  std::string path;  // torchscript: the module file (made absolute when the config is resolved)
  std::string init;  // torchscript: "seed" or "file"
};

struct PriorConfig {
  double precision = 0;  // lambda
  bool biases = false;   // prior on biases too (all parameters)
};

// How x* is found: Adam then SWA (optimizer "none"), or the maximum a
// posteriori point by full-batch L-BFGS (optimizer "lbfgs"), which replaces
// the Adam and SWA phases (both must then have 0 epochs).
struct MapConfig {
  std::string optimizer;   // none | lbfgs
  int64_t iterations = 0;  // L-BFGS iterations at most
  double tolerance = 0;    // stop when max |grad| of f / N_D is at most this
  int64_t history = 0;     // L-BFGS memory (pairs of vectors)
};

struct AdamConfig {
  int64_t epochs = 0;
  double lr = 0;
};

struct SwaConfig {
  int64_t epochs = 0;
  double lr = 0;
};

struct SamplerConfig {
  std::string name;
  int64_t epochs = 0;
  int64_t burn_in = 0;
  int64_t thin = 0;          // steps between samples; 0 = one epoch (N_m steps)
  double step_size = 0;      // h, the step actually run
  double rho = 0;            // localization radius; inf = global
  std::optional<double> rho_max;   // nullopt = auto (6 rho)
  std::optional<double> friction;  // nullopt = auto (1/rho)
  double temperature = 1;
  std::string order;         // auto | sms | rr | iid
  bool repartition = false;  // batches cut afresh every cycle of the order (Note [Redrawn batches])
  std::string gradient;      // plain | control_variate
  std::string anchor_gradients;  // auto | stored | recomputed
  int64_t anchor_memory_mb = 0;
  int64_t cycle_length = 0;  // csghmc: steps per cycle; 0 = auto (4 epochs)
  int64_t mh_block = 0;      // obabo: steps per Metropolis-Hastings block; 0 = none
  std::string nogin_covariance;  // nogin: diagonal | low_rank
  // Divergence check after sampling (src/pipeline/divergence.h); inf = off.
  double max_loss_increase = 0;  // nats per example above x*'s loss
  double max_accuracy_drop = 0;  // test accuracy below x*'s
};

// An out-of-distribution set (evaluation.ood; Note [Out-of-distribution
// sets] in src/pipeline/ood.h): the test split of a data set bnn can load,
// prepared as the training data is.
struct OodSetConfig {
  std::string name;     // in tables and file names; default: the data set's name
  std::string dataset;  // a name of data_loaders/registry.h
  std::string dir;      // "auto" = the data set's default directory; made absolute when resolved
  int64_t limit = 0;    // the first N test examples; 0 = all

  bool operator==(const OodSetConfig& o) const {
    return name == o.name && dataset == o.dataset && dir == o.dir && limit == o.limit;
  }
};

struct EvaluationConfig {
  int64_t bn_batches = 0;
  bool save_sample_probs = true;
  std::string sample_probs_dtype;    // float32 | float16 (Note [Stored sample probabilities])
  bool save_sample_weights = false;  // Note [Stored samples] in src/pipeline/stored_weights.h
  int64_t sample_weights_every = 0;  // keep the k-th, 2k-th, ... retained sample
  std::string sample_weights_dtype;  // float16 | float32
  std::vector<OodSetConfig> ood;     // out-of-distribution sets, in the order given
};

struct RunConfig {
  int64_t members = 0;
  uint64_t seed = 0;
  std::string device;
  int64_t threads = 0;  // 0 = all cores
  bool checkpoint = true;  // member checkpoint at every epoch end
};

struct Config {
  DataConfig data;
  ModelConfig model;
  PriorConfig prior;
  MapConfig map;
  AdamConfig adam;
  SwaConfig swa;
  SamplerConfig sampler;
  EvaluationConfig evaluation;
  RunConfig run;
};

// Every key with its default and description, for `bnn run --help`.
struct FieldDoc {
  std::string key;
  std::string default_value;
  std::string description;
};
std::vector<FieldDoc> field_docs();

// Defaults only.
Config default_config();

// Defaults <- YAML file (if not empty) <- overrides ("key=value", value in
// YAML syntax), then validate(). Throws ConfigError.
Config load_config(const std::filesystem::path& file, const std::vector<std::string>& overrides);

// Applies one "key=value" override.
void apply_override(Config& config, const std::string& assignment);

// Checks relations between fields (burn_in < epochs, rho_max >= rho, ...) and
// replaces "auto" values (rho_max = 6 rho, friction = 1/rho). Throws ConfigError.
// data.dir, model.path and the OOD sets' dirs become absolute.
void validate_and_resolve(Config& config);

// `dir` from the working directory, normalised and without a trailing
// separator (data.dir and evaluation.ood dirs): a run folder's manifest then
// names one folder of data whichever directory the commands that share it
// start in, and "./d", "d" and "d/" are the same folder.
std::string absolute_dir(const std::string& dir);

// The config as YAML text (all keys, resolved values).
std::string to_yaml(const Config& config);

// Every key with its value as flow YAML ("1.25e-4", "[256, 256]"), in the
// order of `bnn run --help`.
std::vector<std::pair<std::string, std::string>> flat_values(const Config& config);

}  // namespace bnn::config
