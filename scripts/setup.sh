#!/usr/bin/env bash
# Installs what building moot needs on a fresh Debian/Ubuntu machine: the C toolchain pieces
# llama.cpp's build uses (cmake, libclang for bindgen) and python3 with pip (models and the
# llama.cpp test server come from PyPI). Sourced by scripts/ask and scripts/test.
set -euo pipefail

moot_missing_packages() {
    local missing=()
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    if ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 && ! ls /usr/lib/*/libclang*.so* >/dev/null 2>&1; then
        missing+=(libclang-dev)
    fi
    command -v python3 >/dev/null 2>&1 || missing+=(python3)
    python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
    command -v cargo >/dev/null 2>&1 || { echo "moot: cargo is missing: install Rust from https://rustup.rs" >&2; exit 1; }
    echo "${missing[@]:-}"
}

moot_install_packages() {
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
}
