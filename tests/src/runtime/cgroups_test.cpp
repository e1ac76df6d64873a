// src/runtime/cgroups.h on cgroup trees the tests write: the limits of a
// process's own cgroup and of its ancestors (v2), of its cgroup in each v1
// hierarchy, and of a hierarchy's root where a namespace hides the path.
#include <gtest/gtest.h>

#include <fstream>

#include "src/runtime/cgroups.h"
#include "tests/support/temp_dir.h"

namespace bnn::runtime {
namespace {

class Cgroups : public ::testing::Test {
 protected:
  void SetUp() override { root_ = bnn::testing::unique_temp_dir("bnn_cgroups_test"); }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::filesystem::path& relative, const std::string& text) {
    std::filesystem::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }
  std::filesystem::path root_;
};

// A Slurm job's step in a v2 tree: the job's limits apply to the step.
TEST_F(Cgroups, V2LimitsOfTheCgroupAndItsAncestors) {
  const std::string self = "0::/slurm/job_1/step_0\n";
  EXPECT_EQ(cgroup_cpu_limit(self, root_), 0);  // no files: no quota
  EXPECT_EQ(cgroup_memory_left(self, root_), std::nullopt);
  write("slurm/cpu.max", "800000 100000\n");
  write("slurm/job_1/cpu.max", "150000 100000\n");  // 1.5 CPUs: 2 threads
  write("slurm/job_1/step_0/cpu.max", "max 100000\n");
  EXPECT_EQ(cgroup_cpu_limit(self, root_), 2);
  write("slurm/memory.current", "100000\n");
  write("slurm/memory.max", "1000000\n");
  write("slurm/job_1/memory.current", "5000\n");
  write("slurm/job_1/memory.max", "8000\n");
  write("slurm/job_1/memory.stat", "anon 4000\ninactive_file 1000\n");  // page cache the kernel can reclaim
  write("slurm/job_1/step_0/memory.current", "1000\n");
  write("slurm/job_1/step_0/memory.max", "max\n");
  EXPECT_EQ(cgroup_memory_left(self, root_), 8000 - (5000 - 1000));
  // The root's own limit (a cgroup namespace's view) counts too.
  write("cpu.max", "100000 100000\n");
  EXPECT_EQ(cgroup_cpu_limit(self, root_), 1);
  // A path outside the namespace's view ("/../x"), or not absolute, is the
  // root's, not that of a cgroup of the same name inside the view.
  write("elsewhere/cpu.max", "50000 100000\n");
  write("elsewhere/memory.current", "10\n");
  write("elsewhere/memory.max", "20\n");
  EXPECT_EQ(cgroup_cpu_limit("0::/elsewhere\n", root_), 1);  // 0.5 CPU: at least 1
  EXPECT_EQ(cgroup_memory_left("0::/elsewhere\n", root_), 10);
  EXPECT_EQ(cgroup_cpu_limit("0::/../../elsewhere\n", root_), 1);
  EXPECT_EQ(cgroup_memory_left("0::/../../elsewhere\n", root_), std::nullopt);
  EXPECT_EQ(cgroup_memory_left("0::elsewhere\n", root_), std::nullopt);
  // Lines that are not cgroup entries are skipped; absurd quotas are capped.
  EXPECT_EQ(cgroup_cpu_limit("garbage\n1:\n\n", root_), 0);
  write("huge/cpu.max", "1e300 1\n");
  EXPECT_EQ(cgroup_cpu_limit("0::/huge\n", root_), 1);  // the root's 1 is smaller
}

TEST_F(Cgroups, V1LimitsOfTheControllersHierarchy) {
  const std::string self = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n";
  write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
  write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  write("memory/docker/abc/memory.limit_in_bytes", "2000\n");
  write("memory/docker/abc/memory.usage_in_bytes", "1500\n");
  write("memory/docker/abc/memory.stat", "cache 700\ntotal_inactive_file 500\n");
  EXPECT_EQ(cgroup_cpu_limit(self, root_), 3);
  EXPECT_EQ(cgroup_memory_left(self, root_), 2000 - (1500 - 500));
  // An ancestor's limits apply too (a service inside a slice).
  write("cpu,cpuacct/docker/cpu.cfs_quota_us", "200000\n");
  write("cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n");
  write("memory/docker/memory.limit_in_bytes", "1800\n");
  write("memory/docker/memory.usage_in_bytes", "1600\n");
  EXPECT_EQ(cgroup_cpu_limit(self, root_), 2);
  EXPECT_EQ(cgroup_memory_left(self, root_), 200);
  std::filesystem::remove_all(root_ / "cpu,cpuacct" / "docker" / "cpu.cfs_quota_us");
  std::filesystem::remove_all(root_ / "memory" / "docker" / "memory.limit_in_bytes");
  // No limit: v1 writes -1 for the quota and a huge number for memory.
  write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
  write("memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(cgroup_cpu_limit(self, root_), 0);
  EXPECT_EQ(cgroup_memory_left(self, root_), std::nullopt);
}

// Inside a cgroup namespace the path names a cgroup that is not under the
// mount point: the hierarchy's root holds the process's limits.
TEST_F(Cgroups, V1NamespaceFallsBackToTheHierarchysRoot) {
  const std::string self = "4:cpu,cpuacct:/kubepods/pod1/c2\n12:memory:/kubepods/pod1/c2\n";
  write("cpu,cpuacct/cpu.cfs_quota_us", "50000\n");
  write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  write("memory/memory.limit_in_bytes", "4096\n");
  write("memory/memory.usage_in_bytes", "1024\n");
  EXPECT_EQ(cgroup_cpu_limit(self, root_), 1);
  EXPECT_EQ(cgroup_memory_left(self, root_), 4096 - 1024);
}

}  // namespace
}  // namespace bnn::runtime
