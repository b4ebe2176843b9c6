// The documentation table of every builtin, operator and command. It serves
// :help, Jupyter's inspect and completion, and mirrors docs/language.md
// (keep the two in step).
//
// Signatures use type variables: `a` is any scalar element type unless said
// otherwise (`a` numeric for arithmetic), `[a]` an array of rank 1 and `arr a`
// stands for an array of any rank 1..3. Functions that are rank-polymorphic
// give the rank-1 form first and the rule for higher ranks in parentheses.
#include "builtins.h"

#include <map>

#include <algorithm>

namespace shoal {

namespace {

std::vector<BuiltinDoc> make_builtin_docs() {
    return {
        // ---------------------------------------------------------- construction
        {"iota", "int -> [int]", "iota n is [0, 1, ..., n-1]; a negative n is an error"},
        {"linspace", "a -> a -> int -> [a]   (a floating)",
         "linspace lo hi n: n evenly spaced values from lo to hi, both included (NumPy's linspace)"},
        {"arange", "a -> a -> a -> [a]   (a floating)",
         "arange lo hi step: lo, lo + step, ... below hi (NumPy's arange with float steps; iota for ints)"},
        {"eye", "int -> [[float]]", "the n x n identity matrix"},
        {"fill", "shape -> a -> arr a", "fill n v, fill (r, c) v, fill (p, r, c) v: an array with every element v"},
        {"generate", "shape -> (int -> ... -> a) -> arr a",
         "generate n (\\i -> e), generate (r, c) (\\i j -> e): element at each index from a function"},
        {"random", "shape -> arr float",
         "random n, random (r, c): uniform floats in [0, 1) (Philox-4x32-10; see :seed)"},

        // ---------------------------------------------------------- shape
        {"length", "arr a -> int", "the outermost extent (number of elements of a vector, rows of a matrix)"},
        {"rows", "[[a]] -> int", "the number of rows of a matrix"},
        {"cols", "[[a]] -> int", "the number of columns of a matrix"},
        {"shape", "arr a -> shape", "the extents: an int for a vector, (r, c) or (p, r, c) for higher ranks"},
        {"reshape", "shape -> arr a -> arr a", "the same elements in row-major order with a new shape (sizes must agree)"},
        {"flatten", "arr a -> [a]", "all elements in row-major order as a vector"},
        {"transpose", "[[a]] -> [[a]]", "swap rows and columns"},
        {"col", "[a] -> [[a]]",
         "the vector as a column, shape (n, 1), that broadcasts one value per row: `m - col (maximum m)`"},
        {"row", "[a] -> [[a]]", "the vector as a row, shape (1, n), that broadcasts one value per column"},
        {"matmul", "[[a]] -> [[a]] -> [[a]]   (a float or double; either side may be a vector [a])",
         "matrix product: (n, k) by (k, m) gives (n, m); a vector is a row on the left and a column on the right, "
         "and that axis is dropped: (n, k) @ (k) gives (n), (k) @ (k) a scalar (NumPy's matmul); also the operator @"},

        // ---------------------------------------------------------- elementwise
        {"map", "(a -> b) -> [a] -> [b]", "apply a function to every element; a tuple result gives a tuple of arrays"},
        {"zipWith", "(a -> b -> c) -> [a] -> [b] -> [c]", "combine two arrays of the same shape elementwise"},
        {"vmap", "([a] -> b) -> [[a]] -> [b]   (rank 3: [[a]] -> b per matrix; a vector: per element)",
         "f applied to every row, the results stacked (JAX's vmap): compiled for all rows at once"},
        {"zipWith3", "(a -> b -> c -> d) -> [a] -> [b] -> [c] -> [d]",
         "combine three arrays of the same shape elementwise"},
        {"zip", "[a] -> [b] -> [(a, b)]", "pair two arrays of the same shape (an array of pairs is a pair of arrays)"},
        {"zip3", "[a] -> [b] -> [c] -> [(a, b, c)]", "triple three arrays of the same shape"},
        {"unzip", "[(a, b)] -> ([a], [b])", "split an array of pairs (the identity: arrays of tuples are tuples of arrays)"},

        // ---------------------------------------------------------- reductions
        {"reduce", "(a -> a -> a) -> a -> [a] -> a   (innermost dimension: [[a]] -> [a])",
         "fold with an associative function and its neutral element, left to right"},
        {"sum", "[a] -> a   (innermost dimension: [[a]] -> [a])", "the sum of the elements; 0 for an empty array"},
        {"product", "[a] -> a   (innermost dimension: [[a]] -> [a])", "the product of the elements; 1 for an empty array"},
        {"maximum", "[a] -> a   (innermost dimension: [[a]] -> [a])",
         "the largest element; -inf (or the type's minimum) for an empty array"},
        {"minimum", "[a] -> a   (innermost dimension: [[a]] -> [a])",
         "the smallest element; inf (or the type's maximum) for an empty array"},
        {"dot", "[a] -> [a] -> a   (a numeric; innermost dimension, broadcasting)", "sum (x * y): the dot product of vectors"},
        {"norm", "[a] -> a   (a floating; innermost dimension: [[a]] -> [a])", "the Euclidean norm, sqrt (sum (x * x))"},
        {"outer", "[a] -> [a] -> [[a]]   (a numeric)", "the outer product: col x * row y, shape (length x, length y)"},
        {"mean", "[a] -> a   (a floating; innermost dimension: [[a]] -> [a])",
         "the arithmetic mean (NaN for an empty array); columns: `mean (transpose m)`"},
        {"var", "[a] -> a   (a floating; innermost dimension: [[a]] -> [a])",
         "the variance, mean ((x - mean x) ** 2) (NumPy's default ddof = 0)"},
        {"std", "[a] -> a   (a floating; innermost dimension: [[a]] -> [a])",
         "the standard deviation, sqrt (var x) (NumPy's default ddof = 0)"},
        {"median", "[a] -> a   (a floating; innermost dimension: [[a]] -> [a])",
         "the middle value (the mean of the two middle ones for an even length); NaN if there is a NaN or no element"},
        {"quantile", "a -> [a] -> a   (a floating; innermost dimension: a -> [[a]] -> [a])",
         "quantile q xs, q in [0, 1]: NumPy's default linear interpolation between the sorted values"},
        {"all", "[bool] -> bool   (innermost dimension: [[bool]] -> [bool])", "true if every element is true"},
        {"any", "[bool] -> bool   (innermost dimension: [[bool]] -> [bool])", "true if some element is true"},
        {"count", "(a -> bool) -> [a] -> int   (innermost dimension: [[a]] -> [int])",
         "the number of elements satisfying a predicate"},
        {"argmax", "[a] -> int   (innermost dimension: [[a]] -> [int])",
         "the index of the first largest element; an empty array is an error"},
        {"argmin", "[a] -> int   (innermost dimension: [[a]] -> [int])",
         "the index of the first smallest element; an empty array is an error"},

        // ---------------------------------------------------------- scans
        {"cumsum", "[a] -> [a]   (a numeric; per row for matrices)", "running sums: `scan (+) 0 xs` (NumPy's cumsum)"},
        {"cumprod", "[a] -> [a]   (a numeric; per row for matrices)", "running products: `scan (*) 1 xs` (NumPy's cumprod)"},
        {"scan", "(a -> a -> a) -> a -> [a] -> [a]   (per row for matrices)",
         "inclusive scan: [f z a0, f (f z a0) a1, ...]"},
        {"scanExclusive", "(a -> a -> a) -> a -> [a] -> [a]   (per row for matrices)",
         "exclusive scan: [z, f z a0, ...], same length as the input"},
        {"segscan", "(a -> a -> a) -> a -> [bool] -> [a] -> [a]",
         "inclusive scan that restarts from z wherever the flag is true"},

        // ---------------------------------------------------------- permutations
        {"gather", "[int] -> [a] -> [a]", "result[i] = a[idx[i]]"},
        {"scatter", "[a] -> [int] -> [a] -> [a]",
         "a copy of dest with dest[idx[k]] = vals[k]; out-of-range indices ignored, last write wins"},
        {"permute", "(a -> a -> a) -> arr a -> (int -> int) -> arr a -> arr a   (matrices: rows as elements)",
         "combine vals[i] into dest[j(i)] with f (histograms); out-of-range targets dropped; on matrices, rows"},
        {"reverse", "arr a -> arr a", "reverse along the outermost dimension"},

        // ---------------------------------------------------------- structure
        {"interleave", "[a] -> [a] -> [a]", "[a0, b0, a1, b1, ...] from two arrays of the same shape"},
        {"take", "int -> arr a -> arr a", "the first n elements (rows); n is clamped to [0, length a]"},
        {"drop", "int -> arr a -> arr a", "all but the first n elements (rows); n is clamped to [0, length a]"},
        {"filter", "(a -> bool) -> [a] -> [a]", "the elements satisfying a predicate, in order"},
        {"compress", "[bool] -> arr a -> arr a",
         "the rows where the mask holds, in order (NumPy's boolean index; `xs[mask]` is `compress mask xs`)"},
        {"sort", "[a] -> [a]   (per row for matrices)", "ascending, stable; NaNs last"},
        {"sortByKey", "[k] -> [v] -> ([k], [v])", "sort the keys ascending (stable) and permute the values alike"},
        {"argsort", "[a] -> [int]", "the indices that sort xs ascending, stable (ties keep their order; NaNs last)"},
        {"topk", "int -> [a] -> ([a], [int])   (per row for matrices)",
         "the k largest values, largest first, and their indices (ties: the lower index first; NaNs rank lowest)"},
        {"unique", "[a] -> [a]", "the distinct values, ascending (NaNs count as one, last)"},

        // ---------------------------------------------------------- linear algebra
        {"solve", "[[a]] -> [a] -> [a]   (a floating; b may be n x k: [[a]] -> [[a]] -> [[a]])",
         "solve a b: x with a @ x = b (LU with partial pivoting: LAPACK / cuSOLVER); a singular a is an error"},
        {"inv", "[[a]] -> [[a]]   (a floating)", "the inverse of a square matrix (solve a (eye n)); a singular one is an error"},
        {"det", "[[a]] -> a   (a floating)", "the determinant (from the LU factorisation; 0 for a singular matrix)"},
        {"lstsq", "[[a]] -> [a] -> [a]   (a floating; b may be m x k)",
         "lstsq a b: the minimum-norm least-squares x for any m x n a (NumPy's lstsq: from the SVD, rcond eps * max(m, n))"},

        // ---------------------------------------------------------- counting
        {"bincount", "[int] -> [int]", "how often each of 0 .. maximum xs occurs (NumPy's bincount; negative values are an error)"},
        {"tally", "int -> [int] -> [int]", "tally n xs: how often each of 0 .. n-1 occurs in xs; other values are not counted"},
        {"histogram", "int -> a -> a -> [a] -> [int]   (a floating)",
         "histogram bins lo hi xs: counts in bins equal bins of [lo, hi] (NumPy's edges; the last bin holds hi)"},

        // ---------------------------------------------------------- text
        {"show", "a -> string", "the text Shoal prints for a value, every element written out: `\"n = \" ++ show n`"},

        // ---------------------------------------------------------- iteration
        {"iterate", "int -> (a -> a) -> a -> a", "apply a function k times (k <= 0: the value itself)"},

        // ---------------------------------------------------------- I/O
        {"load", "string -> arr a", "read a NumPy .npy file (bool, int32, int64, float32, float64; rank 1-3)"},
        {"save", "string -> arr a -> ()", "write an array as a NumPy .npy file (C order)"},
        {"loadCsv", "string -> [[double]]", "read a CSV file of numbers, one row per line (a first line with no numbers, a header, is skipped)"},
        {"loadCsv1", "string -> [double]", "read a CSV file of one number per line as a vector (what saveCsv writes for a vector)"},
        {"saveCsv", "string -> arr a -> ()", "write a vector (one value per line) or a matrix (one row per line) as CSV"},

        // ---------------------------------------------------------- math
        {"sqrt", "a -> a   (a floating; elementwise on arrays)", "square root"},
        {"exp", "a -> a   (a floating; elementwise on arrays)", "e raised to the argument"},
        {"log", "a -> a   (a floating; elementwise on arrays)", "natural logarithm"},
        {"sin", "a -> a   (a floating; elementwise on arrays)", "sine (radians)"},
        {"cos", "a -> a   (a floating; elementwise on arrays)", "cosine (radians)"},
        {"tan", "a -> a   (a floating; elementwise on arrays)", "tangent (radians)"},
        {"asin", "a -> a   (a floating; elementwise on arrays)", "arc sine"},
        {"acos", "a -> a   (a floating; elementwise on arrays)", "arc cosine"},
        {"atan", "a -> a   (a floating; elementwise on arrays)", "arc tangent"},
        {"atan2", "a -> a -> a   (a floating; elementwise on arrays)", "atan2 y x: the angle of the point (x, y)"},
        {"sinh", "a -> a   (a floating; elementwise on arrays)", "hyperbolic sine"},
        {"cosh", "a -> a   (a floating; elementwise on arrays)", "hyperbolic cosine"},
        {"tanh", "a -> a   (a floating; elementwise on arrays)", "hyperbolic tangent"},
        {"erf", "a -> a   (a floating; elementwise on arrays)", "the error function"},
        {"abs", "a -> a   (a numeric; elementwise on arrays)", "absolute value (abs of the smallest int is itself)"},
        {"floor", "a -> a   (a floating; elementwise on arrays)", "round down"},
        {"ceil", "a -> a   (a floating; elementwise on arrays)", "round up"},
        {"round", "a -> a   (a floating; elementwise on arrays)", "round to nearest, halves away from zero"},
        {"min", "a -> a -> a   (a numeric; elementwise on arrays)", "the smaller argument (a NaN operand gives the other)"},
        {"max", "a -> a -> a   (a numeric; elementwise on arrays)", "the larger argument (a NaN operand gives the other)"},
        {"where", "bool -> a -> a -> a   (elementwise on arrays, broadcasting)",
         "NumPy's where: x where the condition holds, else y: `where (xs > 0.0) xs 0.0`"},
        {"pow", "a -> a -> a   (a floating; elementwise on arrays)", "pow x y is x raised to y (as x ** y)"},

        // ---------------------------------------------------------- conversions
        {"int", "a -> int   (a numeric or bool; elementwise on arrays)",
         "convert to 32-bit int: floats truncate toward zero, NaN gives 0, out of range saturates"},
        {"long", "a -> long   (a numeric or bool; elementwise on arrays)",
         "convert to 64-bit int: floats truncate toward zero, NaN gives 0, out of range saturates"},
        {"float", "a -> float   (a numeric or bool; elementwise on arrays)", "convert to 32-bit float"},
        {"double", "a -> double   (a numeric or bool; elementwise on arrays)", "convert to 64-bit float"},

        // ---------------------------------------------------------- operators
        {"|>", "a -> (a -> b) -> b", "pipe: x |> f is f x (lowest precedence, left associative)"},
        {"||", "bool -> bool -> bool", "logical or"},
        {"&&", "bool -> bool -> bool", "logical and"},
        {"==", "a -> a -> bool   (elementwise on arrays)", "equal"},
        {"!=", "a -> a -> bool   (elementwise on arrays)", "not equal"},
        {"<", "a -> a -> bool   (a numeric; elementwise on arrays)", "less than"},
        {"<=", "a -> a -> bool   (a numeric; elementwise on arrays)", "less than or equal"},
        {">", "a -> a -> bool   (a numeric; elementwise on arrays)", "greater than"},
        {">=", "a -> a -> bool   (a numeric; elementwise on arrays)", "greater than or equal"},
        {"++", "arr a -> arr a -> arr a", "concatenate along the outermost dimension (inner extents must agree)"},
        {"|", "a -> a -> a   (a integral; elementwise on arrays)", "bitwise or"},
        {"^", "a -> a -> a   (a integral; elementwise on arrays)", "bitwise exclusive or"},
        {"&", "a -> a -> a   (a integral; elementwise on arrays)", "bitwise and"},
        {"<<", "a -> a -> a   (a integral; elementwise on arrays)", "shift left"},
        {">>", "a -> a -> a   (a integral; elementwise on arrays)", "shift right"},
        {"+", "a -> a -> a   (a numeric; elementwise on arrays)", "addition (integers wrap)"},
        {"-", "a -> a -> a   (a numeric; elementwise on arrays)", "subtraction; as a prefix, negation"},
        {"*", "a -> a -> a   (a numeric; elementwise on arrays)", "multiplication"},
        {"/", "a -> a -> a   (a numeric; elementwise on arrays)",
         "division; integers truncate toward zero and x / 0 is 0"},
        {"%", "a -> a -> a   (a numeric; elementwise on arrays)",
         "remainder with the sign of the dividend (C); x % 0 is 0; fmod on floats"},
        {"@", "[[a]] -> [[a]] -> [[a]]   (a float or double; either side may be a vector [a])",
         "matrix product (matmul; vectors as NumPy takes them), with the precedence of *"},
        {"**", "a -> a -> a   (a numeric; elementwise on arrays)",
         "power: pow on floats, exact repeated multiplication on integers"},
        {"negate", "a -> a   (a numeric; elementwise on arrays)", "negation, the prefix - as a function"},
        {"!", "bool -> bool   (elementwise on arrays)", "logical not (prefix)"},
        {"~", "a -> a   (a integral; elementwise on arrays)", "bitwise not (prefix)"},
    };
}

std::vector<CommandDoc> make_command_docs() {
    return {
        {"help", ":help [topic]", "list the builtins and commands, or describe one builtin, operator or command"},
        {"type", ":type e", "show the type of an expression without evaluating it"},
        {"load", ":load file", "run a script file into this session"},
        {"reset", ":reset", "forget every binding and restore the default settings (print threshold, seed)"},
        {"env", ":env", "list the bindings with their types (and shapes of arrays)"},
        {"seed", ":seed [k]", "set the random seed to k (default 42) and restart the random stream; alone, show it"},
        {"set", ":set print N | :set check on|off | :set backend reference|compiled | :set executor cpu|cuda | :set arch sm_XY (sm_50 .. sm_120) | :set fusion|sharedmem|hoist|blas on|off | :set gpu h100|h200|a100 | :set memlimit N|off | :set ranks N | :set shard N|off | :set timeout S", "print arrays longer than N (at least 7) along an axis summarised (default 20); check: run compiled kernels in the CPU executor's checking mode (out-of-bounds accesses, shared-memory races, divergent barriers and shuffles); fusion, sharedmem, hoist, blas: switch an optimisation of the array compiler off to see its effect (results stay the same, products within float rounding; :profile shows the kernels); backend: evaluate array expressions with the reference evaluator or the array compiler; executor: run the compiled kernels on the CPU or the GPU (arrays move when next used); arch: the architecture :compile and :profile compile for; gpu: the GPU :profile estimates times for; memlimit: the most memory Shoal's arrays may hold (512MiB, 8GiB; off: what the machine has free); ranks: run the session on N MPI ranks (docs/scale-out.md); shard: on several ranks, split arrays of at least N elements over them; timeout: seconds a rank may be late at an exchange before it is named (default 60); alone, show the settings"},
        {"compile", ":compile e", "compile the kernels of e for the GPU (or :set arch sm_XY) through the kernel cache and show, per kernel, compile time or cache hit, registers, spills, shared memory and occupancy; works without a GPU"},
        {"mem", ":mem", "show the GPU memory Shoal holds and the pool caches, the device's free and total, and the largest arrays with their bindings"},
        {"cache", ":cache [clear]", "show every cache with its cap (checked statements, launch plans, kernels in memory and on disk, native code, GPU modules) and the kernel cache's hits, misses and compile time; clear: empty the kernel cache"},
        {"ranks", ":ranks", "show the ranks the session runs on (MPI: `shoal --ranks N`, `:set ranks N`, `mpirun -np N shoal`), where each runs, and how arrays are laid out over them"},
        {"device", ":device", "show the GPU kernels run on (name, compute capability, SMs, memory, driver and runtime versions), or why there is none"},
        {"ir", ":ir e", "evaluate e with the array compiler and show its launch plans and kernel IR"},
        {"emit", ":emit f g ... to \"name\"", "write the functions as CUDA kernels with C++ wrappers: name.h, name.cu and shoal_runtime.h, for nvcc (docs/emit.md); (f : type) fixes a polymorphic function's type, f as \"cname\" renames it"},
        {"cuda", ":cuda [--full] e", "evaluate e with the array compiler and show its launch plans and CUDA source (--full: with the helper functions)"},
        {"profile", ":profile e | :profile let x = e", "evaluate e with the array compiler and explain each kernel: launches, time, memory traffic against the least it needs, a roofline estimate for :set gpu, launch geometry, shared memory, registers and spills (for :set arch), and what was fused into which kernel and why arrays were materialised"},
        {"time", ":time e | :time let x = e", "evaluate e, show its value and how long it took (kernel time and launches); with a let, bind x and time its value"},
        {"plot", ":plot e", "plot a vector as a line, a matrix as a heat map, a pair of vectors (x, y) as y over x (SVG in a notebook)"},
        {"hist", ":hist e", "a histogram of the elements of an array (bins chosen from the data)"},
        {"quit", ":quit", "leave Shoal"},
    };
}

}  // namespace

const std::vector<BuiltinDoc>& builtin_docs() {
    static const std::vector<BuiltinDoc> docs = make_builtin_docs();
    return docs;
}

namespace {

// A habit's name -> what Shoal writes, then why or what it gives (may be empty).
const std::pair<const char*, const char*>* find_habit(const std::string& name) {
    static const std::map<std::string, std::pair<const char*, const char*>> habits = {
        {"len", {"length xs", ""}},
        {"size", {"length xs", "or `shape m` for every extent"}},
        {"range", {"iota n", "0, 1, ..., n - 1"}},
        {"zeros", {"fill n 0.0", ""}},
        {"ones", {"fill n 1.0", ""}},
        {"full", {"fill n x", ""}},
        {"sortBy", {"sortByKey keys values", ""}},
        {"fold", {"reduce f z xs", ""}},
        {"foldl", {"reduce f z xs", ""}},
        {"amax", {"maximum xs", ""}},
        {"amin", {"minimum xs", ""}},
        {"concat", {"xs ++ ys", ""}},
        {"concatenate", {"xs ++ ys", ""}},
        {"stack", {"xs ++ ys", "along the outer axis"}},
        {"print", {"xs", "a statement's value is printed"}},
        {"np", {"sum xs", "builtins have plain names, not np.sum(xs)"}},
        // NumPy's methods, attributes and names Shoal spells otherwise
        {"T", {"transpose m", "NumPy's m.T; a view, read in place"}},
        {"astype", {"float xs", "or int, long, double"}},
        {"copy", {"xs", "values never change: no copy is needed"}},
        {"max", {"maximum xs", "max x y is the larger of two values"}},
        {"min", {"minimum xs", "min x y is the smaller of two values"}},
        {"where", {"where c x y", "the elements of x where c holds, else y's"}},
        {"None", {"col v", "NumPy's v[:, None]; v[None, :] is `row v`: an axis of extent 1"}},
        {"newaxis", {"col v", "NumPy's v[:, np.newaxis]; `row v` for v[np.newaxis, :]"}},
        {"percentile", {"quantile (p / 100.0) xs", "quantile takes a fraction"}},
        {"clip", {"min hi (max lo xs)", ""}},
        {"isnan", {"xs != xs", "true exactly for NaN"}},
        {"nonzero", {"compress mask (iota (length mask))", "the indices where a mask holds"}},
        {"argwhere", {"compress mask (iota (length mask))", "the indices where a mask holds"}},
        {"top_k", {"topk k xs", "values and indices, largest first"}},
        {"argpartition", {"topk k xs", "the k largest with their indices"}},
        {"einsum", {"a @ b", "or `sum (x * y)`, `outer x y`"}},
        {"linalg", {"solve a b", "also `inv a`, `det a`"}},
        {"numpy", {"sum xs", "builtins have plain names, not numpy.sum(xs)"}},
    };
    auto it = habits.find(name);
    return it == habits.end() ? nullptr : &it->second;
}

}  // namespace

std::string habit_instead(const std::string& name) {
    const auto* habit = find_habit(name);
    if (!habit) return "";
    const auto& [code, why] = *habit;
    return "Shoal writes `" + std::string(code) + "`" + (*why ? " (" + std::string(why) + ")" : "");
}

std::string habit_code(const std::string& name) {
    const auto* habit = find_habit(name);
    return habit ? habit->first : "";
}

const BuiltinDoc* find_builtin_doc(const std::string& name) {
    const auto& docs = builtin_docs();
    auto it = std::find_if(docs.begin(), docs.end(), [&](const BuiltinDoc& d) { return d.name == name; });
    return it == docs.end() ? nullptr : &*it;
}

const std::vector<CommandDoc>& command_docs() {
    static const std::vector<CommandDoc> docs = make_command_docs();
    return docs;
}

}  // namespace shoal
