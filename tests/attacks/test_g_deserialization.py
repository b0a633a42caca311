"""Group G of attacks.md: deserialization inside the sandbox. A pickle
is a program: the gadget below calls os.system('id') with no import and
no source string. Every route to the unpickler is refused by the API
guard (deserialization), the C Unpickler included (G2, open in the seed:
here the guard judges what the stream names)."""

from harness import API_ERR, api_denied, attack

ALL = "python-import=*\n"
GADGET = "b\"cos\\nsystem\\n(S'id'\\ntR.\""


@attack("G1", "Pickle as a program (pickle.loads, _pickle.loads)")
def test_G1(case, judge):
    out = case.run(ALL, {
        "loads": f"import pickle\nreturn pickle.loads({GADGET})",
        "c_twin": f"import _pickle\nreturn _pickle.loads({GADGET})",
    })
    judge.python(out["loads"], API_ERR,
                 api_denied("pickle.loads", "deserialization"))
    judge.python(out["c_twin"], API_ERR,
                 api_denied("_pickle.loads", "deserialization"))


@attack("G2", "The C Unpickler route (pickle.Unpickler(f).load())")
def test_G2(case, judge):
    out = case.run(ALL, {"unpickler": f"""
        import io, pickle
        return pickle.Unpickler(io.BytesIO({GADGET})).load()
        """})
    judge.python(out["unpickler"], API_ERR,
                 api_denied("pickle.Unpickler", "deserialization"))


@attack("G3", "The pure-Python unpickler (pickle._loads, _Unpickler)")
def test_G3(case, judge):
    out = case.run(ALL, {
        "_loads": f"import pickle\nreturn pickle._loads({GADGET})",
        "_unpickler": f"""
            import io, pickle
            return pickle._Unpickler(io.BytesIO({GADGET})).load()
            """,
    })
    judge.python(out["_loads"], API_ERR,
                 api_denied("pickle._loads", "deserialization"))
    judge.python(out["_unpickler"], API_ERR,
                 api_denied("pickle._Unpickler", "deserialization"))
