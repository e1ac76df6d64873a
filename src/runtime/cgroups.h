// What the cgroups this process is in leave it: memory and CPU quota.
//
// A process's limits are those of its own cgroup and of every ancestor (a
// Slurm job's step inside the job, a container's cgroup inside a systemd
// slice). /proc/self/cgroup names the process's cgroup: "0::/path" under
// cgroup v2 (one hierarchy, the limits of /sys/fs/cgroup/path and each
// directory above it), "N:controllers:/path" under v1 (one hierarchy per
// controller, /sys/fs/cgroup/<controllers>/path and each directory above it
// to the hierarchy's root, or that root alone where a cgroup namespace hides
// the path). A path outside the namespace's view ("/../x") is the root. The functions take the file's
// text and the mount point so that tests can give them a tree of their own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace bnn::runtime {

inline const std::filesystem::path kCgroupRoot = "/sys/fs/cgroup";

// The text of /proc/self/cgroup ("0::/", the root alone, where it cannot be read).
std::string read_self_cgroup();

// The smallest limit - usage over the memory cgroups of `self_cgroup`
// (v2: memory.max - (memory.current - inactive_file) of the cgroup and each
// ancestor, so that reclaimable page cache counts as free; v1:
// memory.limit_in_bytes - (memory.usage_in_bytes - total_inactive_file) of
// its memory cgroup and each ancestor). nullopt where no limit applies or
// none can be read.
std::optional<int64_t> cgroup_memory_left(const std::string& self_cgroup,
                                          const std::filesystem::path& root = kCgroupRoot);

// The smallest ceil(quota / period) over the CPU cgroups of `self_cgroup`
// (v2: cpu.max "quota period" of the cgroup and each ancestor, "max" for
// none; v1: cpu.cfs_quota_us / cpu.cfs_period_us of its cpu cgroup, -1 for
// none, of the cgroup and each ancestor), at least 1; 0 where no quota
// applies.
int cgroup_cpu_limit(const std::string& self_cgroup, const std::filesystem::path& root = kCgroupRoot);

}  // namespace bnn::runtime
