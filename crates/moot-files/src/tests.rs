use std::os::unix::fs::symlink;
use std::sync::mpsc;
use std::time::Duration;

use super::*;

const TEN: Limit = Limit::new(10, "the test reads from a file");

/// `f()` in another thread, failing the test when it has not returned within a minute (a read
/// that blocks never does).
fn at_once<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the read returned")
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
}

fn refused_as(result: Result<Vec<u8>, FileError>) -> Option<Kind> {
    match result {
        Err(FileError {
            problem: Problem::NotRegular(kind),
            ..
        }) => Some(kind),
        _ => None,
    }
}

#[test]
fn a_regular_file_is_read_whole_up_to_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ten");
    std::fs::write(&path, "0123456789").unwrap();
    assert_eq!(read_text(&path, TEN).unwrap(), "0123456789");
    assert_eq!(read_bytes(&path, TEN).unwrap(), b"0123456789");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    assert_eq!(read_text(&empty, TEN).unwrap(), "");
}

#[test]
fn a_file_past_the_bound_is_refused_naming_its_size_and_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("eleven");
    std::fs::write(&path, "0123456789a").unwrap();
    let e = read_text(&path, TEN).unwrap_err();
    assert!(
        matches!(
            e.problem,
            Problem::TooLarge {
                size: Some(11),
                limit: TEN
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "cannot read {}: 11 bytes, more than the 10 bytes the test reads from a file",
            path.display()
        )
    );
    let config = Limit::new(16 << 20, "moot reads from a configuration file");
    assert_eq!(
        Problem::TooLarge {
            size: None,
            limit: config
        }
        .to_string(),
        "more than the 16 MiB moot reads from a configuration file"
    );
}

#[test]
fn a_fifo_is_refused_at_once_without_being_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let path = fifo.clone();
    let e = at_once(move || read_text(&path, TEN)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("cannot read {}: a FIFO, not a regular file", fifo.display())
    );
    // Through a link too, and with links refused the link itself is named.
    let link = dir.path().join("link");
    symlink(&fifo, &link).unwrap();
    let path = link.clone();
    assert_eq!(
        at_once(move || refused_as(read_bytes(&path, TEN))),
        Some(Kind::Fifo)
    );
    assert_eq!(
        at_once(move || refused_as(read_bytes_with(&link, TEN, Links::Refuse))),
        Some(Kind::SymbolicLink)
    );
}

#[test]
fn devices_are_refused_without_being_read() {
    for device in ["/dev/zero", "/dev/urandom", "/dev/null"] {
        let path = Path::new(device);
        if !path.exists() {
            continue;
        }
        let e = at_once(move || read_bytes(Path::new(device), TEN)).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("cannot read {device}: a device, not a regular file")
        );
    }
}

#[test]
fn a_folder_and_a_socket_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(refused_as(read_bytes(dir.path(), TEN)), Some(Kind::Folder));
    let socket = dir.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let path = socket.clone();
    assert_eq!(
        at_once(move || refused_as(read_bytes(&path, TEN))),
        Some(Kind::Socket)
    );
    let e = read_bytes(&socket, TEN).unwrap_err();
    assert!(
        e.to_string().ends_with(": a socket, not a regular file"),
        "{e}"
    );
}

#[test]
fn a_link_to_a_file_is_followed_unless_links_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "text").unwrap();
    let link = dir.path().join("link");
    symlink(&file, &link).unwrap();
    assert_eq!(read_text(&link, TEN).unwrap(), "text");
    assert_eq!(
        refused_as(read_bytes_with(&link, TEN, Links::Refuse)),
        Some(Kind::SymbolicLink)
    );
    assert_eq!(read_bytes_with(&file, TEN, Links::Refuse).unwrap(), b"text");
}

#[test]
fn a_missing_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent");
    let e = read_text(&path, TEN).unwrap_err();
    assert!(e.is_not_found(), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("cannot read {}: No such file", path.display())),
        "{e}"
    );
}

#[test]
fn text_that_is_not_utf8_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1");
    std::fs::write(&path, b"a = 1\nb = \"x\xffy\"\n").unwrap();
    let e = read_text(&path, Limit::new(100, "the test reads")).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "cannot read {}: not valid UTF-8: byte 0xFF at byte offset 12 (line 2, column 7)",
            path.display()
        )
    );
    let mut bytes = "éé".as_bytes().to_vec();
    bytes.push(0x80);
    let e = utf8(bytes).unwrap_err();
    assert_eq!((e.offset, e.line, e.column), (4, 1, 3));
    assert_eq!(utf8(vec![0xc3]).unwrap_err().byte, 0xc3);
}

#[test]
fn a_stream_is_read_only_to_one_byte_past_the_bound() {
    // An endless stream, as /dev/zero on stdin is: refused once the bound is passed.
    let e = read_limited(std::io::repeat(0), TEN).unwrap_err();
    assert!(
        matches!(
            e,
            Problem::TooLarge {
                size: None,
                limit: TEN
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        read_limited(&b"0123456789"[..], TEN).unwrap(),
        b"0123456789"
    );
}

#[test]
fn sizes_read_in_gib_or_mib_when_exact() {
    assert_eq!(bytes(64 << 20), "64 MiB");
    assert_eq!(bytes(1 << 30), "1 GiB");
    assert_eq!(bytes(3), "3 bytes");
    assert_eq!(bytes(1), "1 byte");
    assert_eq!(bytes((1 << 20) + 1), "1048577 bytes");
}

#[test]
fn control_characters_in_a_path_are_escaped() {
    assert_eq!(shown(Path::new("a\u{1b}[31mb")), "a\\u{1b}[31mb");
}

#[test]
fn an_output_path_that_is_a_fifo_a_folder_or_a_device_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.md");
    mkfifo(&fifo);
    // Nothing reads the FIFO: opening it to write would block for good.
    let target = fifo.clone();
    let e = at_once(move || write_output(&target, "report")).unwrap_err();
    assert!(
        e.to_string().contains("a FIFO, not a regular file") && e.to_string().contains("out.md"),
        "{e}"
    );
    for (path, kind) in [
        (dir.path(), "a folder"),
        (Path::new("/dev/null"), "a device"),
    ] {
        let e = open_output(path, Output::Append).unwrap_err();
        assert!(e.to_string().contains(kind), "{e}");
    }
}

#[test]
fn an_output_file_is_replaced_or_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.txt");
    write_output(&path, "first, longer text").unwrap();
    write_output(&path, "second").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
    use std::io::Write;
    open_output(&path, Output::Append)
        .unwrap()
        .write_all(b" and more")
        .unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "second and more");
}
