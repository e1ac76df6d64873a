// The bnn executable: the commands are declared in src/cli/commands.cpp.
#include "src/cli/commands.h"
#include "src/runtime/threads.h"

BNN_OPENMP_WAIT_DEFAULT;  // Note [OpenMP wait policy]

int main(int argc, char** argv) { return bnn::cli::main(argc, argv); }
