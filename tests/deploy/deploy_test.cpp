// The container and cluster files stay in step with the code: the Dockerfile's
// CPU target runs CI's own install and build steps, and the Slurm and
// Kubernetes files run existing configs with the member index of their
// scheduler.
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "src/io/atomic_file.h"
#include "tests/support/temp_dir.h"

namespace {

const std::filesystem::path kSource = BNN_SOURCE_DIR;

std::string read(const std::filesystem::path& relative) { return bnn::io::read_file(kSource / relative); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Deploy, DockerfileCpuTargetRunsTheCiSteps) {
  const std::string docker = read("Dockerfile");
  const auto cpu = docker.find("FROM debian:bookworm AS cpu");
  ASSERT_NE(cpu, std::string::npos);
  const std::string stage = docker.substr(cpu, docker.find("\nFROM ", cpu + 1) - cpu);
  EXPECT_TRUE(contains(stage, "bash scripts/install-deps.sh")) << stage;
  EXPECT_TRUE(contains(stage, "make build")) << stage;
  EXPECT_TRUE(contains(stage, "ENTRYPOINT [\"bnn\"]")) << stage;
  // CI: `make test`, whose prerequisites are the same deps and build targets.
  EXPECT_TRUE(contains(read(".ci/run"), "make test"));
  const std::string makefile = read("Makefile");
  EXPECT_TRUE(contains(makefile, "build: deps")) << makefile;
  EXPECT_TRUE(contains(makefile, "test: build")) << makefile;
  EXPECT_TRUE(contains(makefile, "deps:\n\tbash scripts/install-deps.sh")) << makefile;
  // The default target (the last stage) is the CUDA image.
  EXPECT_EQ(docker.rfind("\nFROM "), docker.find("FROM nvidia/cuda:${CUDA_VERSION}-base-ubuntu24.04 AS cuda") - 1);
}

TEST(Deploy, KubernetesIndexedJobRunsOneMemberPerIndex) {
  const YAML::Node job = YAML::LoadFile((kSource / "deploy/k8s/bnn-job.yaml").string());
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  EXPECT_EQ(job["spec"]["completionMode"].as<std::string>(), "Indexed");
  // backoffLimitPerIndex is accepted only with restartPolicy Never; a
  // replacement must wait for the old pod, which holds the member's lock.
  EXPECT_TRUE(job["spec"]["backoffLimitPerIndex"].IsDefined());
  EXPECT_EQ(job["spec"]["template"]["spec"]["restartPolicy"].as<std::string>(), "Never");
  EXPECT_EQ(job["spec"]["podReplacementPolicy"].as<std::string>(), "Failed");
  // Note [Stop signals]: SIGTERM reaches bnn itself (exec), and its exit 75
  // (stopped at an epoch end, to be resumed) is not one of the member's failures.
  EXPECT_GE(job["spec"]["template"]["spec"]["terminationGracePeriodSeconds"].as<int>(), 60);
  const YAML::Node rule = job["spec"]["podFailurePolicy"]["rules"][0];
  EXPECT_EQ(rule["action"].as<std::string>(), "Ignore");
  EXPECT_EQ(rule["onExitCodes"]["containerName"].as<std::string>(), "bnn");
  EXPECT_EQ(rule["onExitCodes"]["operator"].as<std::string>(), "In");
  EXPECT_EQ(rule["onExitCodes"]["values"][0].as<int>(), 75);
  const YAML::Node disruption = job["spec"]["podFailurePolicy"]["rules"][1];
  EXPECT_EQ(disruption["action"].as<std::string>(), "Ignore");
  EXPECT_EQ(disruption["onPodConditions"][0]["type"].as<std::string>(), "DisruptionTarget");
  const YAML::Node container = job["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["name"].as<std::string>(), "bnn");
  const std::string command = container["args"][0].as<std::string>();
  EXPECT_EQ(command.rfind("exec bnn run ", 0), 0u) << command;
  EXPECT_TRUE(contains(command, "--members \"$JOB_COMPLETION_INDEX\"")) << command;
  const std::string prefix = "--config /opt/bnn/";
  const auto at = command.find(prefix);
  ASSERT_NE(at, std::string::npos) << command;
  const std::string config =
      command.substr(at + prefix.size(), command.find(' ', at + prefix.size()) - at - prefix.size());
  EXPECT_TRUE(std::filesystem::exists(kSource / config)) << config;
}

TEST(Deploy, SlurmArrayTaskIsTheMember) {
  const std::string script = read("deploy/slurm/bnn.sbatch");
  EXPECT_TRUE(contains(script, "--members \"${SLURM_ARRAY_TASK_ID:?run as an array job}\"")) << script;
  EXPECT_TRUE(contains(script, "#SBATCH --open-mode=append")) << script;  // a requeued task keeps the log
  EXPECT_EQ(std::system(("bash -n " + (kSource / "deploy/slurm/bnn.sbatch").string()).c_str()), 0);
}

// The batch script as Slurm runs it, on the CPU with a stand-in scontrol
// that records its arguments: a task stopped by its time limit requeues
// itself and exits 0; the requeued task finishes the member and does not.
TEST(Deploy, SlurmTaskStoppedByItsTimeLimitRequeuesItself) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "Fashion-MNIST not installed";
  const auto work = bnn::testing::unique_temp_dir("bnn_slurm_test");
  std::filesystem::create_directories(work / "bin");
  bnn::io::write_file_atomically(work / "bin" / "scontrol", "#!/bin/sh\necho \"$@\" >> " +
                                                                (work / "scontrol.txt").string() + "\n");
  std::filesystem::permissions(work / "bin" / "scontrol", std::filesystem::perms::owner_all);
  auto task = [&](const std::string& env, const std::string& log) {
    const std::string cmd = "env PATH=" + (work / "bin").string() + ":$PATH SLURM_ARRAY_TASK_ID=1 SLURM_JOB_ID=4242 "
                            "SLURM_CPUS_PER_TASK=1 BNN=" BNN_BINARY " BNN_DEVICE=cpu " + env + " bash " +
                            (kSource / "deploy/slurm/bnn.sbatch").string() + " " +
                            (kSource / "configs/tiny.yaml").string() + " " + (work / "run").string() + " > " +
                            (work / log).string() + " 2>&1";
    return WEXITSTATUS(std::system(cmd.c_str()));
  };
  const auto member = work / "run" / "member_001";
  // A limit shorter than start-up: no epoch, so no requeue (it would loop).
  EXPECT_EQ(task("BNN_TIME_LIMIT=0.001", "log0.txt"), 1) << bnn::io::read_file(work / "log0.txt");
  EXPECT_NE(bnn::io::read_file(work / "log0.txt")
                .find("bnn.sbatch: member 1 made no progress before its time limit (0.001): not requeued"),
            std::string::npos)
      << bnn::io::read_file(work / "log0.txt");
  EXPECT_FALSE(std::filesystem::exists(work / "scontrol.txt"));
  // Stopped at the end of its first sampling epoch, as by a time limit there
  // (here by SIGTERM after step 1: Note [Stop signals]), with exit 75.
  EXPECT_EQ(task("BNN_SIGNAL_AT_SAMPLER_STEPS=1", "log1.txt"), 0) << bnn::io::read_file(work / "log1.txt");
  EXPECT_NE(bnn::io::read_file(work / "log1.txt").find("member 1: stopped by SIGTERM after sampling epoch 1"),
            std::string::npos)
      << bnn::io::read_file(work / "log1.txt");
  EXPECT_EQ(bnn::io::read_file(work / "scontrol.txt"), "requeue 4242\n");
  EXPECT_FALSE(std::filesystem::exists(member / "status.json"));
  // The requeued task is signalled in the member's last epoch: the member
  // finishes, bnn exits 75 before evaluating, and the task requeues again.
  EXPECT_EQ(task("BNN_SIGNAL_AT_SAMPLER_STEPS=25", "log2.txt"), 0) << bnn::io::read_file(work / "log2.txt");
  EXPECT_EQ(bnn::io::read_file(work / "scontrol.txt"), "requeue 4242\nrequeue 4242\n");
  EXPECT_TRUE(std::filesystem::exists(member / "status.json"));
  EXPECT_FALSE(std::filesystem::exists(work / "run" / "metrics.json"));
  EXPECT_EQ(task("", "log3.txt"), 0) << bnn::io::read_file(work / "log3.txt");
  EXPECT_EQ(bnn::io::read_file(work / "scontrol.txt"), "requeue 4242\nrequeue 4242\n");  // not again
  EXPECT_TRUE(std::filesystem::exists(work / "run" / "metrics.json"));
  EXPECT_FALSE(std::filesystem::exists(work / "run" / "member_000"));

  // Slurm's SIGTERM (pre-emption, the time limit) goes to every process of
  // the job, the batch shell too: the shell lives on, bnn stops at an epoch
  // end, and the task requeues itself. Here the task's process group, during
  // a member of 3000 sampling epochs, once its first checkpoint is written.
  const auto long_config = work / "long.yaml";
  std::string config = bnn::io::read_file(kSource / "configs/tiny.yaml");
  config.replace(config.find("  epochs: 3\n"), 12, "  epochs: 3000\n");
  bnn::io::write_file_atomically(long_config, config);
  const auto group = work / "task.pgid";
  const std::string cmd = "setsid bash -c 'echo $$ > " + group.string() + "; exec env PATH=" + (work / "bin").string() +
                          ":$PATH SLURM_ARRAY_TASK_ID=1 SLURM_JOB_ID=4242 SLURM_CPUS_PER_TASK=1 BNN=" BNN_BINARY
                          " BNN_DEVICE=cpu bash " + (kSource / "deploy/slurm/bnn.sbatch").string() + " " +
                          long_config.string() + " " + (work / "long").string() + "' > " +
                          (work / "log4.txt").string() + " 2>&1";
  auto running = std::async(std::launch::async, [&] { return WEXITSTATUS(std::system(cmd.c_str())); });
  const auto checkpoint = work / "long" / "member_001" / "checkpoint.pt";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!std::filesystem::exists(checkpoint) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool started = std::filesystem::exists(checkpoint) && std::filesystem::exists(group);
  if (started) ::kill(-static_cast<pid_t>(std::stol(bnn::io::read_file(group))), SIGTERM);
  EXPECT_TRUE(started) << "the long task wrote no checkpoint";
  EXPECT_EQ(running.get(), 0) << bnn::io::read_file(work / "log4.txt");
  EXPECT_NE(bnn::io::read_file(work / "log4.txt").find("member 1: stopped by SIGTERM after "),
            std::string::npos)
      << bnn::io::read_file(work / "log4.txt");
  EXPECT_EQ(bnn::io::read_file(work / "scontrol.txt"), "requeue 4242\nrequeue 4242\nrequeue 4242\n");
  EXPECT_TRUE(std::filesystem::exists(checkpoint));
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(work);
}

}  // namespace
