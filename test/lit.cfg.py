# lit configuration for Kiln's compiler and tool tests.
import os

import lit.formats
import lit.util
from lit.llvm import llvm_config

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
# test/fuzz holds fuzzer inputs (seeds, regressions), not lit tests.
config.excludes = ["Inputs", "fuzz", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

llvm_config.with_system_environment(["HOME", "TMPDIR", "CUDA_HOME", "CUDA_PATH"])
llvm_config.use_default_substitutions()
config.substitutions.append(("%onnx_node_tests", config.onnx_node_tests))
# Debian's Python, with the python3-numpy and python3-onnx that ./setup.sh installs.
config.substitutions.append(("%onnxpy", "/usr/bin/python3"))
# Seconds a tool may take to start before a test's deadline counts: more under the sanitizers,
# whose tools load and initialize several times slower, and slower still on a loaded machine (a
# sanitized kiln-train took more than 13 s to reach its first collective with both cores busy, and
# an unsanitized one 2.1 s with the conformance tests running beside it on two cores).
sanitized = lit.util.pythonize_bool(config.kiln_sanitize)
config.substitutions.append(("%startup_slack", "30" if sanitized else "3"))

tool_dirs = [config.kiln_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["kiln-opt", "kiln-translate", "kilnc", "kiln-run", "kiln-train", "kiln-launch", "FileCheck",
     "not", "count",
     "llvm-nm", "llvm-objcopy"],
    tool_dirs)
llvm_config.with_environment("PATH", config.kiln_tools_dir, append_path=True)
if os.path.isdir(config.onnx_node_tests):
    config.available_features.add("onnx-testdata")

# GPU targets need the CUDA toolkit's ptxas and libdevice (not a GPU).
def find_cuda_toolkit():
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for root in filter(None, roots):
        if os.access(os.path.join(root, "bin", "ptxas"), os.X_OK) and os.path.exists(
                os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")):
            return root
    return None
if find_cuda_toolkit():
    config.available_features.add("cuda-toolkit")
else:
    lit_config.note("no CUDA toolkit (ptxas, libdevice): GPU code generation tests are skipped")

# kilnc --report pages are rendered in headless Chromium (Debian's chromium).
import shutil
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if chromium:
    config.available_features.add("chromium")
    config.substitutions.append(
        ("%chromium", "timeout 120 " + chromium +
         " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage"
         " --no-first-run --hide-scrollbars"))
else:
    lit_config.note("no chromium: the HTML report rendering test is skipped")
