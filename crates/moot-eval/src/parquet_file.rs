//! Parquet files, as Hugging Face stores datasets: one file, or a folder of shards read as one
//! dataset in name order. Rows are read one at a time (a row group at a time from disk), each as
//! a JSON object, so a record reads the same through a [`FieldMap`](crate::FieldMap) whether it
//! came from JSONL or Parquet: nested structs are objects, lists are lists, integers stay
//! integers.

use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::{Map, Value};

use crate::error::{DatasetError, Location};
use crate::read::Source;

/// The Parquet files `path` names: itself when it is a file, else the folder's `*.parquet`
/// files (not its subfolders) in name order, as Hugging Face numbers its shards
/// (`train-00000-of-00003.parquet`, …).
pub(crate) fn shards(path: &Path) -> Result<Vec<Source>, DatasetError> {
    let given = Source::at(path);
    let meta = std::fs::metadata(path).map_err(|e| given.io_failed(e))?;
    if !meta.is_dir() {
        return Ok(vec![given]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| given.io_failed(e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| given.io_failed(e))?;
        let file = entry.path();
        if file.extension().is_some_and(|x| x == "parquet") && !file.is_dir() {
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(DatasetError::malformed(
            &given.name,
            Location::File,
            "a folder without .parquet files",
        ));
    }
    files.sort();
    Ok(files.iter().map(|f| Source::at(f)).collect())
}

/// Calls `each` with every row of the Parquet file `src`, in order, as a JSON object with its
/// location (rows counted from 1). The file must be a regular file of at most
/// [`MAX_DATASET_BYTES`](crate::read::MAX_DATASET_BYTES); a file that is not Parquet, or a row that cannot be decoded, is an
/// error naming the file (and the row).
pub(crate) fn each_row(
    src: &Source,
    mut each: impl FnMut(Location, Map<String, Value>) -> Result<(), DatasetError>,
) -> Result<(), DatasetError> {
    let mut file = src.open()?;
    // Before the parquet crate builds the schema's tree (recursively: a deep one overflowed
    // the stack).
    crate::parquet_bounds::check(&mut file).map_err(|problem| {
        DatasetError::malformed(
            &src.name,
            Location::File,
            format!("a Parquet file {problem}"),
        )
    })?;
    let mut pages = file.try_clone().map_err(|e| {
        DatasetError::malformed(&src.name, Location::File, format!("cannot read: {e}"))
    })?;
    let reader = SerializedFileReader::new(file).map_err(|e| {
        DatasetError::malformed(
            &src.name,
            Location::File,
            format!("not a Parquet file: {e}"),
        )
    })?;
    // Before any page is decompressed.
    crate::parquet_bounds::check_sizes(&mut pages, reader.metadata(), crate::parquet_bounds::SIZES)
        .map_err(|problem| {
            DatasetError::malformed(
                &src.name,
                Location::File,
                format!("a Parquet file {problem}"),
            )
        })?;
    let rows = reader.get_row_iter(None).map_err(|e| {
        DatasetError::malformed(
            &src.name,
            Location::File,
            format!("unreadable Parquet: {e}"),
        )
    })?;
    for (i, row) in rows.enumerate() {
        let location = Location::Record(i + 1);
        let row = row.map_err(|e| {
            DatasetError::malformed(&src.name, location, format!("unreadable Parquet row: {e}"))
        })?;
        match row.to_json_value() {
            Value::Object(obj) => each(location, obj)?,
            _ => {
                return Err(DatasetError::malformed(
                    &src.name,
                    location,
                    "a Parquet row that is not a record",
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use crate::{load, DatasetError};

    /// A flat Parquet file of (question, answer) rows, snappy-compressed as pyarrow writes
    /// them by default; nested ones are written by the Python tests, with pyarrow.
    fn write_flat(path: &Path, rows: &[(&str, i64)]) {
        let schema = parse_message_type(
            "message item { required binary question (UTF8); required int64 answer; }",
        )
        .expect("schema");
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let file = std::fs::File::create(path).expect("create");
        let mut writer =
            SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).expect("writer");
        let mut group = writer.next_row_group().expect("row group");
        let questions: Vec<ByteArray> = rows.iter().map(|(q, _)| ByteArray::from(*q)).collect();
        let answers: Vec<i64> = rows.iter().map(|(_, a)| *a).collect();
        let mut column = group.next_column().expect("column").expect("question");
        column
            .typed::<ByteArrayType>()
            .write_batch(&questions, None, None)
            .expect("questions");
        column.close().expect("close");
        let mut column = group.next_column().expect("column").expect("answer");
        column
            .typed::<Int64Type>()
            .write_batch(&answers, None, None)
            .expect("answers");
        column.close().expect("close");
        group.close().expect("close group");
        writer.close().expect("close file");
    }

    /// Issue 57 item 2: a 160 KB footer of 20,000 nested groups aborted moot with a stack
    /// overflow; it is refused, naming the file and the bound.
    #[test]
    fn a_schema_nested_past_the_bound_is_an_error_not_a_stack_overflow() {
        let dir = tempfile::tempdir().expect("dir");
        let deep = dir.path().join("deep.parquet");
        std::fs::write(
            &deep,
            crate::parquet_bounds::tests::nested_footer_file(20_000),
        )
        .expect("write");
        let spec = format!("parquet:{}?kind=numeric", deep.display());
        let e = load(&spec.parse().expect("spec"), Path::new("/unused")).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("deep.parquet") && text.contains("schema nests more than 64 levels"),
            "{text}"
        );
    }

    /// Issue 57 item 2: a few KB of Parquet whose one row is a value of 70 MB (one letter
    /// repeated, compressed to almost nothing) is refused before it is decompressed, naming
    /// the file and the page bound.
    #[test]
    fn a_row_that_decompresses_past_the_page_bound_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("bomb.parquet");
        let big = "a".repeat(70 << 20);
        write_flat(&path, &[(&big, 1)]);
        drop(big);
        assert!(std::fs::metadata(&path).expect("written").len() < (4 << 20));
        let spec = format!("parquet:{}?kind=numeric", path.display());
        let Err(e) = load(&spec.parse().expect("spec"), Path::new("/unused")) else {
            panic!("the 70 MB row was read");
        };
        let text = e.to_string();
        assert!(
            text.contains("bomb.parquet")
                && text.contains("column question in row group 1")
                && text.contains("over the 67108864 a page may"),
            "{text}"
        );
    }

    /// Each bound of `check_sizes`, on a file well within the real ones: the page, the row
    /// group (the pages of its columns together) and the whole file.
    #[test]
    fn each_size_bound_is_checked_against_the_pages() {
        use crate::parquet_bounds::{check_sizes, Sizes};
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("small.parquet");
        // Two values of 10,000 bytes: one page of 20,000 and more (the dictionary's).
        let (first, second) = ("q".repeat(10_000), "r".repeat(10_000));
        write_flat(&path, &[(&first, 1), (&second, 2)]);
        let reader =
            SerializedFileReader::new(std::fs::File::open(&path).expect("open")).expect("read");
        let mut file = std::fs::File::open(&path).expect("open");
        let roomy = Sizes {
            page: 1 << 20,
            row_group: 1 << 20,
            file: 1 << 20,
        };
        assert_eq!(check_sizes(&mut file, reader.metadata(), roomy), Ok(()));
        let e = check_sizes(
            &mut file,
            reader.metadata(),
            Sizes {
                page: 15_000,
                ..roomy
            },
        )
        .unwrap_err();
        assert!(
            e.contains("column question in row group 1 has a page of"),
            "{e}"
        );
        let e = check_sizes(
            &mut file,
            reader.metadata(),
            Sizes {
                row_group: 20_000,
                ..roomy
            },
        )
        .unwrap_err();
        assert!(e.contains("row group 1 decompresses to"), "{e}");
        let e = check_sizes(
            &mut file,
            reader.metadata(),
            Sizes {
                file: 20_000,
                ..roomy
            },
        )
        .unwrap_err();
        assert!(e.contains("the dataset bound"), "{e}");
    }

    #[test]
    fn a_file_and_a_folder_of_shards_load_in_order() {
        let dir = tempfile::tempdir().expect("dir");
        let one = dir.path().join("one.parquet");
        write_flat(&one, &[("What is 6 * 7?", 42), ("What is 2 + 3?", 5)]);
        let spec = format!("parquet:{}?kind=numeric", one.display());
        let d = load(&spec.parse().expect("spec"), Path::new("/unused")).expect("loaded");
        let got: Vec<(&str, &str, &str)> = d
            .items
            .iter()
            .map(|i| (i.id.as_str(), i.question.as_str(), i.gold.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("one/0", "What is 6 * 7?", "42"),
                ("one/1", "What is 2 + 3?", "5")
            ]
        );
        // Shards in name order, whatever order they were written in; other files ignored.
        let shards = dir.path().join("train");
        std::fs::create_dir(&shards).expect("mkdir");
        write_flat(
            &shards.join("train-00001-of-00002.parquet"),
            &[("second?", 2)],
        );
        write_flat(
            &shards.join("train-00000-of-00002.parquet"),
            &[("first?", 1)],
        );
        std::fs::write(shards.join("README.md"), "not data").expect("write");
        let spec = format!("parquet:{}?kind=numeric", shards.display());
        let d = load(&spec.parse().expect("spec"), Path::new("/unused")).expect("loaded");
        let questions: Vec<&str> = d.items.iter().map(|i| i.question.as_str()).collect();
        assert_eq!(questions, ["first?", "second?"]);
    }

    #[test]
    fn what_is_not_parquet_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("dir");
        let fake = dir.path().join("fake.parquet");
        std::fs::write(&fake, "question,answer\nq,1\n").expect("write");
        let spec = format!("parquet:{}?kind=numeric", fake.display());
        let err = load(&spec.parse().expect("spec"), Path::new("/unused")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{}: not a Parquet file", fake.display())),
            "{err}"
        );
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).expect("mkdir");
        let spec = format!("parquet:{}?kind=numeric", empty.display());
        let err = load(&spec.parse().expect("spec"), Path::new("/unused")).unwrap_err();
        assert!(
            err.to_string().ends_with("a folder without .parquet files"),
            "{err}"
        );
        let spec = format!("parquet:{}/nope.parquet?kind=numeric", empty.display());
        let err = load(&spec.parse().expect("spec"), Path::new("/unused")).unwrap_err();
        assert!(matches!(err, DatasetError::MissingFile { .. }), "{err:?}");
    }
}
