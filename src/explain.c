/* explain.c - placeholder until written */
