// Note [Member locks]: an flock held by one open file keeps others out, and
// the kernel drops it when its holder dies, even by SIGKILL.
#include "src/io/file_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace bnn::io {
namespace {

TEST(FileLock, HeldLockKeepsOthersOutUntilReleased) {
  const auto dir = testing::unique_temp_dir("bnn_file_lock_test");
  const auto path = dir / "lock";
  {
    auto first = FileLock::try_acquire(path);
    ASSERT_TRUE(first.has_value());
    EXPECT_FALSE(FileLock::try_acquire(path).has_value());  // another open file of this process
    FileLock moved = std::move(*first);
    EXPECT_FALSE(FileLock::try_acquire(path).has_value());  // still held after a move
  }
  EXPECT_TRUE(FileLock::try_acquire(path).has_value());
  std::filesystem::remove_all(dir);
}

TEST(FileLock, AProcessKilledWhileHoldingTheLockLeavesNoStaleLock) {
  const auto dir = testing::unique_temp_dir("bnn_file_lock_kill_test");
  const auto path = dir / "lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the holder: lock, tell the parent, wait to be killed
    const auto lock = FileLock::try_acquire(path);
    const char byte = lock ? '1' : '0';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(2);
    for (;;) ::pause();
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, '1');
  EXPECT_FALSE(FileLock::try_acquire(path).has_value());  // held by the other process
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(FileLock::try_acquire(path).has_value());
  ::close(ready[0]);
  ::close(ready[1]);
  std::filesystem::remove_all(dir);
}

// Note [Member locks]: a lock is on the file, not its name. Deleting or
// replacing a held lock file lets another holder in; the first finds out.
TEST(FileLock, ADeletedOrReplacedLockFileIsNoticed) {
  const auto dir = testing::unique_temp_dir("bnn_file_lock_lost_test");
  const auto path = dir / "lock";
  auto lost_message = [](const FileLock& lock) -> std::string {
    try {
      lock.check_still_held();
    } catch (const LockLost& e) {
      return e.what();
    }
    return "";
  };
  {
    const auto held = FileLock::try_acquire(path);
    ASSERT_TRUE(held.has_value());
    EXPECT_EQ(lost_message(*held), "");
    EXPECT_EQ(held->path(), path);
    std::filesystem::remove(path);
    EXPECT_EQ(lost_message(*held), path.string() + " was deleted while this process held it");
    const auto other = FileLock::try_acquire(path);  // the hazard: a second holder
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(lost_message(*held), path.string() + " was replaced by another file while this process held it");
    EXPECT_EQ(lost_message(*other), "");
  }
  {
    // Renamed away and back: the same file, still held.
    auto held = FileLock::try_acquire(path);
    ASSERT_TRUE(held.has_value());
    std::filesystem::rename(path, dir / "elsewhere");
    EXPECT_NE(lost_message(*held), "");
    std::filesystem::rename(dir / "elsewhere", path);
    EXPECT_EQ(lost_message(*held), "");
    const FileLock moved = std::move(*held);
    EXPECT_EQ(lost_message(moved), "");
  }
  std::filesystem::remove_all(dir);
}

TEST(FileLock, UnopenableFileIsNamed) {
  try {
    FileLock::try_acquire("/no/such/dir/lock");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open lock file /no/such/dir/lock"), std::string::npos) << e.what();
  }
}


TEST(FileLock, AcquireWaitsUntilTheHolderReleases) {
  const auto dir = testing::unique_temp_dir("bnn_file_lock_wait_test");
  const auto path = dir / "lock";
  auto held = FileLock::try_acquire(path);
  ASSERT_TRUE(held.has_value());
  std::atomic<bool> released{false}, acquired_before_release{false}, acquired{false};
  std::thread waiter([&] {
    const FileLock lock = FileLock::acquire(path);
    acquired_before_release = !released;
    acquired = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(acquired);
  released = true;
  held.reset();
  waiter.join();
  EXPECT_TRUE(acquired);
  EXPECT_FALSE(acquired_before_release);
  EXPECT_TRUE(FileLock::try_acquire(path).has_value());  // the waiter released it in turn
}

}  // namespace
}  // namespace bnn::io
