// A codegen file that reaches into an executor: check_layers.cmake must refuse it.
#include "runtime/cpu/executor.h"
