// Loads the chest X-ray pneumonia data set (Kermany et al. 2018, "Labeled
// Optical Coherence Tomography (OCT) and Chest X-Ray Images for
// Classification", the widely used Kaggle layout) as the SMS-UBU paper used
// it: grayscale 180 x 180, two classes, the training split augmented offline.
//
// Expected layout of options.dir (the unpacked `chest_xray` folder):
//   train/NORMAL/*.jpeg  train/PNEUMONIA/*.jpeg   5216 images (1341 + 3875)
//   test/NORMAL/*.jpeg   test/PNEUMONIA/*.jpeg     624 images (234 + 390)
//   val/...                                        16 images, ignored (the
//                                                  paper trains on train and
//                                                  scores on test)
// Files with the extensions .jpeg, .jpg, .png, .bmp (any case) are read;
// anything else in the folders is ignored. Labels: NORMAL = 0, PNEUMONIA = 1.
//
// Every image is decoded as grayscale with OpenCV and resized to side x side
// (INTER_AREA; the aspect ratio is not kept, as Keras' target_size does).
// Each training image becomes copies[label] training examples: itself and
// copies[label] - 1 random augmentations (Note [Augmentation] in
// data_loaders/image_files.h: random resized crop, rotation up to +-20
// degrees, horizontal flip, brightness +-20%), deterministic for the seed.
// The default copies {18, 6} turn 1341 + 3875 images into 24138 + 23250 =
// 47388 examples, the paper's "47400". The test split is not augmented.
//
// Both splits are stored as uint8 on the device (Note [Pixel storage] in
// data_loaders/dataset.h), standardized per batch with the mean and standard
// deviation of the augmented training pixels (data.standardize false: p / 255,
// as the reference notebook).
//
// Errors (std::runtime_error) name the file or folder:
//   "<dir>: chest X-ray directory does not exist"
//   "<dir>/train: missing train split folder of the chest X-ray data set"
//   "<dir>/train/NORMAL: missing class folder NORMAL of the train split"
//   "<dir>/test: empty split: no image files (.jpeg, .jpg, .png, .bmp) in its class folders NORMAL, PNEUMONIA"
//   "<dir>/test/NORMAL: no image files (.jpeg, .jpg, .png, .bmp) in class folder NORMAL"
//   "<file>: cannot decode the image: ..." (data_loaders/image_files.h), unless
//   skip_bad_images, which leaves bad files out and logs how many.
//
// Reproducibility: the result depends on the files, the options and the
// seed, not on the number of threads. Thread-safety: no shared state.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <filesystem>

#include "data_loaders/dataset.h"

namespace bnn::data_loaders {

inline constexpr const char* kChestXrayDefaultDir = "/usr/share/datasets/chest_xray";
inline constexpr int64_t kChestXrayDefaultSide = 180;
inline constexpr int64_t kChestXrayNumClasses = 2;

// Reads options.dir (empty: kChestXrayDefaultDir), side (0: kChestXrayDefaultSide),
// augment_copies (training examples made from each image of class NORMAL,
// PNEUMONIA, >= 1; {1, 1} turns augmentation off), seed (augmentation),
// skip_bad_images, threads, test_only and stats, and the limits: n > 0 keeps
// the first n image files of the split, the classes interleaved (image_files.h,
// interleave_classes), before augmentation: the training split then has the
// copies of those n images. Only the images kept are decoded.
Dataset load_chest_xray(const LoadOptions& options, torch::Device device);

}  // namespace bnn::data_loaders
