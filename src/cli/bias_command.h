// `bnn bias`, `bnn coupled-bias` and `bnn samplers`: the command-line front
// ends of src/experiments/bias.h, src/experiments/coupled_bias.h and
// samplers/registry.h.
#pragma once

namespace bnn::cli {

int cmd_bias(int argc, char** argv);
int cmd_coupled_bias(int argc, char** argv);
int cmd_samplers();

}  // namespace bnn::cli
