// The bnn command line: every command declared once, in the table of
// commands.cpp, from which the usage text, the dispatch and the
// unknown-command error are made.
#pragma once

#include <string>
#include <vector>

namespace bnn::cli {

struct Command {
  const char* name;
  // The command's lines of `bnn --help`: its synopsis, and an indented
  // summary where the synopsis does not say enough.
  const char* usage;
  // Runs the command with argv[0] = the command's name.
  int (*run)(int argc, char** argv);
};

// Every command, in the order `bnn --help` lists them.
const std::vector<Command>& commands();

// The text of `bnn --help`.
std::string usage();

// The whole command line: `bnn COMMAND ARGS...`. Returns the exit code:
// the command's; 2 for no command, an unknown command or an error (printed
// as one "bnn: error: ..." line); io::kExitStorage (74) where the storage
// failed a write (a full disk or quota, a file-size limit, a device error);
// distributed::kExitCommunication (69) where a distributed run's
// communication failed (another rank died, a timeout).
int main(int argc, char** argv);

}  // namespace bnn::cli
