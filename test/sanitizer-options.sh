# Sanitizer settings for the tests and fuzz targets of the sanitizer build; sourced by
# test/sanitize.sh and test/fuzz/run.sh, and kept where the caller already set them.
# Every report aborts (SIGABRT) rather than exiting with status 1, so that a test expecting a
# failure (lit's `not`, kiln-conformance's expected errors) cannot take a report for one.
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs when its header is compiled
# with ASan, and unpoisons what it hands out; the linker may pair an instrumented copy from
# Kiln's objects (which poisons) with inlined allocations in uninstrumented lld and LLVM code
# (which do not unpoison), a false use-after-poison. Kiln poisons nothing itself.
sanitizer_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:halt_on_error=1:detect_leaks=1:allow_user_poisoning=0:check_initialization_order=1:strict_init_order=1:detect_odr_violation=2}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-abort_on_error=1:halt_on_error=1:print_stacktrace=1:report_error_type=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$sanitizer_root/test/sanitizers.supp:print_suppressions=0}
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}
unset sanitizer_root
