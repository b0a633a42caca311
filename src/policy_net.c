/* policy_net.c - placeholder until written */
#include "policy_internal.h"
