# SPDX-License-Identifier: BSD-3-Clause
# Spack package for coll/gpu, the Open MPI collective component for GPU buffers.
#
# Copy this directory into a Spack repository as packages/coll-gpu/package.py
# (spack repo create /path/site-repo; spack repo add /path/site-repo), then
#   spack install coll-gpu +cuda cuda_arch=90 +ucx ^openmpi@5.0.7
#   spack load coll-gpu            # or: module load coll-gpu (Spack's generated module)
#
# Where it installs: Spack installs every package into its own prefix and never into another
# package's, so the component goes to <prefix>/lib/openmpi/mca_coll_gpu.so (configure
# --with-mca-dir), not into Open MPI's directory.  Open MPI finds it through
# OMPI_MCA_mca_base_component_path, which setup_run_environment sets (spack load, and the
# modules Spack generates): this prefix's component directory first, then Open MPI's own,
# because setting the variable replaces Open MPI's default path instead of adding to it.
#
# Not "extends('openmpi')": extends() is for packages that install into an interpreter's tree
# (Python, R, Perl) and are merged into views; Open MPI looks for components in the directory
# compiled into it or in mca_base_component_path, never in a view, so the environment variable
# is what makes the component found.
#
# contrib/spack/check-recipe.sh (in the source tree) runs this recipe's configure line and
# install without Spack and checks the result.

import os

from spack.package import *


class CollGpu(AutotoolsPackage, CudaPackage):
    """coll/gpu: an Open MPI collective component (mca_coll_gpu.so) that runs MPI
    collectives on GPU device buffers, with no change to the application, over an Open MPI
    that need not be CUDA-aware.  Host buffers are handed to the collective modules Open MPI
    had selected."""

    # The project has no public address yet.  A release is the tarball of "make dist": put it
    # where url says (or in a Spack mirror: mirror/coll-gpu/coll-gpu-0.1.0.tar.gz) and install
    # with --no-checksum (dist tarballs are not byte-reproducible, so no sha256 is pinned).  A
    # checkout builds with "spack dev-build coll-gpu@main" (or spack develop) in its top
    # directory: autogen.sh runs first.
    homepage = "https://example.org/coll-gpu"  # placeholder until there is a public page
    url = "file:///opt/src/coll-gpu/coll-gpu-0.1.0.tar.gz"

    version("main")
    version("0.1.0")

    # +cuda and cuda_arch come from CudaPackage (cuda_arch=80,90 -> --with-cuda-arch="80 90";
    # nvcc drops the architectures it does not support and configure reports them).
    variant("ucx", default=True,
            description="UCX inter-node transport (with hwloc to pick the NIC nearest each GPU)")

    # A component is built against, and loaded by, exactly one Open MPI: 4.1 or 5.0.
    depends_on("openmpi@4.1:5.0", type=("build", "link", "run"))
    depends_on("pkgconfig", type="build")
    # Within one spec DAG Spack unifies these with Open MPI's own UCX and hwloc, so one process
    # never loads two UCX libraries.
    depends_on("ucx", when="+ucx")
    depends_on("hwloc", when="+ucx")
    depends_on("rdma-core", when="+ucx")
    # A checkout has no configure script yet.
    depends_on("m4", type="build", when="@main")
    depends_on("autoconf", type="build", when="@main")
    depends_on("automake", type="build", when="@main")
    depends_on("libtool", type="build", when="@main")

    # The component dlopens the CUDA driver and links cudart statically, so the same build
    # loads on GPU-less nodes; nothing here requires a CUDA-aware Open MPI.  (CudaPackage
    # already refuses +cuda with cuda_arch=none.)

    def autoreconf(self, spec, prefix):
        # A release tarball has configure; a checkout runs autogen.sh (autoreconf -fi).
        if not os.path.exists("configure"):
            Executable("./autogen.sh")()

    @property
    def mca_dir(self):
        """Where the component goes: this package's own prefix."""
        return join_path(self.prefix.lib, "openmpi")

    @property
    def ompi_pkglibdir(self):
        """Open MPI's own component directory (ompi_info --path pkglibdir)."""
        return join_path(self.spec["openmpi"].prefix.lib, "openmpi")

    def configure_args(self):
        spec = self.spec
        args = [
            "--with-ompi={0}".format(spec["openmpi"].prefix),
            "--with-mca-dir={0}".format(self.mca_dir),
        ]
        if spec.satisfies("+cuda"):
            args.append("--with-cuda={0}".format(spec["cuda"].prefix))
            archs = [a for a in spec.variants["cuda_arch"].value if a != "none"]
            args.append("--with-cuda-arch={0}".format(" ".join(archs)))
        else:
            args.append("--without-cuda")
        if spec.satisfies("+ucx"):
            args.append("--with-ucx={0}".format(spec["ucx"].prefix))
            args.append("--with-hwloc={0}".format(spec["hwloc"].prefix))
            if "rdma-core" in spec:
                args.append("--with-verbs={0}".format(spec["rdma-core"].prefix))
            else:
                args.append("--without-verbs")
        else:
            args.extend(["--without-ucx", "--without-hwloc", "--without-verbs"])
        return args

    def setup_run_environment(self, env):
        # Open MPI replaces (does not extend) its default search path when the variable is
        # set: put its own component directory after ours.
        env.prepend_path("OMPI_MCA_mca_base_component_path", self.mca_dir)
        env.append_path("OMPI_MCA_mca_base_component_path", self.ompi_pkglibdir)
        env.prepend_path("MANPATH", self.prefix.share.man)
        env.prepend_path("CPATH", self.prefix.include)

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_component_loads(self):
        ompi_info = Executable(join_path(self.spec["openmpi"].prefix.bin, "ompi_info"))
        path = "{0}:{1}".format(self.mca_dir, self.ompi_pkglibdir)
        out = ompi_info("--param", "coll", "gpu", "--level", "9", "--parsable", output=str,
                        extra_env={"OMPI_MCA_mca_base_component_path": path})
        if "mca:coll:gpu:param:coll_gpu_priority" not in out:
            raise InstallError("ompi_info does not load mca_coll_gpu.so from " + self.mca_dir)
