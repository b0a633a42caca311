/* capi.c - resolve the CPython C API with dlsym() (see capi.h). */
#include "capi.h"

#include <dlfcn.h>

struct sb_capi py;

int sb_capi_load(const char **missing)
{
	void *sym;

#define SB_CAPI_RESOLVE(ret, name, args)                                       \
	sym = dlsym(RTLD_DEFAULT, #name);                                      \
	if (!sym) {                                                            \
		*missing = #name;                                              \
		return -1;                                                     \
	}                                                                      \
	*(void **)&py.name = sym;
	SB_CAPI_FUNCTIONS(SB_CAPI_RESOLVE)
#undef SB_CAPI_RESOLVE
	/* a type object is the variable itself */
#define SB_CAPI_RESOLVE_TYPE(name)                                             \
	sym = dlsym(RTLD_DEFAULT, #name);                                      \
	if (!sym) {                                                            \
		*missing = #name;                                              \
		return -1;                                                     \
	}                                                                      \
	py.name = (PyObject *)sym;
	SB_CAPI_TYPES(SB_CAPI_RESOLVE_TYPE)
#undef SB_CAPI_RESOLVE_TYPE
	/* an exception is a PyObject * variable: read it when needed, it is
	 * only set once the interpreter initialises */
#define SB_CAPI_RESOLVE_EXC(name)                                              \
	sym = dlsym(RTLD_DEFAULT, #name);                                      \
	if (!sym) {                                                            \
		*missing = #name;                                              \
		return -1;                                                     \
	}                                                                      \
	py.name = (PyObject *)sym;
	SB_CAPI_EXCEPTIONS(SB_CAPI_RESOLVE_EXC)
#undef SB_CAPI_RESOLVE_EXC
	return 0;
}
