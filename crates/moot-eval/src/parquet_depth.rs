//! How deeply a Parquet file's schema nests, read from its footer before the parquet crate
//! builds the schema's tree: that build recurses once per level, and a 160 KB footer of 20,000
//! nested groups overflowed moot's stack. The footer is read here with a small Thrift
//! compact-protocol reader that keeps its own depth bounded, and the schema's elements, a flat
//! list in depth-first order with their numbers of children, are walked with a stack of counts.

use std::io::{Read, Seek, SeekFrom};

/// The deepest schema a dataset may have (real datasets nest a few levels).
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

/// The largest footer read here (the parquet crate reads the same bytes next).
const MAX_FOOTER_BYTES: u64 = 64 << 20;

/// How deeply Thrift structures may nest inside the footer before it is refused.
const MAX_THRIFT_DEPTH: usize = 32;

/// `Ok` when the schema nests at most [`MAX_SCHEMA_DEPTH`] levels, or when the file is not
/// Parquet enough to tell (the parquet crate then says what is wrong); else why not.
pub(crate) fn check(file: &mut (impl Read + Seek)) -> Result<(), String> {
    let Some(footer) = footer(file) else {
        return Ok(());
    };
    let counts = match schema_children(&footer) {
        Ok(counts) => counts,
        Err(Problem::Unreadable) => return Ok(()),
        Err(Problem::TooDeep) => {
            return Err(format!(
                "its footer nests Thrift structures more than {MAX_THRIFT_DEPTH} levels deep"
            ))
        }
    };
    let mut open: Vec<i64> = Vec::new();
    for children in counts {
        if open.len() > MAX_SCHEMA_DEPTH {
            return Err(format!(
                "its schema nests more than {MAX_SCHEMA_DEPTH} levels deep"
            ));
        }
        if let Some(parent) = open.last_mut() {
            *parent -= 1;
        }
        if children > 0 {
            open.push(children);
        } else {
            while open.last().is_some_and(|&left| left <= 0) {
                open.pop();
            }
        }
    }
    Ok(())
}

/// The footer's bytes (FileMetaData), when the file ends as Parquet does.
fn footer(file: &mut (impl Read + Seek)) -> Option<Vec<u8>> {
    let size = file.seek(SeekFrom::End(0)).ok()?;
    if size < 12 {
        return None;
    }
    file.seek(SeekFrom::End(-8)).ok()?;
    let mut tail = [0u8; 8];
    file.read_exact(&mut tail).ok()?;
    if &tail[4..] != b"PAR1" {
        return None;
    }
    let length = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if length > size - 8 || length > MAX_FOOTER_BYTES {
        return None;
    }
    file.seek(SeekFrom::End(-8 - length as i64)).ok()?;
    let mut bytes = vec![0u8; length as usize];
    file.read_exact(&mut bytes).ok()?;
    file.seek(SeekFrom::Start(0)).ok()?;
    Some(bytes)
}

enum Problem {
    /// Not Thrift as the footer should be: left to the parquet crate to name.
    Unreadable,
    TooDeep,
}

struct Compact<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Compact<'_> {
    fn byte(&mut self) -> Result<u8, Problem> {
        let b = *self.bytes.get(self.at).ok_or(Problem::Unreadable)?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, Problem> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Problem::Unreadable)
    }

    fn zigzag(&mut self) -> Result<i64, Problem> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn skip_bytes(&mut self, n: u64) -> Result<(), Problem> {
        let n = usize::try_from(n).map_err(|_| Problem::Unreadable)?;
        let end = self.at.checked_add(n).ok_or(Problem::Unreadable)?;
        if end > self.bytes.len() {
            return Err(Problem::Unreadable);
        }
        self.at = end;
        Ok(())
    }

    /// A list or set header: its size and its elements' type.
    fn list_header(&mut self) -> Result<(u64, u8), Problem> {
        let head = self.byte()?;
        let size = match head >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        Ok((size, head & 0x0f))
    }

    /// Skips one value of compact type `kind`, `depth` structures deep.
    fn skip(&mut self, kind: u8, depth: usize) -> Result<(), Problem> {
        if depth > MAX_THRIFT_DEPTH {
            return Err(Problem::TooDeep);
        }
        match kind {
            // Booleans in a struct are in the field header; in a list, one byte each.
            1 | 2 => Ok(()),
            3 => self.byte().map(drop),
            4..=6 => self.varint().map(drop),
            7 => self.skip_bytes(8),
            8 => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            9 | 10 => {
                let (size, element) = self.list_header()?;
                for _ in 0..size {
                    if matches!(element, 1 | 2) {
                        self.byte()?;
                    } else {
                        self.skip(element, depth + 1)?;
                    }
                }
                Ok(())
            }
            11 => {
                let size = self.varint()?;
                if size == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                for _ in 0..size {
                    self.skip(types >> 4, depth + 1)?;
                    self.skip(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            12 => self.each_field(depth + 1, |_, _, _| Ok(false)),
            // UUID.
            13 => self.skip_bytes(16),
            _ => Err(Problem::Unreadable),
        }
    }

    /// Reads a struct's fields, calling `read(self, id, type)` on each; a field it does not
    /// read (returns `false`) is skipped.
    fn each_field(
        &mut self,
        depth: usize,
        mut read: impl FnMut(&mut Self, i16, u8) -> Result<bool, Problem>,
    ) -> Result<(), Problem> {
        if depth > MAX_THRIFT_DEPTH {
            return Err(Problem::TooDeep);
        }
        let mut last = 0i16;
        loop {
            let head = self.byte()?;
            if head == 0 {
                return Ok(());
            }
            let kind = head & 0x0f;
            let id = match head >> 4 {
                0 => i16::try_from(self.zigzag()?).map_err(|_| Problem::Unreadable)?,
                delta => last
                    .checked_add(i16::from(delta))
                    .ok_or(Problem::Unreadable)?,
            };
            last = id;
            if !read(self, id, kind)? {
                self.skip(kind, depth)?;
            }
        }
    }
}

/// The schema's numbers of children, element by element (FileMetaData field 2, SchemaElement
/// field 5).
fn schema_children(footer: &[u8]) -> Result<Vec<i64>, Problem> {
    let mut thrift = Compact {
        bytes: footer,
        at: 0,
    };
    let mut counts = Vec::new();
    thrift.each_field(0, |t, id, kind| {
        if id != 2 || kind != 9 {
            return Ok(false);
        }
        let (size, element) = t.list_header()?;
        if element != 12 {
            return Err(Problem::Unreadable);
        }
        for _ in 0..size {
            let mut children = 0i64;
            t.each_field(1, |t, id, kind| {
                if id == 5 && kind == 5 {
                    children = t.zigzag()?;
                    return Ok(true);
                }
                Ok(false)
            })?;
            counts.push(children);
        }
        Ok(true)
    })?;
    Ok(counts)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A Parquet file's bytes that end in a footer whose schema is `depth` groups, each the
    /// only child of the one before, around one INT32 leaf (no row group: only the footer).
    pub(crate) fn nested_footer_file(depth: usize) -> Vec<u8> {
        fn varint(mut v: u64, out: &mut Vec<u8>) {
            while v >= 0x80 {
                out.push((v as u8 & 0x7f) | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        let mut meta = vec![0x15, 0x02]; // version: 1
        meta.push(0x19); // field 2, a list
        meta.push(0xfc); // of structs, size follows
        varint(depth as u64 + 1, &mut meta);
        for _ in 0..depth {
            // name "g" (field 4), num_children 1 (field 5)
            meta.extend_from_slice(&[0x48, 0x01, b'g', 0x15, 0x02, 0x00]);
        }
        // the leaf: type INT32 (field 1), name "x" (field 4)
        meta.extend_from_slice(&[0x15, 0x02, 0x38, 0x01, b'x', 0x00]);
        meta.push(0x00);
        let mut file = b"PAR1".to_vec();
        file.extend_from_slice(&meta);
        file.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        file
    }

    #[test]
    fn a_schema_nested_past_the_bound_is_refused_and_one_within_it_is_not() {
        let mut deep = std::io::Cursor::new(nested_footer_file(20_000));
        let e = check(&mut deep).unwrap_err();
        assert!(e.contains("more than 64 levels"), "{e}");
        let mut fine = std::io::Cursor::new(nested_footer_file(10));
        assert_eq!(check(&mut fine), Ok(()));
        // Not Parquet, or cut short: left to the parquet crate.
        assert_eq!(check(&mut std::io::Cursor::new(b"hello".to_vec())), Ok(()));
        let mut cut = nested_footer_file(3);
        cut.drain(4..10);
        assert_eq!(check(&mut std::io::Cursor::new(cut)), Ok(()));
    }

    #[test]
    fn thrift_nested_past_its_bound_is_refused() {
        // A struct field holding a struct holding a struct … 100 deep, in field 1.
        // Field +1, a struct, 100 times; then the 101 stops that close them.
        let mut meta = vec![0x1c; 100];
        meta.extend(std::iter::repeat_n(0x00, 101));
        let mut file = b"PAR1".to_vec();
        file.extend_from_slice(&meta);
        file.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        let e = check(&mut std::io::Cursor::new(file)).unwrap_err();
        assert!(e.contains("Thrift structures more than 32"), "{e}");
    }
}
