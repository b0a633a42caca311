/* dns.c - placeholder until written */
