/* cli.c - placeholder until written */
#include "policy_internal.h"
