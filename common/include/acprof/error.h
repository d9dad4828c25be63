// The one error type of acprof's libraries (torch-free). A library that meets
// a problem throws an Error whose message is one line naming the problem and
// what to do, and whose kind says what sort of problem it is; libraries never
// print or exit. Only the CLI's main maps kinds to exit codes (docs/manual.md: "Exit
// codes"), as LLVM's ExitOnError does.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

namespace acprof {

// Names and exit codes: python/acprof/contract.json, in this order, Internal last.
enum class ErrorKind {
  Usage,               // the command line: unknown option, a file given twice
  BadInput,            // a file, spec, plan or output path the user must fix
  InfeasibleBudget,    // no plan fits the budget; the message names the smallest peak
  VerificationFailed,  // the rewritten model does not train like the original
  BudgetExceeded,      // the rewritten model was measured above the plan's budget (its files are kept)
  ModelFails,          // the model's own training step fails in PyTorch, acprof or not
  PythonImport,        // the eager front end's Python, its torch, the acprof package or the --module factory cannot be imported
  Internal,            // acprof's own bug, found by a check of its own: the message asks for a report
};

// Text from a file or the command line as it may appear inside a message:
// control characters (a newline inside a JSON string, a tab in an argument)
// written as escapes, so the message stays the one line the CLI prints.
inline std::string printable(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

class Error : public std::runtime_error {
 public:
  // The message is made one line here, whatever text a caller quoted into it
  // (a JSON key with a newline in it), so no message can break the CLI's line.
  // `detail`: lines that follow it where one line cannot show what the fix
  // rests on (an infeasible budget's floor, category by category), each ending
  // in a newline and each made printable alike; "" for none. The message alone
  // names the problem and the fix; scripts read the outcome, never these lines.
  Error(ErrorKind kind, const std::string& message, const std::string& detail = "")
      : std::runtime_error(printable(message)), kind_(kind), detail_(printableLines(detail)) {}
  ErrorKind kind() const { return kind_; }
  const std::string& detail() const { return detail_; }

 private:
  static std::string printableLines(const std::string& text) {
    std::string out;
    for (size_t begin = 0; begin < text.size();) {
      const size_t end = std::min(text.find('\n', begin), text.size());
      out += printable(text.substr(begin, end - begin)) + "\n";
      begin = end + 1;
    }
    return out;
  }

  ErrorKind kind_;
  std::string detail_;
};


}  // namespace acprof
