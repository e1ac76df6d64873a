// The bnn executable: the commands are declared in src/cli/commands.cpp.
#include "src/cli/commands.h"

int main(int argc, char** argv) { return bnn::cli::main(argc, argv); }
