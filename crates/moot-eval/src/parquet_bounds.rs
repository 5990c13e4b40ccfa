//! What a Parquet file may make moot hold, checked before the parquet crate reads it.
//!
//! - How deeply its schema nests, read from its footer before the parquet crate builds the
//!   schema's tree: that build recurses once per level, and a 160 KB footer of 20,000 nested
//!   groups overflowed moot's stack. The footer is read here with a small Thrift
//!   compact-protocol reader that keeps its own depth bounded, and the schema's elements, a
//!   flat list in depth-first order with their numbers of children, are walked with a stack of
//!   counts.
//! - How much its pages decompress to ([`check_sizes`]): a 7 KB file whose one row was 200 MB
//!   of one repeated letter took moot to 845 MB. Every page's header is read (the sizes it
//!   gives are the ones the parquet crate allocates) and the metadata's sums are checked too,
//!   against [`SIZES`], before any page is decompressed.

use std::io::{Read, Seek, SeekFrom};

use parquet::file::metadata::ParquetMetaData;

/// The most a Parquet file may decompress to: one page, one row group, and the whole file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// One page of one column, as decompressed: the largest value a dataset's field can hold
    /// (real pages are about 1 MiB).
    pub page: u64,
    /// One row group's pages together: what is decompressed at once while its rows are read.
    pub row_group: u64,
    /// Every page of the file together: the dataset bound, as for a JSONL or CSV file.
    pub file: u64,
}

/// The bounds every Parquet dataset is read within.
pub(crate) const SIZES: Sizes = Sizes {
    page: 64 << 20,
    row_group: 256 << 20,
    file: crate::read::MAX_DATASET_BYTES.bytes,
};

/// The largest page header read (its statistics hold values of the page, which a writer may
/// make large); a header that does not end within it is refused.
const MAX_PAGE_HEADER_BYTES: u64 = 1 << 20;

/// `Ok` when every page of `file` (described by `metadata`) decompresses within `sizes`, as its
/// header says and as the metadata sums say; else what is over which bound. The file is read
/// at the pages' headers only.
pub(crate) fn check_sizes(
    file: &mut (impl Read + Seek),
    metadata: &ParquetMetaData,
    sizes: Sizes,
) -> Result<(), String> {
    let mut total = 0u64;
    for (g, group) in metadata.row_groups().iter().enumerate() {
        let g = g + 1;
        let mut in_group = 0u64;
        for column in group.columns() {
            let name = column.column_path().string();
            let declared = u64::try_from(column.uncompressed_size()).unwrap_or(u64::MAX);
            let (start, length) = column.byte_range();
            let in_column =
                |problem: String| format!("whose column {name} in row group {g} {problem}");
            let codec = Codec::of(column.compression()).map_err(in_column)?;
            let paged = page_sizes(file, start, length, sizes.page, codec).map_err(in_column)?;
            in_group = in_group.saturating_add(declared.max(paged));
        }
        let declared = u64::try_from(group.total_byte_size()).unwrap_or(u64::MAX);
        in_group = in_group.max(declared);
        if in_group > sizes.row_group {
            return Err(format!(
                "whose row group {g} decompresses to {in_group} bytes, over the {} a row group \
                 may (write it in smaller row groups)",
                sizes.row_group
            ));
        }
        total = total.saturating_add(in_group);
        if total > sizes.file {
            return Err(format!(
                "that decompresses to more than {} bytes, the dataset bound",
                sizes.file
            ));
        }
    }
    Ok(())
}

/// How a column's pages are compressed, as far as their check goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    /// Decompressed by the parquet crate into a buffer of the size the page's header gives
    /// (none, Snappy, LZ4_RAW): the header's size is the bound.
    ToHeaderSize,
    /// Decompressed by the parquet crate to the end of its stream, whatever the header says
    /// (a 2.5 MB file of gzip pages took moot to 3.7 GiB before failing): each page's stream
    /// is first decompressed here, counted and thrown away, and refused past its header's size.
    Gzip,
    Zstd,
}

impl Codec {
    fn of(compression: parquet::basic::Compression) -> Result<Codec, String> {
        use parquet::basic::Compression as C;
        match compression {
            C::UNCOMPRESSED | C::SNAPPY | C::LZ4_RAW => Ok(Codec::ToHeaderSize),
            C::GZIP(_) => Ok(Codec::Gzip),
            C::ZSTD(_) => Ok(Codec::Zstd),
            // The older LZ4 framing (Hadoop's, deprecated by Parquet; pyarrow writes LZ4_RAW)
            // is decompressed without bound, and Brotli is not read at all.
            other => Err(format!(
                "is compressed with {other}, which moot does not read (Snappy, Zstandard, gzip \
                 and LZ4_RAW are)"
            )),
        }
    }
}

/// The pages of one column chunk (`length` bytes from `start`), each checked against `page` as
/// its header gives its decompressed size, and, for a codec that decompresses whole streams,
/// against what its stream really decompresses to; their decompressed sizes together.
fn page_sizes(
    file: &mut (impl Read + Seek),
    start: u64,
    length: u64,
    page: u64,
    codec: Codec,
) -> Result<u64, String> {
    let end = start.saturating_add(length);
    let mut at = start;
    let mut total = 0u64;
    while at < end {
        let header = page_header(file, at, end - at)?;
        if header.uncompressed > page {
            return Err(format!(
                "has a page of {} bytes decompressed, over the {page} a page may",
                header.uncompressed
            ));
        }
        let body = at.saturating_add(header.length);
        if codec != Codec::ToHeaderSize && header.compressed_body {
            check_stream(file, body, &header, codec)?;
        }
        total = total.saturating_add(header.uncompressed);
        at = body.saturating_add(header.compressed);
    }
    Ok(total)
}

/// Decompresses the page whose header is `header` (its body at `body`), counting and throwing
/// away what comes out, and refuses it when the stream gives more than the header's size.
fn check_stream(
    file: &mut (impl Read + Seek),
    body: u64,
    header: &PageHeader,
    codec: Codec,
) -> Result<(), String> {
    let unreadable = || "has a page that cannot be read".to_string();
    // A version-2 data page keeps its levels uncompressed before the compressed values.
    let skip = header.levels_bytes.min(header.compressed);
    let compressed = header.compressed - skip;
    let expected = header.uncompressed.saturating_sub(skip);
    file.seek(SeekFrom::Start(body.saturating_add(skip)))
        .map_err(|_| unreadable())?;
    let stream = file.by_ref().take(compressed);
    let limit = expected.saturating_add(1);
    let decompressed = match codec {
        Codec::Gzip => std::io::copy(
            &mut flate2::read::MultiGzDecoder::new(stream).take(limit),
            &mut std::io::sink(),
        ),
        Codec::Zstd => zstd::stream::read::Decoder::new(stream)
            .and_then(|decoder| std::io::copy(&mut decoder.take(limit), &mut std::io::sink())),
        Codec::ToHeaderSize => return Ok(()),
    };
    // A stream that does not decompress here is refused here: left to the parquet crate, a
    // header it reads otherwise (a field given twice) would have it decompress another stream.
    match decompressed {
        Ok(n) if n > expected => Err(format!(
            "has a page whose stream decompresses past the {} bytes its header gives",
            header.uncompressed
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "has a page whose stream cannot be decompressed: {e}"
        )),
    }
}

/// What a page header says of its page.
#[derive(Debug, Clone, Copy)]
struct PageHeader {
    /// The header's own length in the file.
    length: u64,
    /// The page's size decompressed, and in the file (PageHeader fields 2 and 3).
    uncompressed: u64,
    compressed: u64,
    /// A version-2 data page's levels, stored uncompressed before its values (its fields 5
    /// and 6); 0 for other pages.
    levels_bytes: u64,
    /// Whether its body is compressed at all (a version-2 data page may say it is not).
    compressed_body: bool,
}

/// The page header at `at` (at most `left` bytes).
fn page_header(file: &mut (impl Read + Seek), at: u64, left: u64) -> Result<PageHeader, String> {
    let unreadable = || "has a page header that cannot be read".to_string();
    let mut want = left.min(4096);
    loop {
        file.seek(SeekFrom::Start(at)).map_err(|_| unreadable())?;
        let mut bytes = Vec::new();
        file.by_ref()
            .take(want)
            .read_to_end(&mut bytes)
            .map_err(|_| unreadable())?;
        let mut thrift = Compact {
            bytes: &bytes,
            at: 0,
        };
        let (mut uncompressed, mut compressed) = (None, None);
        // As the parquet crate reads a header: a field given twice, the last one counts.
        let (mut levels, mut compressed_body) = ([0u64; 2], true);
        let read = thrift.each_field(0, |t, id, kind| {
            if matches!(id, 2 | 3) && matches!(kind, 5 | 6) {
                let size = u64::try_from(t.zigzag()? as i32).map_err(|_| Problem::Unreadable)?;
                if id == 2 {
                    uncompressed = Some(size);
                } else {
                    compressed = Some(size);
                }
                return Ok(true);
            }
            if id == 8 && kind == 12 {
                // DataPageHeaderV2: the levels' lengths (5, 6) and whether it is compressed (7).
                (levels, compressed_body) = ([0, 0], true);
                t.each_field(1, |t, id, kind| match (id, kind) {
                    (5 | 6, 5 | 6) => {
                        levels[usize::from(id == 6)] =
                            u64::try_from(t.zigzag()? as i32).unwrap_or(0);
                        Ok(true)
                    }
                    (7, 1 | 2) => {
                        // A boolean field's value is its type: 1 true, 2 false.
                        compressed_body = kind == 1;
                        Ok(true)
                    }
                    _ => Ok(false),
                })?;
                return Ok(true);
            }
            Ok(false)
        });
        match (read, uncompressed, compressed) {
            (Ok(()), Some(u), Some(c)) => {
                return Ok(PageHeader {
                    length: thrift.at as u64,
                    uncompressed: u,
                    compressed: c,
                    levels_bytes: levels[0].saturating_add(levels[1]),
                    compressed_body,
                })
            }
            (Ok(()), _, _) | (Err(Problem::TooDeep | Problem::SchemaTooDeep), _, _) => {
                return Err(unreadable())
            }
            // Cut short: read more of it, up to the bound.
            (Err(Problem::Unreadable), _, _) => {
                if want >= left || want >= MAX_PAGE_HEADER_BYTES || (bytes.len() as u64) < want {
                    return Err(if want >= MAX_PAGE_HEADER_BYTES {
                        format!("has a page header over {MAX_PAGE_HEADER_BYTES} bytes")
                    } else {
                        unreadable()
                    });
                }
                want = (want * 4).min(left).min(MAX_PAGE_HEADER_BYTES);
            }
        }
    }
}

/// The deepest schema a dataset may have (real datasets nest a few levels).
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;

/// The largest footer read here (the parquet crate reads the same bytes next).
const MAX_FOOTER_BYTES: u64 = 64 << 20;

/// How deeply Thrift structures may nest inside the footer before it is refused.
const MAX_THRIFT_DEPTH: usize = 32;

/// `Ok` when the schema nests at most [`MAX_SCHEMA_DEPTH`] levels, or when the file does not
/// end as Parquet does (the parquet crate then says what it is); else why not. A footer this
/// reader cannot read is refused too: the parquet crate may read what this cannot, and would
/// then build the tree unchecked.
pub(crate) fn check(file: &mut (impl Read + Seek)) -> Result<(), String> {
    let Some(footer) = footer(file)? else {
        return Ok(());
    };
    match walk_schema(&footer) {
        Ok(()) => Ok(()),
        Err(Problem::Unreadable) => Err("whose footer cannot be read".to_string()),
        Err(Problem::TooDeep) => Err(format!(
            "whose footer nests Thrift structures more than {MAX_THRIFT_DEPTH} levels deep"
        )),
        Err(Problem::SchemaTooDeep) => Err(format!(
            "whose schema nests more than {MAX_SCHEMA_DEPTH} levels deep"
        )),
    }
}

/// The schema's depth, counted as its elements are read: `open` holds, for each group being
/// read, how many of its children are still to come.
#[derive(Default)]
struct Depth {
    open: Vec<i64>,
}

impl Depth {
    fn element(&mut self, children: i32) -> Result<(), Problem> {
        if self.open.len() > MAX_SCHEMA_DEPTH {
            return Err(Problem::SchemaTooDeep);
        }
        if let Some(parent) = self.open.last_mut() {
            *parent -= 1;
        }
        if children > 0 {
            self.open.push(i64::from(children));
        } else {
            while self.open.last().is_some_and(|&left| left <= 0) {
                self.open.pop();
            }
        }
        Ok(())
    }
}

/// The footer's bytes (FileMetaData), when the file ends as Parquet does (`None`: it does not,
/// or cannot be read, which the parquet crate then says). A footer past [`MAX_FOOTER_BYTES`]
/// is refused: passed on, it would be read unchecked.
fn footer(file: &mut (impl Read + Seek)) -> Result<Option<Vec<u8>>, String> {
    let Some(length) = footer_length(file) else {
        return Ok(None);
    };
    if length > MAX_FOOTER_BYTES {
        return Err(format!(
            "whose footer is {length} bytes, over the {MAX_FOOTER_BYTES} read"
        ));
    }
    Ok(read_footer(file, length))
}

/// The footer's length, as the file's last 8 bytes give it, when they end in `PAR1` and the
/// length fits in the file.
fn footer_length(file: &mut (impl Read + Seek)) -> Option<u64> {
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
    (length <= size - 8).then_some(length)
}

/// The `length` bytes before the file's last 8; the file is left at its start.
fn read_footer(file: &mut (impl Read + Seek), length: u64) -> Option<Vec<u8>> {
    file.seek(SeekFrom::End(-8 - length as i64)).ok()?;
    let mut bytes = vec![0u8; length as usize];
    file.read_exact(&mut bytes).ok()?;
    file.seek(SeekFrom::Start(0)).ok()?;
    Some(bytes)
}

enum Problem {
    /// Not Thrift as this reader reads it.
    Unreadable,
    /// Thrift structures nested past [`MAX_THRIFT_DEPTH`].
    TooDeep,
    /// A schema nested past [`MAX_SCHEMA_DEPTH`].
    SchemaTooDeep,
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

    /// A list or set header: its size and its elements' type. Every element takes a byte at
    /// least, so a size past the bytes left is refused before any is read.
    fn list_header(&mut self) -> Result<(u64, u8), Problem> {
        let head = self.byte()?;
        let size = match head >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        self.fits(size)?;
        Ok((size, head & 0x0f))
    }

    /// Whether `elements` of a byte or more each can be in the bytes left.
    fn fits(&self, elements: u64) -> Result<(), Problem> {
        let left = (self.bytes.len() - self.at) as u64;
        if elements > left {
            return Err(Problem::Unreadable);
        }
        Ok(())
    }

    /// Skips one element of a collection: a boolean there is a byte of its own.
    fn skip_element(&mut self, kind: u8, depth: usize) -> Result<(), Problem> {
        if matches!(kind, 1 | 2) {
            return self.byte().map(drop);
        }
        self.skip(kind, depth)
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
                    self.skip_element(element, depth + 1)?;
                }
                Ok(())
            }
            11 => {
                let size = self.varint()?;
                if size == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                self.fits(size.saturating_mul(2))?;
                for _ in 0..size {
                    self.skip_element(types >> 4, depth + 1)?;
                    self.skip_element(types & 0x0f, depth + 1)?;
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
            // As the parquet crate reads it: a long-form id cut to 16 bits, a delta wrapping.
            let id = match head >> 4 {
                0 => self.zigzag()? as i16,
                delta => last.wrapping_add(i16::from(delta)),
            };
            last = id;
            if !read(self, id, kind)? {
                self.skip(kind, depth)?;
            }
        }
    }
}

/// Walks the schema (FileMetaData field 2, a list or set of SchemaElement structs), counting
/// its depth from each element's number of children (field 5) as it goes. Fields are told by
/// id whatever their integer wire type, and a number of children is cut to 32 bits, as the
/// parquet crate reads them: a footer it reads is not read otherwise here.
fn walk_schema(footer: &[u8]) -> Result<(), Problem> {
    let mut thrift = Compact {
        bytes: footer,
        at: 0,
    };
    let mut depth = Depth::default();
    thrift.each_field(0, |t, id, kind| {
        if id != 2 || !matches!(kind, 9 | 10) {
            return Ok(false);
        }
        let (size, element) = t.list_header()?;
        if element != 12 {
            return Err(Problem::Unreadable);
        }
        for _ in 0..size {
            let mut children = 0i32;
            t.each_field(1, |t, id, kind| {
                if id == 5 && matches!(kind, 3..=6) {
                    children = if kind == 3 {
                        i32::from(t.byte()? as i8)
                    } else {
                        t.zigzag()? as i32
                    };
                    return Ok(true);
                }
                Ok(false)
            })?;
            depth.element(children)?;
        }
        Ok(true)
    })
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
        // Not Parquet: left to the parquet crate to say.
        assert_eq!(check(&mut std::io::Cursor::new(b"hello".to_vec())), Ok(()));
        // A footer past the bound read here is refused, not passed on unchecked.
        let mut big = b"PAR1".to_vec();
        big.resize(4 + (MAX_FOOTER_BYTES as usize) + 1, 0);
        big.extend_from_slice(&(MAX_FOOTER_BYTES as u32 + 1).to_le_bytes());
        big.extend_from_slice(b"PAR1");
        let e = check(&mut std::io::Cursor::new(big)).unwrap_err();
        assert!(e.contains("over the 67108864 read"), "{e}");
        // A footer this reader cannot read is refused, not passed on unchecked: a schema of
        // five elements with none written.
        let e = check(&mut std::io::Cursor::new(with_footer(&[0x19, 0xfc, 0x05]))).unwrap_err();
        assert!(e.contains("cannot be read"), "{e}");
    }

    /// A file whose footer is `meta`.
    fn with_footer(meta: &[u8]) -> Vec<u8> {
        let mut file = b"PAR1".to_vec();
        file.extend_from_slice(meta);
        file.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        file
    }

    /// The attacker's footers: the parquet crate read each and overflowed its stack, or this
    /// reader walked one for ever.
    #[test]
    fn footers_written_otherwise_are_read_as_the_parquet_crate_reads_them() {
        let group = [0x48, 0x01, b'g', 0x15, 0x02, 0x00];
        // num_children written as an i16 or an i64 field.
        for kind in [0x14u8, 0x16] {
            let mut file = nested_footer_file(20_000);
            let at: Vec<usize> = file
                .windows(group.len())
                .enumerate()
                .filter(|(_, w)| *w == group)
                .map(|(i, _)| i)
                .collect();
            for i in at {
                file[i + 3] = kind;
            }
            let e = check(&mut std::io::Cursor::new(file)).unwrap_err();
            assert!(e.contains("more than 64 levels"), "{kind:#x}: {e}");
        }
        // The schema written as a set.
        let mut file = nested_footer_file(20_000);
        assert_eq!(file[6], 0x19);
        file[6] = 0x1a;
        let e = check(&mut std::io::Cursor::new(file)).unwrap_err();
        assert!(e.contains("more than 64 levels"), "{e}");
        // A map of booleans claiming 2^63 - 1 entries: refused at once, not walked.
        let mut meta = vec![0xfb];
        let mut v = (1u64 << 63) - 1;
        while v >= 0x80 {
            meta.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        meta.push(v as u8);
        meta.extend_from_slice(&[0x11, 0x00]);
        let e = check(&mut std::io::Cursor::new(with_footer(&meta))).unwrap_err();
        assert!(e.contains("cannot be read"), "{e}");
    }

    /// The attacker's pages: a gzip or zstd stream of zeros far past the size its header
    /// gives, which the parquet crate would decompress whole before refusing (3.7 GiB from a
    /// 2.5 MB file); and honest streams of each codec, which pass.
    #[test]
    fn a_stream_that_decompresses_past_its_header_is_refused_unread() {
        use std::io::Write;
        let zeros = vec![0u8; 8 << 20];
        let gzip = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(&zeros).unwrap();
            e.finish().unwrap()
        };
        let zstd = zstd::stream::encode_all(&zeros[..], 19).unwrap();
        for (codec, stream) in [(Codec::Gzip, &gzip), (Codec::Zstd, &zstd)] {
            let header = |uncompressed: u64| PageHeader {
                length: 0,
                uncompressed,
                compressed: stream.len() as u64,
                levels_bytes: 0,
                compressed_body: true,
            };
            let mut file = std::io::Cursor::new(stream.clone());
            let e = check_stream(&mut file, 0, &header(1000), codec).unwrap_err();
            assert!(
                e.contains("decompresses past the 1000 bytes"),
                "{codec:?}: {e}"
            );
            assert_eq!(
                check_stream(&mut file, 0, &header(8 << 20), codec),
                Ok(()),
                "{codec:?}"
            );
        }
        // A stream that does not decompress here is refused, not left to the parquet crate.
        let garbage = PageHeader {
            length: 0,
            uncompressed: 1000,
            compressed: 64,
            levels_bytes: 0,
            compressed_body: true,
        };
        for codec in [Codec::Gzip, Codec::Zstd] {
            let mut file = std::io::Cursor::new(vec![7u8; 64]);
            let e = check_stream(&mut file, 0, &garbage, codec).unwrap_err();
            assert!(e.contains("cannot be decompressed"), "{codec:?}: {e}");
        }
        // Codecs that decompress to the header's size are not decompressed here; those moot
        // does not read are refused by name.
        assert_eq!(
            Codec::of(parquet::basic::Compression::SNAPPY),
            Ok(Codec::ToHeaderSize)
        );
        let e = Codec::of(parquet::basic::Compression::LZ4).unwrap_err();
        assert!(e.contains("LZ4"), "{e}");
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
