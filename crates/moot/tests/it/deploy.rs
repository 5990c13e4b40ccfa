//! The deployment examples in `deploy/`, checked against each other and against the real binary:
//! every Kubernetes manifest parses; the work Job is an Indexed Job of `moot work` pods; every
//! moot pod's store URL comes from the Secret beside PostgreSQL and names PostgreSQL's Service,
//! port, user, database and password; the plan Job records the benchmark the workers work on,
//! with a team configuration `moot config check` accepts and whose keys the workers get; the
//! Slurm scripts run (under bash, with a stand-in `moot` that records its arguments) and refuse
//! to start without a store or a benchmark name; the image builds with the workspace's Rust; and
//! every flag the examples and the guide give `moot` is one its help lists.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Map, Value};

const MOOT: &str = env!("CARGO_BIN_EXE_moot");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn deploy() -> PathBuf {
    repo().join("deploy")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One document of a manifest file.
struct Doc {
    file: String,
    value: Value,
}

impl Doc {
    fn kind(&self) -> &str {
        text(&self.value, "/kind")
    }

    fn name(&self) -> &str {
        text(&self.value, "/metadata/name")
    }

    fn at(&self) -> String {
        format!("{}: {} {}", self.file, self.kind(), self.name())
    }
}

/// Every document of every `deploy/kubernetes/*.yaml`, files in name order.
fn manifests() -> Vec<Doc> {
    let dir = deploy().join("kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {}", dir.display());
    let mut docs = Vec::new();
    for path in files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let values: Vec<Value> =
            serde_saphyr::from_multiple(&read(&path)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!values.is_empty(), "{file}: no documents");
        for value in values {
            for field in ["/apiVersion", "/kind", "/metadata/name"] {
                assert!(
                    value
                        .pointer(field)
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty()),
                    "{file}: a document without {field}: {value}"
                );
            }
            docs.push(Doc {
                file: file.clone(),
                value,
            });
        }
    }
    docs
}

/// The string at `pointer` in `v`.
fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v}"))
}

/// The one document of `kind` named `name`.
fn find<'a>(docs: &'a [Doc], kind: &str, name: &str) -> &'a Doc {
    let found: Vec<&Doc> = docs
        .iter()
        .filter(|d| d.kind() == kind && d.name() == name)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{kind} {name} is defined {} times in deploy/kubernetes",
        found.len()
    );
    found[0]
}

/// A workload's pod containers.
fn containers(workload: &Value) -> &[Value] {
    workload
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("no containers in {}", workload["metadata"]["name"]))
}

/// A container's env entry `name`.
fn env<'a>(container: &'a Value, name: &str) -> Option<&'a Value> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
}

/// Whether `labels` carries every label of `selector` (an empty selector selects everything).
fn selects(selector: Option<&Map<String, Value>>, labels: &Value) -> bool {
    selector.is_none_or(|s| s.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// The `$(NAME)` references in `s`, which Kubernetes expands in command, args and env values.
fn references(s: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("$(") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        found.push(&after[..end]);
        rest = &after[end + 1..];
    }
    found
}

/// A container's command line, with the references to literal env values expanded as Kubernetes
/// expands them (references to values from Secrets or the downward API are left as they are).
fn argv(container: &Value) -> Vec<String> {
    let literal: BTreeMap<&str, &str> = container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e["name"].as_str()?, e["value"].as_str()?)))
        .collect();
    ["command", "args"]
        .into_iter()
        .flat_map(|k| container[k].as_array().into_iter().flatten())
        .map(|a| {
            let a = a
                .as_str()
                .unwrap_or_else(|| panic!("{a}: command and args must be strings"));
            let mut expanded = a.to_string();
            for name in references(a) {
                if let Some(value) = literal.get(name) {
                    expanded = expanded.replace(&format!("$({name})"), value);
                }
            }
            expanded
        })
        .collect()
}

fn is_moot(argv: &[String]) -> bool {
    argv.first()
        .is_some_and(|p| Path::new(p).file_name().is_some_and(|f| f == "moot"))
}

/// Every Job container whose command is `moot`, with its Job.
fn moot_containers(docs: &[Doc]) -> Vec<(&Doc, &Value)> {
    docs.iter()
        .filter(|d| d.kind() == "Job")
        .flat_map(|d| containers(&d.value).iter().map(move |c| (d, c)))
        .filter(|(_, c)| is_moot(&argv(c)))
        .collect()
}

/// The one Job container that runs `moot SUB`, with its Job.
fn job_running<'a>(docs: &'a [Doc], sub: &str) -> (&'a Doc, &'a Value) {
    let found: Vec<(&Doc, &Value)> = moot_containers(docs)
        .into_iter()
        .filter(|(_, c)| argv(c).get(1).is_some_and(|s| s == sub))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "want one Job in deploy/kubernetes whose container runs `moot {sub}` (command: [\"moot\"]), found {}",
        found.len()
    );
    found[0]
}

/// The value given to `flag` (`--flag VALUE` or `--flag=VALUE`).
fn flag_value<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            argv.get(i + 1).map(String::as_str)
        } else {
            a.strip_prefix(flag)?.strip_prefix('=')
        }
    })
}

/// Kubernetes leaves `$(NAME)` as it is when NAME is not defined, so a misspelt reference would
/// reach moot literally. Every reference must name a variable defined before it (the Job
/// controller defines JOB_COMPLETION_INDEX in the pods of an Indexed Job).
fn check_references(job: &Doc, container: &Value) {
    let mut defined: BTreeSet<String> = BTreeSet::new();
    if job.value["spec"]["completionMode"] == "Indexed" {
        defined.insert("JOB_COMPLETION_INDEX".to_string());
    }
    for e in container["env"].as_array().into_iter().flatten() {
        for r in references(e["value"].as_str().unwrap_or_default()) {
            assert!(
                defined.contains(r),
                "{}: env {} uses $({r}) before it is defined",
                job.at(),
                e["name"]
            );
        }
        defined.insert(text(e, "/name").to_string());
    }
    for a in ["command", "args"]
        .into_iter()
        .flat_map(|k| container[k].as_array().into_iter().flatten())
    {
        for r in references(a.as_str().unwrap_or_default()) {
            assert!(
                defined.contains(r),
                "{}: {a} uses $({r}), which the container does not define",
                job.at()
            );
        }
    }
}

#[test]
fn the_work_job_is_an_indexed_job_of_moot_workers() {
    let docs = manifests();
    let (job, container) = job_running(&docs, "work");
    let at = job.at();
    let spec = &job.value["spec"];
    assert_eq!(text(&job.value, "/apiVersion"), "batch/v1", "{at}");
    assert_eq!(spec["completionMode"], "Indexed", "{at}: completionMode");
    let completions = spec["completions"]
        .as_u64()
        .unwrap_or_else(|| panic!("{at}: spec.completions is not set"));
    assert!(completions >= 1, "{at}: completions {completions}");
    assert_eq!(
        spec["parallelism"].as_u64(),
        Some(completions),
        "{at}: parallelism must equal completions: each index is one long-lived worker"
    );
    let per_index = spec.get("backoffLimitPerIndex").is_some();
    assert!(
        per_index || spec.get("backoffLimit").is_some(),
        "{at}: set backoffLimitPerIndex (or backoffLimit) so that failed workers are replaced a bounded number of times"
    );
    let restart = text(&job.value, "/spec/template/spec/restartPolicy");
    assert!(
        restart == "Never" || restart == "OnFailure",
        "{at}: restartPolicy {restart}"
    );
    if per_index || spec.get("podFailurePolicy").is_some() {
        assert_eq!(
            restart, "Never",
            "{at}: the API refuses backoffLimitPerIndex and podFailurePolicy unless restartPolicy is Never"
        );
    }
    let name = text(container, "/name");
    for rule in spec["podFailurePolicy"]["rules"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(named) = rule
            .pointer("/onExitCodes/containerName")
            .and_then(Value::as_str)
        {
            assert_eq!(
                named, name,
                "{at}: podFailurePolicy names another container"
            );
        }
    }

    let argv = argv(container);
    let bench = argv
        .get(2)
        .unwrap_or_else(|| panic!("{at}: `moot work` without a benchmark name"));
    assert!(
        !bench.is_empty() && !bench.starts_with('-') && !bench.contains("$("),
        "{at}: `moot work` needs the benchmark's name first (literal, or from a literal env value), got {bench:?}"
    );
    let worker_id = flag_value(&argv, "--worker-id")
        .unwrap_or_else(|| panic!("{at}: no --worker-id: {argv:?}"));
    assert!(
        worker_id.contains("$(JOB_COMPLETION_INDEX)"),
        "{at}: the worker id should carry the completion index, got {worker_id}"
    );
    check_references(job, container);
    for kind in ["requests", "limits"] {
        assert!(
            container["resources"][kind]
                .as_object()
                .is_some_and(|m| m.contains_key("memory")),
            "{at}: resources.{kind}.memory is not set"
        );
    }
}

/// The parts of a `postgres://USER:PASSWORD@HOST[:PORT]/DB[?…]` URL.
struct StoreUrl<'a> {
    user: &'a str,
    password: &'a str,
    host: &'a str,
    port: u64,
    database: &'a str,
}

impl<'a> StoreUrl<'a> {
    fn parse(url: &'a str) -> StoreUrl<'a> {
        let rest = url
            .strip_prefix("postgres://")
            .or_else(|| url.strip_prefix("postgresql://"))
            .unwrap_or_else(|| panic!("{url}: not a postgres:// or postgresql:// URL"));
        let (authority, path) = rest
            .split_once('/')
            .unwrap_or_else(|| panic!("{url}: no database"));
        let database = path.split_once('?').map_or(path, |(db, _)| db);
        let (userinfo, hostport) = authority
            .rsplit_once('@')
            .unwrap_or_else(|| panic!("{url}: no user"));
        let (user, password) = userinfo
            .split_once(':')
            .unwrap_or_else(|| panic!("{url}: no password"));
        let (host, port) = match hostport.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse()
                    .unwrap_or_else(|e| panic!("{url}: port {port}: {e}")),
            ),
            None => (hostport, 5432),
        };
        StoreUrl {
            user,
            password,
            host,
            port,
            database,
        }
    }
}

/// The value a Secret holds under `key` (in stringData, as the examples write it).
fn secret_value<'a>(docs: &'a [Doc], name: &str, key: &str) -> &'a str {
    let secret = find(docs, "Secret", name);
    secret.value["stringData"][key]
        .as_str()
        .unwrap_or_else(|| panic!("{}: no stringData.{key}", secret.at()))
}

/// The Secret an env entry takes its value from: (name, key).
fn secret_ref<'a>(entry: &'a Value, at: &str) -> (&'a str, &'a str) {
    assert!(
        entry.get("value").is_none(),
        "{at}: {} is a literal value: take it from a Secret",
        entry["name"]
    );
    (
        text(entry, "/valueFrom/secretKeyRef/name"),
        text(entry, "/valueFrom/secretKeyRef/key"),
    )
}

#[test]
fn every_moot_pod_takes_its_store_from_the_postgres_secret_and_reaches_postgres() {
    let docs = manifests();
    let moot = moot_containers(&docs);
    assert!(
        moot.len() >= 2,
        "want the plan and the work Jobs in deploy/kubernetes"
    );
    for (job, container) in moot {
        let at = job.at();
        check_references(job, container);
        let entry = env(container, "MOOT_STORE").unwrap_or_else(|| panic!("{at}: no MOOT_STORE"));
        let (secret, key) = secret_ref(entry, &at);
        assert_eq!(
            find(&docs, "Secret", secret).file,
            "postgres.yaml",
            "{at}: MOOT_STORE's Secret {secret} should be the one beside PostgreSQL"
        );
        let url = StoreUrl::parse(secret_value(&docs, secret, key));

        // The host is a Service of the same namespace (NAME, NAME.NAMESPACE, NAME.NAMESPACE.svc…).
        let service_name = url.host.split('.').next().unwrap_or_default();
        let service = find(&docs, "Service", service_name);
        let port = service.value["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_u64() == Some(url.port))
            .unwrap_or_else(|| panic!("{}: no port {} (MOOT_STORE's)", service.at(), url.port));
        let selector = service.value["spec"]["selector"]
            .as_object()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| panic!("{}: no selector", service.at()));
        let servers: Vec<&Doc> = docs
            .iter()
            .filter(|d| {
                d.kind() == "StatefulSet"
                    && selects(
                        Some(selector),
                        &d.value["spec"]["template"]["metadata"]["labels"],
                    )
            })
            .collect();
        assert_eq!(
            servers.len(),
            1,
            "{}: selects {} StatefulSets",
            service.at(),
            servers.len()
        );
        let server = servers[0];
        check_postgres(&docs, server, port, &url);
        check_network_policies(&docs, server, job);
    }
}

/// The StatefulSet behind MOOT_STORE's Service runs PostgreSQL 16 on a volume, on the port the
/// Service forwards to, with MOOT_STORE's user, database and password.
fn check_postgres(docs: &[Doc], server: &Doc, service_port: &Value, url: &StoreUrl) {
    let at = server.at();
    let postgres = containers(&server.value)
        .iter()
        .find(|c| text(c, "/image").contains("postgres:"))
        .unwrap_or_else(|| panic!("{at}: no postgres container"));
    let image = text(postgres, "/image");
    let tag = image.rsplit_once(':').map_or("", |(_, tag)| tag);
    assert!(tag.starts_with("16"), "{at}: {image}: want PostgreSQL 16");

    let target = match &service_port["targetPort"] {
        Value::Null => service_port["port"].as_u64(),
        Value::String(name) => postgres["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"] == name.as_str())
            .and_then(|p| p["containerPort"].as_u64()),
        number => number.as_u64(),
    };
    assert_eq!(
        target,
        Some(5432),
        "{at}: the Service must forward to the port PostgreSQL listens on"
    );

    let value = |name: &str| env(postgres, name).and_then(|e| e["value"].as_str());
    let user = value("POSTGRES_USER").unwrap_or("postgres");
    assert_eq!(
        user, url.user,
        "{at}: POSTGRES_USER and MOOT_STORE's user differ"
    );
    assert_eq!(
        value("POSTGRES_DB").unwrap_or(user),
        url.database,
        "{at}: POSTGRES_DB and MOOT_STORE's database differ"
    );
    let entry =
        env(postgres, "POSTGRES_PASSWORD").unwrap_or_else(|| panic!("{at}: no POSTGRES_PASSWORD"));
    let (secret, key) = secret_ref(entry, &at);
    assert_eq!(
        secret_value(docs, secret, key),
        url.password,
        "{at}: POSTGRES_PASSWORD and MOOT_STORE's password differ"
    );

    let governing = text(&server.value, "/spec/serviceName");
    assert_eq!(
        find(docs, "Service", governing).value["spec"]["clusterIP"],
        "None",
        "{at}: serviceName {governing} should be a headless Service"
    );
    let claims: Vec<&str> = server.value["spec"]["volumeClaimTemplates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| text(t, "/metadata/name"))
        .collect();
    assert!(
        !claims.is_empty(),
        "{at}: no volumeClaimTemplates: the data would die with the pod"
    );
    let data_mount = postgres["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| claims.contains(&text(m, "/name")))
        .map(|m| text(m, "/mountPath"))
        .unwrap_or_else(|| panic!("{at}: no claim is mounted"));
    if let Some(pgdata) = value("PGDATA") {
        assert!(
            pgdata.starts_with(&format!("{data_mount}/")),
            "{at}: PGDATA {pgdata} should be a subdirectory of the volume at {data_mount}"
        );
    }
}

/// A NetworkPolicy that guards PostgreSQL must let every moot pod in.
fn check_network_policies(docs: &[Doc], server: &Doc, job: &Doc) {
    let server_labels = &server.value["spec"]["template"]["metadata"]["labels"];
    let pod_labels = &job.value["spec"]["template"]["metadata"]["labels"];
    for policy in docs.iter().filter(|d| d.kind() == "NetworkPolicy") {
        let spec = &policy.value["spec"];
        if !selects(
            spec["podSelector"]["matchLabels"].as_object(),
            server_labels,
        ) {
            continue;
        }
        let admitted = spec["ingress"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|rule| rule["from"].as_array().into_iter().flatten())
            .any(|peer| {
                peer.get("podSelector").is_some()
                    && selects(peer["podSelector"]["matchLabels"].as_object(), pod_labels)
            });
        assert!(
            admitted,
            "{}: keeps the pods of {} away from PostgreSQL",
            policy.at(),
            job.at()
        );
    }
}

/// The ConfigMap and the file in it that `container`'s `--config` names (mounted in `job`'s
/// pod).
fn config_map_file<'a>(docs: &'a [Doc], job: &Doc, container: &Value) -> (&'a Doc, String) {
    let at = job.at();
    let argv = argv(container);
    let config = flag_value(&argv, "--config").unwrap_or_else(|| panic!("{at}: no --config"));
    let (dir, file) = config
        .rsplit_once('/')
        .unwrap_or_else(|| panic!("{at}: --config {config} is not an absolute path"));
    let mount = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["mountPath"] == dir)
        .unwrap_or_else(|| panic!("{at}: nothing is mounted at {dir}"));
    let volume = job.value["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .unwrap_or_else(|| panic!("{at}: no volume {}", mount["name"]));
    let map = find(docs, "ConfigMap", text(volume, "/configMap/name"));
    (map, file.to_string())
}

/// `api_key_env = "NAME"` in a TOML configuration: the variables its agents read keys from.
fn key_variables(config: &str) -> BTreeSet<&str> {
    config
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("api_key_env")?
                .trim()
                .strip_prefix('=')
        })
        .filter_map(|v| v.trim().strip_prefix('"')?.split('"').next())
        .collect()
}

#[test]
fn the_plan_job_records_the_workers_benchmark_with_a_configuration_moot_accepts() {
    let docs = manifests();
    let (plan, planner) = job_running(&docs, "bench");
    let (work, worker) = job_running(&docs, "work");
    let at = plan.at();
    check_references(plan, planner);
    assert_eq!(text(&plan.value, "/apiVersion"), "batch/v1", "{at}");
    let restart = text(&plan.value, "/spec/template/spec/restartPolicy");
    assert!(
        restart == "Never" || restart == "OnFailure",
        "{at}: restartPolicy {restart}"
    );
    let plan_argv = argv(planner);
    assert!(
        plan_argv.iter().any(|a| a == "--detach"),
        "{at}: the plan must only be recorded (--detach): {plan_argv:?}"
    );
    let name = flag_value(&plan_argv, "--name").unwrap_or_else(|| panic!("{at}: no --name NAME"));
    assert_eq!(
        argv(worker).get(2).map(String::as_str),
        Some(name),
        "{}: works on another benchmark than {at} plans",
        work.at()
    );
    let images: BTreeSet<&str> = moot_containers(&docs)
        .into_iter()
        .map(|(_, c)| text(c, "/image"))
        .collect();
    assert_eq!(
        images.len(),
        1,
        "every moot pod should run the same image: {images:?}"
    );

    // --config names a file of a ConfigMap mounted in the pod.
    let (map, file) = config_map_file(&docs, plan, planner);
    let team = map.value["data"][file.as_str()]
        .as_str()
        .unwrap_or_else(|| panic!("{}: no {file}", map.at()));
    // The workers are given the same file: a stored plan grants no agent, server or key.
    let (work_map, work_file) = config_map_file(&docs, work, worker);
    assert_eq!(
        (work_map.name(), work_file.as_str()),
        (map.name(), file.as_str()),
        "{}: --config is not the plan's team configuration",
        work.at()
    );

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(&file);
    std::fs::write(&path, team).unwrap();
    let out = Command::new(MOOT)
        .args(["config", "check"])
        .arg(&path)
        .env_remove("MOOT_STORE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: moot config check {}: {}",
        map.at(),
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );

    // Every key variable the team reads reaches the workers, from a Secret.
    let keys = key_variables(team);
    assert!(!keys.is_empty(), "{}: no agent names api_key_env", map.at());
    for key in keys {
        let entry = env(worker, key).unwrap_or_else(|| {
            panic!(
                "{}: the team reads {key}, which the workers lack",
                work.at()
            )
        });
        secret_ref(entry, &work.at());
    }
}

/// What the Containerfile says, read as text: its base images cannot be pulled here, so the
/// image itself is not built by any test.
#[test]
fn the_containerfile_names_the_workspace_rust_and_installs_what_workers_run() {
    let containerfile = read(&deploy().join("Containerfile"));
    let workspace = read(&repo().join("Cargo.toml"));
    let rust = workspace
        .lines()
        .find_map(|l| l.trim().strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"'))
        .expect("the workspace's rust-version");
    let stages: Vec<&str> = containerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert!(
        stages
            .first()
            .is_some_and(|s| s.contains(&format!("rust:{rust}-bookworm"))),
        "the build stage should use rust:{rust}-bookworm (the workspace's rust-version): {stages:?}"
    );
    assert!(
        stages
            .last()
            .is_some_and(|s| s.contains("debian:bookworm-slim")),
        "the runtime stage should be debian:bookworm-slim: {stages:?}"
    );
    assert!(
        containerfile.contains("cargo build --release") && containerfile.contains("-p moot"),
        "the image should build moot in release"
    );
    let runtime = containerfile
        .rsplit_once("\nFROM ")
        .map_or("", |(_, stage)| stage);
    for package in ["ca-certificates", "bubblewrap", "python3"] {
        assert!(
            runtime.contains(package),
            "the runtime stage should install {package}"
        );
    }
    // The manifests run `moot` from PATH.
    assert!(runtime.contains("/usr/local/bin/moot"));
}

/// A folder with a stand-in `moot` on PATH that records its arguments (one a line) and the
/// MOOT_STORE it was given.
struct FakeMoot {
    dir: tempfile::TempDir,
}

impl FakeMoot {
    fn new() -> FakeMoot {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let moot = bin.join("moot");
        std::fs::write(
            &moot,
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$FAKE_MOOT_DIR/args\"\nprintf '%s' \"${MOOT_STORE:-}\" > \"$FAKE_MOOT_DIR/store\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&moot, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeMoot { dir }
    }

    /// `bash SCRIPT ARGS…` in this folder, with only `vars`, PATH and HOME in its environment.
    fn run(&self, script: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let path = format!("{}:/usr/bin:/bin", self.dir.path().join("bin").display());
        Command::new("bash")
            .arg(script)
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.path())
            .env("FAKE_MOOT_DIR", self.dir.path())
            .envs(vars.iter().copied())
            .output()
            .unwrap()
    }

    /// The arguments moot was run with, if it was.
    fn args(&self) -> Option<Vec<String>> {
        let text = std::fs::read_to_string(self.dir.path().join("args")).ok()?;
        Some(text.lines().map(str::to_string).collect())
    }

    fn store(&self) -> String {
        read(&self.dir.path().join("store"))
    }
}

const STORE: (&str, &str) = (
    "MOOT_STORE",
    "postgres://moot:s3cret-pw@db.example.org:5432/moot",
);
const BENCH: (&str, &str) = ("BENCH", "gsm8k-team");
const JOB: (&str, &str) = ("SLURM_ARRAY_JOB_ID", "4242");
const TASK: (&str, &str) = ("SLURM_ARRAY_TASK_ID", "3");

fn sbatch_script() -> PathBuf {
    deploy().join("slurm/moot-work.sbatch")
}

fn plan_script() -> PathBuf {
    deploy().join("slurm/plan.sh")
}

/// The command lines the Slurm scripts run moot with: one array task (with MOOT_LEASE set, so
/// that every flag the script can give shows) and the plan with its default flags.
fn slurm_moot_commands() -> Vec<(String, Vec<String>)> {
    let mut commands = Vec::new();
    let no_args: &[&str] = &[];
    for (script, args, vars) in [
        (
            sbatch_script(),
            no_args,
            &[STORE, BENCH, JOB, TASK, ("MOOT_LEASE", "90s")][..],
        ),
        (plan_script(), &["gsm8k-team"][..], &[STORE][..]),
    ] {
        let fake = FakeMoot::new();
        let out = fake.run(&script, args, vars);
        assert!(
            out.status.success(),
            "{}: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let argv = fake
            .args()
            .unwrap_or_else(|| panic!("{}: moot was not run", script.display()));
        assert_eq!(fake.store(), STORE.1, "{}: MOOT_STORE", script.display());
        let mut words = vec!["moot".to_string()];
        words.extend(argv);
        commands.push((script.display().to_string(), words));
    }
    commands
}

#[test]
fn the_slurm_scripts_run_moot_work_and_refuse_to_start_without_a_store_or_a_benchmark() {
    let sbatch = sbatch_script();
    let plan = plan_script();
    for script in [&sbatch, &plan] {
        let out = Command::new("bash").arg("-n").arg(script).output().unwrap();
        assert!(
            out.status.success(),
            "bash -n {}: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let source = read(&sbatch);
    assert!(
        source.lines().any(|l| l.starts_with("#SBATCH --array=")),
        "{}: not an array job",
        sbatch.display()
    );
    assert!(
        source.contains("moot work"),
        "{}: no `moot work`",
        sbatch.display()
    );
    // sbatch reads #SBATCH lines only up to the first command.
    let first_command = source
        .lines()
        .position(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .unwrap_or(usize::MAX);
    assert!(
        source
            .lines()
            .enumerate()
            .all(|(i, l)| !l.starts_with("#SBATCH") || i < first_command),
        "{}: an #SBATCH line after the first command is ignored",
        sbatch.display()
    );

    let fake = FakeMoot::new();
    let out = fake.run(&sbatch, &[], &[STORE, BENCH, JOB, TASK]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = fake.args().expect("the array task did not run moot");
    assert_eq!(args[..2], ["work", "gsm8k-team"]);
    assert_eq!(flag_value(&args, "--worker-id"), Some("slurm-4242-3"));
    assert_eq!(fake.store(), STORE.1);
    for output in [&out.stdout, &out.stderr] {
        assert!(
            !String::from_utf8_lossy(output).contains("s3cret-pw"),
            "the script printed the database password"
        );
    }

    for (missing, vars) in [
        ("MOOT_STORE", &[BENCH, JOB, TASK][..]),
        ("BENCH", &[STORE, JOB, TASK][..]),
        (
            "MOOT_STORE",
            &[("MOOT_STORE", "/tmp/moot.db"), BENCH, JOB, TASK][..],
        ),
    ] {
        let fake = FakeMoot::new();
        let out = fake.run(&sbatch, &[], vars);
        assert!(!out.status.success(), "ran without a usable {missing}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(missing),
            "the refusal should name {missing}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(fake.args().is_none(), "moot ran without a usable {missing}");
    }

    let fake = FakeMoot::new();
    let out = fake.run(&plan, &["gsm8k-team"], &[STORE]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let args = fake.args().expect("plan.sh did not run moot");
    assert_eq!(args[0], "bench");
    assert!(args.iter().any(|a| a == "--detach"), "{args:?}");
    assert_eq!(flag_value(&args, "--name"), Some("gsm8k-team"));

    let fake = FakeMoot::new();
    let out = fake.run(&plan, &["gsm8k-team"], &[]);
    assert!(!out.status.success(), "plan.sh ran without MOOT_STORE");
    assert!(fake.args().is_none(), "plan.sh ran moot without MOOT_STORE");
}

/// Every `moot …` command line (continuation lines joined) in the fenced code blocks of
/// deploy/README.md, as words from `moot` on, quotes stripped.
fn readme_moot_commands() -> Vec<Vec<String>> {
    let text = read(&deploy().join("README.md"));
    let mut commands = Vec::new();
    let mut in_code = false;
    let mut line = String::new();
    for raw in text.lines() {
        if raw.trim_start().starts_with("```") {
            in_code = !in_code;
            line.clear();
            continue;
        }
        if !in_code {
            continue;
        }
        if let Some(part) = raw.strip_suffix('\\') {
            line.push_str(part);
            line.push(' ');
            continue;
        }
        line.push_str(raw);
        let words: Vec<String> = line
            .split_whitespace()
            .map(|w| w.trim_matches(['"', '\'']).to_string())
            .collect();
        for (i, w) in words.iter().enumerate() {
            if w == "moot" || w.ends_with("/moot") {
                commands.push(words[i..].to_vec());
            }
        }
        line.clear();
    }
    commands
}

/// moot's subcommands the examples use; `moot` followed by anything else is another program's
/// argument (`kubectl -n moot`, `createdb --owner moot moot`).
const SUBCOMMANDS: [&str; 8] = [
    "ask", "bench", "decide", "report", "resume", "serve", "show", "work",
];

/// From `moot SUB [status] ARGS…`: the command (`work`, `bench status`) and each `--flag` given
/// before the command line ends (`|`, `&&`, `;`, `&`, a redirection or a comment).
fn command_and_flags(words: &[String]) -> Option<(String, Vec<String>)> {
    let sub = words.get(1).filter(|w| SUBCOMMANDS.contains(&w.as_str()))?;
    let mut command = sub.clone();
    let mut rest = &words[2..];
    if sub == "bench" && rest.first().is_some_and(|w| w == "status") {
        command.push_str(" status");
        rest = &rest[1..];
    }
    let flags = rest
        .iter()
        .take_while(|w| {
            !matches!(w.as_str(), "|" | "||" | "&&" | ";" | "&")
                && !w.starts_with(['#', '>'])
                && !w.starts_with("2>")
        })
        .filter(|w| w.starts_with("--"))
        .map(|w| w.split_once('=').map_or(w.as_str(), |(f, _)| f).to_string())
        .collect();
    Some((command, flags))
}

/// Whether `help` lists `flag` (not merely a longer flag starting with it).
fn lists_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        !help[i + flag.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-')
    })
}

#[test]
fn every_flag_the_examples_give_moot_is_in_its_help() {
    // (command, flag) → where the examples use it.
    let mut uses: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut commands: Vec<(String, Vec<String>)> = Vec::new();
    let docs = manifests();
    for (job, container) in moot_containers(&docs) {
        commands.push((job.at(), argv(container)));
    }
    commands.extend(slurm_moot_commands());
    for words in readme_moot_commands() {
        commands.push(("deploy/README.md".to_string(), words));
    }
    let mut ran = BTreeSet::new();
    for (place, words) in commands {
        let Some((command, flags)) = command_and_flags(&words) else {
            continue;
        };
        ran.insert(command.clone());
        for flag in flags {
            uses.entry((command.clone(), flag))
                .or_insert_with(|| place.clone());
        }
    }
    // The examples are about these; if none were found, the parsing above is broken.
    for (command, flag) in [
        ("work", "--concurrency"),
        ("work", "--lease"),
        ("work", "--worker-id"),
        ("bench", "--detach"),
        ("bench", "--name"),
        ("bench", "--config"),
        ("bench status", "--json"),
    ] {
        assert!(
            uses.contains_key(&(command.to_string(), flag.to_string())),
            "no example uses `moot {command} {flag}`"
        );
    }
    assert!(ran.contains("report"), "no example runs `moot report`");

    let mut helps: BTreeMap<String, Result<String, String>> = BTreeMap::new();
    for command in &ran {
        let out = Command::new(MOOT)
            .args(command.split(' '))
            .arg("--help")
            .env_remove("MOOT_STORE")
            .output()
            .unwrap();
        let help = if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        };
        helps.insert(command.clone(), help);
    }
    let mut missing = Vec::new();
    for (command, help) in &helps {
        if let Err(e) = help {
            missing.push(format!("`moot {command} --help` failed: {e}"));
        }
    }
    for ((command, flag), place) in &uses {
        let lacking = helps
            .get(command)
            .and_then(|help| help.as_ref().ok())
            .is_some_and(|help| !lists_flag(help, flag));
        if lacking {
            missing.push(format!("`moot {command}` has no {flag} (used in {place})"));
        }
    }
    assert!(
        missing.is_empty(),
        "the examples in deploy/ use what moot lacks:\n{}",
        missing.join("\n")
    );
}
