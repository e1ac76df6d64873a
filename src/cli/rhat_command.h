// `bnn rhat`: the command-line front end of src/pipeline/rhat.h.
#pragma once

namespace bnn::cli {

int cmd_rhat(int argc, char** argv);

}  // namespace bnn::cli
