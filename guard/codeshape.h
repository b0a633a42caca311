/* codeshape.h - the shapes of source the standard library's code makers may
 * turn into code for the program without a dynamic-code rule (weaknesses.md
 * 9). Pure: text in, yes or no out, no Python object and no allocation, so
 * a program cannot change how a shape is read (an AST would be read through
 * classes it may patch) and the unit tests (tests/unit/test_codeshape.c)
 * feed it text.
 */
#ifndef SB_CODESHAPE_H
#define SB_CODESHAPE_H

#include <stdbool.h>
#include <stddef.h>

/* A type expression as typing and inspect evaluate it (a string annotation,
 * a ForwardRef, a text signature's default): names, attributes, subscripts,
 * tuples and lists, string, bytes and number literals, `...`, `|` and a
 * unary minus, and calls of a dotted name with such arguments
 * (`Annotated[int, Field(gt=0)]`, pydantic's `conint(gt=0)`): the calls
 * the program could make itself, each judged as its own, and nothing else
 * (no call of what an expression returned, lambda, comprehension,
 * operator, f-string, walrus, keyword expression, comment or line
 * continuation). */
bool sb_shape_type_expression(const char *s, size_t n);

/* Is src exactly template with each %s replaced by one identifier and
 * each %r by that identifier's repr ('name'), the same identifier at
 * every slot? (multiprocessing.managers' proxy methods, sharedctypes'
 * properties: a method name like "f(self):\n  evil()\ndef g" no longer
 * fits.) */
bool sb_shape_template(const char *src, size_t n, const char *template);

/* Code dataclasses generates (its __init__, __repr__, __eq__...): a field
 * name is formatted into it unchecked, and a name such as
 * "x,print('RAN')" turned (self.x,self.y,) into code of the program's
 * choosing. The text may call only the names the templates call (super,
 * type, hash, FrozenInstanceError, __setattr__, __delattr__,
 * __post_init__, a default factory, 3.13's recursive-repr decorator), by
 * name, never what an expression returned; no import, class, with,
 * lambda, comment, continuation or ';'; an f-string's fields only name
 * attributes. */
bool sb_shape_dataclass_code(const char *s, size_t n);

/* The templates the standard library formats with a name it was given, as
 * CPython 3.9 to 3.13 spell them (a later spelling needs a rule: fails
 * closed). */
extern const char sb_shape_mock_function[];
extern const char sb_shape_managers_method[];
extern const char sb_shape_sharedctypes_property[];

#endif
