// A sampling profile of the host process on request (SHOAL_HOST_SAMPLES=FILE):
// where a statement's host time goes on a machine without perf.
#pragma once

namespace shoal::repl {

// Starts sampling when SHOAL_HOST_SAMPLES names a file (written at exit); else nothing.
void start_host_sampler();

}  // namespace shoal::repl
