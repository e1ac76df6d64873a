// `bnn hessian`: the command-line front end of src/pipeline/hessian_points.h.
#pragma once

namespace bnn::cli {

int cmd_hessian(int argc, char** argv);

}  // namespace bnn::cli
