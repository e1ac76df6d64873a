// Atomic writes: a failure leaves the previous file, and writers of one path
// at the same time each leave a whole file, even when they share a pid (as
// bnn processes do in separate containers, each its container's pid 1).
#include "src/io/atomic_file.h"

#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace bnn::io {
namespace {

bool no_temp_files(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().string().find(".tmp.") != std::string::npos) return false;
  }
  return true;
}

TEST(AtomicFile, FailureLeavesThePreviousFileAndNoTemp) {
  const auto dir = testing::unique_temp_dir("bnn_atomic_failure");
  write_file_atomically(dir / "keep.txt", "good");
  EXPECT_THROW(write_file_atomically(dir / "missing_dir" / "x.txt", "data"), std::runtime_error);
  EXPECT_EQ(read_file(dir / "keep.txt"), "good");
  EXPECT_TRUE(no_temp_files(dir));
}

// Note [Staged writes]: a set whose third file cannot be written replaces
// neither of the two staged before it and leaves no temporary; a set staged
// whole is renamed into place by commit(), and not before.
TEST(StagedFiles, AFailedStageReplacesNothingAndCommitReplacesAll) {
  const auto dir = testing::unique_temp_dir("bnn_staged_files");
  write_file_atomically(dir / "a.txt", "old a");
  write_file_atomically(dir / "b.txt", "old b");
  {
    StagedFiles files;
    files.stage(dir / "a.txt", "new a");
    files.stage(dir / "b.txt", "new b");
    EXPECT_THROW(files.stage(dir / "missing_dir" / "c.txt", "new c"), WriteError);
  }
  EXPECT_EQ(read_file(dir / "a.txt"), "old a");
  EXPECT_EQ(read_file(dir / "b.txt"), "old b");
  EXPECT_TRUE(no_temp_files(dir));
  {
    StagedFiles files;
    files.stage(dir / "a.txt", "new a");
    files.stage(dir / "b.txt", "new b");
    EXPECT_EQ(read_file(dir / "a.txt"), "old a");  // staged, not yet in place
    files.commit();
  }
  EXPECT_EQ(read_file(dir / "a.txt"), "new a");
  EXPECT_EQ(read_file(dir / "b.txt"), "new b");
  EXPECT_TRUE(no_temp_files(dir));
  std::filesystem::remove_all(dir);
}

// An adopted file (a figure gnuplot drew beside its final name) is staged
// as it is: staged_as() names it until commit() renames it into place, and a
// set never committed removes it.
TEST(StagedFiles, AnAdoptedFileIsRenamedWithTheSetOrRemoved) {
  const auto dir = testing::unique_temp_dir("bnn_staged_adopt");
  write_file_atomically(dir / "fig.png", "old figure");
  for (const bool commit : {false, true}) {
    write_file_atomically(dir / "fig.png.tmp", "new figure");
    StagedFiles files;
    files.adopt(dir / "fig.png.tmp", dir / "fig.png");
    files.stage(dir / "report.md", "report");
    EXPECT_EQ(files.staged_as(dir / "fig.png"), dir / "fig.png.tmp");
    EXPECT_FALSE(files.staged_as(dir / "other.png").has_value());
    EXPECT_EQ(read_file(dir / "fig.png"), "old figure");
    if (commit) {
      files.commit();
      EXPECT_FALSE(files.staged_as(dir / "fig.png").has_value());
    }
  }
  EXPECT_EQ(read_file(dir / "fig.png"), "new figure");
  EXPECT_EQ(read_file(dir / "report.md"), "report");
  EXPECT_FALSE(std::filesystem::exists(dir / "fig.png.tmp"));
  EXPECT_TRUE(no_temp_files(dir));
  std::filesystem::remove_all(dir);
}

// A failed write says whose failure it is: a missing folder is the path's
// (bnn exits 2, bad input), a file-size limit the storage's (exit 74, as for
// a full disk), and the earlier file stays either way.
TEST(AtomicFile, AWriteErrorSaysWhetherTheStorageFailed) {
  const auto dir = testing::unique_temp_dir("bnn_atomic_storage");
  try {
    write_file_atomically(dir / "missing_dir" / "x.txt", "data");
    ADD_FAILURE() << "no error";
  } catch (const WriteError& e) {
    EXPECT_EQ(e.error(), ENOENT);
    EXPECT_FALSE(e.storage());
    EXPECT_EQ(std::string(e.what()), "cannot write " + (dir / "missing_dir" / "x.txt").string() + ": " +
                                         std::strerror(ENOENT));
  }
  write_file_atomically(dir / "big.bin", "small");
  // A 1 KiB limit on file sizes, for this process, while 4 KiB are written;
  // SIGXFSZ ignored as bnn's main does, so the write fails with EFBIG.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  int error = 0;
  bool storage = false;
  try {
    write_file_atomically(dir / "big.bin", std::string(4096, 'x'));
  } catch (const WriteError& e) {
    error = e.error();
    storage = e.storage();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_EQ(error, EFBIG);
  EXPECT_TRUE(storage);
  EXPECT_EQ(read_file(dir / "big.bin"), "small");
  EXPECT_TRUE(no_temp_files(dir));
  for (const int e : {ENOSPC, EDQUOT, EFBIG, EIO}) EXPECT_TRUE(storage_failure(e)) << e;
  for (const int e : {ENOENT, EACCES, EROFS, ENOTDIR, EISDIR}) EXPECT_FALSE(storage_failure(e)) << e;
}

// Threads of one process have one pid: a temporary name made from the pid
// alone is shared, so one writer truncates another's file or renames it away.
TEST(AtomicFile, WritersOfOnePathAtOnceEachLeaveAWholeFile) {
  const auto dir = testing::unique_temp_dir("bnn_atomic_race");
  const auto path = dir / "bnn.json";
  constexpr int kWriters = 4, kWrites = 150;
  constexpr size_t kSize = 1 << 16;
  std::atomic<int> failures{0}, torn{0}, reads{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      const std::string contents(kSize, static_cast<char>('a' + w));
      for (int i = 0; i < kWrites; ++i) {
        try {
          write_file_atomically(path, contents);
        } catch (const std::runtime_error&) {
          ++failures;
        }
      }
    });
  }
  std::thread reader([&] {
    while (!done) {
      if (!std::filesystem::exists(path)) continue;
      const std::string seen = read_file(path);
      ++reads;
      if (seen.size() != kSize || seen.find_first_not_of(seen[0]) != std::string::npos) ++torn;
    }
  });
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(failures, 0) << "writes that threw, of " << kWriters * kWrites;
  EXPECT_EQ(torn, 0) << "reads that saw a partial or mixed file, of " << reads;
  const std::string last = read_file(path);
  EXPECT_EQ(last.size(), kSize);
  EXPECT_TRUE(no_temp_files(dir));
}

// create_file_atomically: of writers that race to create one path, exactly
// one succeeds and its whole file stands; an existing file is never replaced.
TEST(AtomicFile, OnlyOneCreatorOfAPathWins) {
  const auto dir = testing::unique_temp_dir("bnn_atomic_create");
  EXPECT_TRUE(create_file_atomically(dir / "a.json", "first"));
  EXPECT_FALSE(create_file_atomically(dir / "a.json", "second"));
  EXPECT_EQ(read_file(dir / "a.json"), "first");
  EXPECT_THROW(create_file_atomically(dir / "missing_dir" / "x.json", "x"), std::runtime_error);
  constexpr int kRounds = 50, kWriters = 4;
  for (int round = 0; round < kRounds; ++round) {
    const auto path = dir / ("race_" + std::to_string(round) + ".json");
    std::atomic<int> ready{0}, won{0}, winner{-1};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        ++ready;
        while (ready < kWriters) {
        }
        if (create_file_atomically(path, std::string(4096, static_cast<char>('a' + w)))) {
          ++won;
          winner = w;
        }
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(won, 1) << "round " << round;
    EXPECT_EQ(read_file(path), std::string(4096, static_cast<char>('a' + winner))) << "round " << round;
  }
  EXPECT_TRUE(no_temp_files(dir));
}

TEST(AtomicFile, TemporaryNamesAreKnownAndNeverRepeat) {
  const auto path = std::filesystem::path("/runs/r") / "bnn.json";
  const auto first = temporary_path(path), second = temporary_path(path);
  EXPECT_NE(first, second);
  EXPECT_EQ(first.parent_path(), path.parent_path());
  for (const auto& p : {first, second}) {
    EXPECT_TRUE(is_temporary_name(p.filename().string())) << p;
    EXPECT_EQ(p.filename().string().rfind("bnn.json.tmp.", 0), 0u) << p;
  }
  EXPECT_TRUE(is_temporary_name("bnn.json.tmp.4242"));  // bnn before 0.1.1: <path>.tmp.<pid>
  for (const char* name : {"bnn.json", "notes.tmp.txt", "a.tmp.", "a.tmp.12.zz.3", ".tmp.12"}) {
    EXPECT_FALSE(is_temporary_name(name)) << name;
  }
}

// What a writer killed before its rename leaves: removed, and nothing else.
TEST(AtomicFile, RemoveTemporaryFilesTakesOnlyTheLeftovers) {
  const auto dir = bnn::testing::unique_temp_dir("bnn_atomic_sweep");
  std::filesystem::create_directories(dir / "samples");
  const std::vector<std::string> kept = {"status.json", "samples/step_00000020.npy", "notes.tmp.txt", "lock"};
  const std::vector<std::string> leftovers = {"checkpoint.pt.tmp.12.0123456789abcdef.3",
                                              "samples/step_00000030.npy.tmp.7.fedcba9876543210.0",
                                              "trace.csv.tmp.4242"};
  for (const auto& name : kept) write_file_atomically(dir / name, "x");
  for (const auto& name : leftovers) std::ofstream(dir / name) << "half";
  EXPECT_EQ(remove_temporary_files(dir), 3);
  for (const auto& name : kept) EXPECT_TRUE(std::filesystem::exists(dir / name)) << name;
  for (const auto& name : leftovers) EXPECT_FALSE(std::filesystem::exists(dir / name)) << name;
  EXPECT_EQ(remove_temporary_files(dir), 0);
  EXPECT_EQ(remove_temporary_files(dir / "no_such_folder"), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bnn::io
