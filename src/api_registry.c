/* api_registry.c - placeholder until written */
#include "policy_internal.h"
