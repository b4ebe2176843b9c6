// The executor's names for the scalar semantics of the kernel IR: the lane
// types, the one switch on a ScalarType (codegen/scalar_eval.h) and the
// operations of lang/scalar_semantics.h, where they are defined once. The
// executor's vector nodes apply these in tight loops; they are the very
// same inline templates, so the loops compile as if written here.
#pragma once
#include "codegen/scalar_eval.h"
#include "lang/scalar_semantics.h"

namespace shoal::cpu {

// Lane storage types: Bool is one byte holding 0 or 1 (as in memory).
using scalar::is_bool_v;
using scalar::is_fp_v;
using scalar::is_int_v;

using ir::TypeTag;
using ir::with_type;

namespace ops {
using scalar::abs;
using scalar::add;
using scalar::convert;
using scalar::div;
using scalar::max;
using scalar::min;
using scalar::mod;
using scalar::mul;
using scalar::mulhi;
using scalar::neg;
using scalar::pow;
using scalar::saturate;
using scalar::shl;
using scalar::shr;
using scalar::sub;
}  // namespace ops

}  // namespace shoal::cpu
