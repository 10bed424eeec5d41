#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# make check: the Spack recipe (contrib/spack/package.py) against this tree's configure.
# Spack cannot be installed here, so a small stand-in for its package API (spack.package)
# records the recipe's directives; the recipe's class is then instantiated for a few specs
# (default, cuda_arch=90,100, tests enabled) and every --with/--enable option that
# configure_args() returns must be one `configure --help` lists: configure only warns about
# options it does not know, so a misspelt one would be ignored at install time.  The
# dependency minimums must be the ones configure checks.

import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import types

top_srcdir = os.environ.get("top_srcdir") or os.path.join(os.path.dirname(__file__), "..")
# NCCLX_SPACK_RECIPE: another recipe file to check (to see this test fail on a broken one).
recipe_path = os.environ.get("NCCLX_SPACK_RECIPE") or os.path.join(
    top_srcdir, "contrib", "spack", "package.py"
)
failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)
    return ok


# ---- The stand-in for Spack's package API ----------------------------------------------------

_pending = []  # directives of the class body being executed
_when_stack = []  # constraints of the enclosing `with when(...)` blocks
calls = []  # (what, cwd, args) of every Executable/make call
_cwd = ["<stage>"]


def _directive(kind):
    def record(*args, **kwargs):
        when = list(_when_stack)
        if kwargs.get("when"):
            when.append(kwargs["when"])
        _pending.append({"kind": kind, "args": args, "kwargs": kwargs, "when": when})

    record.__name__ = kind
    return record


version = _directive("version")
variant = _directive("variant")
depends_on = _directive("depends_on")
conflicts = _directive("conflicts")
requires = _directive("requires")
provides = _directive("provides")
license = _directive("license")
maintainers = _directive("maintainers")
patch = _directive("patch")
resource = _directive("resource")
extends = _directive("extends")


class _Multimethod:
    """A method defined under @when(cond): used when the spec satisfies cond, else the
    next definition up the class hierarchy (Spack's multimethods, one condition)."""

    def __init__(self, cond, func):
        self.cond, self.func = cond, func

    def __set_name__(self, owner, name):
        self.owner, self.name = owner, name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        if obj.spec.satisfies(self.cond):
            return self.func.__get__(obj, objtype)
        return getattr(super(self.owner, obj), self.name)


class when:
    def __init__(self, cond):
        self.cond = cond

    def __enter__(self):
        _when_stack.append(self.cond)

    def __exit__(self, *exc):
        _when_stack.pop()

    def __call__(self, func):
        return _Multimethod(self.cond, func)


def run_after(*phases, **kwargs):
    return lambda func: func


run_before = run_after


def on_package_attributes(**attrs):
    return lambda func: func


class Prefix(str):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))


def join_path(*parts):
    return os.path.join(*parts)


class Executable:
    def __init__(self, path):
        self.path = path

    def __call__(self, *args, **kwargs):
        calls.append((self.path, _cwd[-1], args))


def which(name, required=False):
    return Executable(name)


@contextlib.contextmanager
def working_dir(path, create=False):
    _cwd.append(path)
    try:
        yield
    finally:
        _cwd.pop()


class InstallError(Exception):
    pass


class _PackageMeta(type):
    """Collects the directives of a class body, after those of its bases (Spack's
    DirectiveMeta does the same)."""

    def __new__(mcs, name, bases, namespace):
        cls = super().__new__(mcs, name, bases, namespace)
        inherited = []
        for base in reversed(cls.__mro__[1:]):
            for d in base.__dict__.get("_own_directives", []):
                if d not in inherited:
                    inherited.append(d)
        cls._own_directives = list(_pending)
        cls.directives = inherited + cls._own_directives
        _pending.clear()
        return cls


class PackageBase(metaclass=_PackageMeta):
    def __init__(self, spec, run_tests=False):
        self.spec = spec
        self.run_tests = run_tests

    @property
    def prefix(self):
        return Prefix("/opt/stand-in/install/" + self.spec.name)

    @property
    def build_directory(self):
        return "<stage>/spack-build"

    @classmethod
    def of_kind(cls, kind):
        return [d for d in cls.directives if d["kind"] == kind]


class AutotoolsPackage(PackageBase):
    def autoreconf(self, spec, prefix):
        calls.append(("<default autoreconf>", _cwd[-1], ()))

    def configure_args(self):
        return []

    def check(self):
        calls.append(("<default check>", _cwd[-1], ()))


class CudaPackage(PackageBase):
    # Part of Spack's list, enough for the specs below.
    cuda_arch_values = ("70", "75", "80", "86", "89", "90", "90a", "100", "100a", "120")
    variant("cuda", default=False, description="Build with CUDA")
    variant(
        "cuda_arch",
        default="none",
        values=("none",) + cuda_arch_values,
        multi=True,
        description="CUDA architecture",
    )


_api = dict(globals())
spack_package = types.ModuleType("spack.package")
for _name in (
    "version variant depends_on conflicts requires provides license maintainers patch "
    "resource extends when run_after run_before on_package_attributes Prefix join_path "
    "Executable which working_dir InstallError PackageBase"
).split():
    setattr(spack_package, _name, _api[_name])
spack_package.__all__ = [n for n in vars(spack_package) if not n.startswith("_")]
spack_module = types.ModuleType("spack")
spack_module.package = spack_package
sys.modules["spack"] = spack_module
sys.modules["spack.package"] = spack_package
# Since Spack 1.0 the build systems live in the builtin package repository.
for _name, _cls in (("autotools", AutotoolsPackage), ("cuda", CudaPackage)):
    _mod = types.ModuleType("spack_repo.builtin.build_systems." + _name)
    setattr(_mod, _cls.__name__, _cls)
    sys.modules[_mod.__name__] = _mod
for _name in ("spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems"):
    sys.modules[_name] = types.ModuleType(_name)


# ---- Specs ---------------------------------------------------------------------------------


def _version_tuple(v):
    parts = [int(p) for p in v.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


class Variant:
    def __init__(self, name, value):
        self.name, self.value = name, value


class Spec:
    """A concrete spec: name, version, variant values and dependencies."""

    def __init__(self, name, version="1.0", variants=None, deps=None):
        self.name, self.version = name, version
        self.variants = variants or {}
        self.deps = deps or {}
        self.prefix = Prefix("/opt/stand-in/" + name)

    def __getitem__(self, name):
        if name == self.name:
            return self
        if name not in self.deps:
            raise KeyError(f"spec['{name}']: {self.name} has no dependency '{name}' in this spec")
        return self.deps[name]

    def __contains__(self, name):
        return name == self.name or name in self.deps

    def satisfies(self, constraint):
        for tok in constraint.split():
            if tok.startswith("@"):
                want = tok[1:]
                if ":" in want:
                    lo, hi = want.split(":", 1)
                    if not re.fullmatch(r"[0-9.]+", self.version):
                        return False
                    v = _version_tuple(self.version)
                    if (lo and v < _version_tuple(lo)) or (hi and v > _version_tuple(hi)):
                        return False
                elif self.version != want:
                    return False
            elif tok[0] in "+~":
                name = tok[1:]
                if name not in self.variants:
                    raise ValueError(f"'{constraint}': {self.name} has no variant '{name}'")
                if self.variants[name].value != (tok[0] == "+"):
                    return False
            elif "=" in tok:
                name, value = tok.split("=", 1)
                if name not in self.variants:
                    raise ValueError(f"'{constraint}': {self.name} has no variant '{name}'")
                have = self.variants[name].value
                have = have if isinstance(have, tuple) else (have,)
                if not set(value.split(",")) <= set(have):
                    return False
            elif tok != self.name:
                raise ValueError(f"'{constraint}': the stand-in does not understand '{tok}'")
        return True


def _active(spec, directive):
    return all(spec.satisfies(c) for c in directive["when"])


def concretize(cls, run_tests=False, **values):
    """The spec Spack would give `libncclx <values>`: variant defaults, the values asked for,
    and the dependencies whose conditions hold (test ones only when tests run)."""
    variants = {}
    for d in cls.of_kind("variant"):
        name, kw = d["args"][0], d["kwargs"]
        default = kw.get("default")
        if kw.get("multi"):
            default = tuple(sorted(str(default).split(",")))
        variants[name] = Variant(name, default)
    for name, value in values.items():
        check(name in variants, f"the recipe has a '{name}' variant")
        decl = [d for d in cls.of_kind("variant") if d["args"][0] == name][-1]["kwargs"]
        if decl.get("multi"):
            value = tuple(sorted(value.split(",")))  # Spack keeps multi values sorted
            for v in value:
                check(v in decl.get("values", ()), f"{name}={v} is an allowed value")
        variants[name] = Variant(name, value)
    versions = [d["args"][0] for d in cls.of_kind("version")]
    spec = Spec(cls.__name__.lower(), versions[0] if versions else "?", variants)
    for d in cls.of_kind("depends_on"):
        types_ = d["kwargs"].get("type", ("build", "link"))
        types_ = (types_,) if isinstance(types_, str) else tuple(types_)
        if types_ == ("test",) and not run_tests:
            continue
        if _active(spec, d):
            dep = d["args"][0].split()[0].split("@")[0]
            spec.deps.setdefault(dep, Spec(dep))
    return spec


# ---- What configure accepts and requires ---------------------------------------------------


def read(*path):
    with open(os.path.join(top_srcdir, *path), encoding="utf-8") as f:
        return f.read()


def configure_options():
    out = subprocess.run(
        [os.path.join(top_srcdir, "configure"), "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        check=False,
    )
    if out.returncode != 0:
        print(out.stdout)
        sys.exit(f"FAIL: {top_srcdir}/configure --help exited with {out.returncode}")
    opts = set(re.findall(r"^\s+(--(?:with|enable)-[a-z0-9_-]+)(?=[=\[\s]|$)", out.stdout, re.M))
    if "--with-cuda" not in opts:
        sys.exit("FAIL: configure --help lists no --with-cuda: cannot parse its options")
    return opts


def configure_minimums():
    """Package -> the minimum version configure.ac and m4/ check."""
    m4 = "".join(read("m4", f) for f in sorted(os.listdir(os.path.join(top_srcdir, "m4"))))
    ac = read("configure.ac")
    found = {}
    for pkg in ("pmix", "hwloc", "cmocka"):
        m = re.search(r"\[" + pkg + r" >= ([0-9.]+)\]", m4)
        if m:
            found[pkg] = m.group(1)
    m = re.search(r"NCCL_VERSION_CODE < ([0-9]+)", m4)
    if m:
        code = int(m.group(1))
        found["nccl"] = f"{code // 10000}.{code % 10000 // 100}"
    m = re.search(r"AC_PREREQ\(\[([0-9.]+)\]\)", ac)
    if m:
        found["autoconf"] = m.group(1)
    m = re.search(r"AM_INIT_AUTOMAKE\(\[([0-9.]+)", ac)
    if m:
        found["automake"] = m.group(1)
    for pkg in ("pmix", "hwloc", "cmocka", "nccl", "autoconf", "automake"):
        check(pkg in found, f"configure.ac/m4 state a minimum {pkg} version this test can read")
    refused = set(re.findall(r"--without-([a-z0-9_-]+) is not supported", m4))
    return found, refused


# ---- The checks ----------------------------------------------------------------------------


def main():
    spec_ = importlib.util.spec_from_file_location("libncclx_recipe", recipe_path)
    recipe = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(recipe)
    recipe.make = Executable("make")  # Spack puts make into the recipe's module at build time
    cls = recipe.Libncclx
    check(issubclass(cls, AutotoolsPackage) and issubclass(cls, CudaPackage),
          "Libncclx is an AutotoolsPackage and a CudaPackage")
    check(cls.__doc__ and cls.__doc__.strip() != "", "the class has a description")

    # Versions: release tarballs with sha256 (and a url), or git branches/tags/commits.
    versions = cls.of_kind("version")
    check(bool(versions), "the recipe declares versions")
    for d in versions:
        name, kw = d["args"][0], d["kwargs"]
        sha = kw.get("sha256", d["args"][1] if len(d["args"]) > 1 else None)
        if sha is not None:
            check(re.fullmatch(r"[0-9a-f]{64}", sha) is not None and len(set(sha)) > 4,
                  f"version {name}: a real sha256")
            check(bool(getattr(cls, "url", None) or kw.get("url")), f"version {name}: a url")
        else:
            check(any(k in kw for k in ("branch", "tag", "commit")) and bool(getattr(cls, "git", None)),
                  f"version {name}: a git branch/tag/commit of the class's git repository")

    minimums, refused = configure_minimums()
    deps = cls.of_kind("depends_on")
    for pkg, minimum in sorted(minimums.items()):
        bounds = [re.search(r"@([0-9.]+):", d["args"][0]) for d in deps
                  if d["args"][0].split()[0].split("@")[0] == pkg]
        bounds = [b.group(1) for b in bounds if b]
        check(len(bounds) == 1 and _version_tuple(bounds[0]) == _version_tuple(minimum),
              f"depends_on {pkg}@{minimum}: (configure's minimum); recipe has {bounds}")
    check(any(d["args"][0].startswith("cuda@") for d in deps), "depends_on cuda@X:")

    options = configure_options()
    nccl_arch = {}

    def configure_args(what, run_tests=False, **values):
        spec = concretize(cls, run_tests=run_tests, **values)
        for d in cls.of_kind("conflicts"):
            hit = spec.satisfies(d["args"][0]) and _active(spec, d)
            check(not hit, f"{what}: no conflict '{d['args'][0]}' applies")
        nccl_arch[what] = [d["args"][0] for d in deps
                           if d["args"][0].startswith("nccl") and "cuda_arch=" in d["args"][0]
                           and _active(spec, d)]
        pkg = cls(spec, run_tests=run_tests)
        try:
            args = pkg.configure_args()
        except Exception as e:  # the recipe reached for something this spec lacks
            check(False, f"{what}: configure_args() raised {type(e).__name__}: {e}")
            return spec, []
        print(f"      {what}: configure {' '.join(args)}")
        for arg in args:
            m = re.fullmatch(r"--(with|without|enable|disable)-([a-z0-9_-]+)(=.*)?", arg)
            if not check(m is not None, f"{what}: '{arg}' is a --with/--enable option"):
                continue
            word = {"without": "with", "disable": "enable"}.get(m.group(1), m.group(1))
            check(f"--{word}-{m.group(2)}" in options, f"{what}: configure --help lists {arg}")
            if m.group(1) == "without":
                check(m.group(2) not in refused, f"{what}: configure accepts {arg}")
        for dep in ("cuda", "nccl", "pmix", "hwloc"):
            check(f"--with-{dep}={spec[dep].prefix}" in args, f"{what}: --with-{dep}=<its prefix>")
        return spec, args

    spec, args = configure_args("default")
    check(spec.satisfies("+cuda"), "default: +cuda (the recipe turns CudaPackage's default on)")
    check(not any(a.startswith("--with-cuda-arch") for a in args),
          "default (cuda_arch=none): configure's own default architecture")
    check("--without-cmocka" in args and "cmocka" not in spec,
          "default: no test dependency, --without-cmocka")

    spec, args = configure_args("cuda_arch=90,100", cuda_arch="90,100")
    check("--with-cuda-arch=90,100" in args, "cuda_arch=90,100: --with-cuda-arch=90,100")
    check(sorted(nccl_arch["cuda_arch=90,100"]) == ["nccl +cuda cuda_arch=100", "nccl +cuda cuda_arch=90"],
          "cuda_arch=90,100: NCCL is asked for the same architectures")

    spec, args = configure_args("tests (spack install --test=root)", run_tests=True)
    check(f"--with-cmocka={spec['cmocka'].prefix}" in args,
          "tests: --with-cmocka=<cmocka's prefix> (the unit tests are built)")

    # ~cuda must be refused by a conflict.
    spec = concretize(cls, cuda=False)
    check(any(spec.satisfies(d["args"][0]) and _active(spec, d) for d in cls.of_kind("conflicts")),
          "~cuda is a conflict")

    # A git checkout runs autogen.sh; check() runs make check in the build directory.
    pkg = cls(concretize(cls), run_tests=True)
    calls.clear()
    pkg.autoreconf(pkg.spec, pkg.prefix)
    autogen = os.path.join(top_srcdir, "autogen.sh")
    check(calls == [("./autogen.sh", "<stage>", ())] and os.access(autogen, os.X_OK),
          f"@{pkg.spec.version}: autoreconf runs ./autogen.sh (executable in the tree): {calls}")
    calls.clear()
    pkg.check()
    check(calls == [("make", pkg.build_directory, ("check",))],
          f"check() runs make check in the build directory: {calls}")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("the Spack recipe matches configure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
