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

/// `mount_setattr`'s attributes (linux/mount.h): read-only, no set-uid, no devices, no exec.
const MOUNT_ATTR_LOCKED_DOWN: u64 = 0x1 | 0x2 | 0x4 | 0x8;

/// `struct mount_attr` (its first version, 32 bytes).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Makes the kernel's settings (`/proc/sys`, `/sys`, `/proc/sysrq-trigger`) read-only in this
/// process's mount namespace, with every mount below them (`/sys/fs/cgroup` and its
/// hierarchies, where `cgroup.kill` would end any process of the machine): each is bound onto
/// itself and the whole tree made read-only at once (`mount_setattr`, Linux 5.12); on an older
/// kernel, only the top mount of each. What cannot be is left as it is. Async-signal-safe
/// (system calls on static strings and the stack).
pub(crate) fn read_only_kernel_settings() {
    let none = std::ptr::null::<libc::c_char>();
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_LOCKED_DOWN,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount and mount_setattr with static NUL-terminated paths and an attribute struct
    // on the stack of the size given.
    unsafe {
        for path in [c"/proc/sys", c"/sys", c"/proc/sysrq-trigger"] {
            let path = path.as_ptr();
            if libc::mount(
                path,
                path,
                none,
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            ) != 0
            {
                continue;
            }
            let whole_tree = libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                path,
                libc::AT_RECURSIVE as libc::c_uint,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            ) == 0;
            if !whole_tree {
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
