// `bnn version`, `bnn models` and `bnn samplers`: what this build is and
// what it offers.
#pragma once

namespace bnn::cli {

int cmd_version(int argc, char** argv);
int cmd_models(int argc, char** argv);
int cmd_samplers(int argc, char** argv);

}  // namespace bnn::cli
