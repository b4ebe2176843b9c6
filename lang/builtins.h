// The documentation of every builtin and command: one table serving :help,
// Jupyter's inspect and completion, and docs/language.md.
#pragma once
#include <string>
#include <vector>

namespace shoal {

struct BuiltinDoc {
    std::string name;       // "sum"
    std::string signature;  // "[a] -> a   (innermost dimension: [[a]] -> [a])"
    std::string summary;    // one line
};

const std::vector<BuiltinDoc>& builtin_docs();
const BuiltinDoc* find_builtin_doc(const std::string& name);

// Habits from NumPy, Python and other array languages (`len xs`, `range 10`,
// `xs.sum`): the advice "Shoal writes `iota n` (0, 1, ..., n - 1)", or "".
// One table serves the unknown-name error, `:help`, and the parser's note
// on methods. habit_code: just the code ("iota n"), or "".
std::string habit_instead(const std::string& name);
std::string habit_code(const std::string& name);

struct CommandDoc {
    std::string name;     // "type"
    std::string usage;    // ":type e"
    std::string summary;
};
const std::vector<CommandDoc>& command_docs();

}  // namespace shoal
