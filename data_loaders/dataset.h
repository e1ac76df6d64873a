// In-memory datasets and the fixed minibatch partition of the training split.
//
// A Dataset holds both splits as device-resident tensors, so training and
// sampling never touch the host for data. Note [Pixel storage]: a split's
// images are either float32, already standardized (Fashion-MNIST, CIFAR-10),
// or uint8 pixels with a per-channel affine map to the standardized value
// (chest X-ray, CelebA, image folders: an augmented chest X-ray training set
// is 1.5 GB as uint8 and 6 GB as float32). Whatever feeds a model calls
// Split::inputs(), which converts uint8 batches on the device, without a host
// synchronisation, and returns float32 images unchanged (no copy). Partition cuts the
// training split once, with a seeded permutation, into N_m = floor(N_D / N_b)
// minibatches of N_b examples (docs/design.md section 2); the remainder is dropped,
// as in the reference code. The partition is fixed because the control-variate
// gradient stores one g*_b per batch b, and the SMS order revisits each batch.
//
// Reproducibility: the permutation is drawn from a CPU generator seeded with
// the given seed, so the same seed gives the same batches on every device.
// Thread-safety: a Partition is immutable after construction; its const
// methods may be called concurrently.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace bnn::data_loaders {

struct Split {
  torch::Tensor images;  // N x C x H x W, float32 standardized or uint8 pixels, on the dataset's device
  torch::Tensor labels;  // N int64, on the same device
  // uint8 images only (Note [Pixel storage]): C x 1 x 1 float32 tensors on the
  // same device; the model input of pixel p in channel c is
  // p * scale[c] + shift[c]. Undefined for float32 images.
  torch::Tensor scale, shift;

  // The number of examples; 0 for a default-constructed split.
  int64_t size() const;
  // The standardized float32 model input of every example (images itself
  // when it is float32).
  torch::Tensor inputs() const;
  // Examples [start, start + length) as views, keeping the pixel map.
  Split slice(int64_t start, int64_t length) const;
  // The examples at `index` (1-D int64, on the split's device), copied, keeping the pixel map.
  Split rows(const torch::Tensor& index) const;
};

// Per-channel pixel statistics of uint8 images, as fractions of 255.
struct ChannelStats {
  std::vector<double> mean, std;
};

// The mean and standard deviation of each channel of N x C x H x W uint8
// `images` (CPU), computed exactly from per-channel histograms in double, so
// they do not depend on the thread count. A constant channel gets std 1.
ChannelStats channel_stats(const torch::Tensor& images);

// Mean 0 and std 1 for each of `channels` channels: pixels standardized with
// them are p / 255, in [0, 1] (data.standardize false, as torchvision's
// ToTensor, which is all the reference notebooks apply).
ChannelStats unit_pixel_stats(int64_t channels);

// A split of uint8 `images` standardized with `stats`: channel c maps to
// (p / 255 - mean[c]) / std[c]. Moves images and labels to `device`.
Split uint8_split(torch::Tensor images, torch::Tensor labels, const ChannelStats& stats, torch::Device device);

// N x C x H x W uint8 CPU `pixels` as float32 model inputs: channel c maps to
// the float nearest (p / 255 - mean[c]) / std[c], evaluated in double through
// a 256-entry table per channel. A chain of float32 tensor ops would round at
// every step and could differ between devices; the table gives the same,
// correctly rounded value everywhere (the float32 storage of Note [Pixel
// storage]).
torch::Tensor standardize_pixels(const torch::Tensor& pixels, const ChannelStats& stats);

// What a loader is given (data_loaders/registry.h loads a data set by
// name); each loader reads the fields it uses.
struct LoadOptions {
  std::filesystem::path dir;  // empty = the data set's default directory (an error for those without one)
  // 0 keeps every example; n > 0 keeps the first n of the split (an error if
  // it has fewer). Image-file data sets decode only the files kept.
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  std::string test_limit_key = "data.test_limit";  // what its errors call test_limit
  int64_t side = 0;          // resizable data sets: the image side; 0 = the data set's default
  bool standardize = true;   // false = pixels p / 255 (arrays: features as they are)
  bool skip_bad_images = false;
  std::array<int64_t, 2> augment_copies = {1, 1};  // chest_xray: examples per NORMAL, PNEUMONIA image
  double split_ratio = 0.8;  // image_folder without train/ and test/
  int64_t channels = 3;      // image_folder: 1 or 3
  uint64_t seed = 0;         // chest_xray augmentation, the image_folder split
  int threads = 0;           // image decoding (0 = all cores)
  // Note [Out-of-distribution sets]: the test split of a data set prepared
  // as another data set's inputs. With `test_only` the training split is not
  // read (Dataset::train stays empty, and so does the split of an
  // image_folder without train/ and test/: all its images are the test
  // split); with `stats` the pixels (or arrays' features) are standardized
  // with these statistics instead of the data set's own. test_only needs stats.
  bool test_only = false;
  std::optional<ChannelStats> stats;
};

struct Dataset {
  std::string name;
  Split train, test;
  int64_t num_classes = 0;
  std::vector<int64_t> input_shape;  // {C, H, W}
  std::vector<std::string> class_names;  // label k is class_names[k]
  // Float32 feature vectors stored as D x 1 x 1 inputs (data.dataset arrays),
  // whose pixel_stats are per-feature means and stds in feature units.
  bool features = false;
  // The per-channel statistics that standardize the pixels (Note [Pixel
  // storage]): with float32 storage through standardize_pixels, with uint8
  // storage through the split's scale and shift (uint8_split).
  ChannelStats pixel_stats;
};

// The training split partitioned into N_m fixed minibatches. The permuted
// copy of the used examples is made once, so batch(b) is a view (narrow) of
// one contiguous buffer: no gather and no allocation per step.
// Checks shared by the loaders: limits are >= 0 (0 keeps every example), and
// `dir` is an existing directory (the error names it and the data set).
void check_limits(int64_t train_limit, int64_t test_limit);
void require_directory(const std::filesystem::path& dir, const std::string& dataset_name);
// Whether `text` is valid UTF-8 (class names end up in JSON files, which hold
// nothing else), and `text` with every byte of an invalid sequence as \xNN,
// for an error message.
bool is_utf8(const std::string& text);
std::string escape_non_utf8(const std::string& text);

class Partition {
 public:
  // Throws unless 1 <= batch_size <= train.size().
  Partition(const Split& train, int64_t batch_size, uint64_t seed);

  // N_m = floor(examples / batch_size), the batches of an epoch: the rest of
  // the examples, fewer than a batch, sit out that epoch. Where the number is
  // needed before a Partition exists.
  static int64_t batches_in(int64_t examples, int64_t batch_size) { return examples / batch_size; }

  int64_t num_batches() const { return num_batches_; }
  int64_t batch_size() const { return batch_size_; }
  // N_m * N_b, the examples actually used.
  int64_t num_examples() const { return num_batches_ * batch_size_; }

  // Minibatch b, a view; throws unless 0 <= b < num_batches().
  Split batch(int64_t b) const;

  // Note [Redrawn batches]: with sampler.repartition, every cycle of the
  // sampler's batch order cuts the used examples into batches afresh (the
  // SMS-UBU paper's Alg. 2 draws its N_m batches anew in every cycle). The
  // examples used stay the same (the ones left over at load time sit out
  // every cycle), and so does every batch size. Where an example's loss
  // depends on it alone, the potential and its full gradient S* stay what
  // they were; only the anchor gradients g*_b change, and are recomputed at
  // each step. With BatchNorm in train mode a batch's loss depends on which
  // examples share it, so each cycle's batches make a potential of their own,
  // as in the paper's algorithm: the control variate then sums S* again at
  // x* when a cycle begins (N_m more gradients a cycle), and obabo's
  // Metropolis-Hastings test, which compares potentials across a block, is
  // refused with redrawn batches.
  // redrawn_order(seed) is a uniformly random order of the used examples,
  // from a CPU generator seeded with `seed` (so on every device the same), on
  // the examples' device; batch(b, order) is batch b of the used examples
  // taken in that order: rows order[b N_b, (b + 1) N_b), copied. An undefined
  // order is the partition's own: batch(b).
  torch::Tensor redrawn_order(uint64_t seed) const;
  Split batch(int64_t b, const torch::Tensor& order) const;
  // The first min(k, N_m) batches as one contiguous view, for BatchNorm
  // recalibration; throws unless k >= 1.
  Split first_batches(int64_t k) const;

 private:
  int64_t batch_size_;
  int64_t num_batches_;
  Split examples_;  // the num_examples() used examples, in permuted order
};

}  // namespace bnn::data_loaders
