// A clean lang/ file beside the bad one.
#include "lang/value.h"
