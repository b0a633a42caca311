/* test_codeshape.c - the shapes of source the standard library's code
 * makers may compile without a dynamic-code rule (guard/codeshape.c), by
 * tables: type expressions typing and inspect evaluate, and code that
 * tries to pass as one; the multiprocessing templates with an identifier,
 * and with a name that carries code. */
#include <stdio.h>
#include <string.h>

#include "codeshape.h"
#include "tap.h"

struct shape_case {
	const char *src;
	int want;
};

static const struct shape_case types[] = {
	{ "int", 1 },
	{ "List[int]", 1 },
	{ "typing.Dict[str, 'Node']", 1 },
	{ "dict[str, list[int]] | None", 1 },
	{ "Tuple[()]", 1 },
	{ "Callable[[int, str], bool]", 1 },
	{ "Callable[..., Any]", 1 },
	{ "Literal['a', \"b\", 1, -2, b'x', None, True]", 1 },
	{ "(*Ts,)[0]", 1 },
	{ "Annotated[int, Field(gt=0)]", 1 },
	{ "Annotated[int, Field(default_factory=list), annotated_types.Gt(0)]", 1 },
	{ "Annotated[float, Interval(lo=Decimal('1.5'))]", 1 },
	{ "sys.maxsize", 1 },
	{ "1.5e-3", 1 },
	{ "'''multi\nline'''", 1 },
	{ "r'\\d+'", 1 },
	{ " Optional[\n  int\n] ", 1 },
	/* a call of a dotted name, anywhere (pydantic's conint(gt=0)): the
	 * call the program could make itself, judged as its own */
	{ "conint(gt=0)", 1 },
	{ "Optional[constr(max_length=5)]", 1 },
	{ "conlist(int, min_items=1) | None", 1 },
	{ "print('RAN')", 1 },
	{ "List[print('RAN')]", 1 },
	{ "Annotated[print('RAN'), int]", 1 },
	{ "x.y()", 1 },
	/* code that is no type expression */
	{ "__import__('os').system('id')", 0 },
	{ "Annotated[int, __import__('os').system('id')]", 0 },
	{ "f()()", 0 },
	{ "f().y", 1 },
	{ "f().y()", 0 },
	{ "f(x)[0]()", 0 },
	{ "(f)(1)", 0 },
	{ "'a'.join(x)", 0 },
	{ "x[0](1)", 0 },
	{ "getattr(builtins, 'exec')('1')", 0 },
	{ "Annotated[int, (lambda: 1)()]", 0 },
	{ "Annotated[int, Field(**kw)]", 0 },
	{ "lambda: 0", 0 },
	{ "[x for x in y]", 0 },
	{ "a if b else c", 0 },
	{ "not a", 0 },
	{ "(x := 1)", 0 },
	{ "f'{print(1)}'", 0 },
	{ "rf'{print(1)}'", 0 },
	{ "F\"{x}\"", 0 },
	{ "int # comment", 0 },
	{ "int \\\n", 0 },
	{ "x[1:2]", 0 },
	{ "1 + 2", 0 },
	{ "'a' * 10", 0 },
	{ "int\nprint(1)", 0 },
	{ "int; print(1)", 0 },
	{ "'unterminated", 0 },
	{ "", 0 },
	{ "0x1for[__import__('os').system('id')]", 0 },
	{ "0x1for[f][0]()", 0 },
	{ "1e-print(1)", 0 },
	{ "await x", 0 },
	{ "'a' 'b' [f()()]", 0 },
};

struct tpl_case {
	const char *src;
	int want;
};

/* dataclasses' generated code, as CPython 3.9 and 3.13 write it, and the
 * same with a field name that carries code */
static const struct shape_case dataclass_texts[] = {
	{ "def __create_fn__(_type_x, _type_y, MISSING, _HAS_DEFAULT_FACTORY, "
	  "_dflt_y, BUILTINS, _return_type):\n"
	  " def __init__(self,x:_type_x,y:_type_y=_HAS_DEFAULT_FACTORY)"
	  "->_return_type:\n"
	  "  BUILTINS.object.__setattr__(self,'x',x)\n"
	  "  BUILTINS.object.__setattr__(self,'y',_dflt_y() if y is "
	  "_HAS_DEFAULT_FACTORY else y)\n"
	  "  self.__post_init__()\n"
	  " return __init__",
	  1 },
	{ "def __create_fn__(BUILTINS):\n def __repr__(self):\n"
	  "  return self.__class__.__qualname__ + f\"(x={self.x!r}, "
	  "y={self.y!r})\"\n return __repr__",
	  1 },
	{ "def __create_fn__(cls, FrozenInstanceError, BUILTINS):\n"
	  " def __setattr__(self,name,value):\n"
	  "  if type(self) is cls or name in ('x','y',):\n"
	  "   raise FrozenInstanceError(f\"cannot assign to field "
	  "{name!r}\")\n"
	  "  super(cls, self).__setattr__(name, value)\n"
	  " return __setattr__",
	  1 },
	{ "def __create_fn__(__dataclass_type_a__,__dataclass_dflt_a__,"
	  "__dataclasses_recursive_repr):\n"
	  " def __init__(self,a:__dataclass_type_a__=__dataclass_dflt_a__):\n"
	  "  self.a=a\n"
	  " @__dataclasses_recursive_repr()\n"
	  " def __repr__(self):\n"
	  "  return f\"{self.__class__.__qualname__}(a={self.a!r})\"\n"
	  " def __eq__(self,other):\n"
	  "  if self is other:\n   return True\n"
	  "  if other.__class__ is self.__class__:\n"
	  "   return self.a==other.a\n"
	  "  return NotImplemented\n"
	  " def __hash__(self):\n  return hash((self.a,))\n"
	  " return (__init__,__repr__,__eq__,__hash__,)",
	  1 },
	/* a name "x,print('RAN')" in __eq__ and __repr__ */
	{ "def __create_fn__(BUILTINS):\n def __eq__(self,other):\n"
	  "  if other.__class__ is self.__class__:\n"
	  "   return (self.x,print('RAN'),)==(other.x,print('RAN'),)\n"
	  "  return NotImplemented\n return __eq__",
	  0 },
	{ "def __create_fn__(BUILTINS):\n def __repr__(self):\n"
	  "  return f\"(x={self.x!r}{print(1)})\"\n return __repr__",
	  0 },
	{ "def __create_fn__(BUILTINS):\n def __repr__(self):\n"
	  "  return f\"(x=\\{print(1)})\"\n return __repr__",
	  0 },
	{ "def __create_fn__(BUILTINS):\n def __repr__(self):\n"
	  "  return f\"(x={self.x['a']})\"\n return __repr__",
	  0 },
	{ "@print\ndef f(): pass", 0 },
	{ "import os", 0 },
	{ "def f(a=__import__('os')): pass", 0 },
	{ "super(cls, self).__setattr__.__self__.__class__('x')", 0 },
	{ "self.__post_init__()()", 0 },
	{ "self.__post_init__.__globals__['os'].system('id')", 0 },
	{ "x = 1 # comment", 0 },
	{ "x = 1; y = 2", 0 },
	{ "x = [print for _ in ()]\ny = x[0]('RAN')", 0 },
	{ "class C: pass", 0 },
	{ "f = lambda: 0", 0 },
	{ "rf'{x}' 'a'(1)", 0 },
	{ "print\t('RAN')", 0 },
	{ "print\n('RAN')", 0 },
};

#define MOCK_BODY                                                              \
	"(*args, **kwargs):\n    _checksig_(*args, **kwargs)\n"                  \
	"    return mock(*args, **kwargs)"
#define MOCK_F "def f" MOCK_BODY
#define MOCK_EVIL "def x(*a, **k):\n    pass\nprint(1)\ndef y" MOCK_BODY

static const struct tpl_case managers[] = {
	{ "def get(self, /, *args, **kwds):\n"
	  "        return self._callmethod('get', args, kwds)",
	  1 },
	{ "def __getitem__(self, /, *args, **kwds):\n"
	  "        return self._callmethod('__getitem__', args, kwds)",
	  1 },
	/* a name that is not the same at both slots */
	{ "def get(self, /, *args, **kwds):\n"
	  "        return self._callmethod('put', args, kwds)",
	  0 },
	/* a name that carries code */
	{ "def f(self):\n  print(4)\ndef g(self, /, *args, **kwds):\n"
	  "        return self._callmethod('f(self):\\n  print(4)\\ndef g', "
	  "args, kwds)",
	  0 },
	{ "def f(self, x=print(1)) -> None:\n  return print(2)\n#(self, /, "
	  "*args, **kwds):\n        return self._callmethod('x', args, kwds)",
	  0 },
	{ "def get(self, /, *args, **kwds):\n"
	  "        return self._callmethod('get', args, kwds)\nprint(1)",
	  0 },
};

/* template with its %s slots filled: the first with first, the others
 * with rest (what sharedctypes' template % ((name,)*7) makes). */
static void fill(char *out, size_t size, const char *t, const char *first,
		 const char *rest)
{
	size_t o = 0;
	int slot = 0;

	for (; *t && o + 1 < size; t++) {
		if (t[0] == '%' && t[1] == 's') {
			const char *v = slot++ ? rest : first;

			while (*v && o + 1 < size)
				out[o++] = *v++;
			t++;
		} else {
			out[o++] = *t;
		}
	}
	out[o] = '\0';
}

int main(void)
{
	char prop[1024];
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		ok(sb_shape_type_expression(types[i].src,
					    strlen(types[i].src)) ==
			   (types[i].want == 1),
		   "type expression %s: %s", types[i].want ? "yes" : "no",
		   types[i].src);
	ok(!sb_shape_type_expression("int\0print(1)", 12),
	   "a NUL inside is no type expression");
	{
		char deep[300];

		memset(deep, '[', 150);
		memset(deep + 150, ']', 150);
		ok(!sb_shape_type_expression(deep, 300),
		   "nesting past the bound is refused, not recursed");
	}
	for (i = 0; i < sizeof(dataclass_texts) / sizeof(dataclass_texts[0]);
	     i++)
		ok(sb_shape_dataclass_code(dataclass_texts[i].src,
					   strlen(dataclass_texts[i].src)) ==
			   (dataclass_texts[i].want == 1),
		   "dataclass code %s: case %zu",
		   dataclass_texts[i].want ? "passes" : "refused", i);
	ok(sb_shape_template(MOCK_F, strlen(MOCK_F), sb_shape_mock_function),
	   "mock function for f fits");
	ok(!sb_shape_template(MOCK_EVIL, strlen(MOCK_EVIL),
			      sb_shape_mock_function),
	   "mock function with code in its name does not fit");
	for (i = 0; i < sizeof(managers) / sizeof(managers[0]); i++)
		ok(sb_shape_template(managers[i].src, strlen(managers[i].src),
				     sb_shape_managers_method) ==
			   (managers[i].want == 1),
		   "managers template %s: case %zu",
		   managers[i].want ? "fits" : "does not fit", i);
	fill(prop, sizeof(prop), sb_shape_sharedctypes_property, "x", "x");
	ok(sb_shape_template(prop, strlen(prop),
			     sb_shape_sharedctypes_property),
	   "sharedctypes property for x fits");
	fill(prop, sizeof(prop), sb_shape_sharedctypes_property,
	     "x(self):\n    print(5)\n#", "x");
	ok(!sb_shape_template(prop, strlen(prop),
			      sb_shape_sharedctypes_property),
	   "sharedctypes property with code in the name does not fit");
	return tap_done();
}
