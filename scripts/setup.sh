#!/usr/bin/env bash
# Installs what building moot needs on a fresh Debian/Ubuntu machine: the C toolchain pieces
# llama.cpp's build uses (cmake, a C/C++ compiler, libclang for bindgen) and python3 with pip and
# venv (models and the llama.cpp test server come from PyPI). Sourced by scripts/ask, scripts/test
# and .ci/run.
#
# Detection looks for what the build really loads, not for a package name or a loose glob: bindgen
# (through clang-sys) dlopens `libclang.so`, `libclang-N.so`, `libclang.so.N` or
# `libclang-N.so.M`; `libclang-cpp.so.N` is a different library (the C++ API) and does not count.
# MOOT_SETUP_ROOT prefixes every library directory searched, so tests can run the detection
# against fake directory trees.
set -euo pipefail

# The directories clang-sys searches on Linux, plus LIBCLANG_PATH and llvm-config's libdir.
moot_libclang_dirs() {
    local root="${MOOT_SETUP_ROOT:-}"
    [[ -n "${LIBCLANG_PATH:-}" ]] && echo "$LIBCLANG_PATH"
    if [[ -z "$root" ]] && command -v llvm-config >/dev/null 2>&1; then
        llvm-config --libdir 2>/dev/null || true
    fi
    local d
    for d in "$root"/usr/lib/llvm-*/lib "$root"/usr/local/llvm*/lib "$root"/usr/lib/*-linux-gnu \
        "$root"/usr/lib64 "$root"/usr/lib "$root"/usr/local/lib "$root"/usr/local/lib64; do
        [[ -d "$d" ]] && echo "$d"
    done
    return 0
}

# Prints the first libclang bindgen can load, or nothing.
moot_find_libclang() {
    local dir f name
    while IFS= read -r dir; do
        for f in "$dir"/libclang*.so*; do
            [[ -e "$f" ]] || continue
            name="${f##*/}"
            # libclang.so | libclang-14.so | libclang.so.1 | libclang-14.so.1 | libclang-14.0.6.so
            if [[ "$name" =~ ^libclang(-[0-9][0-9.]*)?\.so(\.[0-9][0-9.]*)?$ ]]; then
                echo "$f"
                return 0
            fi
        done
    done < <(moot_libclang_dirs)
    return 0
}

# Prints the first PostgreSQL server installation's initdb, or nothing. Debian installs each major
# version side by side under /usr/lib/postgresql/VERSION/bin, none of it on PATH.
moot_find_initdb() {
    local f
    for f in "${MOOT_SETUP_ROOT:-}"/usr/lib/postgresql/*/bin/initdb; do
        [[ -e "$f" ]] && echo "$f" && return 0
    done
    return 0
}

# Prints the Debian packages that are missing, space-separated (empty when nothing is missing).
moot_missing_packages() {
    local missing=()
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    # llama.cpp's threads are OpenMP's (libgomp, which GCC brings): a compiler without it
    # (clang alone) cannot link the embedded backend. GCC names the library's path, or only
    # its name when it has none.
    if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
        missing+=(g++)
    else
        local gomp
        gomp=$(cc -print-file-name=libgomp.so 2>/dev/null || true)
        if [[ "$gomp" != /* || ! -e "${MOOT_SETUP_ROOT:-}$gomp" ]]; then
            missing+=(g++)
        fi
    fi
    [[ -n "$(moot_find_libclang)" ]] || missing+=(libclang-dev)
    if ! command -v python3 >/dev/null 2>&1; then
        missing+=(python3 python3-pip python3-venv)
    else
        python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
        # Debian splits ensurepip out of the interpreter: without it `python3 -m venv` fails.
        python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
        # The code sandbox sees only /usr: a python3 elsewhere (pyenv, conda) cannot run there.
        local root="${MOOT_SETUP_ROOT:-}"
        if [[ ! -e "$root/usr/bin/python3" && ! -e "$root/usr/local/bin/python3" ]]; then
            missing+=(python3)
        fi
    fi
    # The sandbox that runs code answers (moot-sandbox).
    command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
    # The headless browser the dashboard's tests drive (tests/it/browser.rs): for the tests only
    # (scripts/test and .ci/run set MOOT_SETUP_TESTS=1), not for the quick start.
    if [[ "${MOOT_SETUP_TESTS:-}" == 1 ]]; then
        command -v chromedriver >/dev/null 2>&1 || missing+=(chromium chromium-driver)
        # The PostgreSQL store's tests start their own throwaway server (crates/moot-pgtest), so
        # they need the server programs, which only the server package brings: `psql` alone
        # (postgresql-client) has no initdb. Installing `postgresql` may also start Debian's
        # system cluster on port 5432; that is harmless, the tests never use it.
        [[ -n "$(moot_find_initdb)" ]] || missing+=(postgresql)
        # The metrics test starts a real Prometheus that scrapes `moot serve` (tests/it/telemetry.rs).
        # Its package may start a system instance on port 9090; the test uses its own port.
        command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
    fi
    echo "${missing[@]:-}"
}

moot_require_cargo() {
    command -v cargo >/dev/null 2>&1 && return 0
    echo "moot: cargo is missing: install Rust from https://rustup.rs" >&2
    exit 1
}

moot_install_packages() {
    moot_require_cargo
    local missing
    missing=$(moot_missing_packages)
    [[ -z "${missing// /}" ]] && return 0
    if [[ $(id -u) -eq 0 ]]; then
        echo "moot: installing ${missing} with apt-get" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        # shellcheck disable=SC2086
        apt-get install -y -qq ${missing} >/dev/null
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        echo "moot: installing ${missing} with sudo apt-get" >&2
        sudo apt-get update -qq
        # shellcheck disable=SC2086
        sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing} >/dev/null
    else
        echo "moot: missing packages: ${missing}" >&2
        echo "moot: run: sudo apt-get install -y ${missing}" >&2
        exit 1
    fi
    # Installing must have fixed it; say so now rather than fail minutes later inside a build.
    missing=$(moot_missing_packages)
    if [[ -n "${missing// /}" ]]; then
        echo "moot: still missing after apt-get install: ${missing}" >&2
        exit 1
    fi
}
