//! Files a user names (`--config`, `--tests`, a dataset, a sweep spec, a trajectory, a
//! transcript to import): only regular files are read, each within a size bound, never
//! blocking on a FIFO.
//!
//! A path can name anything: a FIFO would block the reader until someone writes to it (for
//! ever, in a script), a device (`/dev/zero`, `/dev/urandom`) never ends and grows memory
//! without bound, a folder is no text. So the kind is checked before the file is opened, the
//! file is opened non-blocking (a FIFO swapped in after the check does not block the open)
//! and its kind checked again on the open file, and at most the bound + 1 bytes are read
//! whatever its size claims (a file that grows while it is read is caught too). Every error
//! names the path and what it is: "a FIFO, not a regular file", "a device", "a folder",
//! "20001 bytes, more than the 16 MiB moot reads from a configuration file".

use std::fmt;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How much of a file moot reads, and who reads it for what: named in the error that refuses
/// a larger file ("more than the 16 MiB moot reads from a configuration file").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The most bytes read.
    pub bytes: u64,
    /// Who reads the file for what, after the size: `moot reads from a configuration file`.
    pub reader: &'static str,
}

impl Limit {
    pub const fn new(bytes: u64, reader: &'static str) -> Limit {
        Limit { bytes, reader }
    }
}

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Folder,
    Fifo,
    Device,
    Socket,
    SymbolicLink,
    Other,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Folder => "a folder",
            Kind::Fifo => "a FIFO",
            Kind::Device => "a device",
            Kind::Socket => "a socket",
            Kind::SymbolicLink => "a symbolic link",
            Kind::Other => "an unknown kind of file",
        })
    }
}

/// What a file of this type is when it is not a regular file (`None`: a regular file).
pub fn not_regular(kind: &std::fs::FileType) -> Option<Kind> {
    Some(if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        Kind::Folder
    } else if kind.is_fifo() {
        Kind::Fifo
    } else if kind.is_char_device() || kind.is_block_device() {
        Kind::Device
    } else if kind.is_socket() {
        Kind::Socket
    } else if kind.is_symlink() {
        Kind::SymbolicLink
    } else {
        Kind::Other
    })
}

/// Text that is not UTF-8: the first bad byte and where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not valid UTF-8: byte 0x{byte:02X} at byte offset {offset} (line {line}, column {column})"
)]
pub struct NotUtf8 {
    pub byte: u8,
    /// Bytes before it.
    pub offset: usize,
    /// Its line and column (in characters), from 1.
    pub line: usize,
    pub column: usize,
}

/// `bytes` as text, or where the first byte that is not UTF-8 is.
pub fn utf8(bytes: Vec<u8>) -> Result<String, NotUtf8> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let offset = e.utf8_error().valid_up_to();
        // Everything before `offset` is valid UTF-8.
        let before = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit_once('\n')
            .map_or(before, |(_, last)| last)
            .chars()
            .count()
            + 1;
        NotUtf8 {
            // `from_utf8` failed at `offset`, so there is a byte there.
            byte: bytes.get(offset).copied().unwrap_or_default(),
            offset,
            line,
            column,
        }
    })
}

/// Why a file was not read, without its path (for a message that names it already).
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// A folder, FIFO, device, socket (or a link where none is followed): never read.
    #[error("{0}, not a regular file")]
    NotRegular(Kind),
    /// Larger than the bound: by its size (`Some`) or found so while it was read (`None`: it
    /// grew, or a stream that has no size).
    #[error("{}more than the {} {}", .size.map(|n| format!("{}, ", bytes(n))).unwrap_or_default(), bytes(.limit.bytes), .limit.reader)]
    TooLarge { size: Option<u64>, limit: Limit },
    #[error("{0}")]
    NotUtf8(NotUtf8),
    /// The system's reason (not found, permission denied, …).
    #[error("{0}")]
    Io(std::io::Error),
}

/// A file that was not read: its path and why.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {problem}", shown(path))]
pub struct FileError {
    pub path: PathBuf,
    pub problem: Problem,
}

impl FileError {
    fn new(path: &Path, problem: Problem) -> FileError {
        FileError {
            path: path.to_path_buf(),
            problem,
        }
    }

    /// Whether nothing is at the path.
    pub fn is_not_found(&self) -> bool {
        matches!(&self.problem, Problem::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Whether a symbolic link at the path itself is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// The user named the path: a link is theirs to follow.
    Follow,
    /// A link at the path is refused (a file found in a folder, whose links are checked by the
    /// caller): opened with `O_NOFOLLOW`, so a link swapped in after a check is refused too.
    Refuse,
}

/// The bytes of the regular file at `path` (a link followed), at most `limit.bytes` of them.
pub fn read_bytes(path: &Path, limit: Limit) -> Result<Vec<u8>, FileError> {
    read_bytes_with(path, limit, Links::Follow)
}

/// [`read_bytes`] as UTF-8 text.
pub fn read_text(path: &Path, limit: Limit) -> Result<String, FileError> {
    let data = read_bytes(path, limit)?;
    utf8(data).map_err(|e| FileError::new(path, Problem::NotUtf8(e)))
}

/// The bytes of the regular file at `path`, at most `limit.bytes` of them, with `links` saying
/// whether a symbolic link at `path` is followed. Anything but a regular file is refused
/// without being read: its kind is checked before it is opened, it is opened non-blocking, and
/// its kind is checked again on the open file.
pub fn read_bytes_with(path: &Path, limit: Limit, links: Links) -> Result<Vec<u8>, FileError> {
    let (file, len) = open_checked(path, limit, links)?;
    // At most `limit.bytes`, checked on opening: the file's size is a fair first allocation.
    let expected = usize::try_from(len).unwrap_or(0);
    read_limited_into(file, limit, Vec::with_capacity(expected))
        .map_err(|problem| FileError::new(path, problem))
}

/// The regular file at `path` opened for reading, checked as [`read_bytes_with`] checks it
/// (its kind before and after opening, its size against `limit`), for a reader that reads
/// parts of it (a Parquet file's row groups) rather than all of it. The size is checked once:
/// a file that grows after it is opened is the reader's to bound.
pub fn open_regular(path: &Path, limit: Limit, links: Links) -> Result<std::fs::File, FileError> {
    open_checked(path, limit, links).map(|(file, _)| file)
}

fn open_checked(
    path: &Path,
    limit: Limit,
    links: Links,
) -> Result<(std::fs::File, u64), FileError> {
    let fail = |problem| FileError::new(path, problem);
    let (file, meta) =
        open_kind_checked(path, std::fs::OpenOptions::new().read(true), links, false)
            .map_err(fail)?;
    if meta.len() > limit.bytes {
        return Err(fail(Problem::TooLarge {
            size: Some(meta.len()),
            limit,
        }));
    }
    Ok((file, meta.len()))
}

/// `path` opened with `options` only if it is a regular file: its kind is checked before it is
/// opened (nothing is opened that is not), it is opened non-blocking (a FIFO swapped in after
/// the check does not block the open), and its kind is checked again on the open file. With
/// `missing_ok`, nothing at the path is no error (`options` may create it).
fn open_kind_checked(
    path: &Path,
    options: &mut std::fs::OpenOptions,
    links: Links,
    missing_ok: bool,
) -> Result<(std::fs::File, std::fs::Metadata), Problem> {
    let before = match links {
        Links::Follow => std::fs::metadata(path),
        Links::Refuse => std::fs::symlink_metadata(path),
    };
    match before {
        Ok(before) => regular(&before.file_type())?,
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Problem::Io(e)),
    }
    let mut flags = libc::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = options
        .custom_flags(flags)
        .open(path)
        .map_err(Problem::Io)?;
    let meta = file.metadata().map_err(Problem::Io)?;
    regular(&meta.file_type())?;
    Ok((file, meta))
}

/// A file that was not written: its path and why.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {problem}", shown(path))]
pub struct WriteError {
    pub path: PathBuf,
    pub problem: Problem,
}

/// How an output file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Its old content replaced (a report, a transcript).
    Replace,
    /// Added to its end (a run log).
    Append,
}

/// `path` opened for writing (created when missing): only a regular file, so that a FIFO
/// (which would block moot until something reads it), a device, a socket or a folder at an
/// output path is refused by kind. The kind is checked before opening; the file is opened
/// non-blocking and without truncating, checked again, and only then emptied for
/// [`Output::Replace`].
pub fn open_output(path: &Path, output: Output) -> Result<std::fs::File, WriteError> {
    let fail = |problem| WriteError {
        path: path.to_path_buf(),
        problem,
    };
    let (file, _) = open_kind_checked(
        path,
        std::fs::OpenOptions::new()
            .write(true)
            .append(output == Output::Append)
            .create(true),
        Links::Follow,
        true,
    )
    .map_err(fail)?;
    if output == Output::Replace {
        file.set_len(0).map_err(|e| fail(Problem::Io(e)))?;
    }
    Ok(file)
}

/// Writes `bytes` as the whole content of the regular file at `path` ([`open_output`]).
pub fn write_output(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), WriteError> {
    use std::io::Write;
    let mut file = open_output(path, Output::Replace)?;
    file.write_all(bytes.as_ref()).map_err(|e| WriteError {
        path: path.to_path_buf(),
        problem: Problem::Io(e),
    })
}

/// All of `reader` (stdin, a pipe), at most `limit.bytes` of it: a stream that goes on past
/// the bound is refused once the bound is passed, not read to its end.
pub fn read_limited(reader: impl Read, limit: Limit) -> Result<Vec<u8>, Problem> {
    read_limited_into(reader, limit, Vec::new())
}

fn read_limited_into(
    reader: impl Read,
    limit: Limit,
    mut data: Vec<u8>,
) -> Result<Vec<u8>, Problem> {
    reader
        .take(limit.bytes.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(Problem::Io)?;
    if data.len() as u64 > limit.bytes {
        return Err(Problem::TooLarge { size: None, limit });
    }
    Ok(data)
}

/// Nothing but a regular file is read; anything else is named.
fn regular(kind: &std::fs::FileType) -> Result<(), Problem> {
    match not_regular(kind) {
        None => Ok(()),
        Some(kind) => Err(Problem::NotRegular(kind)),
    }
}

/// `n` bytes, in GiB or MiB where that is exact.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n == 1 {
        "1 byte".to_string()
    } else {
        format!("{n} bytes")
    }
}

/// A path as a terminal line shows it: control characters (a hostile file name's escape
/// sequences) escaped.
pub fn shown(path: &Path) -> String {
    path.display()
        .to_string()
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
