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
	/* code that is no type expression */
	{ "print('RAN')", 0 },
	{ "__import__('os').system('id')", 0 },
	{ "List[print('RAN')]", 0 },
	{ "Annotated[print('RAN'), int]", 0 },
	{ "Annotated[int, __import__('os').system('id')]", 0 },
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
	{ "x.y()", 0 },
	{ "'unterminated", 0 },
	{ "", 0 },
	{ "0x1for[print(1)]", 0 },
	{ "1e-print(1)", 0 },
	{ "await x", 0 },
	{ "'a' 'b' [print(1)]", 0 },
};

struct tpl_case {
	const char *src;
	int want;
};

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
