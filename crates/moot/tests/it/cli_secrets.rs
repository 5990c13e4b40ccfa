//! Issue 56 item 2: no process moot starts can read a secret moot holds — not through
//! `/proc/<moot>/environ`, `/proc/<moot>/mem`, its command line, inherited descriptors or its
//! own environment — as root (capabilities dropped) and as an unprivileged user (moot sealed).

use crate::common;

use common::Env;
use serde_json::Value;
use std::path::Path;

/// The key every test here gives moot, in two variables; the probe looks for its prefix
/// (`sk-moot-probe-`).
const KEY: &str = "sk-moot-probe-5b0e2c9d41f7a8836e1d";

/// A `cli` agent that tries every way to moot's secrets and writes what it got to the file
/// its argument names, then answers 42. It walks up from its parent (the reaper, a copy of
/// moot) to moot, and for each reads `environ`, `cmdline` and every readable region of `mem`,
/// keeping what follows the key's prefix wherever it appears.
const PROBE: &str = r#"
import json, os, re, sys
sys.stdin.read()
prefix = os.environ.get("PROBE_PREFIX", "sk-moot-probe-").encode()
found = []
def look(where, data):
    for m in re.finditer(re.escape(prefix) + rb"[0-9a-f]{0,40}", data):
        found.append([where, m.group(0).decode("ascii", "replace")])
report = {"tried": {}, "env": sorted(os.environ), "fds": sorted(os.listdir("/proc/self/fd"))}
pid, chain = os.getppid(), []
while pid >= 1 and len(chain) < 2:
    chain.append(pid)
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
for depth, pid in enumerate(chain):
    for part in ("environ", "cmdline"):
        key = f"{depth}:{part}"
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                data = f.read()
            look(key, data)
            report["tried"][key] = f"read {len(data)} bytes"
        except OSError as e:
            report["tried"][key] = type(e).__name__
    key = f"{depth}:mem"
    try:
        with open(f"/proc/{pid}/maps") as f:
            regions = [l.split() for l in f]
        total = 0
        with open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for r in regions:
                lo, hi = (int(x, 16) for x in r[0].split("-"))
                if "r" not in r[1] or hi - lo > (256 << 20):
                    continue
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except OSError:
                    continue
                total += len(data)
                look(key, data)
        report["tried"][key] = f"read {total} bytes"
    except OSError as e:
        report["tried"][key] = type(e).__name__
report["chain"] = chain
for name, value in os.environ.items():
    look("own environment", value.encode())
# Every process the agent can see: the user's others (a shell holding the key) are not sealed.
report["visible"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
for pid in report["visible"]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            look(f"{pid}:environ", f.read())
    except OSError:
        pass
# uid 0 owns the kernel's settings without capabilities; core_pattern would run a program of
# the agent's choosing with all of them. Written back unchanged when it can be written at all.
try:
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read()
    with open("/proc/sys/kernel/core_pattern", "w") as f:
        f.write(pattern)
    report["core_pattern"] = "written"
except OSError as e:
    report["core_pattern"] = type(e).__name__
# The terminal moot runs on, if any: a program holding it could type into the user's shell.
try:
    open("/dev/tty", "wb").close()
    report["tty"] = "opened"
except OSError as e:
    report["tty"] = type(e).__name__
# The kernel's settings, and every mount below them, read-only: at each mount point, the
# mount on top (listed last) is the one seen.
seen = {}
with open("/proc/self/mountinfo") as f:
    for line in f:
        fields = line.split()
        seen[fields[4]] = fields[5].split(",")
report["writable_kernel_mounts"] = sorted(
    point for point, options in seen.items()
    if (point == "/sys" or point.startswith("/sys/") or point.startswith("/proc/sys"))
    and "ro" not in options
)
for kind in ("user", "cgroup"):
    try:
        with open(f"/proc/sys/user/max_{kind}_namespaces") as f:
            report[f"max_{kind}_namespaces"] = f.read().strip()
    except OSError as e:
        report[f"max_{kind}_namespaces"] = type(e).__name__
# The terminals it can name, and the cgroups.
try:
    report["pts"] = sorted(os.listdir("/dev/pts"))
except OSError as e:
    report["pts"] = type(e).__name__
with open("/proc/self/cgroup") as f:
    report["cgroups"] = [line.strip().split(":", 2)[2] for line in f]
# A program that sandboxes itself, /proc included, as bubblewrap does (every namespace but a
# cgroup one, which an agent may not make).
import shutil, subprocess
if os.getuid() != 0 and shutil.which("bwrap"):
    done = subprocess.run(["bwrap", "--unshare-user", "--unshare-pid", "--unshare-net",
                           "--unshare-ipc", "--unshare-uts", "--ro-bind", "/", "/",
                           "--proc", "/proc", "true"], capture_output=True, text=True)
    report["bwrap_proc"] = [done.returncode, done.stderr[-300:]]
# The machine's terminals and consoles, by their paths: each is /dev/null here.
null = os.stat("/dev/null").st_rdev
report["consoles"] = sorted(
    name for name in os.listdir("/dev")
    if (name == "console" or (name.startswith("tty") and name != "tty")
        or name.startswith(("vcs", "hvc", "xvc")))
    and os.stat(f"/dev/{name}").st_rdev != null
)
# clone3 (which with CLONE_INTO_CGROUP starts a process in another cgroup) is refused.
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
report["clone3"] = ctypes.get_errno() if libc.syscall(435, None, 0) < 0 else 0
report["found"] = found
with open(sys.argv[1], "w") as f:
    json.dump(report, f)
print("Final answer: 42")
"#;

/// `program` under `wrap` (empty: as this user).
fn wrapped(wrap: &[&str], program: &Path) -> std::process::Command {
    match wrap.split_first() {
        None => std::process::Command::new(program),
        Some((first, args)) => {
            let mut c = std::process::Command::new(first);
            c.args(args).arg(program);
            c
        }
    }
}

/// What the probes found, and what moot said on stderr.
struct Probed {
    reports: Vec<Value>,
    stderr: String,
}

/// Runs `moot ask` with two probe agents under `wrap` (empty: as this user), beside a
/// neighbour: another process of the same user holding the key in its environment and not
/// sealed, as the shell that started moot is. Returns each agent's report.
fn probe_reports(env: &Env, wrap: &[&str]) -> Probed {
    let mut neighbour = wrapped(wrap, Path::new("/bin/sleep"))
        .arg("600")
        .env("NEIGHBOUR_KEY", KEY)
        .spawn()
        .unwrap();
    let probe = env.write("probe.py", PROBE);
    let report = |id: &str| env.dir.path().join(format!("report-{id}.json"));
    let config = env.write(
        "probe.toml",
        &format!(
            "[debate]\nprotocol = \"som\"\nrounds = 1\nanswer = \"numeric\"\nsoft_timeout_ms = 60000\nhard_timeout_ms = 90000\nmin_agents = 2\n\n[security]\ncli_allowed_commands = [\"/usr/bin/python3\"]\ncli_env = \"clear\"\n\n[[agents]]\nid = \"x\"\nbackend = \"cli\"\ncommand = \"/usr/bin/python3\"\nargs = [\"{p}\", \"{rx}\"]\nmode_arg = false\n\n[[agents]]\nid = \"y\"\nbackend = \"cli\"\ncommand = \"/usr/bin/python3\"\nargs = [\"{p}\", \"{ry}\"]\nmode_arg = false\n",
            p = probe.display(),
            rx = report("x").display(),
            ry = report("y").display(),
        ),
    );
    let out = wrapped(wrap, &assert_cmd::cargo::cargo_bin("moot"))
        .args(["ask", "What is 6 times 7?", "--json", "--config"])
        .arg(&config)
        .arg("--store")
        .arg(env.store())
        .env("OPENAI_API_KEY", KEY)
        .env("GH_TOKEN", KEY)
        .env("HOME", env.dir.path())
        .env_remove("MOOT_STORE")
        .output()
        .unwrap();
    let _ = neighbour.kill();
    let _ = neighbour.wait();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let reports = ["x", "y"]
        .iter()
        .map(|id| {
            let text = std::fs::read_to_string(report(id)).unwrap();
            assert!(!text.contains(KEY), "agent {id} read the key: {text}");
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    Probed {
        reports,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// What every report must say: each way was tried and refused, nothing was found (not in
/// moot, not in the neighbour), and the agent got only its standard streams and the clear
/// environment. Where the machine makes PID namespaces, the agent saw no process but its
/// namespace's pid 1 (a sealed copy of moot) and itself; where it cannot, moot said so.
fn check(probed: &Probed) {
    let isolated = moot_proc::namespace_gap().is_none();
    if !isolated {
        assert!(
            probed.stderr.contains("see the machine's other processes"),
            "no warning: {}",
            probed.stderr
        );
    }
    for report in &probed.reports {
        assert_eq!(report["found"], serde_json::json!([]), "{report}");
        let tried = &report["tried"];
        let ancestors = if isolated {
            assert_eq!(report["visible"], serde_json::json!([1, 2]), "{report}");
            assert_eq!(report["chain"], serde_json::json!([1]), "{report}");
            &["0"][..]
        } else {
            &["0", "1"][..]
        };
        for &depth in ancestors {
            for part in ["environ", "mem"] {
                assert_eq!(
                    tried[format!("{depth}:{part}")],
                    "PermissionError",
                    "{part} of the agent's ancestor {depth}: {report}"
                );
            }
            // The command line is readable by every process; it holds no secret here.
            assert!(
                tried[format!("{depth}:cmdline")]
                    .as_str()
                    .is_some_and(|t| t.starts_with("read ")),
                "{report}"
            );
        }
        let env: Vec<&str> = report["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for name in &env {
            assert!(
                ["PATH", "HOME", "LANG", "LC_CTYPE"].contains(name),
                "the agent got {name}: {env:?}"
            );
        }
        assert_ne!(report["core_pattern"], "written", "{report}");
        assert_ne!(report["tty"], "opened", "{report}");
        assert_eq!(report["clone3"], libc::ENOSYS, "{report}");
        if isolated {
            assert_eq!(report["consoles"], serde_json::json!([]), "{report}");
        }
        assert_eq!(
            report["writable_kernel_mounts"],
            serde_json::json!([]),
            "{report}"
        );
        if isolated {
            // It may make a few namespaces of its own, not use up the user's allowance, and no
            // cgroup namespace (whose own cgroup mount could kill or freeze moot's cgroup).
            assert_eq!(report["max_user_namespaces"], "32", "{report}");
            assert_eq!(report["max_cgroup_namespaces"], "0", "{report}");
            // Its cgroup is the root of its cgroup namespace: it can name no other.
            for cgroup in report["cgroups"].as_array().unwrap() {
                assert_eq!(cgroup, "/", "{report}");
            }
            // No terminal of the machine's can be named: its /dev/pts is its own.
            assert_eq!(report["pts"], serde_json::json!(["ptmx"]), "{report}");
            if report.get("bwrap_proc").is_some() {
                assert_eq!(report["bwrap_proc"][0], 0, "{report}");
            }
        }
        // 0, 1, 2 and the descriptor listdir itself opened.
        let fds = report["fds"].as_array().unwrap();
        assert!(
            fds.len() <= 4,
            "the agent holds descriptors of moot's: {report}"
        );
    }
}

#[test]
fn a_cli_agent_cannot_read_moots_keys_from_its_environment_memory_or_descriptors() {
    let env = Env::new();
    check(&probe_reports(&env, &[]));
}

#[test]
fn an_unprivileged_users_agent_cannot_read_them_either() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        // This user is unprivileged already: the test above is this one.
        let env = Env::new();
        check(&probe_reports(&env, &[]));
        return;
    }
    let env = Env::new();
    open_to_everyone(env.dir.path());
    let probed = probe_reports(
        &env,
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ],
    );
    check(&probed);
}

/// Issue 56, from the attacker's look at item 2: moot run from a terminal (its controlling
/// terminal, as a shell's job); its agents cannot open it, so cannot type into the shell.
#[test]
fn an_agent_cannot_reach_the_terminal_moot_runs_on() {
    let env = Env::new();
    // `script` gives the command a terminal of its own, as its controlling terminal (bash
    // quotes the command line for it).
    let probed = probe_reports(
        &env,
        &[
            "bash",
            "-c",
            "exec script -qec \"$(printf '%q ' \"$@\")\" /dev/null",
            "on-a-terminal",
        ],
    );
    check(&probed);
    for report in &probed.reports {
        assert_eq!(report["tty"], "OSError", "{report}");
    }
}

fn open_to_everyone(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_typed_on_the_command_line_is_gone_from_moots_proc_cmdline() {
    let env = Env::new();
    let token = "serve-token-7c41d0a9e2b85f36";
    let served = common::moot_serve(&env, &["--token", token], &[]);
    let pid = served.child.id();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(!cmdline.contains(token), "{cmdline}");
    assert!(
        cmdline.contains(&format!("--token {}", "*".repeat(token.len()))),
        "{cmdline}"
    );
    // The server still takes the token it was given, and only it.
    let client = reqwest::Client::new();
    let runs = format!("{}/api/runs", served.url);
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(status(client.get(&runs).send().await.unwrap()), 401);
    let masked = "*".repeat(token.len());
    assert_eq!(
        status(client.get(&runs).bearer_auth(masked).send().await.unwrap()),
        401
    );
    assert_eq!(
        status(client.get(&runs).bearer_auth(token).send().await.unwrap()),
        200
    );
}

/// The attacker's cases: a password `url` would re-encode (`;` beside a `%40`), and a global
/// `--store` given twice (clap keeps one value; both are on the command line).
#[test]
fn every_store_password_on_the_command_line_is_hidden_however_it_is_written() {
    // A server that accepts and never answers: moot waits on it, after it has started.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let first = format!("postgres://moot:PW-first%40x;y@127.0.0.1:{port}/db");
    let second = format!("postgres://moot:PW-second%40x^y@127.0.0.1:{port}/db");
    let mut moot = std::process::Command::new(assert_cmd::cargo::cargo_bin("moot"))
        .args(["ask", "--store", &first, "What is 6 times 7?", "--sim"])
        .arg(format!("--store={second}"))
        .env_remove("MOOT_STORE")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (_connection, _) = listener.accept().unwrap();
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", moot.id())).unwrap();
    moot.kill().unwrap();
    moot.wait().unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    for password in ["PW-first%40x;y", "PW-second%40x^y"] {
        assert!(!cmdline.contains(password), "{cmdline}");
        assert!(cmdline.contains(&"*".repeat(password.len())), "{cmdline}");
    }
    // The rest of the URL is left as written, the user name included.
    assert!(
        cmdline.contains(&format!(
            "postgres://moot:{}@127.0.0.1:{port}/db",
            "*".repeat(14)
        )),
        "{cmdline}"
    );
}
