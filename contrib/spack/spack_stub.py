#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""spack_stub: runs contrib/spack/package.py without Spack, for check-recipe.sh.

    spack_stub.py package.py [--variants '+cuda cuda_arch=80,90 +ucx'] [--prefix P]
                  [--dep NAME=PREFIX ...]

Provides the few names of Spack's package API that the recipe uses (a fake "spack.package"
module), loads the recipe with it, builds a spec from --variants and --dep, and prints JSON:

    {"configure": [...configure arguments...], "env": [[action, variable, value], ...],
     "variants": [...], "depends_on": [[spec, when], ...]}

The arguments are those Spack's AutotoolsPackage would give configure after --prefix; the env
actions are those of setup_run_environment (spack load and Spack's generated modules).  It
imports nothing from Spack: what it checks is the recipe's own logic, Spack's API it mimics.
"""

import argparse
import json
import os
import sys
import types

DIRECTIVES = {"variants": [], "depends_on": [], "conflicts": [], "versions": []}


class Prefix(str):
    """Spack's Prefix: a path whose attributes are sub-directories (prefix.lib.openmpi)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))

    def join(self, name):
        return Prefix(os.path.join(self, name))


class Variant:
    def __init__(self, value):
        self.value = value


class Dep:
    def __init__(self, prefix):
        self.prefix = Prefix(prefix)


class Spec:
    def __init__(self, variants, deps):
        self.variants = variants  # name -> Variant
        self.deps = deps  # name -> Dep

    def satisfies(self, constraint):
        ok = True
        for word in constraint.split():
            if word.startswith("+"):
                v = self.variants.get(word[1:])
                ok = ok and v is not None and v.value is True
            elif word.startswith("~"):
                v = self.variants.get(word[1:])
                ok = ok and (v is None or v.value is False)
            elif "=" in word:
                name, value = word.split("=", 1)
                v = self.variants.get(name)
                ok = ok and v is not None and set(value.split(",")) <= set(
                    v.value if isinstance(v.value, tuple) else (v.value,))
            else:
                raise ValueError("stub: cannot evaluate spec constraint %r" % word)
        return ok

    def __contains__(self, name):
        return name in self.deps

    def __getitem__(self, name):
        if name not in self.deps:
            raise KeyError("stub: the spec has no dependency %r (give --dep %s=PREFIX)"
                           % (name, name))
        return self.deps[name]


class Env:
    def __init__(self):
        self.actions = []

    def prepend_path(self, name, value, separator=":"):
        self.actions.append(["prepend_path", name, str(value)])

    def append_path(self, name, value, separator=":"):
        self.actions.append(["append_path", name, str(value)])

    def set(self, name, value):
        self.actions.append(["set", name, str(value)])

    def unset(self, name):
        self.actions.append(["unset", name, ""])


def _directive(kind):
    def record(*args, **kwargs):
        DIRECTIVES[kind].append([list(map(str, args)), {k: str(v) for k, v in kwargs.items()}])
    return record


def _decorator_factory(*args, **kwargs):
    def wrap(f):
        return f
    return wrap


class InstallError(Exception):
    pass


class PackageBase:
    def __init__(self, spec, prefix):
        self.spec = spec
        self.prefix = Prefix(prefix)


class AutotoolsPackage(PackageBase):
    pass


class CudaPackage(PackageBase):
    # Spack's CudaPackage: variant cuda (default off), cuda_arch (multi-valued, default none)
    # and depends_on("cuda", when="+cuda").
    pass


def _stub_module():
    mod = types.ModuleType("spack.package")
    mod.AutotoolsPackage = AutotoolsPackage
    mod.CudaPackage = CudaPackage
    mod.InstallError = InstallError
    mod.variant = _directive("variants")
    mod.depends_on = _directive("depends_on")
    mod.conflicts = _directive("conflicts")
    mod.version = _directive("versions")
    mod.maintainers = _directive("versions")
    mod.license = _directive("versions")
    mod.run_after = _decorator_factory
    mod.run_before = _decorator_factory
    mod.on_package_attributes = _decorator_factory
    mod.when = _decorator_factory
    mod.join_path = lambda *p: os.path.join(*map(str, p))
    mod.Executable = lambda *a, **k: None
    mod.make = lambda *a, **k: None
    mod.__all__ = [n for n in dir(mod) if not n.startswith("_")]
    pkg = types.ModuleType("spack")
    pkg.package = mod
    sys.modules["spack"] = pkg
    sys.modules["spack.package"] = mod


def parse_variants(text):
    """'+cuda cuda_arch=80,90 ~ucx' -> {name: Variant}; the defaults of the recipe first."""
    variants = {"cuda": Variant(False), "cuda_arch": Variant(("none",))}
    for args, kwargs in DIRECTIVES["variants"]:
        default = kwargs.get("default", "False")
        variants[args[0]] = Variant(default == "True" if default in ("True", "False")
                                    else default)
    for word in text.split():
        if word.startswith("+"):
            variants[word[1:]] = Variant(True)
        elif word.startswith("~"):
            variants[word[1:]] = Variant(False)
        elif "=" in word:
            name, value = word.split("=", 1)
            variants[name] = Variant(tuple(value.split(",")))
    return variants


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("recipe")
    ap.add_argument("--variants", default="")
    ap.add_argument("--prefix", default="/opt/spack/coll-gpu")
    ap.add_argument("--dep", action="append", default=[], metavar="NAME=PREFIX")
    opt = ap.parse_args()

    _stub_module()
    ns = {"__name__": "spack_recipe", "__file__": opt.recipe}
    with open(opt.recipe) as f:
        code = compile(f.read(), opt.recipe, "exec")
    exec(code, ns)
    classes = [v for v in ns.values() if isinstance(v, type) and issubclass(v, AutotoolsPackage)
               and v not in (AutotoolsPackage, CudaPackage, PackageBase)]
    if len(classes) != 1:
        sys.exit("spack_stub: expected one package class in %s" % opt.recipe)
    cls = classes[0]

    variants = parse_variants(opt.variants)
    deps = dict(d.split("=", 1) for d in opt.dep)
    spec = Spec(variants, {k: Dep(v) for k, v in deps.items()})
    # The recipe's link and run dependencies that apply to this spec must have been given
    # (build tools are the build machine's here).
    for args, kwargs in DIRECTIVES["depends_on"]:
        name = args[0].split("@")[0].split()[0]
        if kwargs.get("type", "") == "build":
            continue
        when = kwargs.get("when", "")
        if (not when or spec.satisfies(when)) and name not in spec:
            sys.exit("spack_stub: the recipe depends on %s here: give --dep %s=PREFIX"
                     % (name, name))
    if spec.satisfies("+cuda") and "cuda" not in spec:
        sys.exit("spack_stub: +cuda needs --dep cuda=PREFIX")

    pkg = cls(spec, opt.prefix)
    env = Env()
    pkg.setup_run_environment(env)
    print(json.dumps({
        "package": cls.__name__,
        "configure": ["--prefix=%s" % opt.prefix] + list(pkg.configure_args()),
        "env": env.actions,
        "variants": [a[0] for a, _ in DIRECTIVES["variants"]] + ["cuda", "cuda_arch"],
        "depends_on": [[a[0], k.get("when", "")] for a, k in DIRECTIVES["depends_on"]],
    }, indent=1))


if __name__ == "__main__":
    main()
