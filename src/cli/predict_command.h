// `bnn predict`: the command-line front end of src/pipeline/predict.h.
#pragma once

namespace bnn::cli {

int cmd_predict(int argc, char** argv);

}  // namespace bnn::cli
