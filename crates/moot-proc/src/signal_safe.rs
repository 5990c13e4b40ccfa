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

/// Makes every mount of this process's (new) mount namespace a slave of the machine's: what is
/// mounted here then never reaches the machine, while what the machine mounts still shows.
/// Async-signal-safe (one system call on static strings).
pub(crate) fn detach_mounts() -> std::io::Result<()> {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: mount with a static NUL-terminated path and no data.
    let made = unsafe {
        libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        )
    };
    if made != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
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
    read_only(&[c"/proc/sys", c"/sys", c"/proc/sysrq-trigger"]);
}

/// `/sys` and every mount below it read-only, as [`read_only_kernel_settings`] makes it, and
/// `/proc` left as it is (so that a program can still mount a `/proc` of its own).
pub(crate) fn read_only_sys() {
    read_only(&[c"/sys"]);
}

/// Each of `paths` bound onto itself and made read-only with every mount below it.
fn read_only(paths: &[&std::ffi::CStr]) {
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
        for path in paths {
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

/// Keeps the terminals of the machine out of reach of this process's mount namespace: a new
/// instance of `/dev/pts` (with its own `ptmx`) over the machine's, so that the user's
/// terminal is not there to open by its path (to read what the user types, or to write a fake
/// prompt to it); and every other terminal and console of the machine (`/dev/console`,
/// `/dev/tty1`…, serial lines `/dev/ttyS0`…, `/dev/hvc0`…, `/dev/vcs…`: a user logged in on one
/// owns it) covered by `/dev/null`. `/dev/tty` stays: without a controlling terminal it opens
/// nothing. A program can still make terminals of its own. What cannot be done is left as it
/// is. Async-signal-safe (system calls on the stack).
pub(crate) fn hide_terminals() {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: mount, open and getdents64 with NUL-terminated paths built on the stack and
    // buffers of the sizes given.
    unsafe {
        if libc::mount(
            c"devpts".as_ptr(),
            c"/dev/pts".as_ptr(),
            c"devpts".as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
        ) == 0
        {
            libc::mount(
                c"/dev/pts/ptmx".as_ptr(),
                c"/dev/ptmx".as_ptr(),
                none,
                libc::MS_BIND,
                std::ptr::null(),
            );
        }
        let mut dents = [0u8; 4096];
        for_each_entry(c"/dev", &mut dents, |name| {
            let mut path = [0u8; 64];
            if is_console(name) && name.len() + 6 < path.len() {
                path[..5].copy_from_slice(b"/dev/");
                path[5..5 + name.len()].copy_from_slice(name);
                libc::mount(
                    c"/dev/null".as_ptr(),
                    path.as_ptr().cast(),
                    none,
                    libc::MS_BIND,
                    std::ptr::null(),
                );
            }
        });
    }
}

/// Calls `each` with the name of every entry of the directory at `path`, read with
/// `getdents64` into `dents` (the names are slices of it). False when the directory cannot be
/// opened. Async-signal-safe: no allocation, system calls on the caller's memory only.
pub fn for_each_entry(
    path: &std::ffi::CStr,
    dents: &mut [u8],
    mut each: impl FnMut(&[u8]),
) -> bool {
    // SAFETY: a NUL-terminated path; the descriptor is closed below; getdents64 writes at most
    // `dents.len()` bytes into `dents`.
    unsafe {
        let dir = libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir < 0 {
            return false;
        }
        loop {
            let got = libc::syscall(
                libc::SYS_getdents64,
                libc::c_long::from(dir),
                dents.as_mut_ptr(),
                dents.len(),
            );
            let Ok(got) = usize::try_from(got) else { break };
            if got == 0 {
                break;
            }
            let mut at = 0;
            // struct linux_dirent64 { u64 ino; i64 off; u16 reclen; u8 type; char name[]; }
            while at + 19 < got {
                let reclen = usize::from(u16::from_ne_bytes([dents[at + 16], dents[at + 17]]));
                if reclen == 0 {
                    break;
                }
                let end = (at + reclen).min(got);
                let name = &dents[at + 19..end];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                at += reclen;
                each(name);
            }
        }
        libc::close(dir);
    }
    true
}

/// Whether a `/dev` entry is one of the machine's terminals or consoles: `console`, `tty…`
/// (but `tty` itself), `vcs…`, `hvc…`, `xvc…`.
fn is_console(name: &[u8]) -> bool {
    name == b"console"
        || (name.starts_with(b"tty") && name != b"tty")
        || [&b"vcs"[..], b"hvc", b"xvc"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_consoles_are_told_from_other_devices() {
        for name in [
            "console", "tty1", "tty63", "ttyS0", "ttyUSB1", "ttyAMA0", "hvc0", "vcs", "vcsa2",
        ] {
            assert!(is_console(name.as_bytes()), "{name}");
        }
        for name in ["tty", "null", "pts", "ptmx", "zero", "urandom"] {
            assert!(!is_console(name.as_bytes()), "{name}");
        }
    }
}
