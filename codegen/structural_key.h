// A compact, injective encoding of kernel IR for keys (the structural plan
// cache, plan_memo.h). Printing the IR as text for a key was most of a
// probe's cost (~11k of 15k instructions a plan); this appends each node's
// kind, type, operator, constant bits and length-prefixed names, so two
// different trees never give the same bytes. Not for reading: :ir prints.
// Source positions are left out, as to_string_without_positions does.
#pragma once
#include <string>

#include "codegen/ir.h"

namespace shoal::ir {

void append_key(std::string& out, const ExprPtr& e);
// A count (of operands, components, ...) in the same encoding.
void append_count(std::string& out, size_t n);
void append_key(std::string& out, const Kernel& k);

}  // namespace shoal::ir
