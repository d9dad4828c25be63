// The one error type of acprof's libraries (torch-free). A library that meets
// a problem throws an Error whose message is one line naming the problem and
// what to do, and whose kind says what sort of problem it is; libraries never
// print or exit. Only the CLI's main maps kinds to exit codes (README: "Exit
// codes"), as LLVM's ExitOnError does.
#pragma once

#include <stdexcept>
#include <string>

namespace acprof {

enum class ErrorKind {
  Usage,               // the command line: unknown option, a file given twice
  BadInput,            // a file, spec, plan or output path the user must fix
  InfeasibleBudget,    // no plan fits the budget; the message names the smallest peak
  VerificationFailed,  // the rewritten model does not train like the original
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace acprof
