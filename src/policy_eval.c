/* policy_eval.c - placeholder until written */
#include "policy_internal.h"
