/* capi.h - the slice of CPython's C API the guard uses, resolved at run time.
 *
 * The guard is compiled without Python headers and linked without libpython:
 * every function and data symbol is looked up with dlsym() when the library
 * loads, so one build serves every CPython from 3.9 on, and a non-Python
 * program that inherits the library loads it without "undefined symbol".
 * Only functions whose signature is stable across those versions appear
 * here; object layouts are never touched (no Py_INCREF macro, no ob_type).
 */
#ifndef SB_CAPI_H
#define SB_CAPI_H

#include <stddef.h>
#include <sys/types.h>

typedef struct _object PyObject;
typedef ssize_t Py_ssize_t;
typedef PyObject *(*PyCFunction)(PyObject *, PyObject *);
typedef int (*Py_AuditHookFunction)(const char *, PyObject *, void *);

struct py_method_def {
	const char *ml_name;
	void *ml_meth;
	int ml_flags;
	const char *ml_doc;
};

#define PY_METH_VARARGS 0x0001
#define PY_METH_KEYWORDS 0x0002
#define PY_METH_O 0x0008

/* X(return type, name, arguments) for every function we resolve.
 * Py_DecRef is CPython's Py_XDECREF: it lets NULL go. */
#define SB_CAPI_FUNCTIONS(X)                                                   \
	X(int, PySys_AddAuditHook, (Py_AuditHookFunction, void *))             \
	X(void, Py_IncRef, (PyObject *))                                       \
	X(void, Py_DecRef, (PyObject *))                                       \
	X(Py_ssize_t, PyTuple_Size, (PyObject *))                              \
	X(PyObject *, PyTuple_GetItem, (PyObject *, Py_ssize_t))               \
	X(PyObject *, PyTuple_New, (Py_ssize_t))                               \
	X(int, PyTuple_SetItem, (PyObject *, Py_ssize_t, PyObject *))          \
	X(const char *, PyUnicode_AsUTF8AndSize, (PyObject *, Py_ssize_t *))   \
	X(PyObject *, PyUnicode_FromString, (const char *))                    \
	X(PyObject *, PyUnicode_DecodeFSDefault, (const char *))               \
	X(PyObject *, PyUnicode_EncodeFSDefault, (PyObject *))                 \
	X(int, PyBytes_AsStringAndSize, (PyObject *, char **, Py_ssize_t *))  \
	X(long, PyLong_AsLong, (PyObject *))                                   \
	X(PyObject *, PyLong_FromLong, (long))                                 \
	X(PyObject *, PyNumber_Index, (PyObject *))                            \
	X(PyObject *, PyBool_FromLong, (long))                                 \
	X(PyObject *, PyOS_FSPath, (PyObject *))                               \
	X(void, PyErr_SetObject, (PyObject *, PyObject *))                     \
	X(void, PyErr_SetString, (PyObject *, const char *))                   \
	X(PyObject *, PyErr_SetFromErrno, (PyObject *))                        \
	X(PyObject *, PyErr_SetFromErrnoWithFilenameObject,                    \
	  (PyObject *, PyObject *))                                            \
	X(int, PyErr_WarnEx, (PyObject *, const char *, Py_ssize_t))           \
	X(int, PySys_Audit, (const char *, const char *, ...))                 \
	X(PyObject *, PyErr_Occurred, (void))                                  \
	X(void, PyErr_Clear, (void))                                           \
	X(void, PyErr_Fetch, (PyObject **, PyObject **, PyObject **))          \
	X(void, PyErr_Restore, (PyObject *, PyObject *, PyObject *))           \
	X(void, PyErr_WriteUnraisable, (PyObject *))                           \
	X(void, PyErr_Print, (void))                                           \
	X(int, PyErr_ExceptionMatches, (PyObject *))                           \
	X(int, PyErr_GivenExceptionMatches, (PyObject *, PyObject *))          \
	X(PyObject *, PyImport_ImportModule, (const char *))                   \
	X(PyObject *, PyImport_GetModuleDict, (void))                          \
	X(PyObject *, PyObject_GetAttrString, (PyObject *, const char *))      \
	X(PyObject *, PyObject_GetAttr, (PyObject *, PyObject *))              \
	X(PyObject *, PyUnicode_InternFromString, (const char *))              \
	X(int, PyObject_SetAttrString, (PyObject *, const char *, PyObject *)) \
	X(int, PyObject_HasAttrString, (PyObject *, const char *))             \
	X(PyObject *, PyObject_Call, (PyObject *, PyObject *, PyObject *))     \
	X(PyObject *, PyObject_CallObject, (PyObject *, PyObject *))           \
	X(int, PyObject_IsInstance, (PyObject *, PyObject *))                  \
	X(int, PyObject_IsSubclass, (PyObject *, PyObject *))                  \
	X(int, PyObject_IsTrue, (PyObject *))                                  \
	X(PyObject *, PyObject_Str, (PyObject *))                              \
	X(PyObject *, PyDict_GetItemString, (PyObject *, const char *))        \
	X(int, PyDict_SetItemString, (PyObject *, const char *, PyObject *))   \
	X(PyObject *, PyDict_New, (void))                                      \
	X(int, PyDict_SetItem, (PyObject *, PyObject *, PyObject *))           \
	X(PyObject *, PyDict_GetItem, (PyObject *, PyObject *))                \
	X(PyObject *, PyDict_Copy, (PyObject *))                               \
	X(int, PyDict_Next,                                                    \
	  (PyObject *, Py_ssize_t *, PyObject **, PyObject **))                \
	X(PyObject *, PyObject_Type, (PyObject *))                             \
	X(void, PyDict_Clear, (PyObject *))                                    \
	X(PyObject *, PyLong_FromVoidPtr, (void *))                            \
	X(PyObject *, PyObject_GetIter, (PyObject *))                          \
	X(PyObject *, PySequence_List, (PyObject *))                           \
	X(Py_ssize_t, PyDict_Size, (PyObject *))                               \
	X(PyObject *, PyModule_GetDict, (PyObject *))                          \
	X(PyObject *, PyModule_New, (const char *))                            \
	X(void *, PyModule_GetDef, (PyObject *))                               \
	X(PyObject *, PySys_GetObject, (const char *))                         \
	X(Py_ssize_t, PyList_Size, (PyObject *))                               \
	X(PyObject *, PyList_GetItem, (PyObject *, Py_ssize_t))                \
	X(PyObject *, PyList_New, (Py_ssize_t))                                \
	X(int, PyList_Append, (PyObject *, PyObject *))                        \
	X(int, PyList_Insert, (PyObject *, Py_ssize_t, PyObject *))            \
	X(PyObject *, PyCFunction_NewEx,                                       \
	  (struct py_method_def *, PyObject *, PyObject *))                    \
	X(PyObject *, PyCapsule_New, (void *, const char *, void *))           \
	X(void *, PyCapsule_GetPointer, (PyObject *, const char *))            \
	X(PyObject *, PyEval_GetFrame, (void))                                 \
	X(PyObject *, PyFrame_GetCode, (PyObject *))                           \
	X(PyObject *, PyFrame_GetBack, (PyObject *))                           \
	X(int, PyFrame_GetLineNumber, (PyObject *))                            \
	X(PyObject *, PyIter_Next, (PyObject *))                               \
	X(PyObject *, PyRun_String, (const char *, int, PyObject *, PyObject *)) \
	X(PyObject *, PyEval_GetBuiltins, (void))                              \
	X(PyObject *, PyObject_Repr, (PyObject *))                             \
	X(PyObject *, PyBytes_FromObject, (PyObject *))                        \
	X(int, PyObject_CheckBuffer, (PyObject *))                             \
	X(PyObject *, PyInstanceMethod_New, (PyObject *))                      \
	X(int, PySet_Contains, (PyObject *, PyObject *))                       \
	X(int, PySet_Discard, (PyObject *, PyObject *))                        \
	X(int, PySet_Add, (PyObject *, PyObject *))                            \
	X(PyObject *, PyObject_GetItem, (PyObject *, PyObject *))              \
	X(int, PyDict_DelItem, (PyObject *, PyObject *))                       \
	X(Py_ssize_t, PyObject_Length, (PyObject *))                           \
	X(void, PyType_Modified, (PyObject *))                                 \
	X(void *, PyThreadState_GetInterpreter, (void *))

/* Data symbols: the address dlsym() returns is that of the variable. */
#define SB_CAPI_TYPES(X)                                                       \
	X(PyUnicode_Type)                                                      \
	X(PyBytes_Type)                                                        \
	X(PyLong_Type)                                                         \
	X(PyTuple_Type)                                                        \
	X(PyList_Type)                                                         \
	X(PyByteArray_Type)                                                    \
	X(PyCode_Type)                                                         \
	X(PyDict_Type)                                                         \
	X(PyMemoryView_Type)                                                   \
	X(_Py_NoneStruct)                                                       \
	X(PyType_Type)

#define SB_CAPI_EXCEPTIONS(X)                                                  \
	X(PyExc_TypeError)                                                     \
	X(PyExc_RuntimeError)                                                  \
	X(PyExc_PermissionError)                                               \
	X(PyExc_OSError)                                                       \
	X(PyExc_RuntimeWarning)                                                \
	X(PyExc_AttributeError)                                                \
	X(PyExc_SystemExit)

struct sb_capi {
#define SB_CAPI_FIELD(ret, name, args) ret(*name) args;
	SB_CAPI_FUNCTIONS(SB_CAPI_FIELD)
#undef SB_CAPI_FIELD
#define SB_CAPI_TYPE_FIELD(name) PyObject *name;
	SB_CAPI_TYPES(SB_CAPI_TYPE_FIELD)
	SB_CAPI_EXCEPTIONS(SB_CAPI_TYPE_FIELD)
#undef SB_CAPI_TYPE_FIELD
};

/* The table, filled by sb_capi_load(). */
extern struct sb_capi py;

/* Resolve everything; 0, or -1 with the name of the first missing symbol. */
int sb_capi_load(const char **missing);

/* PyRun_String's start token for a module body. */
#define PY_FILE_INPUT 257

#endif
