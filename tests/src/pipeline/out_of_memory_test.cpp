// A member that runs out of GPU memory fails with one line naming the
// device, what was asked for, what was free and the card's size, whatever
// the LibTorch release's wording (the messages below are those of the CUDA
// caching allocator of LibTorch 2.x and 1.13).
#include <gtest/gtest.h>

#include "src/pipeline/member.h"

namespace bnn::pipeline {
namespace {

TEST(OutOfMemory, LibTorch2MessageBecomesOneLine) {
  const std::string what =
      "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.05 GiB "
      "is free. Including non-PyTorch memory, this process has 78.13 GiB memory in use. Of the allocated memory "
      "76.50 GiB is allocated by PyTorch, and 1.01 GiB is reserved by PyTorch but unallocated. If reserved but "
      "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
      "fragmentation.  See documentation for Memory Management  "
      "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
  EXPECT_EQ(out_of_memory_line(what, "cuda:0"),
            "out of memory on cuda:0: asked for 2.00 GiB, 1.05 GiB free of 79.19 GiB; train fewer members at once "
            "(--members-per-device) or use smaller batches");
}

TEST(OutOfMemory, LibTorch113MessageBecomesOneLine) {
  const std::string what =
      "CUDA out of memory. Tried to allocate 512.00 MiB (GPU 1; 39.59 GiB total capacity; 37.80 GiB already "
      "allocated; 301.19 MiB free; 38.10 GiB reserved in total by PyTorch) If reserved memory is >> allocated "
      "memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
      "PYTORCH_CUDA_ALLOC_CONF";
  EXPECT_EQ(out_of_memory_line(what, "cuda:1"),
            "out of memory on cuda:1: asked for 512.00 MiB, 301.19 MiB free of 39.59 GiB; train fewer members at "
            "once (--members-per-device) or use smaller batches");
}

TEST(OutOfMemory, SizesInBytesAreNamed) {
  const std::string what =
      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 0 bytes "
      "is free. Including non-PyTorch memory, this process has 79.18 GiB memory in use.";
  EXPECT_EQ(out_of_memory_line(what, "cuda:0"),
            "out of memory on cuda:0: asked for 20.00 MiB, 0 bytes free of 79.19 GiB; train fewer members at once "
            "(--members-per-device) or use smaller batches");
}

TEST(OutOfMemory, OtherErrorsAndUnknownWordingsAreLeftAlone) {
  EXPECT_EQ(out_of_memory_line("shape '[200, 10]' is invalid for input of size 1000", "cuda:0"), "");
  EXPECT_EQ(out_of_memory_line("CUDA error: out of memory", "cuda:0"),
            "out of memory on cuda:0; train fewer members at once (--members-per-device) or use smaller batches");
}

}  // namespace
}  // namespace bnn::pipeline
