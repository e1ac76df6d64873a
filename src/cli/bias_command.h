// `bnn bias` and `bnn coupled-bias`: the command-line front ends of
// src/experiments/bias.h and src/experiments/coupled_bias.h.
#pragma once

namespace bnn::cli {

int cmd_bias(int argc, char** argv);
int cmd_coupled_bias(int argc, char** argv);

}  // namespace bnn::cli
