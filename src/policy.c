/* policy.c - placeholder while the parser is written */
#include "policy_internal.h"
