// `bnn run` and `bnn evaluate`: the command-line front ends of
// src/pipeline/run.h and src/pipeline/evaluate.h.
#pragma once

#include <string>

namespace bnn::cli {

int cmd_run(int argc, char** argv);
int cmd_evaluate(int argc, char** argv);

// Every config key with its default and meaning, for `--help`.
std::string config_help();

}  // namespace bnn::cli
