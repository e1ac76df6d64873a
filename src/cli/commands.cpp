#include "src/cli/commands.h"

#include <csignal>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "samplers/fused_step.h"
#include "src/cli/bias_command.h"
#include "src/cli/hessian_command.h"
#include "src/cli/info_commands.h"
#include "src/cli/options.h"
#include "src/cli/predict_command.h"
#include "src/cli/rhat_command.h"
#include "src/cli/run_command.h"
#include "src/distributed/process_group.h"
#include "src/io/atomic_file.h"

namespace bnn::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"run",
       "  bnn run --config FILE [--set key=value]... [--out DIR] [--members 0-3]\n"
       "          [--device auto|cpu|cuda|cuda:N | --devices all|cuda:0,cuda:1] [--members-per-device K|auto]\n"
       "          [--member-design streams|stacked] [--cudnn-benchmark] [--threads N] [--seed S]\n"
       "          [--time-limit 540|9m|1.5h [--whole-members] [--throughput FILE.csv]]\n"
       "  bnn run --resume RUN_DIR [--members 0-3] [--device ...] [--threads N] [--time-limit 9m]\n"
       "  bnn run ... --distributed\n"
       "                  one data-parallel chain over processes (torch.distributed: Gloo on\n"
       "                  CPU, NCCL on CUDA); rendezvous from MASTER_ADDR, MASTER_PORT, RANK,\n"
       "                  WORLD_SIZE as torchrun sets them (docs/distributed.md)\n",
       cmd_run},
      {"evaluate",
       "  bnn evaluate RUN_DIR [RUN_DIR...] [--out DIR] [--burn-in N] [--thin K]\n"
       "               [--members LIST] [--no-figures] [--reference-probs FILE.npy]\n",
       cmd_evaluate},
      {"predict",
       "  bnn predict --run RUN_DIR --images PATH [PATH...] [--out FILE.csv|FILE.json]\n"
       "              [--members LIST] [--method swa|bayes|both]\n"
       "                  class probabilities and uncertainties of new images\n",
       cmd_predict},
      {"hessian",
       "  bnn hessian --checkpoint RUN_DIR/member_NNN [--examples N] [--iterations K] [--out FILE]\n",
       cmd_hessian},
      {"rhat",
       "  bnn rhat --config FILE [--set key=value]... [--chains C] [--repeats R] [--rho RHO]\n"
       "           [--only LIST] [--repeats-at-once K|auto] [--loss-every K] [--out DIR]\n"
       "           [--time-limit 540|9m [--throughput FILE.csv]] [--device ...] [--threads N]\n"
       "                  R-hat of chains from perturbations of x* (paper Fig. 3)\n",
       cmd_rhat},
      {"bias",
       "  bnn bias [--samplers a,b] [--step-sizes 0.25,0.125] [--chains N] [--out bias.csv]\n"
       "                  Wasserstein bias of the integrators on a 1-D Gaussian (paper 3.4)\n",
       cmd_bias},
      {"coupled-bias",
       "  bnn coupled-bias --config FILE [--samplers a,b] [--h0 H] [--levels L] [--epochs E] [--out F]\n"
       "                  bias on a real posterior by chains coupled at h and h/2 (appendix D.1)\n",
       cmd_coupled_bias},
      {"samplers", "  bnn samplers    list the samplers\n", cmd_samplers},
      {"models", "  bnn models      list the models with input shape, classes and parameter count\n", cmd_models},
      {"version", "  bnn version     LibTorch version, CUDA availability, threads, std::filesystem's library\n",
       cmd_version},
  };
  return table;
}

std::string usage() {
  std::string out = "bnn — Bayesian neural network ensembles (Adam -> SWA -> SMS-UBU / SGHMC)\n\nUsage:\n";
  for (const Command& c : commands()) out += c.usage;
  return out + "  bnn COMMAND --help\n";
}

namespace {

// After a write the storage failed (exit io::kExitStorage).
constexpr const char* kStorageAdvice =
    " (free space, or raise the quota or file-size limit, and run the command again; what was written before is "
    "kept, and bnn run --resume RUN_DIR continues a run)";

}  // namespace

int main(int argc, char** argv) {
  const bool no_command = argc < 2;
  const std::string_view name = no_command ? "" : argv[1];
  // A file-size limit (ulimit -f, a batch system's) kills a process by
  // SIGXFSZ without a word; ignored, the write fails with EFBIG, and bnn
  // names the file ("File too large") as for any failed write.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    if (no_command) {  // a usage error, as an unknown command is
      fmt::print(stderr, "{}", usage());
      return 2;
    }
    if (name == "--help" || name == "-h" || name == "help") {
      fmt::print("{}", usage());
      return 0;
    }
    // A bad BNN_FUSED_STEPS is refused before any work, naming the variable.
    samplers::fused_choice_from_environment();
    const std::string_view command = name == "--version" ? "version" : name;
    std::vector<std::string_view> names;
    for (const Command& c : commands()) {
      if (command == c.name) return c.run(argc - 1, argv + 1);
      names.push_back(c.name);
    }
    fmt::print(stderr, "bnn: error: unknown command '{}' (commands: {}; see bnn --help)\n", name,
               fmt::join(names, ", "));
    return 2;
  } catch (const io::WriteError& e) {
    const int code = io::exit_code_of(e);
    fmt::print(stderr, "bnn: error: {}{}\n", e.what(), code == io::kExitStorage ? kStorageAdvice : "");
    return code;
  } catch (const std::filesystem::filesystem_error& e) {  // a folder that could not be made, say
    const int code = io::exit_code_of(e);  // only a lack of space (an EIO may be a read's)
    fmt::print(stderr, "bnn: error: {}{}\n", e.what(), code == io::kExitStorage ? kStorageAdvice : "");
    return code;
  } catch (const distributed::StoppedWithRankZero& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what());
    return e.exit_code();
  } catch (const distributed::CommunicationError& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what());
    return distributed::kExitCommunication;
  } catch (const c10::Error& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what_without_backtrace());
  } catch (const cxxopts::exceptions::exception& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "bnn: error: {}\n", e.what());
  } catch (...) {
    fmt::print(stderr, "bnn: error: a failure that is not a standard exception\n");
  }
  return 2;
}

}  // namespace bnn::cli
