//! Small steps that may run between `fork` and `exec`: system calls on the stack only.

/// Writes `n` in decimal at the start of `out`; the number of bytes written. Async-signal-safe
/// (for a path such as `/proc/PID/stat` built between fork and exec).
pub fn decimal(mut n: u32, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 10];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for (slot, digit) in out.iter_mut().zip(digits[..len].iter().rev()) {
        *slot = *digit;
    }
    len
}

/// Makes the kernel's settings (`/proc/sys`, `/sys`, `/proc/sysrq-trigger`) read-only in this
/// process's mount namespace, each bound onto itself and remounted read-only; what cannot be
/// is left as it is. Async-signal-safe (system calls on static strings).
pub(crate) fn read_only_kernel_settings() {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: mount with static NUL-terminated paths and no data.
    unsafe {
        for path in [c"/proc/sys", c"/sys", c"/proc/sysrq-trigger"] {
            let path = path.as_ptr();
            if libc::mount(
                path,
                path,
                none,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ) == 0
            {
                libc::mount(
                    none,
                    path,
                    none,
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY,
                    std::ptr::null(),
                );
            }
        }
    }
}
