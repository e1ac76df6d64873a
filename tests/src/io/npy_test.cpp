#include "src/io/npy.h"

#include <gtest/gtest.h>

#include "data_loaders/npy.h"
#include "src/io/atomic_file.h"
#include "tests/support/temp_dir.h"

namespace bnn::io {
namespace {

// One directory per test: ctest runs tests as parallel processes.
std::filesystem::path test_dir() {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return testing::unique_temp_dir("bnn_npy_" + test);
}

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const auto dir = test_dir();
  for (auto dtype : {torch::kHalf, torch::kFloat, torch::kDouble, torch::kLong}) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{7}, {3, 4}, {2, 3, 5}, {}}) {
      const torch::Tensor t = (torch::randn(shape) * 100).to(dtype);
      write_npy(dir / "a.npy", t);
      const torch::Tensor back = data_loaders::read_npy(dir / "a.npy");
      EXPECT_EQ(back.scalar_type(), dtype);
      EXPECT_TRUE(back.equal(t)) << shape;
    }
  }
}

// numpy.save(np.arange(-2, 3, dtype=np.int32)): bytes as numpy writes them.
TEST(Npy, ReadsNumpysInt32) {
  const auto dir = test_dir();
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  for (int32_t v = -2; v <= 2; ++v) bytes.append(reinterpret_cast<const char*>(&v), 4);
  write_file_atomically(dir / "i4.npy", bytes);
  const torch::Tensor t = data_loaders::read_npy(dir / "i4.npy");
  EXPECT_EQ(t.scalar_type(), torch::kInt);
  EXPECT_TRUE(t.equal(torch::arange(-2, 3, torch::kInt)));
  // A big-endian array is refused by name, not read as garbage.
  std::string swapped = bytes;
  swapped.replace(swapped.find("<i4"), 3, ">i4");
  write_file_atomically(dir / "be.npy", swapped);
  try {
    data_loaders::read_npy(dir / "be.npy");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("be.npy: unsupported npy dtype '>i4'"), std::string::npos) << e.what();
  }
}

TEST(Npy, HeaderIsNumpyVersion1AlignedTo64) {
  const std::string bytes = npy_bytes(torch::zeros({3}, torch::kFloat));
  EXPECT_EQ(bytes.substr(1, 5), "NUMPY");
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_NE(bytes.find("'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
}

TEST(Npy, TruncatedFileIsANamedError) {
  const auto dir = test_dir();
  const std::string bytes = npy_bytes(torch::zeros({10}, torch::kFloat));
  write_file_atomically(dir / "short.npy", bytes.substr(0, bytes.size() - 4));
  try {
    data_loaders::read_npy(dir / "short.npy");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "short.npy: not a valid .npy file: shape (10,) needs 40 data bytes, the file has 36 (cut short?)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace bnn::io
